#!/usr/bin/env python3
"""What ``pygpu.profile()`` costs per launch (not a test; issue 32's target: at most 1 µs extra
per launch while recording, nothing outside a recording).

A compiled empty kernel (one block of one thread) launched back to back, prepared and by
``__call__``, and a 1-element device-to-device copy, each timed outside a recording and inside
one, rounds alternating; medians in µs per call and the difference. Outside a recording the
launch path reads one flag: compare this script's "outside" figures between two builds run
one after the other (``--json`` for each) for that.

    PYGPU_BACKEND=host python3 bench/profile_bench.py [--calls 20000] [--rounds 9] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpu
import pygpu.driver as drv
from pygpu.compiler import SourceModule

EMPTY = 'extern "C" __global__ void empty(float *p, int n) { if (n < 0) p[0] = 1.0f; }'


def per_call_us(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    pygpu.cudaDeviceSynchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    kernel = SourceModule(EMPTY, no_extern_c=True).get_function("empty")
    target = drv.mem_alloc(4)
    other = drv.mem_alloc(4)
    prepared = SourceModule(EMPTY, no_extern_c=True).get_function("empty").prepare("Pi")
    n = np.int32(1)
    cases: dict[str, Callable[[], Any]] = {
        "launch by __call__": lambda: kernel(target, n, block=(1, 1, 1), grid=(1, 1)),
        "prepared launch": lambda: prepared.prepared_call((1, 1), (1, 1, 1), target, 1),
        "4-byte memcpy_dtod": lambda: drv.memcpy_dtod(other, target, 4),
    }
    # getattr: an older build (the baseline of a comparison) has no recorder at all.
    recording = bool(getattr(pygpu.capabilities(), "activity_records", False))
    figures: dict[str, dict[str, float]] = {}
    for name, fn in cases.items():
        per_call_us(fn, args.calls // 10)  # warm
        outside, inside = [], []
        for _ in range(args.rounds):
            outside.append(per_call_us(fn, args.calls))
            if recording:
                with pygpu.profile():
                    inside.append(per_call_us(fn, args.calls))
        row = {"outside_us": statistics.median(outside)}
        if inside:
            row["inside_us"] = statistics.median(inside)
            row["extra_us"] = row["inside_us"] - row["outside_us"]
        figures[name] = row
        text = ", ".join(f"{k} {v:.3f}" for k, v in row.items())
        print(f"{name}: {text}")
    result = {"backend": pygpu.backend(), "calls": args.calls, "rounds": args.rounds, "figures": figures}
    if not recording:
        result["note"] = "this backend does not record: only the figures outside a recording"
        print(result["note"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
