"""Managed (unified) memory as numpy arrays: one address that the host and kernels both use,
the driver moving the pages where they are touched (``cuMemAllocManaged``). An array's
``base`` is its ``ManagedAllocation`` (``a.base.get_device_pointer()``, ``attach``, ``free``,
as in PyCUDA); the array itself may be passed to a kernel, which receives its address.

Synchronise (``Context.synchronize()`` or the stream) before the host reads what a kernel
wrote, and do not touch the memory from the host while a kernel that uses it runs, unless
the device reports CONCURRENT_MANAGED_ACCESS. On the host backend the memory is plain host
memory in the allocation registry."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from pygpu._driver.enums import mem_attach_flags
from pygpu._driver.pinned import _like_order, _order, _shape
from pygpu._pygpu import ManagedAllocation, raw_memory_dtype

__all__ = ["managed_empty", "managed_empty_like", "managed_zeros", "managed_zeros_like"]


def _attach_flags(mem_flags: Any) -> int:
    """GLOBAL or HOST; 0 (PyCUDA's default) is GLOBAL, as for cudaMallocManaged."""
    if isinstance(mem_flags, (int, np.integer)) and int(mem_flags) in (
        0,
        mem_attach_flags.GLOBAL,
        mem_attach_flags.HOST,
    ):
        return int(mem_flags) or int(mem_attach_flags.GLOBAL)
    raise ValueError(
        f"mem_flags of managed memory must be mem_attach_flags.GLOBAL or HOST, not {mem_flags!r} "
        "(attach the memory to one stream afterwards with a.base.attach(mem_attach_flags.SINGLE, stream))"
    )


def managed_empty(shape: Any, dtype: Any, order: str = "C", mem_flags: int = 0) -> npt.NDArray[Any]:
    """An uninitialised numpy array in managed memory; ``mem_flags`` is ``mem_attach_flags``
    GLOBAL (any stream may use it) or HOST (only the host, until attached)."""
    flags = _attach_flags(mem_flags)
    dims = _shape(shape)
    dt = raw_memory_dtype(dtype, "managed_empty")
    nbytes = math.prod(dims) * dt.itemsize
    if nbytes > sys.maxsize:
        raise ValueError(f"shape {dims} of {dt} needs {nbytes} bytes, more than an allocation can hold")
    allocation = ManagedAllocation(nbytes, flags)
    # numpy's stubs predate PEP 688 buffers; passing the allocation itself makes it the array's base.
    return np.ndarray(dims, dt, buffer=allocation, order=_order(order))  # type: ignore[arg-type]


def managed_zeros(shape: Any, dtype: Any, order: str = "C", mem_flags: int = 0) -> npt.NDArray[Any]:
    """A zero-filled numpy array in managed memory (filled by the host)."""
    array = managed_empty(shape, dtype, order, mem_flags)
    array.fill(0)
    return array


def managed_empty_like(array: npt.NDArray[Any], mem_flags: int = 0) -> npt.NDArray[Any]:
    """An uninitialised numpy array in managed memory of ``array``'s shape, dtype and order."""
    return managed_empty(array.shape, array.dtype, _like_order(array), mem_flags)


def managed_zeros_like(array: npt.NDArray[Any], mem_flags: int = 0) -> npt.NDArray[Any]:
    """A zero-filled numpy array in managed memory of ``array``'s shape, dtype and order."""
    result = managed_empty_like(array, mem_flags)
    result.fill(0)
    return result
