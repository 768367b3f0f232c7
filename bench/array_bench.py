#!/usr/bin/env python3
"""GPUArray operations on the bundled kernels (not a test).

On a GPU machine:

* bandwidth: ``a + b``, ``a * 2.0`` and ``cumath.exp(a)`` on 2^26 float64, as a fraction of the
  device-to-device copy bandwidth measured in the same run (bytes read + written per second);
* reductions (issue 30): float32 and float64 ``sum``, ``min``, ``max`` and ``dot`` of 2^24
  elements as a fraction of the same copy bandwidth (target >= 95 %); a 1,000-element ``sum``,
  ``max`` and ``dot`` per call beside CuPy's (target <= CuPy); ``a[::2] * 3`` against the same
  multiply of as many contiguous elements (target >= 80 %; but reading every other float32 reads
  every 32-byte DRAM sector, so where both are bound by DRAM the strided one takes 3/2 of the
  time: about 67 % is the bound); each target true or false under ``targets``;
* launch-bound: the time per call of the element-wise operations on 1,000 float64 elements,
  beside CuPy and PyCUDA when they are importable (each skipped cleanly when not);
* the first call of each operation in this process against a warm call.

On the host backend (``--host``): the same launch-bound and first-call figures, and each
operation (with cumath's log, log10, trigonometric and hyperbolic functions beside exp) against
numpy in the same process at 1,000, 2^16, 2^20 and 2^22 elements (issue 30's
targets: <= 2x numpy's time from 2^20 elements, a 1,000-element reduction <= 50 us).

    python3 bench/array_bench.py [--json out.json] [--reps 20]        # on the GPU machine
    OPENBLAS_NUM_THREADS=1 PYGPU_BACKEND=host python3 bench/array_bench.py --host   # on the host

(OpenBLAS's threads spin after numpy's ``dot`` and take the cores pygpu's host pool needs, and
the reverse: on a machine of few cores the ``dot`` figures of both vary tenfold without it.)

Timing: CUDA events around --reps back-to-back launches on the default stream for the bandwidth
figures (median of 5 rounds); host wall clock around 2,000 calls then a synchronisation for the
per-call figures (median of 5 rounds); against numpy, rounds of pygpu and numpy alternate (each
about 20 ms, median of 7).
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
from pygpu.scan import InclusiveScanKernel

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


def per_call_us(fn: Callable[[], Any], sync: Callable[[], Any], calls: int = 2000, rounds: int = 5) -> float:
    """µs per call of ``calls`` back-to-back calls of fn and one sync() (after a warm-up call);
    the median of ``rounds``. The other scripts of this folder time calls with it too."""
    fn()
    sync()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


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


REDUCTION_BIG = 1 << 24


def reductions(reps: int) -> dict[str, Any]:
    """Issue 30's GPU figures: reductions of 2^24 elements as a fraction of the copy bandwidth,
    1,000-element reductions per call beside CuPy, strided against contiguous multiplies."""
    rng = np.random.default_rng(4)
    out: dict[str, Any] = {}
    src = ga.to_gpu(rng.random(REDUCTION_BIG))
    dst = ga.empty_like(src)
    copy_s = event_seconds(lambda: pygpu.memcpy_dtod(dst.ptr, src.ptr, src.nbytes), reps)
    copy_bw = 2 * src.nbytes / copy_s
    out["copy_GBps"] = copy_bw / 1e9
    fractions: dict[str, float] = {}
    for dt in (np.float32, np.float64):
        a = ga.to_gpu(rng.random(REDUCTION_BIG).astype(dt))
        b = ga.to_gpu(rng.random(REDUCTION_BIG).astype(dt))
        ops: dict[str, tuple[Callable[[], Any], int]] = {
            "sum": (lambda: a.sum(), a.nbytes),
            "min": (lambda: a.min(), a.nbytes),
            "max": (lambda: a.max(), a.nbytes),
            "dot": (lambda: ga.dot(a, b), 2 * a.nbytes),
        }
        for name, (fn, moved) in ops.items():
            s = event_seconds(fn, reps)
            fractions[f"{name} {np.dtype(dt).name}"] = moved / s / copy_bw
    out["fraction_of_copy_2^24"] = fractions
    # a[::2] * 3 reads and writes 2^23 float32, as c * 3 on 2^23 contiguous ones does.
    whole = ga.to_gpu(rng.random(REDUCTION_BIG).astype(np.float32))
    half = ga.to_gpu(rng.random(REDUCTION_BIG // 2).astype(np.float32))
    strided_s = event_seconds(lambda: whole[::2] * 3, reps)
    contiguous_s = event_seconds(lambda: half * 3, reps)
    out["strided_a[::2]*3"] = {
        "fraction_of_copy": 2 * half.nbytes / strided_s / copy_bw,
        "fraction_of_contiguous": contiguous_s / strided_s,
        "dram_sector_bound": 2 / 3,
    }
    host = rng.random(SMALL)
    a32, b32 = ga.to_gpu(host.astype(np.float32)), ga.to_gpu(host.astype(np.float32))
    small: dict[str, Any] = {
        "pygpu": {
            "sum": per_call_us(lambda: a32.sum(), device_sync),
            "max": per_call_us(lambda: a32.max(), device_sync),
            "dot": per_call_us(lambda: ga.dot(a32, b32), device_sync),
        }
    }
    try:
        import cupy as cp

        c32, d32 = cp.asarray(host.astype(np.float32)), cp.asarray(host.astype(np.float32))
        csync = cp.cuda.runtime.deviceSynchronize
        small["cupy"] = {
            "sum": per_call_us(lambda: cp.sum(c32), csync),
            "max": per_call_us(lambda: cp.max(c32), csync),
            "dot": per_call_us(lambda: cp.dot(c32, d32), csync),
        }
    except ImportError as e:
        small["cupy"] = f"skipped: {e}"
    out["per_call_us_1000_float32"] = small
    targets = {f"{k} >= 95% of copy": v >= 0.95 for k, v in fractions.items()}
    targets["a[::2]*3 >= 80% of contiguous"] = out["strided_a[::2]*3"]["fraction_of_contiguous"] >= 0.8
    if isinstance(small["cupy"], dict):
        for name, us in small["pygpu"].items():
            targets[f"1,000-element {name} <= CuPy"] = us <= small["cupy"][name]
    out["targets"] = targets
    return out


HOST_SIZES = (1000, 1 << 16, 1 << 20, 1 << 22)
# cumath's other vectorised functions (pygpu_vector_math.h) beside exp, on [0, 1) as the rest.
CUMATH_AGAINST_NUMPY = {
    "log": np.log,
    "log10": np.log10,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
}


def alternating_us(fns: list[Callable[[], Any]], syncs: list[Callable[[], Any]], rounds: int = 7) -> list[float]:
    """Median µs per call of each of fns, their rounds alternating (so that a busy moment of the
    machine hits each alike); a round is about 20 ms of calls, then its sync."""
    reps = []
    for fn, sync in zip(fns, syncs):
        fn()
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        reps.append(max(2, min(5000, int(0.02 / max(time.perf_counter() - t0, 1e-7)))))
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, (fn, sync, r) in enumerate(zip(fns, syncs, reps)):
            t0 = time.perf_counter()
            for _ in range(r):
                fn()
            sync()
            samples[k].append((time.perf_counter() - t0) / r * 1e6)
    return [statistics.median(s) for s in samples]


def host_against_numpy(sizes: tuple[int, ...] = HOST_SIZES) -> dict[str, Any]:
    """pygpu on the host backend against numpy in this process: µs per call and their ratio."""
    rows: dict[str, Any] = {}
    scans = {dt: InclusiveScanKernel(dt, "a+b") for dt in (np.float32, np.float64)}
    for n in sizes:
        for dt in (np.float32, np.float64):
            h = np.random.default_rng(5).random(n).astype(dt)
            g = np.random.default_rng(6).random(n).astype(dt)
            a, b = ga.to_gpu(h), ga.to_gpu(g)
            scan_in = ga.to_gpu(h)
            scan = scans[dt]
            ops: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
                "sum": (lambda: a.sum(), lambda: h.sum()),
                "min": (lambda: a.min(), lambda: h.min()),
                "max": (lambda: a.max(), lambda: h.max()),
                "dot": (lambda: ga.dot(a, b), lambda: np.dot(h, g)),
                "exp": (lambda: cumath.exp(a), lambda: np.exp(h)),
                "a + b": (lambda: a + b, lambda: h + g),
                "a[::2] * 3": (lambda: a[::2] * 3, lambda: h[::2] * 3),
                "cumsum": (lambda: scan(scan_in), lambda: np.cumsum(h)),
            }
            for name, ufunc in CUMATH_AGAINST_NUMPY.items():
                ops[name] = (lambda f=getattr(cumath, name): f(a), lambda u=ufunc: u(h))
            for name, (mine, theirs) in ops.items():
                ours, numpy_us = alternating_us([mine, theirs], [device_sync, lambda: None])
                rows[f"{name} {np.dtype(dt).name} {n}"] = {
                    "pygpu_us": ours,
                    "numpy_us": numpy_us,
                    "ratio": ours / numpy_us,
                }
    targets = {}
    for key, row in rows.items():
        n = int(key.rsplit(" ", 1)[1])
        name = key.split(" ")[0]
        if n >= 1 << 20:
            targets[f"{key}: <= 2x numpy"] = row["ratio"] <= 2
        elif n == 1000 and name in ("sum", "min", "max", "dot"):
            targets[f"{key}: <= 50 us"] = row["pygpu_us"] <= 50
    return {"rows": rows, "targets": targets}


def print_host_table(result: dict[str, Any]) -> None:
    """The rows as a markdown table on stderr (stdout carries the JSON)."""
    print("| operation | dtype | n | pygpu µs | numpy µs | ratio |", file=sys.stderr)
    print("|---|---|---|---|---|---|", file=sys.stderr)
    for key, row in result["rows"].items():
        name, dtype, n = key.rsplit(" ", 2)
        print(
            f"| {name} | {dtype} | {int(n):,} | {row['pygpu_us']:.1f} | {row['numpy_us']:.1f} | {row['ratio']:.2f} |",
            file=sys.stderr,
        )
    failed = [k for k, ok in result["targets"].items() if not ok]
    print(f"targets: {len(result['targets']) - len(failed)} of {len(result['targets'])} met", file=sys.stderr)
    for k in failed:
        print(f"  missed: {k}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--host", action="store_true", help="per-call figures and numpy side by side (any backend)")
    parser.add_argument("--sizes", type=int, nargs="*", help="--host: the sizes to compare with numpy")
    args = parser.parse_args()
    report: dict[str, Any] = {"backend": pygpu.backend(), "first_call_ms_over_warm": first_call()}
    if args.host:
        report["per_call_us"] = launch_bound()
        report["mixed_dtype"] = mixed_dtype_cost()
        report["against_numpy"] = host_against_numpy(tuple(args.sizes) if args.sizes else HOST_SIZES)
        print_host_table(report["against_numpy"])
    else:
        if pygpu.backend() == "host":
            print("the bandwidth figures need a GPU backend (or pass --host)", file=sys.stderr)
            return 2
        report["bandwidth_2^26_float64"] = bandwidth(args.reps)
        report["reductions"] = reductions(args.reps)
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
