"""Page-locked host arrays: numpy arrays whose memory is pinned for fast, asynchronous
copies. The array keeps its ``HostAllocation`` alive; the memory is freed with the last
view of it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pygpu._pygpu import HostAllocation

__all__ = ["pagelocked_empty", "pagelocked_empty_like", "pagelocked_zeros", "pagelocked_zeros_like"]


def _shape(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or d < 0:
            raise ValueError(f"shape entries must be non-negative ints, got {shape!r}")
    return tuple(int(d) for d in dims)


def pagelocked_empty(shape: Any, dtype: Any, order: str = "C", mem_flags: int = 0) -> np.ndarray:
    """An uninitialised numpy array in page-locked host memory."""
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    if mem_flags != 0:
        raise ValueError("mem_flags other than 0 are not supported")
    dims = _shape(shape)
    dt = np.dtype(dtype)
    count = math.prod(dims)
    buffer = HostAllocation(count * dt.itemsize)
    return np.frombuffer(buffer, dtype=dt, count=count).reshape(dims, order=order)


def pagelocked_zeros(shape: Any, dtype: Any, order: str = "C", mem_flags: int = 0) -> np.ndarray:
    """A zero-filled numpy array in page-locked host memory."""
    array = pagelocked_empty(shape, dtype, order, mem_flags)
    array.fill(0)
    return array


def pagelocked_empty_like(array: np.ndarray, mem_flags: int = 0) -> np.ndarray:
    order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
    return pagelocked_empty(array.shape, array.dtype, order, mem_flags)


def pagelocked_zeros_like(array: np.ndarray, mem_flags: int = 0) -> np.ndarray:
    result = pagelocked_empty_like(array, mem_flags)
    result.fill(0)
    return result
