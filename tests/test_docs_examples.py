"""Every Python example of the README and the documentation pages runs, on the host backend, each
block in a fresh process (so that an example's imports and state are its own); so does the example
in pygpu's package docstring (help(pygpu)).

Every ```python block of README.md and docs/*.md is a complete program and is collected. A block
that cannot run here (it needs a GPU, several GPUs or MPI) opts out with a first line

    # not run in CI: <why>

and such blocks must stay few (MAX_OPTED_OUT). Examples should check their results with asserts,
so that an example that computes a wrong number fails here instead of misleading a reader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_python

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
OPT_OUT = re.compile(r"#\s*not run in CI:\s*(\S.*)")
MAX_OPTED_OUT = 3


def _blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for match in re.finditer(r"^```python[ \t]*\n(.*?)^```", text, re.S | re.M):
            found.append((page, text[: match.start()].count("\n") + 1, match.group(1)))
    return found


def _opted_out(code: str) -> bool:
    return bool(OPT_OUT.fullmatch(code.splitlines()[0].strip())) if code.strip() else False


EXAMPLES = [block for block in _blocks() if not _opted_out(block[2])]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e[0]}:{e[1]}")
def test_docs_example_runs(example: tuple[str, int, str]) -> None:
    page, line, code = example
    result = run_python(code, env={"PYGPU_BACKEND": "host"}, timeout=120)
    assert result.returncode == 0, f"{page}, the example at line {line}:\n{result.stderr}"


def test_the_examples_are_collected() -> None:
    pages = {page for page, _, _ in EXAMPLES}
    assert "README.md" in pages and "docs/getting_started.md" in pages
    assert len(EXAMPLES) >= 15


def test_few_examples_opt_out_and_each_says_why() -> None:
    opted = [(page, line) for page, line, code in _blocks() if _opted_out(code)]
    assert len(opted) <= MAX_OPTED_OUT, f"too many examples not run in CI: {opted}"
    # A marker that is not on the first line, or has no reason, would silently run the block
    # (or fail it): the marker is only honoured in the documented form.
    for page, line, code in _blocks():
        for later in code.splitlines()[1:]:
            assert not re.match(r"\s*#\s*not run in CI", later), (
                f"{page}:{line}: the opt-out marker must be the first line"
            )
        first = code.splitlines()[0].strip() if code.strip() else ""
        if first.lower().startswith("# not run in ci"):
            assert _opted_out(code), f"{page}:{line}: '# not run in CI: <why>' needs a reason"


def test_package_docstring_example_runs() -> None:
    result = run_python(
        """
        import doctest, sys
        import pygpu
        failed, attempted = doctest.testmod(pygpu)
        sys.exit(1 if failed or not attempted else 0)
        """,
        env={"PYGPU_BACKEND": "host"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
