"""Memory pools (PyCUDA's ``DeviceMemoryPool`` and ``PageLockedMemoryPool``), compiled:
the bins live in Rust (``runtime::bin_pool``) so that allocate + free of a held block is one
call each way. Requests are rounded up to a size class ("bin") with two mantissa bits, as
PyCUDA's pools do; freed blocks are *held* until ``free_held()`` or ``stop_holding()``."""

from __future__ import annotations

from pygpu._driver.pinned import checked_host_alloc_flags
from pygpu._pygpu import DeviceMemoryPool, PageLockedMemoryPool, PooledDeviceAllocation, PooledHostAllocation

__all__ = [
    "DeviceMemoryPool",
    "PageLockedAllocator",
    "PageLockedMemoryPool",
    "PooledDeviceAllocation",
    "PooledHostAllocation",
    "bitlog2",
]


def bitlog2(value: int) -> int:
    """The index of the highest set bit of ``value`` (floor of log2); 0 for 0."""
    if value < 0:
        raise ValueError(f"bitlog2 of a negative number ({value})")
    return max(int(value).bit_length() - 1, 0)


class PageLockedAllocator:
    """How a ``PageLockedMemoryPool(allocator)`` allocates: page-locked memory with ``flags``, a
    combination of ``host_alloc_flags`` (PORTABLE, DEVICEMAP, WRITECOMBINED), as
    ``pagelocked_empty``'s ``mem_flags``."""

    def __init__(self, flags: int = 0) -> None:
        self.flags = checked_host_alloc_flags(flags, "flags")

    def __repr__(self) -> str:
        return f"PageLockedAllocator(flags={self.flags})"
