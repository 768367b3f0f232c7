"""Zero-copy hand-off to other libraries, as GPUArray's methods: the CUDA Array Interface v3,
DLPack, and numpy's array interface where device memory is host memory. The other direction
(``asarray``, ``from_dlpack``) is ``_importing``'s."""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from pygpu._pygpu import (
    DeviceAllocation,
    capabilities,
    cudaEvent_t,
    dlpack_capsule,
    event_record,
    is_device_memory,
    stream_synchronize,
    stream_wait_event_raw,
)
from pygpu.errors import InvalidHandleError
from pygpu.gpuarray._dtypes import DTYPES
from pygpu.gpuarray._storage import ArrayFields, DevicePointer
from pygpu.gpuarray._layout import extent


__all__ = ["InteropMixin"]

_DLPACK_MAX_VERSION = (1, 1)
# DLPack's device types (dlpack.h's DLDeviceType); the backend's own are capabilities()'s.
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ROCM, KDL_ROCM_HOST = 1, 2, 3, 10, 11

# Leases (AllocationExport) taken by raw-address exports (__array_interface__,
# __cuda_array_interface__), by id of the exporting GPUArray. The consumer keeps that GPUArray
# alive but cannot be asked when it is done, so the lease lasts as long as the GPUArray:
# free() of its allocation raises until then instead of pulling memory from under the consumer.
_RAW_EXPORT_LEASES: dict[int, Any] = {}


def _allocation(alloc: Any) -> DeviceAllocation | None:
    """The DeviceAllocation under a GPUArray's memory, if pygpu owns it."""
    while isinstance(alloc, DevicePointer):
        alloc = alloc.base
    return alloc if isinstance(alloc, DeviceAllocation) else None


def _export_lease(array: ArrayFields) -> Any:
    """A lease keeping ``free()`` of ``array``'s allocation refused while it lives (None when the
    memory is not a pygpu allocation)."""
    allocation = _allocation(array._alloc)
    return None if allocation is None else allocation._export()


def _lease_while_alive(array: ArrayFields) -> None:
    key = id(array)
    if key in _RAW_EXPORT_LEASES:
        return
    lease = _export_lease(array)
    if lease is not None:
        _RAW_EXPORT_LEASES[key] = lease
        weakref.finalize(array, _RAW_EXPORT_LEASES.pop, key, None)


def _check_span(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int, what: str) -> None:
    """Refuses, where the backend keeps a registry (host), memory outside pygpu allocations:
    numpy or a kernel would read or write it blindly."""
    if not math.prod(shape):
        return
    lo, hi = extent(shape, strides, itemsize)
    if ptr + lo < 0 or is_device_memory(ptr + lo, hi - lo) is False:
        raise ValueError(
            f"{what}: bytes [0x{ptr + lo:x}, 0x{ptr + hi:x}) are not inside one live pygpu allocation "
            "(a freed allocation, or a bogus gpudata= address)"
        )


