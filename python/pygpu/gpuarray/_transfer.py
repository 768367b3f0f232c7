"""Copies: host to device and back (``get``/``set`` for any layout), device to device
(``copy``, ``copy_into``), between devices (``copy_to_device``) and byte fills, each ordered on the stream it is issued on."""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np

from pygpu._driver.contexts import Device
from pygpu._driver.devices import check_devices, current_device, ordinal_of, several_devices
from pygpu._driver.pinned import pagelocked_empty
from pygpu._pygpu import (
    DeviceAllocation,
    mem_alloc,
    memcpy_dtod,
    memcpy_dtoh,
    memcpy_htod,
    memcpy_peer,
    memcpy_peer_async,
    memset_d8,
    memset_d16,
    memset_d32,
    stream_synchronize,
)
import pygpu.gpuarray._arithmetic as _arithmetic
import pygpu.gpuarray._elementwise as _elementwise
import pygpu.gpuarray._storage as _storage
from pygpu.gpuarray._dtypes import check_dtype
from pygpu.gpuarray._layout import extent, is_dense, offsets, trailing_block
from pygpu.gpuarray._ordering import is_capturing
from pygpu.gpuarray._storage import ArrayFields

__all__ = ["TransferMixin", "copy_into", "fill_bytes", "host_buffer", "memcpy_discontig"]

_UINT8 = np.dtype(np.uint8)
#: Runs of a non-contiguous copy done as separate device copies; beyond it, one copy kernel.
_MAX_MEMCPY_RUNS = 4


