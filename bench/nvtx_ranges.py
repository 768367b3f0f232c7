"""Ranges for NVIDIA's tools to see (issue 32): ``pygpu.nvtx.range`` around kernel launches,
20 times "pygpu-step" with "pygpu-inner" inside, one kernel in each, and two reduction kernels
outside any range. Nsight Compute filtering by range profiles exactly the 20 kernels inside:

    ncu --nvtx --nvtx-include "pygpu-step/" python3 bench/nvtx_ranges.py   # 20 kernels profiled
    nsys profile -t cuda,nvtx -o out python3 bench/nvtx_ranges.py         # the ranges on the timeline

NVIDIA's ``nvtx`` package must be importable (pygpu's ``nvtx`` extra): the script says whether
it is, and exits 1 if not.
"""

from __future__ import annotations

import sys

import numpy as np

import pygpu
import pygpu.gpuarray as gpuarray
import pygpu.nvtx as nvtx


def main() -> int:
    try:
        import nvtx as nvidia_nvtx  # noqa: F401
    except ImportError:
        print("nvtx_ranges: NVIDIA's nvtx package is not installed: no NVTX ranges to see")
        return 1
    a = gpuarray.to_gpu(np.ones(1 << 20, np.float32))
    for _ in range(20):
        with nvtx.range("pygpu-step"):
            with nvtx.range("pygpu-inner"):
                a = a * 1.0001
    pygpu.cudaDeviceSynchronize()
    print("nvtx_ranges: 20 steps ran, sum", float(a.sum().get()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
