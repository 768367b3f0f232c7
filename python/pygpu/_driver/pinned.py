"""Page-locked host arrays: numpy arrays whose memory is pinned for fast, asynchronous
copies, and page-aligned arrays for ``register_host_memory``. A page-locked array's ``base``
is its ``HostAllocation`` (``a.base.get_device_pointer()`` as in PyCUDA); the memory is freed
with the last view of it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from pygpu._driver.enums import host_alloc_flags
from pygpu._pygpu import HostAllocation, raw_memory_dtype

__all__ = [
    "checked_host_alloc_flags",
    "pagelocked_empty",
    "pagelocked_empty_like",
    "pagelocked_zeros",
    "pagelocked_zeros_like",
]

#: The page size numpy arrays are aligned to for ``register_host_memory``.
PAGE_BYTES = 4096


def _shape(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or d < 0:
            raise ValueError(f"shape entries must be non-negative ints, got {shape!r}")
    return tuple(int(d) for d in dims)


def _order(order: str) -> Any:
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    return order


def _like_order(array: npt.NDArray[Any]) -> str:
    return "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"


def checked_host_alloc_flags(flags: Any, name: str) -> int:
    """``flags`` as an int, if it combines ``host_alloc_flags`` only; else ValueError naming ``name``."""
    known = host_alloc_flags.PORTABLE | host_alloc_flags.DEVICEMAP | host_alloc_flags.WRITECOMBINED
    if not isinstance(flags, (int, np.integer)) or int(flags) & ~int(known):
        raise ValueError(f"{name} must combine host_alloc_flags (PORTABLE, DEVICEMAP, WRITECOMBINED), not {flags!r}")
    return int(flags)


def pagelocked_empty(shape: Any, dtype: Any, order: str = "C", mem_flags: int = 0) -> npt.NDArray[Any]:
    """An uninitialised numpy array in page-locked host memory. ``mem_flags`` combine
    ``host_alloc_flags``: PORTABLE, DEVICEMAP (kernels may address it through
    ``a.base.get_device_pointer()``), WRITECOMBINED (fast to copy to the device, slow to read)."""
    flags = checked_host_alloc_flags(mem_flags, "mem_flags")
    dims = _shape(shape)
    dt = raw_memory_dtype(dtype, "pagelocked_empty")
    buffer = HostAllocation(math.prod(dims) * dt.itemsize, flags)
    # numpy's stubs predate PEP 688 buffers; passing the allocation itself makes it the array's base.
    return np.ndarray(dims, dt, buffer=buffer, order=_order(order))  # type: ignore[arg-type]


def pagelocked_zeros(shape: Any, dtype: Any, order: str = "C", mem_flags: int = 0) -> npt.NDArray[Any]:
    """A zero-filled numpy array in page-locked host memory."""
    array = pagelocked_empty(shape, dtype, order, mem_flags)
    array.fill(0)
    return array


def pagelocked_empty_like(array: npt.NDArray[Any], mem_flags: int = 0) -> npt.NDArray[Any]:
    """An uninitialised page-locked numpy array of ``array``'s shape, dtype and memory order."""
    return pagelocked_empty(array.shape, array.dtype, _like_order(array), mem_flags)


def pagelocked_zeros_like(array: npt.NDArray[Any], mem_flags: int = 0) -> npt.NDArray[Any]:
    """A zero-filled page-locked numpy array of ``array``'s shape, dtype and memory order."""
    result = pagelocked_empty_like(array, mem_flags)
    result.fill(0)
    return result


def aligned_empty(shape: Any, dtype: Any, order: str = "C", alignment: int = PAGE_BYTES) -> npt.NDArray[Any]:
    """An uninitialised numpy array whose data starts at a multiple of ``alignment`` bytes
    (ordinary memory, ready for ``register_host_memory``)."""
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a positive power of two, not {alignment!r}")
    dims = _shape(shape)
    dt = raw_memory_dtype(dtype, "aligned_empty")
    nbytes = math.prod(dims) * dt.itemsize
    # Whole alignment units: a page-aligned array then owns every page it touches, so
    # registering it never pins (or collides with) memory of another object.
    raw = np.empty(-(-nbytes // alignment) * alignment + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return np.ndarray(dims, dt, buffer=raw[start : start + nbytes], order=_order(order))


def aligned_zeros(shape: Any, dtype: Any, order: str = "C", alignment: int = PAGE_BYTES) -> npt.NDArray[Any]:
    """A zero-filled numpy array whose data starts at a multiple of ``alignment`` bytes."""
    array = aligned_empty(shape, dtype, order, alignment)
    array.fill(0)
    return array


def aligned_empty_like(array: npt.NDArray[Any], alignment: int = PAGE_BYTES) -> npt.NDArray[Any]:
    """An uninitialised ``alignment``-aligned numpy array of ``array``'s shape, dtype and order."""
    return aligned_empty(array.shape, array.dtype, _like_order(array), alignment)


def aligned_zeros_like(array: npt.NDArray[Any], alignment: int = PAGE_BYTES) -> npt.NDArray[Any]:
    """A zero-filled ``alignment``-aligned numpy array of ``array``'s shape, dtype and order."""
    result = aligned_empty_like(array, alignment)
    result.fill(0)
    return result