class InteropMixin(ArrayFields):
    """GPUArray's exports: ``__cuda_array_interface__``, ``__array_interface__``,
    ``__array__`` and DLPack."""

    __slots__ = ()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA Array Interface v3 (GPU backends only). ``stream`` is the stream whose
        pending work a consumer must wait for, or None."""
        p = capabilities()
        if not p.cuda_array_interface:
            raise AttributeError(
                "__cuda_array_interface__: on the host backend device memory is host memory; "
                "use __array_interface__ or DLPack"
            )
        ptr = self.ptr
        _lease_while_alive(self)
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (ptr, self._readonly),
            # Explicit even in C order, as PyCUDA gives them.
            "strides": self.strides,
            "version": 3,
            "stream": self._cai_stream(),
        }

    def _cai_stream(self) -> int | None:
        order = self._order
        if order.done():
            return None
        pending = order.pending
        if pending is None:
            default = capabilities().cai_default_stream
            if default is not None:
                return default
            # The interface cannot name this default stream: wait here instead.
            stream_synchronize(None)
            order.forget()
            return None
        return int(pending.handle)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """numpy's array interface, on the host backend only (zero copy)."""
        if not capabilities().host_memory:
            raise AttributeError(
                "__array_interface__: device memory is not host-addressable; use get(), "
                "__cuda_array_interface__ or DLPack"
            )
        flags = self._flags or self.flags
        ptr = self.ptr
        _check_span(ptr, self.shape, self.strides, self.dtype.itemsize, "__array_interface__")
        _lease_while_alive(self)
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (ptr, self._readonly),
            "strides": None if flags.c_contiguous else self.strides,
            "version": 3,
        }

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        host_memory = capabilities().host_memory
        if copy is False and not host_memory:
            raise ValueError("a GPUArray cannot become a numpy array without a copy: use get()")
        if host_memory:
            # Work still queued on a stream must have written the memory numpy reads.
            self._order.before(None)
            out = np.asarray(self)
        else:
            out = self.get()
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        if copy and host_memory:
            out = out.copy()
        return out

    def __dlpack_device__(self) -> tuple[int, int]:
        p = capabilities()
        return (p.dlpack_device_type, 0 if p.host_memory else self.device)

    def __dlpack__(
        self,
        stream: int | None = None,
        *,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule (versioned 1.x when ``max_version >= (1, 0)``, else legacy).

        ``stream`` is the consumer's stream: None is the legacy default stream on CUDA
        (the null stream on HIP; must be None on the host backend), -1 asks for no
        ordering. Pending writes are ordered before it with an event, not a device sync.
        """
        if stream is not None and not isinstance(stream, (int, np.integer)):
            raise TypeError(f"stream must be an int or None, not {type(stream).__name__}")
        if max_version is not None:
            if (
                not isinstance(max_version, tuple)
                or len(max_version) != 2
                or not all(isinstance(v, (int, np.integer)) for v in max_version)
            ):
                raise TypeError(f"max_version must be a (major, minor) tuple of ints, not {max_version!r}")
        if dl_device is not None and (not isinstance(dl_device, tuple) or len(dl_device) != 2):
            raise TypeError(f"dl_device must be a (device_type, device_id) tuple, not {dl_device!r}")
        p = capabilities()
        device = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != device:
            if tuple(dl_device) == (KDL_CPU, 0) and copy is not False:
                host = self.get()
                return host.__dlpack__() if max_version is None else host.__dlpack__(max_version=max_version)
            raise BufferError(f"cannot export to DLPack device {tuple(dl_device)}: this array is on {device}")
        src = self
        copied = False
        if copy:
            src = self.copy()
            copied = True
        if p.host_memory:
            if stream is not None and stream != -1:
                raise BufferError(f"stream must be None for a CPU (kDLCPU) array, not {stream}")
        else:
            src._hand_off(stream)
        itemsize = src.dtype.itemsize
        if any(s % itemsize for s in src.strides):
            raise BufferError(
                f"strides {src.strides} are not multiples of the itemsize {itemsize}: DLPack cannot describe them"
            )
        versioned = max_version is not None and max_version[0] >= 1
        ptr = src.ptr
        if p.host_memory:
            _check_span(ptr, src.shape, src.strides, itemsize, "__dlpack__")
        # The capsule owns the lease until its consumer's deleter runs: free() refuses meanwhile.
        return dlpack_capsule(
            (src, _export_lease(src)),
            ptr,
            src.shape,
            tuple(s // itemsize for s in src.strides),
            DTYPES[src.dtype].dlpack_code,
            itemsize * 8,
            device[0],
            device[1],
            versioned,
            src._readonly,
            copied,
        )

    def _hand_off(self, stream: int | None) -> None:
        """Orders pending writes before the DLPack consumer's ``stream``."""
        if stream == -1:
            return
        p = capabilities()
        if p.dlpack_device_type == KDL_CUDA and stream == 0:
            raise ValueError(
                "stream=0 is ambiguous for CUDA in the DLPack protocol: pass None or 1 (legacy default "
                "stream), 2 (per-thread default stream) or a stream handle"
            )
        consumer = p.dlpack_default_stream if stream is None else int(stream)
        order = self._order
        pending = order.pending
        if pending is False:
            return
        if pending is None:
            if consumer == p.dlpack_default_stream:
                return
        else:
            try:
                if pending.handle == consumer:
                    return
            except InvalidHandleError:
                pass
        if order.done():
            return
        event = cudaEvent_t(2)
        event_record(event, order.pending)
        stream_wait_event_raw(consumer, event)
