#!/usr/bin/env python3
"""Where a Burgers step's launch time goes (issue 16), on a GPU machine (not a test): pygpu's
prepared call of the demo's kernel with its 8 arguments on a non-blocking, a blocking and the
legacy stream, with allocations, GPUArrays and plain int addresses, against 3 and 0 arguments, the
snapshot copy (and the same copy through cuda.bindings, where installed), and the demo's own
plain loop, all in one process. Per call in us, median of 5 rounds of 20,000 calls
then one device synchronisation.

    PYGPU_BACKEND=cuda python3 bench/launch_args.py
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np
import pygpu
from array_bench import device_sync, per_call_us

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "demos", "burger"))
import burger  # noqa: E402
from pygpu import Module, gpuarray  # noqa: E402
from pygpu._toolchain.bundled_kernels import kernel_files  # noqa: E402

NX_TOTAL = 258  # the seeds' 256 points and two ghosts


def bindings_copies(dst: int, src: int, nbytes: int, stream: int) -> dict[str, Callable[[], object]]:
    """The same snapshot copy through cuda.bindings' driver and runtime calls (C++'s), if installed."""
    try:
        from cuda.bindings import driver, runtime  # type: ignore[import-not-found]
    except ImportError:
        return {}
    s = driver.CUstream(stream)
    d2d = runtime.cudaMemcpyKind.cudaMemcpyDeviceToDevice
    return {
        "snapshot copy, cuda.bindings cuMemcpyDtoDAsync": lambda: driver.cuMemcpyDtoDAsync(dst, src, nbytes, s),
        "snapshot copy, cuda.bindings cudaMemcpyAsync": lambda: runtime.cudaMemcpyAsync(dst, src, nbytes, d2d, stream),
    }


def main() -> None:
    step = pygpu.load_kernels("burgers").get_function(burger.KERNELS["seed"]).prepare("PPidd")
    testing = pygpu.load_kernels("testing")
    scale = testing.get_function("scale_args").prepare("Pid")
    empty = testing.get_function("empty_kernel").prepare("")
    a, b = pygpu.mem_alloc(NX_TOTAL * 8), pygpu.mem_alloc(NX_TOTAL * 8)
    for buffer in (a, b):
        pygpu.memset_d8(buffer, 0, NX_TOTAL * 8)
    non_blocking, blocking = pygpu.cudaStream_t(1), pygpu.cudaStream_t(0)
    grid, block = (1, 1), (256, 1, 1)
    ia, ib = int(a), int(b)
    # GPUArrays over the same memory: the launch reads their storage (pygpu._pygpu.ArrayStorage).
    ga, gb = (gpuarray.GPUArray((NX_TOTAL,), np.float64, gpudata=buffer) for buffer in (a, b))
    call = step.prepared_async_call
    cases: dict[str, Callable[[], object]] = {
        "burgers 8 args, non-blocking stream": lambda: call(grid, block, non_blocking, a, b, NX_TOTAL, 0.1, 0.2),
        "burgers 8 args, blocking stream": lambda: call(grid, block, blocking, a, b, NX_TOTAL, 0.1, 0.2),
        "burgers 8 args, legacy stream": lambda: call(grid, block, None, a, b, NX_TOTAL, 0.1, 0.2),
        "burgers 8 args, int pointers": lambda: call(grid, block, non_blocking, ia, ib, NX_TOTAL, 0.1, 0.2),
        "scale_args 3 args, non-blocking": lambda: scale.prepared_async_call(grid, (1, 1, 1), non_blocking, a, 3, 2.0),
        "empty_kernel 0 args, non-blocking": lambda: empty.prepared_async_call(grid, (1, 1, 1), non_blocking),
        "burgers 8 args, GPUArrays": lambda: call(grid, block, non_blocking, ga, gb, NX_TOTAL, 0.1, 0.2),
        "snapshot copy memcpy_dtod(int, alloc)": lambda: pygpu.memcpy_dtod(ia, b, NX_TOTAL * 8, non_blocking),
        "python loop body only": lambda: None,
    }
    cases.update(bindings_copies(ia, ib, NX_TOTAL * 8, non_blocking.handle))
    # Plain (unprepared) calls: checked against the kernel's declaration where pygpu read it
    # (issue 28), by parameter size alone where not (a module loaded without its source).
    plain = testing.get_function("scale_args")
    scalars = (np.int32(3), np.float64(2.0))
    cases["scale_args plain call, numpy scalars"] = lambda: plain(a, *scalars, block=(1, 1, 1), stream=non_blocking)
    cases["scale_args plain call, a GPUArray"] = lambda: plain(ga, *scalars, block=(1, 1, 1), stream=non_blocking)
    declared = getattr(plain, "parameters", None)  # a wheel before issue 28 has none
    if declared and declared[0].name is not None:
        cases["scale_args plain call, Python numbers"] = lambda: plain(a, 3, 2.0, block=(1, 1, 1), stream=non_blocking)
        bare = Module.from_file(kernel_files("testing")[0]).get_function("scale_args")
        cases["scale_args plain call, no declaration"] = lambda: bare(a, *scalars, block=(1, 1, 1), stream=non_blocking)
    for name, fn in cases.items():
        print(f"{name:40s} {per_call_us(fn, device_sync, 20000):7.3f} us")
    solver = burger.Solver(burger.Problem(nx=256, dt=0.001, t_final=(4001 - 0.5) * 0.001), 0)
    solver.run()  # warm-up
    solver.run()
    print(f"{'Solver.run per step (plain, no snapshots)':40s} {solver.loop_seconds / solver.steps * 1e6:7.3f} us")


if __name__ == "__main__":
    main()
