"""Memory pools (PyCUDA's ``DeviceMemoryPool`` and ``PageLockedMemoryPool``).

Requests are rounded up to a size class ("bin") with two mantissa bits, as PyCUDA's pools
do, so a freed block serves any later request of the same class. Freed blocks are *held*
by the pool until ``free_held()`` (or ``stop_holding()``); blocks handed out are *active*.
A pooled block goes back to its pool when it is freed or when its last reference goes.
"""

from __future__ import annotations

import math
import threading
import weakref
from typing import Any

import numpy as np

from pygpu._pygpu import CudaMemoryError, DeviceAllocation, HostAllocation

__all__ = [
    "DeviceMemoryPool",
    "PageLockedMemoryPool",
    "PooledDeviceAllocation",
    "bitlog2",
]

_MANTISSA_BITS = 2
_MANTISSA_MASK = (1 << _MANTISSA_BITS) - 1


def bitlog2(value: int) -> int:
    """The index of the highest set bit of ``value`` (floor of log2); 0 for 0."""
    if value < 0:
        raise ValueError(f"bitlog2 of a negative number ({value})")
    return max(int(value).bit_length() - 1, 0)


def _shift(value: int, by: int) -> int:
    return value << by if by >= 0 else value >> -by


def bin_number(size: int) -> int:
    """The size class of a request of ``size`` bytes: exponent and two mantissa bits."""
    exponent = bitlog2(size)
    mantissa = _shift(size, _MANTISSA_BITS - exponent) & _MANTISSA_MASK
    return exponent << _MANTISSA_BITS | mantissa


def alloc_size(bin_nr: int) -> int:
    """The bytes a block of size class ``bin_nr`` holds (every request in the class fits)."""
    exponent = bin_nr >> _MANTISSA_BITS
    mantissa = bin_nr & _MANTISSA_MASK
    low_ones = _shift(1, exponent - _MANTISSA_BITS)
    low_ones = low_ones - 1 if low_ones else 0
    head = _shift((1 << _MANTISSA_BITS) | mantissa, exponent - _MANTISSA_BITS)
    return head | low_ones


# Request size -> (size class, bytes), for the sizes a program asks for again and again.
_size_classes: dict[int, tuple[int, int]] = {}


class _Pool:
    """The bookkeeping both pools share: held blocks per size class, active count."""

    def __init__(self) -> None:
        self._bins: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        self.held_blocks = 0
        self.active_blocks = 0
        self.managed_bytes = 0
        self.active_bytes = 0
        self._holding = True

    @staticmethod
    def bin_number(size: int) -> int:
        return bin_number(size)

    @staticmethod
    def alloc_size(bin_nr: int) -> int:
        return alloc_size(bin_nr)

    def _raw_allocate(self, nbytes: int) -> Any:
        raise NotImplementedError

    def _take(self, size: int) -> tuple[Any, int, int]:
        """(raw block, size class, bytes) for a request of ``size`` bytes."""
        size_class = _size_classes.get(size)
        if size_class is None:
            if size < 0:
                raise ValueError(f"a pool cannot allocate a negative size ({size})")
            nr = bin_number(size)
            size_class = (nr, alloc_size(nr))
            if len(_size_classes) < 4096:
                _size_classes[size] = size_class
        nr, nbytes = size_class
        with self._lock:
            held = self._bins.get(nr)
            if held:
                self.held_blocks -= 1
                self.active_blocks += 1
                self.active_bytes += nbytes
                return held.pop(), nr, nbytes
        try:
            block = self._raw_allocate(nbytes)
        except CudaMemoryError:
            # As PyCUDA's pools: give back what is held and try once more.
            self.free_held()
            block = self._raw_allocate(nbytes)
        with self._lock:
            self.active_blocks += 1
            self.active_bytes += nbytes
            self.managed_bytes += nbytes
        return block, nr, nbytes

    def _give_back(self, block: Any, nr: int, nbytes: int) -> None:
        with self._lock:
            self.active_blocks -= 1
            self.active_bytes -= nbytes
            if self._holding:
                self._bins.setdefault(nr, []).append(block)
                self.held_blocks += 1
                return
            self.managed_bytes -= nbytes
        _release(block)

    def free_held(self) -> None:
        """Releases every held block to the device (or the host)."""
        with self._lock:
            bins, self._bins = self._bins, {}
            for nr, blocks in bins.items():
                self.managed_bytes -= alloc_size(nr) * len(blocks)
            self.held_blocks = 0
        for blocks in bins.values():
            for block in blocks:
                _release(block)

    def stop_holding(self) -> None:
        """Frees what is held, and from now on frees blocks as they come back."""
        with self._lock:
            self._holding = False
        self.free_held()


