#!/usr/bin/env python3
"""Generated kernels and memory pools, on a GPU machine (not a test):

* bandwidth: ElementwiseKernel ``z = a*x + y`` and a ReductionKernel dot product on 2^26 float64,
  as a fraction of the device-to-device copy bandwidth measured in the same run (bytes read +
  written per second), beside CuPy's ElementwiseKernel/ReductionKernel when importable;
* launch overhead: time per call of the same ElementwiseKernel on 1,000 elements (pygpu, CuPy);
* first call: building the ElementwiseKernel object again in a fresh process reads the warm
  disk cache (target: <= 2 ms);
* DeviceMemoryPool allocate+free of a held 1 MiB block (target: <= 0.5 us), beside CuPy's
  MemoryPool when importable.

    python3 bench/kernels_bench.py [--json out.json] [--reps 20]         # on the GPU machine
    PYGPU_BACKEND=host python3 bench/kernels_bench.py --quick            # smoke run anywhere

Timing: CUDA events around --reps back-to-back launches (median of 5 rounds) for bandwidth;
wall clock around many calls then a synchronisation (median of 5 rounds) for per-call figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import pygpu
from array_bench import per_call_us  # this folder: µs per call of back-to-back calls and one sync
from pygpu import gpuarray, tools
from pygpu.elementwise import ElementwiseKernel
from pygpu.reduction import ReductionKernel

AXPY = ("double a, const double *x, const double *y, double *z", "z[i] = a*x[i] + y[i]")
DOT = ("0", "a+b", "x[i]*y[i]", "const double *x, const double *y")


def event_seconds(fn: Callable[[], Any], reps: int) -> float:
    fn()
    pygpu.cudaDeviceSynchronize().check()
    rounds = []
    for _ in range(5):
        start, stop = pygpu.cudaEvent_t(), pygpu.cudaEvent_t()
        pygpu.cudaEventRecord(start, None).check()
        for _ in range(reps):
            fn()
        pygpu.cudaEventRecord(stop, None).check()
        pygpu.cudaEventSynchronize(stop).check()
        ms, err = pygpu.cudaEventElapsedTime(start, stop)
        err.check()
        rounds.append(ms / 1e3 / reps)
    return statistics.median(rounds)


def pygpu_figures(n: int, reps: int, calls: int) -> dict[str, float]:
    out: dict[str, float] = {}
    x = gpuarray.to_gpu(np.random.default_rng(0).standard_normal(n))
    y = gpuarray.to_gpu(np.random.default_rng(1).standard_normal(n))
    z = gpuarray.empty_like(x)
    axpy = ElementwiseKernel(*AXPY, name="bench_axpy")
    dot = ReductionKernel(np.float64, *DOT, name="bench_dot")
    copy_s = event_seconds(lambda: pygpu.memcpy_dtod(z.gpudata, x.gpudata, x.nbytes), reps)
    copy_bw = 2 * x.nbytes / copy_s
    out["d2d_copy_GBps"] = copy_bw / 1e9
    axpy_s = event_seconds(lambda: axpy(2.0, x, y, z), reps)
    out["axpy_GBps"] = 3 * x.nbytes / axpy_s / 1e9
    out["axpy_fraction_of_copy"] = 3 * x.nbytes / axpy_s / copy_bw
    dot_s = event_seconds(lambda: dot(x, y), reps)
    out["dot_GBps"] = 2 * x.nbytes / dot_s / 1e9
    out["dot_fraction_of_copy"] = 2 * x.nbytes / dot_s / copy_bw
    np.testing.assert_allclose(dot(x, y).get(), x.get() @ y.get(), rtol=1e-8)
    small = [gpuarray.zeros(1000, np.float64) for _ in range(3)]
    out["axpy_1000_us_per_call"] = per_call_us(
        lambda: axpy(2.0, *small), lambda: pygpu.cudaDeviceSynchronize().check(), calls
    )
    pool = tools.DeviceMemoryPool()
    pool.allocate(1 << 20).free()
    out["pool_alloc_free_1MiB_us"] = per_call_us(lambda: pool.allocate(1 << 20).free(), lambda: None, calls * 10)
    return out


def cupy_figures(n: int, reps: int, calls: int) -> dict[str, float]:
    try:
        import cupy as cp  # type: ignore[import-not-found]
    except ImportError:
        return {}
    out: dict[str, float] = {}
    x = cp.random.standard_normal(n)
    y = cp.random.standard_normal(n)
    z = cp.empty_like(x)
    axpy = cp.ElementwiseKernel("float64 a, float64 x, float64 y", "float64 z", "z = a*x + y", "cupy_axpy")
    dot = cp.ReductionKernel("float64 x, float64 y", "float64 z", "x*y", "a+b", "z = a", "0", "cupy_dot")

    def cupy_events(fn: Callable[[], Any]) -> float:
        fn()
        cp.cuda.Device().synchronize()
        rounds = []
        for _ in range(5):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(reps):
                fn()
            stop.record()
            stop.synchronize()
            rounds.append(float(cp.cuda.get_elapsed_time(start, stop)) / 1e3 / reps)
        return statistics.median(rounds)

    out["cupy_axpy_GBps"] = 3 * x.nbytes / cupy_events(lambda: axpy(2.0, x, y, z)) / 1e9
    out["cupy_dot_GBps"] = 2 * x.nbytes / cupy_events(lambda: dot(x, y)) / 1e9
    small = [cp.zeros(1000) for _ in range(3)]
    out["cupy_axpy_1000_us_per_call"] = per_call_us(
        lambda: axpy(2.0, small[0], small[1], small[2]), lambda: cp.cuda.Device().synchronize(), calls
    )
    pool = cp.cuda.MemoryPool()
    pool.malloc(1 << 20)
    out["cupy_pool_alloc_free_1MiB_us"] = per_call_us(lambda: pool.malloc(1 << 20), lambda: None, calls * 10)
    return out


def first_call_ms() -> float:
    """Building the ElementwiseKernel in a fresh process, the disk cache warm (median of 3); the
    device is initialised first, as in compile_bench (context creation is no part of it)."""
    code = (
        "import time, pygpu\nfrom pygpu.elementwise import ElementwiseKernel\npygpu.mem_alloc(1)\n"
        f"t0 = time.perf_counter(); ElementwiseKernel({AXPY[0]!r}, {AXPY[1]!r}, name='bench_axpy')\n"
        "print((time.perf_counter() - t0) * 1e3)"
    )
    times = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, e.g. on the host)")
    args = parser.parse_args()
    n = 1 << 16 if args.quick else 1 << 26
    calls = 200 if args.quick else 2000
    reps = 2 if args.quick else args.reps
    figures = {"backend": pygpu.backend(), "n": n}
    figures.update(pygpu_figures(n, reps, calls))
    figures.update(cupy_figures(n, reps, calls))
    figures["first_call_warm_cache_ms"] = first_call_ms()
    for key, value in figures.items():
        print(f"{key:36s} {value:.4g}" if isinstance(value, float) else f"{key:36s} {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
