#!/usr/bin/env python3
"""The bundled one-pass reduction's time against its grid (issue 30): ``sum`` and ``max`` of
float32 and float64 at 2^24 and 2^26 elements, the kernel launched directly at grids from one to
eight blocks per multiprocessor and at the grid ``gpuarray`` picks, each against the
device-to-device copy of the same array (bytes read against the copy's bytes read and written)
and CuPy's ``sum`` in the same process. CUDA events around back-to-back launches, medians. A
measuring tool for choosing ``_reductions``' grid, not a test.

    PYGPU_BACKEND=cuda python3 bench/reduce_grid.py [--sizes 16777216,67108864]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

import pygpu
import pygpu.gpuarray as ga
from pygpu.gpuarray import _bundled, _reductions

from array_bench import event_seconds  # this folder: CUDA events around back-to-back calls

REPS = 30


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=f"{1 << 24},{1 << 26}")
    args = p.parse_args()
    sms = pygpu.driver.Context.get_device().get_attribute(pygpu.driver.device_attribute.MULTIPROCESSOR_COUNT)
    scratch = _reductions._scratch(None)
    partials, ticket = scratch + _reductions._TICKET_BYTES, scratch
    rows: list[dict[str, Any]] = []
    try:
        import cupy as cp
    except ImportError:
        cp = None
    for n in (int(x) for x in args.sizes.split(",")):
        for dtype in (np.float32, np.float64):
            name = np.dtype(dtype).name
            host = np.random.default_rng(0).random(n).astype(dtype)
            a = ga.to_gpu(host)
            dst = ga.empty_like(a)
            res = ga.empty((), dtype)
            copy_s = event_seconds(lambda: pygpu.memcpy_dtod(dst.ptr, a.ptr, a.nbytes), REPS)
            _, block = _bundled.reduction_launch(n)
            # The scratch holds this many partials of the type.
            most = (_reductions._SCRATCH_WORDS * 4 - _reductions._TICKET_BYTES) // a.itemsize
            for op in ("sum", "max"):
                kernel = f"reduce_sum_{name}_{name}" if op == "sum" else f"reduce_max_{name}"
                f = _bundled.function("reduce", kernel, _reductions._SIGNATURE)
                grids = sorted({g for g in (sms, 2 * sms, 3 * sms, 4 * sms, 6 * sms, 1024, 8 * sms) if g <= most})
                for g in grids:

                    def launch(f: Any = f, g: int = g) -> None:
                        f.prepared_async_call(
                            (g, 1), (block, 1, 1), None, res.ptr, a.ptr, a.ptr, n, 0, 0, 0, 0, partials, ticket
                        )

                    s = event_seconds(launch, REPS)
                    rows.append({"n": n, "dtype": name, "op": op, "grid": g, "us": s * 1e6, "of_copy": copy_s / 2 / s})
                method = a.sum if op == "sum" else a.max
                s = event_seconds(method, REPS)
                rows.append(
                    {"n": n, "dtype": name, "op": op, "grid": "gpuarray", "us": s * 1e6, "of_copy": copy_s / 2 / s}
                )
                if cp is not None:
                    c = cp.asarray(host)
                    theirs = c.sum if op == "sum" else c.max
                    s = event_seconds(lambda theirs=theirs: theirs(), REPS)  # CuPy's default stream is the legacy one
                    rows.append(
                        {"n": n, "dtype": name, "op": op, "grid": "cupy", "us": s * 1e6, "of_copy": copy_s / 2 / s}
                    )
                for r in rows:
                    if r["n"] == n and r["dtype"] == name and r["op"] == op:
                        figure = f"{r['us']:8.2f} us, {r['of_copy']:.3f} of the copy"
                        print(f"n={n:>9} {name:8} {op}: grid {r['grid']!s:>8}: {figure}", flush=True)
    print(json.dumps({"SMs": sms, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
