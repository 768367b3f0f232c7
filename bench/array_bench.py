#!/usr/bin/env python3
"""GPUArray arithmetic on the bundled kernels, on a GPU machine (not a test):

* bandwidth: ``a + b``, ``a * 2.0`` and ``cumath.exp(a)`` on 2^26 float64, as a fraction of the
  device-to-device copy bandwidth measured in the same run (bytes read + written per second);
* launch-bound: the time per call of the same operations on 1,000 float64 elements, beside CuPy
  and PyCUDA when they are importable (each skipped cleanly when not);
* the first call of each operation in this process against a warm call.

    python3 bench/array_bench.py [--json out.json] [--reps 20]        # on the GPU machine
    PYGPU_BACKEND=host python3 bench/array_bench.py --host            # per-call times on the host

Timing: CUDA events around --reps back-to-back launches on the default stream for the bandwidth
figures (median of 5 rounds); host wall clock around 2,000 calls then a synchronisation for the
per-call figures (median of 5 rounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpu
from pygpu import cumath
from pygpu import gpuarray as ga

BIG = 1 << 26
SMALL = 1000


def event_seconds(fn: Callable[[], Any], reps: int) -> float:
    """Seconds per call of fn on the default stream, from CUDA events (median of 5 rounds)."""
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


def device_sync() -> None:
    pygpu.cudaDeviceSynchronize().check()


def per_call_us(fn: Callable[[], Any], sync: Callable[[], Any], calls: int = 2000) -> float:
    fn()
    sync()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        rounds.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(rounds)


def bandwidth(reps: int) -> dict[str, Any]:
    a = ga.to_gpu(np.random.default_rng(0).random(BIG))
    b = ga.to_gpu(np.random.default_rng(1).random(BIG))
    dst = ga.empty_like(a)
    nbytes = a.nbytes
    copy_s = event_seconds(lambda: pygpu.memcpy_dtod(dst.ptr, a.ptr, nbytes), reps)
    copy_bw = 2 * nbytes / copy_s
    ops: dict[str, tuple[Callable[[], Any], int]] = {
        "a + b": (lambda: a + b, 3 * nbytes),
        "a * 2.0": (lambda: a * 2.0, 2 * nbytes),
        "cumath.exp(a)": (lambda: cumath.exp(a), 2 * nbytes),
    }
    out: dict[str, Any] = {"copy_GBps": copy_bw / 1e9}
    for name, (fn, moved) in ops.items():
        s = event_seconds(fn, reps)
        out[name] = {"GBps": moved / s / 1e9, "fraction_of_copy": moved / s / copy_bw}
    return out


def launch_bound() -> dict[str, Any]:
    host = np.random.default_rng(2).random(SMALL)
    results: dict[str, Any] = {}
    a, b = ga.to_gpu(host), ga.to_gpu(host)
    results["pygpu"] = {
        "a + b": per_call_us(lambda: a + b, device_sync),
        "a * 2.0": per_call_us(lambda: a * 2.0, device_sync),
        "cumath.exp(a)": per_call_us(lambda: cumath.exp(a), device_sync),
    }
    try:
        import cupy as cp  # type: ignore[import-not-found]

        ca, cb = cp.asarray(host), cp.asarray(host)
        csync = cp.cuda.runtime.deviceSynchronize
        results["cupy"] = {
            "a + b": per_call_us(lambda: ca + cb, csync),
            "a * 2.0": per_call_us(lambda: ca * 2.0, csync),
            "cumath.exp(a)": per_call_us(lambda: cp.exp(ca), csync),
        }
    except ImportError as e:
        results["cupy"] = f"skipped: {e}"
    try:
        # The primary context, which pygpu and CuPy use (autoinit would make a context of its own).
        import pycuda.autoprimaryctx  # type: ignore[import-not-found]  # noqa: F401
        import pycuda.cumath as pcm  # type: ignore[import-not-found]
        import pycuda.driver as drv  # type: ignore[import-not-found]
        import pycuda.gpuarray as pga  # type: ignore[import-not-found]

        pa, pb = pga.to_gpu(host), pga.to_gpu(host)
        results["pycuda"] = {
            "a + b": per_call_us(lambda: pa + pb, drv.Context.synchronize),
            "a * 2.0": per_call_us(lambda: pa * 2.0, drv.Context.synchronize),
            "cumath.exp(a)": per_call_us(lambda: pcm.exp(pa), drv.Context.synchronize),
        }
    except ImportError as e:
        results["pycuda"] = f"skipped: {e}"
    return results


def mixed_dtype_cost() -> dict[str, float]:
    """Per-call cost of an op whose operands need a cast first, against the same-dtype op:
    why pygpu casts instead of shipping kernels for every dtype pair."""
    host = np.random.default_rng(3).random(1 << 16)
    x64, y64, y32 = ga.to_gpu(host), ga.to_gpu(host), ga.to_gpu(host.astype(np.float32))
    return {
        "float64 + float64 (us)": per_call_us(lambda: x64 + y64, device_sync, 500),
        "float64 + float32: cast + add (us)": per_call_us(lambda: x64 + y32, device_sync, 500),
        "astype(float64) alone (us)": per_call_us(lambda: y32.astype(np.float64), device_sync, 500),
    }


def first_call() -> dict[str, float]:
    """Milliseconds of the first call of each operation in this process over a warm call."""
    a = ga.to_gpu(np.arange(SMALL, dtype=np.float64))
    out = {}
    for name, fn in (("a + b", lambda: a + a), ("a * 2.0", lambda: a * 2.0), ("cumath.exp(a)", lambda: cumath.exp(a))):
        t0 = time.perf_counter()
        fn()
        pygpu.cudaDeviceSynchronize().check()
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        fn()
        pygpu.cudaDeviceSynchronize().check()
        out[name] = (cold - (time.perf_counter() - t0)) * 1e3
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--host", action="store_true", help="per-call and mixed-dtype figures only (any backend)")
    args = parser.parse_args()
    report: dict[str, Any] = {"backend": pygpu.backend(), "first_call_ms_over_warm": first_call()}
    if args.host:
        report["per_call_us"] = launch_bound()
        report["mixed_dtype"] = mixed_dtype_cost()
    else:
        if pygpu.backend() == "host":
            print("the bandwidth figures need a GPU backend (or pass --host)", file=sys.stderr)
            return 2
        report["bandwidth_2^26_float64"] = bandwidth(args.reps)
        report["per_call_us"] = launch_bound()
        report["mixed_dtype"] = mixed_dtype_cost()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
