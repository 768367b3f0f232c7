#!/usr/bin/env python3
"""Per-call time of launch-bound calls, pygpu beside CuPy (when importable), on 1,000 elements
(not a test):

* a compiled kernel launched by ``__call__`` with (pointer, int32, float64), and prepared;
* ``a + b``, ``a * 2.0`` and ``cumath.exp(a)`` on float32 and float64;
* a user ``ElementwiseKernel`` ``z = a*x + y`` on float32 and float64.

    python3 bench/launch_bench.py [--json out.json]                  # on the GPU machine
    PYGPU_BACKEND=host python3 bench/launch_bench.py --calls 2000     # Python's share, anywhere

Timing: wall clock around ``--calls`` back-to-back calls then one device synchronisation,
median of ``--rounds`` rounds, in microseconds per call. The kernel's own GPU time is part of
it (a few microseconds on 1,000 elements): the launch-bound targets compare these figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpu
from array_bench import per_call_us  # this folder: µs per call of back-to-back calls and one sync
from pygpu import cumath
from pygpu import gpuarray as ga
from pygpu.compiler import SourceModule
from pygpu.elementwise import ElementwiseKernel

N = 1000
EMPTY = 'extern "C" __global__ void empty(float *p, int n, double x) { if (n < 0) p[0] = (float)x; }'
AXPY = "{t} a, const {t} *x, const {t} *y, {t} *z", "z[i] = a*x[i] + y[i]"
CTYPES = {"float32": "float", "float64": "double"}


def pygpu_calls() -> dict[str, Callable[[], Any]]:
    calls: dict[str, Callable[[], Any]] = {}
    module = SourceModule(EMPTY, no_extern_c=True)
    f = module.get_function("empty")
    prepared = module.get_function("empty").prepare("Pid")
    p = ga.empty(N, np.float32)
    n, x = np.int32(N), np.float64(2.0)
    calls["launch __call__ (ptr, int, double)"] = lambda: f(p, n, x, block=(256, 1, 1), grid=(4, 1))
    calls["launch prepared (ptr, int, double)"] = lambda: prepared.prepared_call((4, 1), (256, 1, 1), p, N, 2.0)
    rng = np.random.default_rng(0)
    for dtype, ctype in CTYPES.items():
        a, b = ga.to_gpu(rng.random(N).astype(dtype)), ga.to_gpu(rng.random(N).astype(dtype))
        z = ga.empty_like(a)
        axpy = ElementwiseKernel(AXPY[0].format(t=ctype), AXPY[1], name=f"axpy_{ctype}")
        calls[f"a + b {dtype}"] = lambda a=a, b=b: a + b
        calls[f"a * 2.0 {dtype}"] = lambda a=a: a * 2.0
        calls[f"cumath.exp(a) {dtype}"] = lambda a=a: cumath.exp(a)
        calls[f"ElementwiseKernel axpy {dtype}"] = lambda k=axpy, a=a, b=b, z=z: k(2.0, a, b, z)
    return calls


def cupy_calls() -> dict[str, Callable[[], Any]] | str:
    try:
        import cupy as cp  # type: ignore[import-not-found]
    except ImportError as e:
        return f"skipped: {e}"
    calls: dict[str, Callable[[], Any]] = {}
    kernel = cp.RawKernel(EMPTY, "empty")
    p = cp.empty(N, cp.float32)
    n, x = np.int32(N), np.float64(2.0)
    calls["launch __call__ (ptr, int, double)"] = lambda: kernel((4,), (256,), (p, n, x))
    rng = np.random.default_rng(0)
    for dtype, ctype in CTYPES.items():
        a, b = cp.asarray(rng.random(N).astype(dtype)), cp.asarray(rng.random(N).astype(dtype))
        z = cp.empty_like(a)
        # CuPy names parameter types as numpy does ("float" would be float64 there)
        axpy = cp.ElementwiseKernel(f"{dtype} a, {dtype} x, {dtype} y", f"{dtype} z", "z = a*x + y", f"axpy_{ctype}")
        scalar = np.dtype(dtype).type(2.0)
        calls[f"a + b {dtype}"] = lambda a=a, b=b: a + b
        calls[f"a * 2.0 {dtype}"] = lambda a=a: a * 2.0
        calls[f"cumath.exp(a) {dtype}"] = lambda a=a: cp.exp(a)
        calls[f"ElementwiseKernel axpy {dtype}"] = lambda k=axpy, a=a, b=b, z=z, s=scalar: k(s, a, b, z)
    return calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--calls", type=int, default=5000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    report: dict[str, Any] = {"backend": pygpu.backend(), "elements": N, "us_per_call": {}}

    def sync() -> None:
        pygpu.cudaDeviceSynchronize().check()

    mine = {name: per_call_us(fn, sync, args.calls, args.rounds) for name, fn in pygpu_calls().items()}
    peers = cupy_calls() if pygpu.backend() != "host" else "skipped: host backend"
    theirs: dict[str, float] = {}
    if isinstance(peers, str):
        report["cupy"] = peers
    else:
        import cupy as cp

        theirs = {
            name: per_call_us(fn, cp.cuda.runtime.deviceSynchronize, args.calls, args.rounds)
            for name, fn in peers.items()
        }
    print(f"{'per call, us (median)':42s} {'pygpu':>8s} {'cupy':>8s} {'ratio':>7s}")
    for name, value in mine.items():
        other = theirs.get(name)
        row: dict[str, float] = {"pygpu": value}
        line = f"{name:42s} {value:8.2f}"
        if other is not None:
            row["cupy"] = other
            row["pygpu/cupy"] = value / other
            line += f" {other:8.2f} {value / other:7.2f}"
        report["us_per_call"][name] = row
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