def host_buffer(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A 0-d array as 1-d (the copy calls take buffers with a shape)."""
    return a if a.ndim else a.reshape(1)


class TransferMixin(ArrayFields):
    """GPUArray's copies to and from the host and within the device."""

    __slots__ = ()

    def _address(self) -> Any:
        """What memcpy takes: the allocation itself when possible (bounds-checked)."""
        if self._offset == 0 and self._alloc.__class__ is DeviceAllocation:
            return self._alloc
        return int(self._alloc) + self._offset

    def get(
        self, ary: np.ndarray | None = None, pagelocked: bool = False, async_: bool = False, stream: Any = None
    ) -> np.ndarray:
        """Copies to the host: into ``ary`` (same shape and dtype) or a new array, in
        page-locked memory when ``pagelocked``. With ``async_`` and a page-locked result
        the copy may still be running on ``stream`` when this returns."""
        if several_devices() and self.device != current_device():
            # Ordered with the array's own device's work (a stream, if given, is of that device).
            with Device(self.device):
                return self.get(ary, pagelocked, async_, stream)
        self._order.before(stream)
        f = self._flags
        if f is None:
            f = self.flags
        if ary is None and not pagelocked and f.c_contiguous:
            out = np.empty(self.shape, self.dtype)
            if self.size:
                memcpy_dtoh(out if out.ndim else out.reshape(1), self._address(), stream)
            self._order.forget()
            return out
        return self._get_general(ary, pagelocked, async_, stream)

    def _get_general(self, ary: np.ndarray | None, pagelocked: bool, async_: bool, stream: Any) -> np.ndarray:
        shape, dtype, strides = self.shape, self.dtype, self.strides
        if ary is not None:
            if not isinstance(ary, np.ndarray):
                raise TypeError(f"ary must be a numpy array, not {type(ary).__name__}")
            if ary.shape != shape:
                raise ValueError(f"ary has shape {ary.shape}, but this GPUArray has shape {shape}")
            if ary.dtype != dtype:
                raise ValueError(f"ary has dtype {ary.dtype}, but this GPUArray has dtype {dtype}")
            if not ary.flags.writeable:
                raise ValueError("ary is read-only")
        if self.size == 0:
            if ary is not None:
                return ary
            return pagelocked_empty(shape, dtype) if pagelocked else np.empty(shape, dtype)
        flags = self.flags
        complete = not async_
        if flags.c_contiguous and (ary is None or ary.flags.c_contiguous):
            out = ary if ary is not None else (pagelocked_empty(shape, dtype) if pagelocked else np.empty(shape, dtype))
            memcpy_dtoh(host_buffer(out), self._address(), stream)
        elif flags.f_contiguous and (ary is None or ary.flags.f_contiguous):
            out = (
                ary
                if ary is not None
                else (pagelocked_empty(shape, dtype, order="F") if pagelocked else np.empty(shape, dtype, order="F"))
            )
            memcpy_dtoh(out.T, self._address(), stream)
        else:
            # Stage the covering byte span in pageable memory (the copy has completed on
            # return), then gather on the host.
            lo, hi = extent(shape, strides, dtype.itemsize)
            staging = np.empty(hi - lo, _UINT8)
            memcpy_dtoh(staging, self.ptr + lo, stream)
            view = np.ndarray(shape, dtype, buffer=staging, offset=-lo, strides=strides)
            if ary is None and not pagelocked and is_dense(shape, strides, dtype.itemsize):
                out = view
            else:
                out = (
                    ary
                    if ary is not None
                    else (pagelocked_empty(shape, dtype) if pagelocked else np.empty(shape, dtype))
                )
                np.copyto(out, view)
            complete = True
        if not complete or (stream is not None and (pagelocked or ary is not None)):
            # The destination may be page-locked, so the copy may still be running.
            if async_:
                return out
            stream_synchronize(stream)
        self._order.forget()
        return out

    def get_async(self, stream: Any = None, ary: np.ndarray | None = None) -> np.ndarray:
        """``get(ary, async_=True, stream=stream)`` (PyCUDA's): with a page-locked ``ary`` the copy
        may still be running on ``stream`` when this returns."""
        return self.get(ary=ary, async_=True, stream=stream)

    def set(self, ary: Any, async_: bool = False, stream: Any = None) -> None:
        """Copies ``ary`` (same shape and dtype; an ndarray or a GPUArray) into this array.

        A non-contiguous (strided) set reads the covering byte span, updates the
        elements on the host and writes the whole span back: bytes between the elements
        are rewritten with the values they had, so concurrent writers of those bytes
        (on the device, or through other views) race with it.
        """
        if self._readonly:
            raise ValueError("assignment destination is read-only")
        if isinstance(ary, ArrayFields):
            copy_into(self, ary, stream)
            return
        if several_devices() and self.device != current_device():
            with Device(self.device):
                return self.set(ary, async_, stream)
        if ary.__class__ is not np.ndarray:
            ary = np.asarray(ary)
        if ary.shape != self.shape:
            raise ValueError(f"cannot set a GPUArray of shape {self.shape} from an array of shape {ary.shape}")
        dtype = self.dtype
        if ary.dtype != dtype:
            raise ValueError(
                f"cannot set a GPUArray of dtype {dtype} from an array of dtype {ary.dtype}: "
                f"convert it first with ary.astype({dtype.name!r})"
            )
        self._order.before(stream)
        if self.size and is_capturing(stream):
            self._set_captured(ary, stream)
        elif self.size:
            flags = self._flags or self.flags
            if flags.c_contiguous:
                memcpy_htod(
                    self._address(), host_buffer(ary if ary.flags.c_contiguous else np.ascontiguousarray(ary)), stream
                )
            elif flags.f_contiguous and ary.flags.f_contiguous:
                memcpy_htod(self._address(), ary.T, stream)
            else:
                self._set_span(ary, stream)
        self._order.wrote(stream)

    def _set_captured(self, value: Any, stream: Any) -> None:
        """``set``/``fill`` inside a stream capture: a graph replays copies by address, so the
        values go through page-locked staging that the graph keeps (never a pageable temporary),
        and a strided destination is written on the device from a contiguous copy, never by a
        host read-modify-write, which would happen once, at capture time."""
        staging = pagelocked_empty(self.shape, self.dtype)
        staging[...] = value
        flags = self._flags or self.flags
        if flags.c_contiguous:
            memcpy_htod(self._address(), staging, stream)
            stream.keep_while_captured(staging)
            return
        # mem_alloc, not the pool: pooled blocks are ordered on the legacy default stream, which
        # a capturing blocking stream must not meet (cudaErrorStreamCaptureImplicit); the CUDA
        # backend allows this plain allocation during a capture (relaxed mode for that call).
        dense = _storage.array_class(self.shape, self.dtype, allocator=mem_alloc)
        memcpy_htod(dense.ptr, staging, stream)
        copy_into(self, dense, stream)
        stream.keep_while_captured((staging, dense))

    def _set_span(self, value: Any, stream: Any) -> None:
        shape, dtype, strides = self.shape, self.dtype, self.strides
        lo, hi = extent(shape, strides, dtype.itemsize)
        staging = np.empty(hi - lo, _UINT8)
        if not is_dense(shape, strides, dtype.itemsize):
            memcpy_dtoh(staging, self.ptr + lo, stream)
        view = np.ndarray(shape, dtype, buffer=staging, offset=-lo, strides=strides)
        view[...] = value
        memcpy_htod(self.ptr + lo, staging, stream)

    def set_async(self, ary: Any, stream: Any = None) -> None:
        """``set(ary, async_=True, stream=stream)`` (PyCUDA's): the copy is ordered on ``stream``."""
        self.set(ary, async_=True, stream=stream)

    def copy(self, stream: Any = None) -> Self:
        """A new array with the same values: the same layout when the elements tile their
        span with positive strides (one device copy), else C order. A subclass's array is copied
        into a new array from its ``_new_like_me``, as numpy's copy keeps the subclass."""
        shape, strides = self.shape, self.strides
        if self.__class__ is not _storage.array_class:
            flags = self.flags
            result: ArrayFields = _storage.new_like(
                self, self.dtype, "F" if flags.f_contiguous and not flags.c_contiguous else "C"
            )
        elif self.size and min(strides, default=0) >= 0 and is_dense(shape, strides, self.dtype.itemsize):
            result = _storage.array_class(shape, self.dtype, self.allocator, strides=strides)
        else:
            flags = self.flags
            order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
            result = _storage.array_class(shape, self.dtype, self.allocator, order=order)
        copy_into(result, self, stream)
        return result  # type: ignore[return-value]

    def fill(self, value: Any, stream: Any = None) -> Self:
        """Sets every element to ``value`` (cast as numpy would); returns self. On the device
        (a memset or a kernel), so it can be captured in a graph."""
        if self._readonly:
            raise ValueError("assignment destination is read-only")
        scalar = np.empty((), self.dtype)
        scalar[()] = value
        me = self
        if self.size == 0:
            return me
        check_devices((self,))
        shape, strides, itemsize = self.shape, self.strides, self.dtype.itemsize
        pattern = scalar.tobytes()
        if itemsize not in _COPY_WIDTHS and len(_fill_widths(me)) == 1:
            _fill_by_parts(me, pattern, _fill_widths(me)[0], stream)
        elif is_dense(shape, strides, itemsize) and _memset_width(pattern) is not None:
            self._order.before(stream)
            lo, _ = extent(shape, strides, itemsize)
            fill_bytes(self.ptr + lo, self.size * itemsize, pattern, stream)
            self._order.wrote(stream)
        elif not _aligned(me) or itemsize not in _COPY_WIDTHS:
            # Misaligned views (a reinterpreted byte offset) cannot take the kernel's loads; large
            # structs have no copy kernel.
            self._order.before(stream)
            if is_capturing(stream):
                self._set_captured(scalar, stream)
            else:
                self._set_span(scalar, stream)
            self._order.wrote(stream)
        else:
            _elementwise.launch("cast", f"copy_x{itemsize}", [me], [pattern.ljust(16, b"\0")], stream)
        return me

    def astype(self, dtype: Any, stream: Any = None) -> Self:
        """A converted copy, as numpy's astype (a cast kernel on the device)."""
        dt = check_dtype(dtype)
        if dt == self.dtype:
            return self.copy(stream)
        if dt.kind == "V" or self.dtype.kind == "V":
            # PyCUDA's copy kernel (dest[i] = src[i]) does not compile for these either.
            raise TypeError(
                f"astype from {self.dtype} to {dt}: structs (pygpu.vec types) are copied, not converted; "
                "convert on the host (ary.get().astype(...)) or write the conversion as an ElementwiseKernel"
            )
        return _arithmetic.converted(self, _storage.new_like(self, dt), stream)  # type: ignore[return-value]


def copy_in_order(src: ArrayFields, order: str) -> ArrayFields:
    """A new plain array with ``src``'s values in C or Fortran ``order``."""
    result = _storage.array_class(src.shape, src.dtype, src.allocator, order=order)
    copy_into(result, src, None)
    return result


def copy_into(dst: ArrayFields, src: ArrayFields, stream: Any) -> None:
    """dst[...] = src on the device, for any layouts (same shape and dtype)."""
    if dst._readonly:
        raise ValueError("assignment destination is read-only")
    if dst.shape != src.shape:
        raise ValueError(f"cannot copy a GPUArray of shape {src.shape} into one of shape {dst.shape}")
    if dst.dtype != src.dtype:
        raise ValueError(f"cannot copy a GPUArray of dtype {src.dtype} into one of dtype {dst.dtype}")
    if dst.size == 0:
        return
    if dst.device != src.device:
        raise ValueError(
            f"cannot copy between devices: the source is on device {src.device}, the destination on "
            f"device {dst.device}; copy it over with copy_to({dst.device}) first"
        )
    check_devices((dst,))
    src._order.before(stream)
    dst._order.before(stream)
    itemsize = dst.dtype.itemsize
    shape = dst.shape
    dptr, sptr = dst.ptr, src.ptr
    dlo, dhi = extent(shape, dst.strides, itemsize)
    slo, shi = extent(shape, src.strides, itemsize)
    if dptr + dlo < sptr + shi and sptr + slo < dptr + dhi:
        if dptr == sptr and dst.strides == src.strides:
            return
        src = copy_in_order(src, "C")
        sptr = src.ptr
        slo, shi = 0, src.size * itemsize
    if dst.strides == src.strides and is_dense(shape, dst.strides, itemsize):
        memcpy_dtod(dptr + dlo, sptr + slo, dst.size * itemsize, stream)
    else:
        k = max(trailing_block(shape, dst.strides, itemsize), trailing_block(shape, src.strides, itemsize))
        outer = shape[:k]
        if math.prod(outer) <= _MAX_MEMCPY_RUNS:
            run = itemsize * math.prod(shape[k:])
            for do, so in zip(offsets(outer, dst.strides[:k]), offsets(outer, src.strides[:k])):
                memcpy_dtod(dptr + do, sptr + so, run, stream)
        elif _aligned(dst) and _aligned(src):
            # One kernel for any layout (reversed, transposed, strided).
            _elementwise.launch("cast", f"copy_x{itemsize}", [dst], [src], stream)
            return
        else:
            # Misaligned views (a reinterpreted byte offset) cannot take a kernel's loads: a GPU
            # would fault. Rare enough to go through the host.
            dst.set(src.get(stream=stream), stream=stream)
            return
    dst._order.wrote(stream)


def memcpy_discontig(dst: Any, src: Any, async_: bool = False, stream: Any = None) -> None:
    """``dst[...] = src`` for any layouts, each a GPUArray or a host numpy array (PyCUDA's
    private ``gpuarray._memcpy_discontig``, which libraries call): same shape and dtype. With
    ``async_`` the copy is ordered on ``stream`` and may still run when this returns (a host
    array must then be page-locked to be copied asynchronously, as in CUDA)."""
    if dst.shape != src.shape:
        raise ValueError(f"cannot copy an array of shape {src.shape} into one of shape {dst.shape}")
    if dst.dtype != src.dtype:
        raise ValueError(f"cannot copy an array of dtype {src.dtype} into one of dtype {dst.dtype}")
    stream = stream if async_ else None
    dst_device, src_device = isinstance(dst, ArrayFields), isinstance(src, ArrayFields)
    if dst_device and src_device:
        copy_into(dst, src, stream)
    elif dst_device:
        dst.set(src, async_=async_, stream=stream)
    elif src_device:
        src.get(ary=dst, async_=async_, stream=stream)
    else:
        np.copyto(dst, src)


def _aligned(a: ArrayFields) -> bool:
    """Whether every element of ``a`` is aligned for the copy kernels' loads."""
    align = min(a.dtype.itemsize, 8)
    return a.ptr % align == 0 and all(s % align == 0 for s in a.strides)


#: Element sizes that have a copy kernel (copy_x<bytes>); other structs fill by parts.
_COPY_WIDTHS = (1, 2, 4, 8, 16)
#: Most parts (launches) of a fill by parts; beyond it the fill is staged through the host.
_MAX_FILL_PARTS = 8


def _fill_widths(a: ArrayFields) -> list[int]:
    """[w]: the widest part (8, 4, 2 or 1 bytes) that divides the element size, the address and
    every stride of ``a``, when ``itemsize / w`` parts are few enough; [] otherwise."""
    for w in (8, 4, 2, 1):
        if a.dtype.itemsize % w == 0 and a.ptr % w == 0 and all(s % w == 0 for s in a.strides):
            return [w] if a.dtype.itemsize // w <= _MAX_FILL_PARTS else []
    return []


def _fill_by_parts(a: ArrayFields, pattern: bytes, width: int, stream: Any) -> None:
    """Fills elements of a size without a copy kernel (a 12-byte vec.float3, a 24-byte
    double3) as ``itemsize / width`` interleaved arrays of ``width``-byte words, one fill each:
    on the device (capturable in a graph) as every other fill."""
    part = np.dtype(f"u{width}")
    words = _storage.plain_view(a, a._offset, (*a.shape, a.dtype.itemsize // width), (*a.strides, width), part)
    for k, word in enumerate(np.frombuffer(pattern, part)):
        words[..., k].fill(word, stream)


def _memset_width(pattern: bytes) -> int | None:
    """1, 2 or 4 when a memset of that width writes the repeated pattern, else None."""
    size = len(pattern)
    if pattern.count(pattern[0]) == size:
        return 1
    if size % 2 == 0 and pattern == pattern[:2] * (size // 2):
        return 2
    if size % 4 == 0 and pattern == pattern[:4] * (size // 4):
        return 4
    return None


def fill_bytes(addr: int, nbytes: int, pattern: bytes, stream: Any) -> None:
    """Fills [addr, addr + nbytes) with the repeated pattern by a memset (``_memset_width``
    says which patterns it can write; ``addr`` must be aligned to that width)."""
    width = _memset_width(pattern)
    if width == 1:
        memset_d8(addr, pattern[0], nbytes, stream)
    elif width == 2:
        memset_d16(addr, int.from_bytes(pattern[:2], "little"), nbytes // 2, stream)
    elif width == 4:
        memset_d32(addr, int.from_bytes(pattern[:4], "little"), nbytes // 4, stream)
    else:
        raise ValueError(f"no memset writes the pattern {pattern!r}")


def copy_to_device(a: ArrayFields, device: Any, stream: Any = None) -> ArrayFields:
    """A C-ordered copy of ``a`` on ``device`` (GPUArray.copy_to). Without a stream the copy is
    ordered after all work queued on both devices; with one (a stream of ``a``'s device) it is
    ordered on that stream only, and the caller synchronises it before using the copy."""
    target = ordinal_of(device, "device")
    Device(target)  # checks the ordinal
    source = a
    if not a.flags.c_contiguous:
        with Device(a.device):
            source = copy_in_order(a, "C")
    with Device(target):
        out = _storage.array_class(a.shape, a.dtype)
    nbytes = source.size * source.dtype.itemsize
    if nbytes == 0:
        return out
    if stream is not None and stream.device != source.device:
        raise ValueError(
            f"copy_to issues the copy on the source array's device {source.device}: give a stream of that device, "
            f"not of device {stream.device}"
        )
    with Device(source.device):
        source._order.before(stream)
        if stream is None:
            # Ordered after all work of both devices (cuMemcpyPeer serialises with both contexts).
            memcpy_peer(out.gpudata, target, source.ptr, source.device, nbytes)
        else:
            # Ordered on ``stream`` only: the caller synchronises it before using the copy.
            memcpy_peer_async(out.gpudata, target, source.ptr, source.device, nbytes, stream)
    return out
