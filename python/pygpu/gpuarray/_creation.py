"""New arrays: from host data (``to_gpu``), empty, filled (``zeros``, ``ones``) and shaped like
another array (``*_like``); ``arange`` is ``_array_functions``' (it fills on the device)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pygpu._pygpu import memcpy_htod, memset_d8, pool_alloc
from pygpu.gpuarray._core import GPUArray
from pygpu.gpuarray._dtypes import SUPPORTED, check_dtype, host_array
from pygpu.gpuarray._layout import FLAGS_C, FLAGS_CF, FLAGS_F, contiguity
from pygpu.gpuarray._ordering import StreamOrder
from pygpu.gpuarray._storage import make
from pygpu.gpuarray._transfer import host_buffer

__all__ = [
    "empty",
    "empty_like",
    "ones",
    "ones_like",
    "to_gpu",
    "to_gpu_async",
    "zeros",
    "zeros_like",
]


def to_gpu(ary: Any, allocator: Any = None) -> GPUArray:
    """A new GPUArray holding a copy of the host array ``ary`` (C or Fortran order kept)."""
    if ary.__class__ is not np.ndarray:
        if isinstance(ary, GPUArray):
            return ary.copy()
        ary = np.asarray(ary)
    dtype = ary.dtype
    if dtype not in SUPPORTED:
        ary = host_array(ary)
        dtype = ary.dtype
    fl = ary.flags
    if fl.c_contiguous:
        src = ary
        flags = FLAGS_CF if fl.f_contiguous else FLAGS_C
    elif fl.f_contiguous:
        src = ary.T
        flags = FLAGS_F
    else:
        src = ary = np.ascontiguousarray(ary)
        flags = None
    nbytes = ary.nbytes
    alloc = pool_alloc(nbytes) if allocator is None else allocator(nbytes)
    if nbytes:
        memcpy_htod(alloc, src if src.ndim else src.reshape(1))
    return make(
        GPUArray, alloc, 0, ary.shape, dtype, ary.strides, ary.size, None, allocator, StreamOrder(None), False, flags
    )


def to_gpu_async(ary: Any, allocator: Any = None, stream: Any = None) -> GPUArray:
    """As ``to_gpu``, with the copy enqueued on ``stream`` (asynchronous from page-locked
    memory: keep ``ary`` unchanged until the stream has reached it)."""
    if ary.__class__ is not np.ndarray:
        ary = np.asarray(ary)
    ary = host_array(ary)
    if ary.flags.c_contiguous:
        src = ary
    elif ary.flags.f_contiguous:
        src = ary.T
    else:
        src = ary = np.ascontiguousarray(ary)
    nbytes = ary.nbytes
    alloc = pool_alloc(nbytes) if allocator is None else allocator(nbytes)
    if nbytes:
        memcpy_htod(alloc, host_buffer(src), stream)
    return make(GPUArray, alloc, 0, ary.shape, ary.dtype, ary.strides, ary.size, None, allocator, StreamOrder(stream))


def empty(shape: Any, dtype: Any = np.float64, allocator: Any = None, order: str = "C") -> GPUArray:
    """An uninitialised ``GPUArray`` of ``shape`` and ``dtype`` (numpy's ``empty`` on the device);
    ``allocator(nbytes)`` replaces the default memory pool."""
    return GPUArray(shape, dtype, allocator, order=order)


def zeros(shape: Any, dtype: Any = np.float64, allocator: Any = None, order: str = "C") -> GPUArray:
    """A zero-filled ``GPUArray`` of ``shape`` and ``dtype`` (numpy's ``zeros`` on the device)."""
    result = GPUArray(shape, dtype, allocator, order=order)
    if result.size:
        memset_d8(result._alloc, 0, result.nbytes)
        result._order.wrote(None)
    return result


def ones(shape: Any, dtype: Any = np.float64, allocator: Any = None, order: str = "C") -> GPUArray:
    """A ``GPUArray`` of ``shape`` and ``dtype`` filled with ones (numpy's ``ones`` on the device)."""
    return GPUArray(shape, dtype, allocator, order=order).fill(1)


def _like(other: Any, dtype: Any, order: str, allocator: Any = None) -> GPUArray:
    if not (hasattr(other, "shape") and hasattr(other, "dtype")):
        other = np.asarray(other)  # array_like, as numpy's *_like take (a list, a scalar)
    shape = tuple(other.shape)
    dt = check_dtype(other.dtype if dtype is None else dtype)
    alloc = allocator if allocator is not None else getattr(other, "allocator", None)
    if order in ("C", "F"):
        return GPUArray(shape, dt, alloc, order=order)
    if order not in ("K", "A"):
        raise ValueError(f"order must be 'C', 'F', 'A' or 'K', not {order!r}")
    strides = tuple(other.strides)
    flags = contiguity(shape, strides, other.dtype.itemsize)
    if flags.c_contiguous or (order == "A" and not flags.f_contiguous):
        return GPUArray(shape, dt, alloc, order="C")
    if flags.f_contiguous:
        return GPUArray(shape, dt, alloc, order="F")
    # Keep the axis order of `other` (by decreasing |stride|), compactly.
    perm = sorted(range(len(shape)), key=lambda i: -abs(strides[i]))
    compact = [0] * len(shape)
    acc = dt.itemsize
    for i in reversed(perm):
        compact[i] = acc
        acc *= max(shape[i], 1)
    return GPUArray(shape, dt, alloc, strides=tuple(compact))


def empty_like(other: Any, dtype: Any = None, order: str = "K", allocator: Any = None) -> GPUArray:
    """An uninitialised ``GPUArray`` of ``other``'s shape (and dtype unless given); ``order``
    'K' keeps ``other``'s memory layout, as numpy's ``empty_like``."""
    return _like(other, dtype, order, allocator)


def zeros_like(other: Any, dtype: Any = None, order: str = "K", allocator: Any = None) -> GPUArray:
    """A zero-filled ``GPUArray`` of ``other``'s shape (and dtype unless given), as numpy's ``zeros_like``."""
    result = _like(other, dtype, order, allocator)
    if result.size:
        memset_d8(result.ptr, 0, result.nbytes)
        result._order.wrote(None)
    return result


def ones_like(other: Any, dtype: Any = None, order: str = "K", allocator: Any = None) -> GPUArray:
    """A ``GPUArray`` of ones of ``other``'s shape (and dtype unless given), as numpy's ``ones_like``."""
    return _like(other, dtype, order, allocator).fill(1)