def _release(block: Any) -> None:
    free = getattr(block, "free", None)
    if free is not None:
        free()


class PooledDeviceAllocation:
    """Device memory from a :class:`DeviceMemoryPool`: ``int()`` and ``ptr`` give its address,
    so it goes wherever pygpu takes an allocation (``GPUArray(..., gpudata=)``, allocators,
    kernel arguments, memcpy). ``free()`` (or losing the last reference) returns it to the pool."""

    __slots__ = ("__weakref__", "_block", "_nbytes", "_nr", "_pool", "ptr", "size")

    def __init__(
        self,
        pool: DeviceMemoryPool,
        block: DeviceAllocation,
        nr: int,
        nbytes: int,
        size: int,
    ) -> None:
        self._pool: DeviceMemoryPool | None = pool
        self._block = block
        self._nr = nr
        self._nbytes = nbytes
        self.ptr: int = block.ptr
        self.size: int = size

    def __int__(self) -> int:
        return self.ptr

    def __index__(self) -> int:
        return self.ptr

    @property
    def nbytes(self) -> int:
        return self.size

    @property
    def device(self) -> int:
        return self._block.device

    @property
    def freed(self) -> bool:
        return self._pool is None

    def free(self) -> None:
        """Returns the memory to the pool now; later use of the address is a use after free."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool._give_back(self._block, self._nr, self._nbytes)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # noqa: BLE001, S110 - a destructor never raises
            pass

    def __repr__(self) -> str:
        state = "freed" if self._pool is None else f"{self.size} bytes at {self.ptr:#x}"
        return f"<PooledDeviceAllocation {state}>"


class DeviceMemoryPool(_Pool):
    """Device memory held for reuse: ``allocate(nbytes)`` returns a
    :class:`PooledDeviceAllocation`; pass ``pool.allocate`` as a GPUArray ``allocator``."""

    def _raw_allocate(self, nbytes: int) -> DeviceAllocation:
        return DeviceAllocation(nbytes)

    def allocate(self, size: int) -> PooledDeviceAllocation:
        size = int(size)
        block, nr, nbytes = self._take(size)
        return PooledDeviceAllocation(self, block, nr, nbytes, size)

    __call__ = allocate


class PageLockedMemoryPool(_Pool):
    """Page-locked host memory held for reuse: ``allocate(shape, dtype, order="C")`` returns
    a numpy array in pinned memory, whose block returns to the pool when the array (and
    every view of it) is gone."""

    def _raw_allocate(self, nbytes: int) -> HostAllocation:
        return HostAllocation(nbytes)

    def allocate(self, shape: Any, dtype: Any, order: str = "C") -> np.ndarray:
        if order not in ("C", "F"):
            raise ValueError(f"order must be 'C' or 'F', not {order!r}")
        dims = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
        if any(d < 0 for d in dims):
            raise ValueError(f"shape entries must be non-negative, got {shape!r}")
        dt = np.dtype(dtype)
        count = math.prod(dims)
        block, nr, nbytes = self._take(count * dt.itemsize)
        array: np.ndarray = np.frombuffer(block, dtype=dt, count=count).reshape(dims, order=order)  # type: ignore[call-overload]
        weakref.finalize(array, self._give_back, block, nr, nbytes)
        return array
