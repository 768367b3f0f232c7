#!/usr/bin/env python3
"""Reduction bandwidth on a GPU machine (not a test): pygpu.gpuarray's sum, dot and max of 2^26
float64 as a fraction of the device-to-device copy bandwidth measured in the same run, with
CuPy's side by side when it is importable.

    python3 bench/reduction_bench.py --json reductions.json     # on the GPU machine
    python3 bench/reduction_bench.py --quick --backend host     # a smoke test of this script anywhere

Bandwidth = bytes the operation must move / time: a copy reads and writes n*8 bytes each; sum
and max read n*8, dot reads 2*n*8 (the 0-d result is negligible). Time = median over --reps of
the elapsed time between CUDA events around --inner back-to-back calls on one stream, after a
warm-up call (so the first call's kernel loading is not counted). The target of issue 12 is
>= 85% of the copy bandwidth for sum, dot and max.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any


def event_timer(pygpu: Any, stream: Any) -> Callable[[Callable[[], Any], int], float]:
    """Seconds per call of fn, timed with events on `stream` around `inner` calls."""

    def timed(fn: Callable[[], Any], inner: int) -> float:
        start, end = pygpu.cudaEvent_t(), pygpu.cudaEvent_t()
        pygpu.cudaEventRecord(start, stream).check()
        for _ in range(inner):
            fn()
        pygpu.cudaEventRecord(end, stream).check()
        pygpu.cudaEventSynchronize(end).check()
        ms, status = pygpu.cudaEventElapsedTime(start, end)
        status.check()
        return ms / 1e3 / inner

    return timed


def median_time(
    timed: Callable[[Callable[[], Any], int], float], fn: Callable[[], Any], reps: int, inner: int
) -> float:
    fn()  # warm-up: loads the kernels
    return statistics.median(timed(fn, inner) for _ in range(reps))


def measure_pygpu(n: int, reps: int, inner: int) -> dict[str, float]:
    import numpy as np
    import pygpu
    from pygpu import gpuarray

    stream = pygpu.driver.Stream()
    a = gpuarray.to_gpu(np.random.default_rng(0).standard_normal(n))
    b = gpuarray.to_gpu(np.random.default_rng(1).standard_normal(n))
    dst = gpuarray.empty(n, np.float64)
    timed = event_timer(pygpu, stream)
    nbytes = n * 8
    t_copy = median_time(timed, lambda: pygpu.memcpy_dtod(dst.ptr, a.ptr, nbytes, stream), reps, inner)
    t_sum = median_time(timed, lambda: gpuarray.sum(a, stream=stream), reps, inner)
    t_dot = median_time(timed, lambda: gpuarray.dot(a, b, stream=stream), reps, inner)
    t_max = median_time(timed, lambda: gpuarray.max(a, stream=stream), reps, inner)
    # correctness of what was timed, against numpy
    host_a, host_b = a.get(), b.get()
    assert np.isclose(gpuarray.sum(a).get(), host_a.sum(), rtol=1e-9)
    assert np.isclose(gpuarray.dot(a, b).get(), np.dot(host_a, host_b), rtol=1e-9)
    assert gpuarray.max(a).get() == host_a.max()
    copy_bw = 2 * nbytes / t_copy
    return {
        "copy_GBps": copy_bw / 1e9,
        "sum_GBps": nbytes / t_sum / 1e9,
        "dot_GBps": 2 * nbytes / t_dot / 1e9,
        "max_GBps": nbytes / t_max / 1e9,
        "sum_fraction_of_copy": nbytes / t_sum / copy_bw,
        "dot_fraction_of_copy": 2 * nbytes / t_dot / copy_bw,
        "max_fraction_of_copy": nbytes / t_max / copy_bw,
        "sum_us": t_sum * 1e6,
        "dot_us": t_dot * 1e6,
        "max_us": t_max * 1e6,
        "copy_us": t_copy * 1e6,
    }


def measure_cupy(n: int, reps: int, inner: int) -> dict[str, float] | None:
    try:
        import cupy as cp
    except ImportError:
        return None
    a = cp.random.default_rng(0).standard_normal(n)
    b = cp.random.default_rng(1).standard_normal(n)
    dst = cp.empty_like(a)
    nbytes = n * 8

    def timed(fn: Callable[[], Any], inner_calls: int) -> float:
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(inner_calls):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3 / inner_calls

    t_copy = median_time(timed, lambda: dst.__setitem__(Ellipsis, a), reps, inner)
    t_sum = median_time(timed, lambda: cp.sum(a), reps, inner)
    t_dot = median_time(timed, lambda: cp.dot(a, b), reps, inner)
    t_max = median_time(timed, lambda: cp.max(a), reps, inner)
    copy_bw = 2 * nbytes / t_copy
    return {
        "copy_GBps": copy_bw / 1e9,
        "sum_fraction_of_copy": nbytes / t_sum / copy_bw,
        "dot_fraction_of_copy": 2 * nbytes / t_dot / copy_bw,
        "max_fraction_of_copy": nbytes / t_max / copy_bw,
        "sum_us": t_sum * 1e6,
        "dot_us": t_dot * 1e6,
        "max_us": t_max * 1e6,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2n", type=int, default=26)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--inner", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="2^16 elements, 2 reps of 2 calls")
    parser.add_argument("--backend", help="PYGPU_BACKEND for this run (default: the environment's)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    if args.backend:
        os.environ["PYGPU_BACKEND"] = args.backend
    n, reps, inner = (1 << 16, 2, 2) if args.quick else (1 << args.log2n, args.reps, args.inner)
    import pygpu

    results: dict[str, Any] = {"n": n, "backend": pygpu.backend(), "pygpu": measure_pygpu(n, reps, inner)}
    if pygpu.backend() == "cuda":
        results["cupy"] = measure_cupy(n, reps, inner)
    for who in ("pygpu", "cupy"):
        figures = results.get(who)
        if figures:
            print(
                f"{who:6s} copy {figures['copy_GBps']:8.1f} GB/s   "
                + "   ".join(
                    f"{op} {figures[op + '_fraction_of_copy']:6.1%} ({figures[op + '_us']:.1f} us)"
                    for op in ("sum", "dot", "max")
                )
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
