"""PyCUDA's ``pycuda.characterize``: what the current device and platform support."""

from __future__ import annotations

import struct

import numpy as np

from pygpu._driver.context_caches import context_dependent_memoize

__all__ = ["has_double_support", "has_stack", "platform_bits", "sizeof"]


def platform_bits() -> int:
    """The width of a host pointer in bits (64 on every platform pygpu supports)."""
    return struct.calcsize("P") * 8


def has_stack() -> bool:
    """Whether device code has a call stack (every GPU CUDA 12 supports does)."""
    return True


def has_double_support() -> bool:
    """Whether the device computes in double precision (every GPU CUDA 12 supports does;
    so do the hip and host backends)."""
    return True


@context_dependent_memoize
def sizeof(type_name: str, preamble: str = "") -> int:
    """``sizeof(type_name)`` as the device compiler sees it, after ``preamble``."""
    from pygpu import gpuarray
    from pygpu.compiler import SourceModule

    module = SourceModule(
        f"{preamble}\n__global__ void pygpu_write_size(unsigned long long *output)\n"
        f"{{\n  *output = sizeof({type_name});\n}}\n"
    )
    output = gpuarray.zeros((1,), dtype=np.uint64)
    module.get_function("pygpu_write_size")(output, block=(1, 1, 1), grid=(1, 1))
    return int(output.get()[0])
