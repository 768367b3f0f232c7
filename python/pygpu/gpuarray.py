"""``GPUArray``: pycuda.gpuarray's typed device array, in pure Python over pygpu's
compiled primitives, with zero-copy interop (CUDA Array Interface v3, DLPack).

A ``GPUArray`` is a view: a device allocation, a byte offset of element 0 inside it,
a shape, a dtype and byte strides (possibly negative or zero). Indexing, ``reshape``,
``transpose``, ``view`` ... return views sharing the allocation. ``get``/``set`` of a
contiguous array are one copy; other layouts are correct too (see ``set``).

Ordering: every array remembers the stream of the last write to its memory (shared by
all views): ``None`` for the default stream, a ``cudaStream_t`` for the async forms.
pygpu's own operations on another stream wait for it (with an event), exports tell
consumers about it (``__cuda_array_interface__['stream']``, ``__dlpack__(stream=...)``).

Use as ``import pygpu as gpuarray`` or ``from pygpu import gpuarray``.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from pygpu._pinned import pagelocked_empty
from pygpu._pygpu import (
    CudaError,
    DeviceAllocation,
    DLPackTensor,
    InvalidHandleError,
    backend as _backend_name,
    cudaDeviceSynchronize,
    cudaEvent_t,
    cudaEventRecord,
    cudaGetDevice,
    cudaStreamQuery,
    cudaStreamSynchronize,
    cudaStreamWaitEvent,
    dlpack_capsule,
    dlpack_from_capsule,
    event_record_raw,
    mem_alloc,
    memcpy_dtod,
    memcpy_dtoh,
    memcpy_htod,
    memset_d8,
    memset_d16,
    memset_d32,
    stream_wait_event_raw,
)

__all__ = [
    "DevicePointer",
    "GPUArray",
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "from_dlpack",
    "ones",
    "ones_like",
    "to_gpu",
    "to_gpu_async",
    "zeros",
    "zeros_like",
]

_SUPPORTED = frozenset(
    np.dtype(t)
    for t in (
        np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
        np.float16, np.float32, np.float64, np.complex64, np.complex128,
    )
)
_UINT8 = np.dtype(np.uint8)
_new = object.__new__

# DLPack: dtype kind -> DLDataTypeCode, device types.
_DL_CODE = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_DL_KIND = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_ROCM, _KDL_ROCM_HOST = 1, 2, 3, 10, 11
_DLPACK_MAX_VERSION = (1, 1)

#: Runs of a non-contiguous copy/fill done as separate device copies; beyond it, the
#: covering byte span goes through the host.
_MAX_RUNS = 256
#: Bytes of a fill pattern written from the host before doubling on the device.
_FILL_SEED_BYTES = 1 << 16

_kind_cache: list[str] = []


def _kind() -> str:
    """'cuda', 'hip' or 'host' (starts the backend on first use)."""
    if _kind_cache:
        return _kind_cache[0]
    kind = _backend_name()
    _kind_cache.append(kind)
    return kind


def _dl_device_type() -> int:
    kind = _kind()
    return _KDL_CPU if kind == "host" else _KDL_CUDA if kind == "cuda" else _KDL_ROCM


# ----------------------------------------------------------------------------- helpers


class DevicePointer:
    """A device address ``int(base) + offset`` that keeps ``owner`` (and ``base``) alive.

    ``gpudata`` of a view that does not start at its allocation's beginning is one of
    these (PyCUDA gives a plain int there), as is ``gpudata`` of an array wrapped from
    another library. ``int()`` re-reads ``base``, so a freed allocation raises.
    """

    __slots__ = ("base", "offset", "owner", "device")

    def __init__(self, base: Any, offset: int = 0, owner: Any = None, device: int | None = None) -> None:
        self.base = base
        self.offset = offset
        self.owner = owner
        self.device = device

    def __int__(self) -> int:
        return int(self.base) + self.offset

    __index__ = __int__

    def __repr__(self) -> str:
        try:
            where = f"0x{int(self):x}"
        except CudaError:
            where = "(freed)"
        return f"<DevicePointer {where}>"


class _Flags:
    """numpy-like contiguity flags; ``forc`` is PyCUDA's 'either C or Fortran'."""

    __slots__ = ("c_contiguous", "f_contiguous")

    def __init__(self, c: bool, f: bool) -> None:
        self.c_contiguous = c
        self.f_contiguous = f

    @property
    def forc(self) -> bool:
        return self.c_contiguous or self.f_contiguous

    def __getitem__(self, key: str) -> bool:
        key = key.upper()
        if key in ("C", "C_CONTIGUOUS", "CONTIGUOUS"):
            return self.c_contiguous
        if key in ("F", "F_CONTIGUOUS", "FORTRAN"):
            return self.f_contiguous
        if key == "FORC":
            return self.forc
        raise KeyError(key)

    def __repr__(self) -> str:
        return f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}"


_FLAGS = {(c, f): _Flags(c, f) for c in (False, True) for f in (False, True)}
_FLAGS_C, _FLAGS_F, _FLAGS_CF, _FLAGS_NONE = _FLAGS[True, False], _FLAGS[False, True], _FLAGS[True, True], _FLAGS[False, False]


def _check_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"not a dtype: {dtype!r}") from e
    if dt in _SUPPORTED:
        return dt
    if dt.fields is not None and not dt.hasobject:
        return dt  # structs (pygpu.vec types): stored and copied; generated kernels compute on them
    if dt.newbyteorder("=") in _SUPPORTED:
        raise TypeError(f"dtype {dt.str!r} is not in native byte order: use {dt.newbyteorder('=').str!r}")
    raise TypeError(
        f"unsupported dtype {dt}: GPUArray holds bool, int8..int64, uint8..uint64, float16/32/64 and complex64/128"
    )


def _host_array(ary: Any) -> np.ndarray:
    """A numpy array of a supported dtype (converting byte order if needed)."""
    ary = np.asarray(ary)
    dt = ary.dtype
    if dt not in _SUPPORTED:
        native = dt.newbyteorder("=")
        if native in _SUPPORTED:
            return ary.astype(native)
        _check_dtype(dt)
    return ary


