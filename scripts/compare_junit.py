#!/usr/bin/env python3
"""Compares two pytest JUnit XML files of one client suite: pygpu's run against a real PyCUDA's.

    scripts/compare_junit.py --reference pycuda.xml --candidate pygpu.xml [--out summary.txt]
    scripts/compare_junit.py --candidate host.xml [--reference-failures FILE]   # no reference run

Prints (and writes to --out) the tests passed by each, pygpu's passes as a percentage of the tests
the reference passes (a test the reference passes and pygpu does not run counts as not passed),
per test file, and the tests that pass on the reference but not on pygpu, with the first line of
each failure. Without a reference run the rate is over the tests that ran, were not skipped and
are not listed in --reference-failures (tests that fail on a real PyCUDA too, one id a line).
Exit status: 1 when --min-rate is given and the rate is below it, 2 when a file is missing or
unreadable (the run did not finish), else 0.
"""

from __future__ import annotations

import argparse
import collections
import sys
import xml.etree.ElementTree as ET

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"


def load(path: str) -> dict[str, tuple[str, str]]:
    """Test id -> (outcome, first line of its message). Collection errors have an empty classname."""
    results: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        test_id = f"{classname.replace('.', '/')}.py::{name}" if classname else f"{name} (collection)"
        outcome, message = PASSED, ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": FAILED, "error": ERROR, "skipped": SKIPPED}[child.tag]
                text = child.get("message") or (child.text or "")
                message = next((line.strip() for line in text.splitlines() if line.strip()), "")
                if outcome != SKIPPED:
                    break
        if not classname and outcome == PASSED:
            continue  # not a test: what an interrupted pytest-xdist run leaves behind
        # A test that failed in its teardown has both a pass and an error entry: the error wins.
        if test_id not in results or results[test_id][0] in (PASSED, SKIPPED):
            results[test_id] = (outcome, message)
    return results


def counts(results: dict[str, tuple[str, str]]) -> str:
    c = collections.Counter(outcome for outcome, _ in results.values())
    return f"{c[PASSED]} passed, {c[FAILED]} failed, {c[ERROR]} errors, {c[SKIPPED]} skipped (of {len(results)})"


def test_file(test_id: str) -> str:
    return test_id.split("::")[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", help="JUnit XML of the real PyCUDA's run")
    p.add_argument("--candidate", required=True, help="JUnit XML of pygpu's run")
    p.add_argument("--reference-label", default="PyCUDA")
    p.add_argument("--candidate-label", default="pygpu")
    p.add_argument("--reference-failures", help="without --reference: ids of tests a real PyCUDA fails")
    p.add_argument("--title", default="")
    p.add_argument("--out", help="also write the summary here")
    p.add_argument("--min-rate", type=float, help="exit 1 when the rate (percent) is below this")
    p.add_argument("--max-list", type=int, default=400, help="list at most this many differing tests")
    args = p.parse_args(argv)

    lines: list[str] = [args.title] if args.title else []
    try:
        cand = load(args.candidate)
    except (OSError, ET.ParseError) as e:
        print(f"compare_junit: {args.candidate}: {e} (did the {args.candidate_label} run finish?)", file=sys.stderr)
        return 2
    ref = None
    if args.reference:
        try:
            ref = load(args.reference)
        except (OSError, ET.ParseError) as e:
            print(f"compare_junit: {args.reference}: {e} (did the {args.reference_label} run finish?)", file=sys.stderr)
            return 2
    width = max(len(args.reference_label), len(args.candidate_label)) + 1
    if ref is not None:
        lines.append(f"{args.reference_label + ':':<{width}} {counts(ref)}")
    lines.append(f"{args.candidate_label + ':':<{width}} {counts(cand)}")

    if ref is not None:
        basis = sorted(t for t, (o, _) in ref.items() if o == PASSED)
        what = f"of the {len(basis)} tests {args.reference_label} passes"
    else:
        known: set[str] = set()
        if args.reference_failures:
            with open(args.reference_failures, encoding="utf-8") as f:
                known = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        basis = sorted(t for t, (o, _) in cand.items() if o != SKIPPED and t not in known)
        left = sum(1 for t, (o, _) in cand.items() if o != SKIPPED and t in known)
        what = f"of the {len(basis)} tests run (not skipped" + (
            f"; {left} that fail on a real PyCUDA left out)" if left else ")"
        )
    passed = [t for t in basis if cand.get(t, ("missing", ""))[0] == PASSED]
    rate = 100.0 * len(passed) / len(basis) if basis else 0.0
    lines.append(f"{args.candidate_label} passes {len(passed)} {what}: {rate:.1f} %")

    per_file: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for t in basis:
        per_file[test_file(t)][0] += 1
        per_file[test_file(t)][1] += cand.get(t, ("missing", ""))[0] == PASSED
    lines.append("")
    lines.append(f"per file ({args.candidate_label} passed / basis):")
    for f, (n, k) in sorted(per_file.items()):
        lines.append(f"  {f:<50} {k:>4} / {n:<4} {100.0 * k / n:5.1f} %")

    missing = [t for t in basis if t not in passed]
    if ref is not None:
        lines.append("")
        lines.append(f"pass on {args.reference_label} but not on {args.candidate_label} ({len(missing)}):")
    else:
        lines.append("")
        lines.append(f"not passed ({len(missing)}):")
    for t in missing[: args.max_list]:
        outcome, message = cand.get(t, ("not run", ""))
        lines.append(f"  {t}  [{outcome}] {message[:200]}")
    if len(missing) > args.max_list:
        lines.append(f"  ... and {len(missing) - args.max_list} more")
    if ref is not None:
        extra = sorted(t for t, (o, _) in cand.items() if o == PASSED and ref.get(t, ("", ""))[0] != PASSED)
        if extra:
            lines.append("")
            lines.append(f"pass on {args.candidate_label} but not on {args.reference_label} ({len(extra)}):")
            lines.extend(f"  {t}  [{ref.get(t, ('not run', ''))[0]}] {ref.get(t, ('', ''))[1][:200]}" for t in extra)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    if args.min_rate is not None and rate < args.min_rate:
        print(f"compare_junit: rate {rate:.1f} % is below the threshold {args.min_rate} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
