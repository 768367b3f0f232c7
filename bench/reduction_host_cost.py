#!/usr/bin/env python3
"""What a reduction costs per call (issue 30): ``sum``, ``max`` and ``dot`` issued back to back
(1,000 and 2^24 elements unless --sizes says otherwise, float32 and float64), CuPy's beside them where installed, and at
2^24 the fraction of a device-to-device copy's bandwidth (bytes read against the copy's bytes
read and written, as bench/array_bench.py counts). Medians of rounds, µs per call.

    python3 bench/reduction_host_cost.py [--backend cuda] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
from collections.abc import Callable
from typing import Any

import numpy as np

from array_bench import per_call_us  # this folder: µs per call of back-to-back calls and one sync

ROUNDS = 7  # samples per figure, of which the median is printed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--profile", action="store_true", help="print cProfile's split of a 1,000-element sum")
    p.add_argument("--sizes", default=f"1000,{1 << 24}", help="comma-separated element counts (default: 1000,2^24)")
    args = p.parse_args()
    import pygpu
    import pygpu.gpuarray as ga

    if args.backend:
        pygpu.set_backend(args.backend)
    try:
        import cupy as cp
    except ImportError:
        cp = None
    sync = pygpu.cudaDeviceSynchronize
    for n in (int(x) for x in args.sizes.split(",")):
        calls = 2000 if n <= 1000 else 200
        for dtype in (np.float32, np.float64):
            rng = np.random.default_rng(0)
            host = rng.random(n).astype(dtype)
            a, b = ga.to_gpu(host), ga.to_gpu(host[::-1].copy())
            ours = {"sum": a.sum, "max": a.max, "dot": lambda: ga.dot(a, b)}
            theirs: dict[str, Callable[[], Any]] = {}
            if cp is not None:
                c, d = cp.asarray(host), cp.asarray(host[::-1].copy())
                theirs = {"sum": c.sum, "max": c.max, "dot": lambda: cp.dot(c, d)}
            copy = None
            if n > 1000:
                dst = ga.empty_like(a)
                copy = per_call_us(lambda: pygpu.memcpy_dtod(dst.ptr, a.ptr, a.nbytes), sync, calls, ROUNDS)
            for op, f in ours.items():
                t = per_call_us(f, sync, calls, ROUNDS)
                line = f"n={n:>9} {np.dtype(dtype).name:8} {op:4}: pygpu {t:7.2f} us"
                if op in theirs:
                    line += f", CuPy {per_call_us(theirs[op], sync, calls, ROUNDS):7.2f} us"
                if copy is not None:
                    read = a.nbytes * (2 if op == "dot" else 1)
                    line += f", {read / t / (2 * a.nbytes / copy):.3f} of the copy"
                print(line, flush=True)
    if args.profile:
        a = ga.to_gpu(np.ones(1000, np.float32))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            a.sum()
        sync()
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(14)
        print("\n".join(text.getvalue().splitlines()[6:24]), flush=True)


if __name__ == "__main__":
    main()