def _shape_tuple(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        dims: tuple[int, ...] = (operator.index(shape),)
    else:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError as e:
            raise TypeError(f"a shape is an int or a sequence of ints, not {shape!r}") from e
    for d in dims:
        if d < 0:
            raise ValueError(f"negative dimensions are not allowed: {dims}")
    return dims


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    acc = itemsize
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def _f_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    acc = itemsize
    for d in shape:
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(strides)


def _contiguity(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> _Flags:
    if 0 in shape:
        return _FLAGS_CF
    c = True
    acc = itemsize
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1:
            if s != acc:
                c = False
                break
            acc *= d
    f = True
    acc = itemsize
    for d, s in zip(shape, strides):
        if d != 1:
            if s != acc:
                f = False
                break
            acc *= d
    return _FLAGS[c, f]


def _extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """Byte range [lo, hi) covered by the elements, relative to element 0 (size > 0)."""
    lo = hi = 0
    for d, s in zip(shape, strides):
        if s < 0:
            lo += (d - 1) * s
        else:
            hi += (d - 1) * s
    return lo, hi + itemsize


def _is_dense(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    """Whether the elements exactly tile their byte span (a permuted/flipped contiguous array)."""
    acc = itemsize
    for s, d in sorted((abs(s), d) for d, s in zip(shape, strides) if d != 1):
        if s != acc:
            return False
        acc *= d
    return True


def _trailing_block(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> int:
    """The first axis k such that axes k: form one C-contiguous block."""
    k = len(shape)
    acc = itemsize
    while k > 0:
        d, s = shape[k - 1], strides[k - 1]
        if d != 1:
            if s != acc:
                break
            acc *= d
        k -= 1
    return k


def _offsets(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    offsets = [0]
    for d, s in zip(shape, strides):
        offsets = [o + i * s for o in offsets for i in range(d)]
    return offsets


def _buffer(a: np.ndarray) -> np.ndarray:
    """A 0-d array as 1-d (the copy calls take buffers with a shape)."""
    return a if a.ndim else a.reshape(1)


def _device_of(alloc: Any) -> int:
    if isinstance(alloc, DeviceAllocation):
        return alloc.device
    if isinstance(alloc, DLPackTensor):
        return alloc.device_id if _kind() != "host" else 0
    if isinstance(alloc, DevicePointer):
        if alloc.device is not None:
            return alloc.device
        return _device_of(alloc.base)
    return cudaGetDevice()[0]


def _order_after(sync: list[Any], pending: Any, stream: Any) -> None:
    """Makes work about to be issued on `stream` (None: the default stream) wait for the
    last write, pending on `pending` (None: default stream; a cudaStream_t)."""
    if stream is None:
        try:
            cudaStreamSynchronize(pending).check()
        except InvalidHandleError:
            # The writer's stream was closed: its work still completes; wait for the device.
            cudaDeviceSynchronize().check()
        sync[0] = False
        return
    event = cudaEvent_t(2)
    try:
        cudaEventRecord(event, pending).check()
    except InvalidHandleError:
        cudaDeviceSynchronize().check()
        sync[0] = False
        return
    cudaStreamWaitEvent(stream, event).check()


def _pending_done(sync: list[Any]) -> bool:
    """True (and forgets it) when the last write has completed."""
    pending = sync[0]
    if pending is False:
        return True
    try:
        status = cudaStreamQuery(pending)
    except InvalidHandleError:
        cudaDeviceSynchronize().check()
        sync[0] = False
        return True
    if status == 0:
        sync[0] = False
        return True
    if status != 600:
        status.check()
    return False


def _make(alloc: Any, offset: int, shape: tuple[int, ...], dtype: np.dtype, strides: tuple[int, ...],
          size: int, base: Any, allocator: Any, sync: list[Any], readonly: bool = False,
          flags: _Flags | None = None) -> GPUArray:
    a = _new(GPUArray)
    a.shape = shape
    a.dtype = dtype
    a.strides = strides
    a.size = size
    a.allocator = allocator
    a.base = base
    a._alloc = alloc
    a._offset = offset
    a._sync = sync
    a._flags = flags
    a._readonly = readonly
    return a


# ----------------------------------------------------------------------------- GPUArray


class GPUArray:
    """A typed n-dimensional array in device memory (pycuda.gpuarray.GPUArray).

    ``GPUArray(shape, dtype, allocator=None, base=None, gpudata=None, strides=None,
    order="C")`` allocates (with ``allocator(nbytes)``, default ``mem_alloc``) unless
    ``gpudata`` (a DeviceAllocation or an int-convertible address) is given;
    ``GPUArray(ndarray)`` copies a host array to the device, as PyGPU's did.
    """

    __slots__ = (
        "shape", "dtype", "strides", "size", "allocator", "base",
        "_alloc", "_offset", "_sync", "_flags", "_readonly", "__weakref__",
    )

    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]
    size: int
    allocator: Any
    base: Any
    _alloc: Any
    _offset: int
    _sync: list[Any]
    _flags: _Flags | None
    _readonly: bool

    def __init__(self, shape: Any, dtype: Any = None, allocator: Any = None, base: Any = None,
                 gpudata: Any = None, strides: Any = None, order: str = "C") -> None:
        if isinstance(shape, np.ndarray) and dtype is None:
            src = to_gpu(shape, allocator)
            for name in GPUArray.__slots__[:-1]:
                setattr(self, name, getattr(src, name))
            return
        dims = _shape_tuple(shape)
        dt = _check_dtype(np.float64 if dtype is None else dtype)
        size = math.prod(dims)
        itemsize = dt.itemsize
        if size * itemsize >= 1 << 63:
            raise ValueError(f"array is too big: shape {dims} of {dt}")
        if strides is None:
            if order == "C":
                st = _c_strides(dims, itemsize)
            elif order == "F":
                st = _f_strides(dims, itemsize)
            else:
                raise ValueError(f"order must be 'C' or 'F', not {order!r}")
        else:
            st = tuple(operator.index(s) for s in strides)
            if len(st) != len(dims):
                raise ValueError(f"strides {st} do not match the {len(dims)} dimensions of shape {dims}")
        lo, hi = _extent(dims, st, itemsize) if size else (0, 0)
        offset = 0
        if gpudata is None:
            alloc = (allocator or mem_alloc)(hi - lo)
            offset = -lo
        else:
            alloc = gpudata
            if isinstance(gpudata, DeviceAllocation) and (lo < 0 or hi > gpudata.nbytes):
                raise ValueError(
                    f"shape {dims} with strides {st} needs bytes [{lo}, {hi}) but gpudata holds {gpudata.nbytes}"
                )
            if not isinstance(gpudata, (DeviceAllocation, DevicePointer, DLPackTensor)):
                alloc = DevicePointer(operator.index(gpudata) if isinstance(gpudata, (int, np.integer)) else gpudata,
                                      0, gpudata, cudaGetDevice()[0])
        self.shape = dims
        self.dtype = dt
        self.strides = st
        self.size = size
        self.allocator = allocator
        self.base = base
        self._alloc = alloc
        self._offset = offset
        self._sync = [False]
        self._flags = None
        self._readonly = False

    # ---------------------------------------------------------------- attributes

    @property
    def gpudata(self) -> Any:
        """The allocation (``int()`` gives its address); for a view not starting at its
        allocation's beginning, a ``DevicePointer`` to element 0."""
        if self._offset == 0:
            a = self._alloc
            if isinstance(a, DevicePointer) and a.owner is not None and a.offset == 0 and a.base is a.owner:
                return a.owner
            return a
        return DevicePointer(self._alloc, self._offset, self._alloc)

    @property
    def ptr(self) -> int:
        """The device address of element 0."""
        return int(self._alloc) + self._offset

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def mem_size(self) -> int:
        return self.size

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def flags(self) -> _Flags:
        f = self._flags
        if f is None:
            f = self._flags = _contiguity(self.shape, self.strides, self.dtype.itemsize)
        return f

    @property
    def device(self) -> int:
        """The ordinal of the device holding the memory."""
        return _device_of(self._alloc)

    @property
    def T(self) -> GPUArray:
        return self.transpose()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def _scalar(self) -> Any:
        if self.size != 1:
            raise ValueError(
                f"the truth value (or scalar value) of an array with {self.size} elements is ambiguous: "
                "only an array of exactly one element converts to a scalar"
            )
        return self.get().reshape(())[()]

    def __bool__(self) -> bool:
        return bool(self._scalar())

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __repr__(self) -> str:
        return repr(self.get())

    def __str__(self) -> str:
        return str(self.get())

    # ---------------------------------------------------------------- transfers

    def _address(self) -> Any:
        """What memcpy takes: the allocation itself when possible (bounds-checked)."""
        if self._offset == 0 and self._alloc.__class__ is DeviceAllocation:
            return self._alloc
        return int(self._alloc) + self._offset

    def get(self, ary: np.ndarray | None = None, pagelocked: bool = False, async_: bool = False,
            stream: Any = None) -> np.ndarray:
        """Copies to the host: into ``ary`` (same shape and dtype) or a new array, in
        page-locked memory when ``pagelocked``. With ``async_`` and a page-locked result
        the copy may still be running on ``stream`` when this returns."""
        sync = self._sync
        pending = sync[0]
        if pending is not False and pending is not stream:
            _order_after(sync, pending, stream)
        f = self._flags
        if f is None:
            f = self.flags
        if ary is None and not pagelocked and f.c_contiguous:
            out = np.empty(self.shape, self.dtype)
            if self.size:
                memcpy_dtoh(out if out.ndim else out.reshape(1), self._address(), stream)
            sync[0] = False
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
            memcpy_dtoh(_buffer(out), self._address(), stream)
        elif flags.f_contiguous and (ary is None or ary.flags.f_contiguous):
            out = ary if ary is not None else (pagelocked_empty(shape, dtype, order="F") if pagelocked else np.empty(shape, dtype, order="F"))
            memcpy_dtoh(out.T, self._address(), stream)
        else:
            # Stage the covering byte span in pageable memory (the copy has completed on
            # return), then gather on the host.
            lo, hi = _extent(shape, strides, dtype.itemsize)
            staging = np.empty(hi - lo, _UINT8)
            memcpy_dtoh(staging, self.ptr + lo, stream)
            view = np.ndarray(shape, dtype, buffer=staging, offset=-lo, strides=strides)
            if ary is None and not pagelocked and _is_dense(shape, strides, dtype.itemsize):
                out = view
            else:
                out = ary if ary is not None else (pagelocked_empty(shape, dtype) if pagelocked else np.empty(shape, dtype))
                np.copyto(out, view)
            complete = True
        if not complete or (stream is not None and (pagelocked or ary is not None)):
            # The destination may be page-locked, so the copy may still be running.
            if async_:
                return out
            cudaStreamSynchronize(stream).check()
        self._sync[0] = False
        return out

    def get_async(self, stream: Any = None, ary: np.ndarray | None = None) -> np.ndarray:
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
        if isinstance(ary, GPUArray):
            _copy_into(self, ary, stream)
            return
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
        sync = self._sync
        pending = sync[0]
        if pending is not False and pending is not stream:
            _order_after(sync, pending, stream)
        if self.size:
            flags = self._flags or self.flags
            if flags.c_contiguous:
                memcpy_htod(self._address(), _buffer(ary if ary.flags.c_contiguous else np.ascontiguousarray(ary)), stream)
            elif flags.f_contiguous and ary.flags.f_contiguous:
                memcpy_htod(self._address(), ary.T, stream)
            else:
                self._set_span(ary, stream)
        sync[0] = stream

    def _set_span(self, value: Any, stream: Any) -> None:
        shape, dtype, strides = self.shape, self.dtype, self.strides
        lo, hi = _extent(shape, strides, dtype.itemsize)
        staging = np.empty(hi - lo, _UINT8)
        if not _is_dense(shape, strides, dtype.itemsize):
            memcpy_dtoh(staging, self.ptr + lo, stream)
        view = np.ndarray(shape, dtype, buffer=staging, offset=-lo, strides=strides)
        view[...] = value
        memcpy_htod(self.ptr + lo, staging, stream)

    def set_async(self, ary: Any, stream: Any = None) -> None:
        self.set(ary, async_=True, stream=stream)

    def copy(self, stream: Any = None) -> GPUArray:
        """A new array with the same values: the same layout when the elements tile their
        span with positive strides (one device copy), else C order."""
        shape, strides = self.shape, self.strides
        if self.size and min(strides, default=0) >= 0 and _is_dense(shape, strides, self.dtype.itemsize):
            result = GPUArray(shape, self.dtype, self.allocator, strides=strides)
        else:
            flags = self.flags
            order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
            result = GPUArray(shape, self.dtype, self.allocator, order=order)
        _copy_into(result, self, stream)
        return result

    def fill(self, value: Any, stream: Any = None) -> GPUArray:
        """Sets every element to ``value`` (cast as numpy would); returns self."""
        if self._readonly:
            raise ValueError("assignment destination is read-only")
        scalar = np.empty((), self.dtype)
        scalar[()] = value
        if self.size == 0:
            return self
        sync = self._sync
        pending = sync[0]
        if pending is not False and pending is not stream:
            _order_after(sync, pending, stream)
        shape, strides, itemsize = self.shape, self.strides, self.dtype.itemsize
        pattern = scalar.tobytes()
        ptr = self.ptr
        if _is_dense(shape, strides, itemsize):
            lo, _ = _extent(shape, strides, itemsize)
            _fill_bytes(ptr + lo, self.nbytes, pattern, stream)
        else:
            k = _trailing_block(shape, strides, itemsize)
            runs = math.prod(shape[:k])
            if runs <= _MAX_RUNS:
                run_bytes = itemsize * math.prod(shape[k:])
                for off in _offsets(shape[:k], strides[:k]):
                    _fill_bytes(ptr + off, run_bytes, pattern, stream)
            else:
                self._set_span(scalar, stream)
        sync[0] = stream
        return self

    def astype(self, dtype: Any, stream: Any = None) -> GPUArray:
        """A converted copy (through the host: pygpu has no kernels for it)."""
        dt = _check_dtype(dtype)
        if dt == self.dtype:
            return self.copy(stream)
        return to_gpu(self.get(stream=stream).astype(dt), self.allocator)

    # ---------------------------------------------------------------- views

    def _view(self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
              dtype: np.dtype | None = None) -> GPUArray:
        return _make(self._alloc, offset, shape, dtype or self.dtype, strides, math.prod(shape), self,
                     self.allocator, self._sync, self._readonly)

    def __getitem__(self, key: Any) -> GPUArray:
        if not isinstance(key, tuple):
            key = (key,)
        ndim = len(self.shape)
        n_ellipsis = 0
        n_real = 0
        for k in key:
            if k is Ellipsis:
                n_ellipsis += 1
            elif k is not None:
                n_real += 1
        if n_ellipsis > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if n_real > ndim:
            raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed")
        offset = self._offset
        shape: list[int] = []
        strides: list[int] = []
        axis = 0
        fill = ndim - n_real
        for k in key:
            if k is None:
                shape.append(1)
                strides.append(0)
            elif k is Ellipsis:
                shape.extend(self.shape[axis:axis + fill])
                strides.extend(self.strides[axis:axis + fill])
                axis += fill
            elif isinstance(k, slice):
                n, s = self.shape[axis], self.strides[axis]
                start, stop, step = k.indices(n)
                length = len(range(start, stop, step))
                if length:
                    offset += start * s
                shape.append(length)
                strides.append(s * step)
                axis += 1
            else:
                if isinstance(k, (bool, np.bool_)) or not hasattr(k, "__index__"):
                    raise IndexError(
                        "only integers, slices (`:`), ellipsis (`...`) and numpy.newaxis (`None`) are valid "
                        f"GPUArray indices, not {type(k).__name__}: advanced (array) indexing is not supported"
                    )
                try:
                    i = operator.index(k)
                except TypeError as e:
                    raise IndexError(f"invalid index {k!r}: an integer array index needs a 0-d integer array") from e
                n = self.shape[axis]
                if i < -n or i >= n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                if i < 0:
                    i += n
                offset += i * self.strides[axis]
                axis += 1
        if axis < ndim:
            shape.extend(self.shape[axis:])
            strides.extend(self.strides[axis:])
        return self._view(offset, tuple(shape), tuple(strides))

    def __setitem__(self, key: Any, value: Any) -> None:
        if self._readonly:
            raise ValueError("assignment destination is read-only")
        view = self if key is Ellipsis else self[key]
        if isinstance(value, GPUArray):
            if value.dtype != view.dtype:
                value = value.astype(view.dtype)
            if value.shape != view.shape:
                value = _broadcast(value, view.shape)
            _copy_into(view, value, None)
        elif isinstance(value, (int, float, complex, bool, np.generic)):
            view.fill(value)
        else:
            staged = np.empty(view.shape, view.dtype)
            staged[...] = value
            view.set(staged)

    def reshape(self, *shape: Any, order: str = "C") -> GPUArray:
        """A view with the new shape when the layout allows it, otherwise a copy."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        if order not in ("C", "F", "A"):
            raise ValueError(f"order must be 'C', 'F' or 'A', not {order!r}")
        dims = list(shape)
        try:
            dims = [operator.index(d) for d in dims]
        except TypeError as e:
            raise TypeError(f"a shape is a sequence of ints, not {shape!r}") from e
        unknown = [i for i, d in enumerate(dims) if d == -1]
        if len(unknown) > 1:
            raise ValueError("can only specify one unknown dimension")
        if any(d < -1 for d in dims):
            raise ValueError(f"negative dimensions are not allowed: {tuple(dims)}")
        if unknown:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"cannot reshape array of size {self.size} into shape {tuple(shape)}")
            dims[unknown[0]] = self.size // known
        new_shape = tuple(dims)
        if math.prod(new_shape) != self.size:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {new_shape}")
        if order == "A":
            order = "F" if self.flags.f_contiguous and not self.flags.c_contiguous else "C"
        if new_shape == self.shape:
            return self._view(self._offset, self.shape, self.strides)
        itemsize = self.dtype.itemsize
        if self.size == 0:
            strides = _c_strides(new_shape, itemsize) if order == "C" else _f_strides(new_shape, itemsize)
            return self._view(self._offset, new_shape, strides)
        nocopy = _nocopy_strides(self.shape, self.strides, new_shape, itemsize, order == "F")
        if nocopy is None:
            source = _copy_in_order(self, order)
            strides = _c_strides(new_shape, itemsize) if order == "C" else _f_strides(new_shape, itemsize)
            return source._view(source._offset, new_shape, strides)
        return self._view(self._offset, new_shape, tuple(nocopy))

    def ravel(self, order: str = "C") -> GPUArray:
        return self.reshape(-1, order=order)

    def squeeze(self, axis: Any = None) -> GPUArray:
        ndim = len(self.shape)
        if axis is None:
            keep = [i for i, d in enumerate(self.shape) if d != 1]
        else:
            axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
            norm = set()
            for a in axes:
                a = operator.index(a)
                if not -ndim <= a < ndim:
                    raise np.exceptions.AxisError(a, ndim)
                a %= ndim
                if self.shape[a] != 1:
                    raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
                norm.add(a)
            keep = [i for i in range(ndim) if i not in norm]
        return self._view(self._offset, tuple(self.shape[i] for i in keep), tuple(self.strides[i] for i in keep))

    def transpose(self, *axes: Any) -> GPUArray:
        ndim = len(self.shape)
        if not axes or (len(axes) == 1 and axes[0] is None):
            perm = tuple(range(ndim - 1, -1, -1))
        else:
            if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
                axes = tuple(axes[0])
            if len(axes) != ndim:
                raise ValueError("axes don't match array")
            perm_list = []
            for a in axes:
                a = operator.index(a)
                if not -ndim <= a < ndim:
                    raise np.exceptions.AxisError(a, ndim)
                perm_list.append(a % ndim)
            if len(set(perm_list)) != ndim:
                raise ValueError("repeated axis in transpose")
            perm = tuple(perm_list)
        return self._view(self._offset, tuple(self.shape[i] for i in perm), tuple(self.strides[i] for i in perm))

    def view(self, dtype: Any = None) -> GPUArray:
        """The same memory seen with another dtype (numpy's rules for the last axis)."""
        if dtype is None:
            return self._view(self._offset, self.shape, self.strides)
        dt = _check_dtype(dtype)
        old = self.dtype.itemsize
        new = dt.itemsize
        if new == old:
            return self._view(self._offset, self.shape, self.strides, dt)
        if not self.shape:
            raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
        last, last_stride = self.shape[-1], self.strides[-1]
        if last != 1 and last_stride != old:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        if (last * old) % new:
            raise ValueError(
                f"When changing to a {'larger' if new > old else 'smaller'} dtype, its size must be a divisor of "
                "the total size in bytes of the last axis of the array."
            )
        shape = self.shape[:-1] + ((last * old) // new,)
        strides = self.strides[:-1] + (new,)
        return self._view(self._offset, shape, strides, dt)

    # ---------------------------------------------------------------- interop

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3 (GPU backends only). ``stream`` is the stream whose
        pending work a consumer must wait for, or None."""
        kind = _kind()
        if kind == "host":
            raise AttributeError(
                "__cuda_array_interface__: on the host backend device memory is host memory; "
                "use __array_interface__ or DLPack"
            )
        flags = self._flags or self.flags
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, self._readonly),
            "strides": None if flags.c_contiguous else self.strides,
            "version": 3,
            "stream": self._cai_stream(kind),
        }

    def _cai_stream(self, kind: str) -> int | None:
        sync = self._sync
        if sync[0] is False or _pending_done(sync):
            return None
        pending = sync[0]
        if pending is None:
            if kind == "cuda":
                return 1
            # HIP's null stream is 0, which the interface cannot name: wait here instead.
            cudaStreamSynchronize(None).check()
            sync[0] = False
            return None
        return pending.handle

    @property
    def __array_interface__(self) -> dict:
        """numpy's array interface, on the host backend only (zero copy)."""
        if _kind() != "host":
            raise AttributeError(
                "__array_interface__: device memory is not host-addressable; use get(), "
                "__cuda_array_interface__ or DLPack"
            )
        flags = self._flags or self.flags
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, self._readonly),
            "strides": None if flags.c_contiguous else self.strides,
            "version": 3,
        }

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False and _kind() != "host":
            raise ValueError("a GPUArray cannot become a numpy array without a copy: use get()")
        out = np.asarray(self) if _kind() == "host" else self.get()
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        if copy and _kind() == "host":
            out = out.copy()
        return out

    def __dlpack_device__(self) -> tuple[int, int]:
        kind = _kind()
        if kind == "host":
            return (_KDL_CPU, 0)
        return (_KDL_CUDA if kind == "cuda" else _KDL_ROCM, self.device)

    def __dlpack__(self, stream: int | None = None, *, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule (versioned 1.x when ``max_version >= (1, 0)``, else legacy).

        ``stream`` is the consumer's stream: None is the legacy default stream on CUDA
        (the null stream on HIP; must be None on the host backend), -1 asks for no
        ordering. Pending writes are ordered before it with an event, not a device sync.
        """
        if stream is not None and not isinstance(stream, (int, np.integer)):
            raise TypeError(f"stream must be an int or None, not {type(stream).__name__}")
        kind = _kind()
        device = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != device:
            if tuple(dl_device) == (_KDL_CPU, 0) and copy is not False:
                host = self.get()
                return host.__dlpack__() if max_version is None else host.__dlpack__(max_version=max_version)
            raise BufferError(f"cannot export to DLPack device {tuple(dl_device)}: this array is on {device}")
        src = self
        copied = False
        if copy:
            src = self.copy()
            copied = True
        if kind == "host":
            if stream is not None and stream != -1:
                raise BufferError(f"stream must be None for a CPU (kDLCPU) array, not {stream}")
        else:
            src._hand_off(kind, stream)
        itemsize = src.dtype.itemsize
        if any(s % itemsize for s in src.strides):
            raise BufferError(f"strides {src.strides} are not multiples of the itemsize {itemsize}: DLPack cannot describe them")
        versioned = max_version is not None and max_version[0] >= 1
        return dlpack_capsule(
            src, src.ptr, src.shape, tuple(s // itemsize for s in src.strides),
            _DL_CODE[src.dtype.kind], itemsize * 8, device[0], device[1], versioned, src._readonly, copied,
        )

    def _hand_off(self, kind: str, stream: int | None) -> None:
        if stream == -1:
            return
        if kind == "cuda":
            if stream == 0:
                raise ValueError(
                    "stream=0 is ambiguous for CUDA in the DLPack protocol: pass None or 1 (legacy default "
                    "stream), 2 (per-thread default stream) or a stream handle"
                )
            consumer = 1 if stream is None else int(stream)
        else:
            consumer = 0 if stream is None else int(stream)
        sync = self._sync
        pending = sync[0]
        if pending is False:
            return
        if pending is None:
            if consumer == (1 if kind == "cuda" else 0):
                return
        else:
            try:
                if pending.handle == consumer:
                    return
            except InvalidHandleError:
                pass
        if _pending_done(sync):
            return
        event = cudaEvent_t(2)
        cudaEventRecord(event, sync[0]).check()
        stream_wait_event_raw(consumer, event)


# ----------------------------------------------------------------------------- copies


def _nocopy_strides(old_shape: tuple[int, ...], old_strides: tuple[int, ...], new_shape: tuple[int, ...],
                    itemsize: int, fortran: bool) -> list[int] | None:
    """numpy's _attempt_nocopy_reshape: strides for viewing as new_shape, or None."""
    olddims = [d for d in old_shape if d != 1]
    oldstr = [s for d, s in zip(old_shape, old_strides) if d != 1]
    newstrides = [0] * len(new_shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    nnew = len(new_shape)
    while ni < nnew and oi < len(olddims):
        np_ = new_shape[ni]
        op = olddims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= olddims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if fortran:
                if oldstr[ok + 1] != olddims[ok] * oldstr[ok]:
                    return None
            elif oldstr[ok] != olddims[ok + 1] * oldstr[ok + 1]:
                return None
        if fortran:
            newstrides[ni] = oldstr[oi]
            for nk in range(ni + 1, nj):
                newstrides[nk] = newstrides[nk - 1] * new_shape[nk - 1]
        else:
            newstrides[nj - 1] = oldstr[oj - 1]
            for nk in range(nj - 1, ni, -1):
                newstrides[nk - 1] = newstrides[nk] * new_shape[nk]
        ni = nj
        nj += 1
        oi = oj
        oj += 1
    last = newstrides[ni - 1] if ni >= 1 else itemsize
    if fortran and ni >= 1:
        last *= new_shape[ni - 1]
    for nk in range(ni, nnew):
        newstrides[nk] = last
    return newstrides


def _copy_in_order(src: GPUArray, order: str) -> GPUArray:
    result = GPUArray(src.shape, src.dtype, src.allocator, order=order)
    _copy_into(result, src, None)
    return result


def _broadcast(a: GPUArray, shape: tuple[int, ...]) -> GPUArray:
    if len(a.shape) > len(shape):
        raise ValueError(f"could not broadcast input array from shape {a.shape} into shape {shape}")
    pad = len(shape) - len(a.shape)
    strides = []
    for i, d in enumerate(shape):
        if i < pad:
            strides.append(0)
            continue
        ad, s = a.shape[i - pad], a.strides[i - pad]
        if ad == d:
            strides.append(s)
        elif ad == 1:
            strides.append(0)
        else:
            raise ValueError(f"could not broadcast input array from shape {a.shape} into shape {shape}")
    return a._view(a._offset, tuple(shape), tuple(strides))


def _copy_into(dst: GPUArray, src: GPUArray, stream: Any) -> None:
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
            f"device {dst.device}; copy through the host (get/set) or make both arrays on one device"
        )
    for sync in (src._sync, dst._sync):
        pending = sync[0]
        if pending is not False and pending is not stream:
            _order_after(sync, pending, stream)
    itemsize = dst.dtype.itemsize
    shape = dst.shape
    dptr, sptr = dst.ptr, src.ptr
    dlo, dhi = _extent(shape, dst.strides, itemsize)
    slo, shi = _extent(shape, src.strides, itemsize)
    if dptr + dlo < sptr + shi and sptr + slo < dptr + dhi:
        if dptr == sptr and dst.strides == src.strides:
            return
        src = _copy_in_order(src, "C")
        sptr = src.ptr
        slo, shi = 0, src.nbytes
    if dst.strides == src.strides and _is_dense(shape, dst.strides, itemsize):
        memcpy_dtod(dptr + dlo, sptr + slo, dst.nbytes, stream)
    else:
        k = max(_trailing_block(shape, dst.strides, itemsize), _trailing_block(shape, src.strides, itemsize))
        outer = shape[:k]
        if math.prod(outer) <= _MAX_RUNS:
            run = itemsize * math.prod(shape[k:])
            for do, so in zip(_offsets(outer, dst.strides[:k]), _offsets(outer, src.strides[:k])):
                memcpy_dtod(dptr + do, sptr + so, run, stream)
        else:
            dst.set(src.get(stream=stream), stream=stream)
            return
    dst._sync[0] = stream


def _fill_bytes(addr: int, nbytes: int, pattern: bytes, stream: Any) -> None:
    """Fills [addr, addr + nbytes) with the repeated pattern (memset when it allows)."""
    size = len(pattern)
    if pattern.count(pattern[0]) == size:
        memset_d8(addr, pattern[0], nbytes, stream)
        return
    if size % 2 == 0 and addr % 2 == 0 and pattern == pattern[:2] * (size // 2):
        memset_d16(addr, int.from_bytes(pattern[:2], "little"), nbytes // 2, stream)
        return
    if size % 4 == 0 and addr % 4 == 0 and pattern == pattern[:4] * (size // 4):
        memset_d32(addr, int.from_bytes(pattern[:4], "little"), nbytes // 4, stream)
        return
    count = nbytes // size
    seed_count = min(count, max(1, _FILL_SEED_BYTES // size))
    memcpy_htod(addr, np.frombuffer(pattern * seed_count, _UINT8), stream)
    done = seed_count * size
    while done < nbytes:
        n = min(done, nbytes - done)
        memcpy_dtod(addr + done, addr, n, stream)
        done += n


# ----------------------------------------------------------------------------- creation


def to_gpu(ary: Any, allocator: Any = None) -> GPUArray:
    """A new GPUArray holding a copy of the host array ``ary`` (C or Fortran order kept)."""
    if ary.__class__ is not np.ndarray:
        if isinstance(ary, GPUArray):
            return ary.copy()
        ary = np.asarray(ary)
    dtype = ary.dtype
    if dtype not in _SUPPORTED:
        ary = _host_array(ary)
        dtype = ary.dtype
    fl = ary.flags
    if fl.c_contiguous:
        src = ary
        flags = _FLAGS_CF if fl.f_contiguous else _FLAGS_C
    elif fl.f_contiguous:
        src = ary.T
        flags = _FLAGS_F
    else:
        src = ary = np.ascontiguousarray(ary)
        flags = None
    nbytes = ary.nbytes
    alloc = mem_alloc(nbytes) if allocator is None else allocator(nbytes)
    if nbytes:
        memcpy_htod(alloc, src if src.ndim else src.reshape(1))
    return _make(alloc, 0, ary.shape, dtype, ary.strides, ary.size, None, allocator, [None], False, flags)


def to_gpu_async(ary: Any, allocator: Any = None, stream: Any = None) -> GPUArray:
    """As ``to_gpu``, with the copy enqueued on ``stream`` (asynchronous from page-locked
    memory: keep ``ary`` unchanged until the stream has reached it)."""
    if ary.__class__ is not np.ndarray:
        ary = np.asarray(ary)
    ary = _host_array(ary)
    if ary.flags.c_contiguous:
        src = ary
    elif ary.flags.f_contiguous:
        src = ary.T
    else:
        src = ary = np.ascontiguousarray(ary)
    nbytes = ary.nbytes
    alloc = mem_alloc(nbytes) if allocator is None else allocator(nbytes)
    if nbytes:
        memcpy_htod(alloc, _buffer(src), stream)
    return _make(alloc, 0, ary.shape, ary.dtype, ary.strides, ary.size, None, allocator, [stream])


def empty(shape: Any, dtype: Any = np.float64, order: str = "C", allocator: Any = None) -> GPUArray:
    return GPUArray(shape, dtype, allocator, order=order)


def zeros(shape: Any, dtype: Any = np.float64, order: str = "C", allocator: Any = None) -> GPUArray:
    result = GPUArray(shape, dtype, allocator, order=order)
    if result.size:
        memset_d8(result._alloc, 0, result.nbytes)
        result._sync[0] = None
    return result


def ones(shape: Any, dtype: Any = np.float64, order: str = "C", allocator: Any = None) -> GPUArray:
    return GPUArray(shape, dtype, allocator, order=order).fill(1)


def _like(other: Any, dtype: Any, order: str, allocator: Any = None) -> GPUArray:
    shape = tuple(other.shape)
    dt = _check_dtype(other.dtype if dtype is None else dtype)
    alloc = allocator if allocator is not None else getattr(other, "allocator", None)
    if order in ("C", "F"):
        return GPUArray(shape, dt, alloc, order=order)
    if order not in ("K", "A"):
        raise ValueError(f"order must be 'C', 'F', 'A' or 'K', not {order!r}")
    strides = tuple(other.strides)
    flags = _contiguity(shape, strides, other.dtype.itemsize)
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
    return _like(other, dtype, order, allocator)


def zeros_like(other: Any, dtype: Any = None, order: str = "K", allocator: Any = None) -> GPUArray:
    result = _like(other, dtype, order, allocator)
    if result.size:
        memset_d8(result.ptr, 0, result.nbytes)
        result._sync[0] = None
    return result


def ones_like(other: Any, dtype: Any = None, order: str = "K", allocator: Any = None) -> GPUArray:
    return _like(other, dtype, order, allocator).fill(1)


def arange(*args: Any, **kwargs: Any) -> GPUArray:
    """arange(start, stop, step, dtype=None, allocator=None), computed as numpy's."""
    allocator = kwargs.pop("allocator", None)
    dtype = kwargs.pop("dtype", None)
    names = ("start", "stop", "step")
    positional = list(args)
    if len(positional) == 4 and dtype is None:
        dtype = positional.pop()
    for name in names[len(positional):]:
        if name in kwargs:
            positional.append(kwargs.pop(name))
    if kwargs:
        raise TypeError(f"arange() got unexpected keyword arguments: {', '.join(kwargs)}")
    host = np.arange(*positional, dtype=dtype)
    return to_gpu(host, allocator)


# ----------------------------------------------------------------------------- interop import


_PROBE = np.empty(1, _UINT8)


def _is_device_memory(ptr: int, lo: int, hi: int) -> bool:
    """On the host backend: whether [ptr+lo, ptr+hi) lies in pygpu allocations."""
    try:
        memcpy_dtoh(_PROBE, ptr + lo)
        memcpy_dtoh(_PROBE, ptr + hi - 1)
    except (CudaError, ValueError):
        return False
    return True


class _HostMemory:
    """A numpy view of host memory kept alive by `owner` (for copying foreign CPU data)."""

    def __init__(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype, owner: Any) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "data": (ptr, True), "shape": shape, "strides": strides, "typestr": dtype.str, "version": 3,
        }


def _dtype_of_dl(code: int, bits: int) -> np.dtype:
    kind = _DL_KIND.get(code)
    if kind is None:
        raise BufferError(f"DLPack dtype code {code} ({bits} bits) is not supported by GPUArray")
    if kind == "b":
        dt = np.dtype(np.bool_) if bits == 8 else None
    else:
        try:
            dt = np.dtype(f"{kind}{bits // 8}")
        except TypeError:
            dt = None
    if dt is None or dt not in _SUPPORTED:
        raise BufferError(f"DLPack dtype (code {code}, {bits} bits) is not supported by GPUArray")
    return dt


def _from_tensor(tensor: DLPackTensor, base: Any, copy: bool | None) -> GPUArray:
    code, bits, _lanes = tensor.dtype
    dtype = _dtype_of_dl(code, bits)
    device_type, device_id = tensor.device
    kind = _kind()
    shape = tuple(tensor.shape)
    strides = tuple(tensor.strides)
    size = math.prod(shape)
    if kind == "host":
        if device_type not in (_KDL_CPU, _KDL_CUDA_HOST, _KDL_ROCM_HOST):
            raise BufferError(f"cannot use DLPack device type {device_type} memory on the host backend")
        ptr = tensor.ptr
        if size and not _is_device_memory(ptr, *_extent(shape, strides, dtype.itemsize)):
            if copy is False:
                raise BufferError(
                    "this CPU memory is not a pygpu allocation, so it cannot be used without a copy "
                    "(pass copy=None or copy=True)"
                )
            return to_gpu(np.asarray(_HostMemory(ptr, shape, strides, dtype, tensor)))
    else:
        ours = _KDL_CUDA if kind == "cuda" else _KDL_ROCM
        if device_type != ours:
            raise BufferError(
                f"cannot wrap DLPack device type {device_type} memory on the {kind} backend "
                f"(expected {ours}); copy it to the host first"
            )
        current = cudaGetDevice()[0]
        if device_id != current:
            raise ValueError(
                f"this array is on device {device_id}, but device {current} is current: "
                f"call pygpu.cudaSetDevice({device_id}) first"
            )
    result = _make(tensor, 0, shape, dtype, strides, size, base, None, [False], tensor.readonly)
    return result.copy() if copy else result


def from_dlpack(x: Any, *, device: Any = None, copy: bool | None = None) -> GPUArray:
    """A GPUArray over the memory of a DLPack producer (an object with ``__dlpack__``, or a
    capsule), with no copy unless ``copy=True`` (or the data is host memory a GPU
    backend cannot use, when ``copy`` is not False). Keeps the producer alive."""
    if device is not None:
        raise ValueError("from_dlpack(device=...) is not supported: arrays stay on the producer's device")
    if isinstance(x, GPUArray):
        return x.copy() if copy else x
    if type(x).__name__ == "PyCapsule":
        return _from_tensor(dlpack_from_capsule(x), None, copy)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} does not support DLPack (it has no __dlpack__ method)")
    kind = _kind()
    ours = _dl_device_type()
    try:
        device_type, _ = x.__dlpack_device__()
    except AttributeError:
        device_type = ours
    if device_type != ours:
        if device_type in (_KDL_CPU, _KDL_CUDA_HOST, _KDL_ROCM_HOST) and copy is not False:
            return to_gpu(np.from_dlpack(x))
        raise BufferError(
            f"cannot use DLPack device type {device_type} memory on the {kind} backend"
            + (" without a copy" if copy is False else "")
        )
    stream = None if kind != "cuda" else 1
    try:
        capsule = x.__dlpack__(stream=stream, max_version=_DLPACK_MAX_VERSION)
    except TypeError:
        capsule = x.__dlpack__(stream=stream) if stream is not None else x.__dlpack__()
    return _from_tensor(dlpack_from_capsule(capsule), x, copy)


def _from_cai(obj: Any, cai: Any) -> GPUArray:
    if not isinstance(cai, dict):
        raise TypeError(f"__cuda_array_interface__ must be a dict, not {type(cai).__name__}")
    if cai.get("mask") is not None:
        raise ValueError("masked arrays (a __cuda_array_interface__ with 'mask') are not supported")
    try:
        shape = tuple(operator.index(d) for d in cai["shape"])
        typestr = cai["typestr"]
    except (KeyError, TypeError) as e:
        raise TypeError(f"malformed __cuda_array_interface__: {e}") from e
    if any(d < 0 for d in shape):
        raise ValueError(f"__cuda_array_interface__ has a negative extent: {shape}")
    try:
        dtype = np.dtype(typestr)
    except TypeError as e:
        raise TypeError(f"unsupported typestr {typestr!r} in __cuda_array_interface__") from e
    if dtype not in _SUPPORTED:
        raise TypeError(f"unsupported typestr {typestr!r} in __cuda_array_interface__")
    data = cai.get("data")
    if data is None:
        ptr, readonly = 0, False
    else:
        ptr, readonly = operator.index(data[0]), bool(data[1])
    strides = cai.get("strides")
    if strides is None:
        st = _c_strides(shape, dtype.itemsize)
    else:
        st = tuple(operator.index(s) for s in strides)
        if len(st) != len(shape):
            raise ValueError(f"__cuda_array_interface__ strides {st} do not match shape {shape}")
    size = math.prod(shape)
    if size and ptr == 0:
        raise ValueError("__cuda_array_interface__ has a null data pointer for a non-empty array")
    device = cudaGetDevice()[0]
    dev = getattr(obj, "__dlpack_device__", None)
    if callable(dev):
        try:
            device_type, device_id = dev()
        except Exception:  # noqa: BLE001 - the hint is optional
            device_type, device_id = None, device
        if device_type in (_KDL_CUDA, _KDL_ROCM) and device_id != device:
            raise ValueError(
                f"this array is on device {device_id}, but device {device} is current: "
                f"call pygpu.cudaSetDevice({device_id}) first"
            )
    sync: list[Any] = [False]
    stream = cai.get("stream")
    if stream is not None:
        stream = operator.index(stream)
        if stream == 0:
            raise ValueError("__cuda_array_interface__ 'stream' 0 is disallowed (version 3): it is ambiguous")
        if _kind() != "host":
            event = cudaEvent_t(2)
            event_record_raw(event, stream)
            stream_wait_event_raw(0, event)
            sync[0] = None
    alloc = DevicePointer(ptr, 0, obj, device)
    return _make(alloc, 0, shape, dtype, st, size, obj, None, sync, readonly)


def asarray(obj: Any, dtype: Any = None) -> GPUArray:
    """``obj`` as a GPUArray: itself; a zero-copy wrapper of a CUDA Array Interface or
    DLPack producer on this backend's device (kept alive by the result); otherwise a
    copy of ``numpy.asarray(obj)``. A different ``dtype`` converts (a copy)."""
    if isinstance(obj, GPUArray):
        result = obj
    else:
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            result = _from_cai(obj, cai)
        elif hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
            result = from_dlpack(obj)
        elif isinstance(obj, np.ndarray) and _kind() == "host" and obj.size:
            lo, hi = _extent(obj.shape, obj.strides, obj.itemsize)
            if obj.dtype in _SUPPORTED and _is_device_memory(obj.ctypes.data, lo, hi):
                result = from_dlpack(obj)
            else:
                result = to_gpu(obj)
        else:
            result = to_gpu(obj)
    if dtype is not None and np.dtype(dtype) != result.dtype:
        result = result.astype(dtype)
    return result
