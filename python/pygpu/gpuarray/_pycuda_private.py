"""Private names of pycuda.gpuarray that libraries built on PyCUDA call (found in reikna,
scikit-cuda and GPUArray forks): launch sizing, dtype promotion and layout helpers. pygpu's own
code does not use them; they follow what PyCUDA's callers expect of them."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pygpu._driver.contexts import Context, Device
from pygpu.gpuarray._core import GPUArray
from pygpu.gpuarray._layout import c_strides, f_strides

__all__ = [
    "_array_like_helper",
    "_compact_strides",
    "_get_common_dtype",
    "_splay_backend",
    "get_common_dtype",
    "splay",
]

#: Threads of a block that splay starts from (a warp) and grows to.
_MIN_THREADS, _MAX_THREADS = 32, 128
#: Resident blocks per multiprocessor that splay aims for before it widens the blocks.
_BLOCKS_PER_MULTIPROCESSOR = 8


@functools.lru_cache(maxsize=1024)
def _splay_backend(n: int, dev: Device) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """``splay`` for device ``dev`` (memoized per size and device)."""
    max_blocks = _BLOCKS_PER_MULTIPROCESSOR * dev.multiprocessor_count
    if n <= _MIN_THREADS * max_blocks:
        return (max(1, -(-n // _MIN_THREADS)), 1), (_MIN_THREADS, 1, 1)
    warps = -(-n // (_MIN_THREADS * max_blocks))
    return (max_blocks, 1), (min(_MAX_THREADS, warps * _MIN_THREADS), 1, 1)


def splay(n: int, dev: Device | None = None) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """``(grid, block)`` for a one-dimensional launch over ``n`` elements on ``dev`` (default:
    the current device): ``((blocks, 1), (threads, 1, 1))``. The kernel loops with a grid stride
    where ``blocks * threads < n``, as PyCUDA's generated kernels do."""
    return _splay_backend(int(n), dev if dev is not None else Context.get_device())


def get_common_dtype(obj1: Any, obj2: Any, allow_double: bool) -> np.dtype[Any]:
    """The dtype of an operation between ``obj1`` (an array) and ``obj2`` (an array or a Python or
    numpy scalar), as numpy types it (a Python scalar does not widen an array's type); without
    ``allow_double`` (a device without fp64) float64 becomes float32 and complex128 complex64
    (``pycuda.compyte.array.get_common_dtype``)."""
    second = getattr(obj2, "dtype", None)
    result = np.result_type(np.dtype(obj1.dtype), np.dtype(second) if second is not None else obj2)
    if not allow_double:
        if result == np.float64:
            return np.dtype(np.float32)
        if result == np.complex128:
            return np.dtype(np.complex64)
    return result


def _get_common_dtype(obj1: Any, obj2: Any) -> np.dtype[Any]:
    """The result dtype of an operation between array ``obj1`` and ``obj2`` (an array or a
    scalar, which does not widen the array's type)."""
    return get_common_dtype(obj1, obj2, allow_double=True)


def _compact_strides(a: GPUArray) -> tuple[int, ...]:
    """The strides of a dense array of ``a``'s shape in ``a``'s order (Fortran for an array
    that is Fortran- but not C-contiguous, C otherwise)."""
    itemsize = a.dtype.itemsize
    flags = a.flags
    if flags.f_contiguous and not flags.c_contiguous:
        return f_strides(a.shape, itemsize)
    return c_strides(a.shape, itemsize)


def _array_like_helper(other_ary: Any, dtype: Any, order: str) -> tuple[np.dtype[Any], str, tuple[int, ...] | None]:
    """``(dtype, order, strides)`` for a new array like ``other_ary``: ``order`` "A" and "K"
    resolved to "C" or "F" by its layout ("K" keeps a Fortran array's order), strides None."""
    dt = other_ary.dtype if dtype is None else np.dtype(dtype)
    if order in ("A", "K"):
        flags = other_ary.flags
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    elif order not in ("C", "F"):
        raise ValueError(f"order must be 'C', 'F', 'A' or 'K', not {order!r}")
    return dt, order, None
