#!/usr/bin/env python3
"""What loading one bundled module costs in a new process, and what it depends on.

    PYGPU_BACKEND=cuda python3 bench/module_load.py [--procs 5] [--json out.json]   # GPU machine

For each bundled module file (python/pygpu/kernels/*.fatbin on cuda) a fresh process creates the
context, loads a small module first (so one-time costs of a first load are paid), then times
``Module.from_file`` of the target and of ``get_function`` of its first kernel. Each runs with the
driver's ``CUDA_MODULE_LOADING=LAZY`` and ``EAGER``, so the figures tell whether a first call's
module load is the file's size, its kernel count, or the driver's fixed cost (issue 12's
first-call target).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, sys, time
import pygpu
from pygpu import Module
path, warm, kernel = sys.argv[1:4]
pygpu.mem_alloc(8)
Module.from_file(warm)
t0 = time.perf_counter()
m = Module.from_file(path)
t1 = time.perf_counter()
m.get_function(kernel)
t2 = time.perf_counter()
print(json.dumps({"load_ms": (t1 - t0) * 1e3, "get_function_ms": (t2 - t1) * 1e3}))
"""


def kernels_of(image: bytes) -> list[str]:
    return sorted({n.decode() for n in re.findall(rb"\.text\.([A-Za-z_0-9]+)", image)})


def measure(path: Path, warm: Path, kernel: str, mode: str, procs: int) -> dict[str, float]:
    env = dict(os.environ, CUDA_MODULE_LOADING=mode)
    loads, lookups = [], []
    for _ in range(procs):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), str(warm), kernel], env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(
                done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            )
        out = done.stdout
        row = json.loads(out.strip().splitlines()[-1])
        loads.append(row["load_ms"])
        lookups.append(row["get_function_ms"])
    return {"load_ms": statistics.median(loads), "get_function_ms": statistics.median(lookups)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    import pygpu
    from pygpu._driver.capability import device_capability
    from pygpu._toolchain.bundled_kernels import native_cubin

    folder = Path(pygpu.__file__).parent / "kernels"
    names = ["testing", "cast", "arith_f32", "arith_f64", "cumath_f64", "reduce_float64", "reduce_uint64"]
    warm = folder / "testing.fatbin"
    rows = []
    targets = [(n, folder / f"{n}.fatbin") for n in names if (folder / f"{n}.fatbin").is_file()]
    # The same kernels as the one cubin pygpu loads for this GPU (what pygpu._toolchain.bundled_kernels.load_kernels
    # gives the driver): does the driver's time follow the fatbin or the image it picks?
    cubin = native_cubin((folder / "arith_f64.fatbin").read_bytes(), device_capability())
    if cubin is not None:
        path = Path(tempfile.mkdtemp()) / "arith_f64.cubin"
        path.write_bytes(cubin)
        targets.append(("arith_f64 (this GPU's cubin alone)", path))
    for label, path in targets:
        image = path.read_bytes()
        kernels = kernels_of(image)
        for mode in ("LAZY", "EAGER"):
            row = {"module": label, "bytes": len(image), "kernels": len(kernels), "mode": mode}
            try:
                row.update(measure(path, warm, kernels[0], mode, args.procs))
            except RuntimeError as e:
                print(f"{label:32s} does not load: {e}", flush=True)
                break
            rows.append(row)
            print(
                f"{label:32s} {len(image) / 1024:7.1f} KiB {len(kernels):4d} kernels {mode:5s} "
                f"load {row['load_ms']:.3f} ms  get_function {row['get_function_ms']:.3f} ms",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
