#!/usr/bin/env python3
"""The first call of each built-in operation in a new process, against its warm call.

    PYGPU_BACKEND=cuda python3 bench/first_call.py [--procs 5] [--json out.json]   # GPU machine
    PYGPU_BACKEND=host python3 bench/first_call.py --procs 3                       # anywhere

Each operation runs in fresh processes (``--procs`` of them; the figures are medians over them).
A process imports pygpu, uploads its operands, synchronises, then times the operation's first
call and a second (warm) call, each up to a device synchronisation, so the difference is what a
first call costs: loading the bundled module that holds the kernel (python/pygpu/_toolchain/kernel_parts.py),
looking the kernel up, Python's first pass through the code. Two kinds of process:

* ``cold``: the operation is the first kernel the process launches;
* ``primed``: another bundled module's kernel (a fill) ran first, so one-time costs of a first
  launch in a process are paid before the clock starts and the figure is the operation's own.

It also reports each process's import time of ``pygpu.gpuarray`` (and cumath/curandom) and the
time to load the operation's module alone (``module_load_ms``, a third kind of fresh process),
with the module's file size on this backend. The issue's target: first call <= 1 ms over warm.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

# name -> (setup, statement, (source, kernel) whose module the statement loads)
OPS: dict[str, tuple[str, str, tuple[str, str]]] = {
    "a + b (float64)": ("a = ga.to_gpu(h); b = ga.to_gpu(h)", "a + b", ("arith", "add_f64")),
    "a * 2.0 (float64)": ("a = ga.to_gpu(h)", "a * 2.0", ("arith", "mul_f64")),
    "a + b (float32)": ("a = ga.to_gpu(h.astype(np.float32)); b = a.copy()", "a + b", ("arith", "add_f32")),
    "a < b (float64)": ("a = ga.to_gpu(h); b = ga.to_gpu(h)", "a < b", ("arith", "lt_f64")),
    "a ** 2.0 (float64)": ("a = ga.to_gpu(h)", "a ** 2.0", ("arith", "pow_f64")),
    "a + b (int32)": ("a = ga.to_gpu(h.astype(np.int32)); b = a.copy()", "a + b", ("arith", "add_i32")),
    "astype(float32)": ("a = ga.to_gpu(h)", "a.astype(np.float32)", ("cast", "cast_f64_f32")),
    "cumath.exp (float64)": ("a = ga.to_gpu(h)", "cumath.exp(a)", ("cumath", "exp_f64")),
    "cumath.sin (float32)": ("a = ga.to_gpu(h.astype(np.float32))", "cumath.sin(a)", ("cumath", "sin_f32")),
    "gpuarray.sum (float64)": ("a = ga.to_gpu(h)", "ga.sum(a)", ("reduce", "reduce_sum_float64_float64")),
    "gpuarray.dot (float64)": ("a = ga.to_gpu(h); b = ga.to_gpu(h)", "ga.dot(a, b)", ("reduce", "reduce_dot_float64")),
    "gpuarray.max (float64)": ("a = ga.to_gpu(h)", "ga.max(a)", ("reduce", "reduce_max_float64")),
    # No operands to upload: the setup allocates once, so that the driver's set-up of its memory
    # pool on the process's first pooled allocation (about 7 ms on an H100) is not timed as the op's.
    "gpuarray.arange (float64)": (
        "ga.empty(8, np.uint8)",
        "ga.arange(0.0, 1000.0, 1.0)",
        ("array_functions", "arange_float64"),
    ),
    "curandom.rand (float32)": (
        "ga.empty(8, np.uint8)",
        "curandom.rand((1000,))",
        ("random", "philox_uniform_float32"),
    ),
}

# Runs in the child: times the imports, the setup, then the first and a warm call.
_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import pygpu
import pygpu.gpuarray as ga
from pygpu import cumath, curandom
imported = time.perf_counter() - t0
from pygpu.gpuarray import _bundled
from pygpu._toolchain import kernel_parts

kind, setup, statement, source, kernel = sys.argv[1:6]
def sync():
    pygpu.cudaDeviceSynchronize().check()
h = np.linspace(0.5, 1.5, 1000)
exec(setup)
if kind == "primed":
    ga.empty(8, np.uint8).fill(0)  # cast_copy: another module, and the process's first launch
sync()
result = {"import_ms": imported * 1e3}
if kind == "module":
    t0 = time.perf_counter()
    _bundled.module(kernel_parts.module_name(source, kernel))
    result["module_load_ms"] = (time.perf_counter() - t0) * 1e3
else:
    code = compile(statement, "<op>", "eval")
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        eval(code)
        sync()
        times.append(time.perf_counter() - t0)
    result["first_ms"], result["warm_ms"] = times[0] * 1e3, times[1] * 1e3
print(json.dumps(result))
"""


def module_bytes(source: str, kernel: str) -> int | None:
    """Size of the file the active backend loads for the module holding ``kernel``."""
    from pygpu._toolchain import kernel_parts
    from pygpu._toolchain.bundled_kernels import kernel_files

    name = kernel_parts.module_name(source, kernel)
    if name is None:
        return None
    files = [f for f in kernel_files(name) if os.path.isfile(f)]
    return os.path.getsize(files[0]) if files else None


def run_child(kind: str, setup: str, statement: str, target: tuple[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, setup, statement, *target],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} {statement!r} failed:\n{out.stderr[-2000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def measure(procs: int, only: list[str] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, (setup, statement, target) in OPS.items():
        if only and not any(o in name for o in only):
            continue
        row: dict[str, Any] = {"module": None, "module_bytes": module_bytes(*target)}
        from pygpu._toolchain import kernel_parts

        row["module"] = kernel_parts.module_name(*target)
        for kind in ("cold", "primed"):
            runs = [run_child(kind, setup, statement, target) for _ in range(procs)]
            row[f"{kind}_first_over_warm_ms"] = statistics.median(r["first_ms"] - r["warm_ms"] for r in runs)
            row[f"{kind}_warm_ms"] = statistics.median(r["warm_ms"] for r in runs)
        loads = [run_child("module", setup, statement, target) for _ in range(procs)]
        row["module_load_ms"] = statistics.median(r["module_load_ms"] for r in loads)
        row["import_ms"] = statistics.median(r["import_ms"] for r in loads)
        report[name] = row
        print(f"{name:28} " + " ".join(f"{k}={v:.3f}" for k, v in row.items() if isinstance(v, float)), file=sys.stderr)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, default=5, help="fresh processes per figure (median)")
    parser.add_argument("--only", action="append", help="run the operations whose name contains this")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    import pygpu

    report = {"backend": pygpu.backend(), "procs": args.procs, "ops": measure(args.procs, args.only)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
