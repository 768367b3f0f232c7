"""Arrays over other libraries' memory: ``asarray`` and ``from_dlpack`` wrap a DLPack producer or
a CUDA Array Interface without a copy (or copy host data to the device), each checked against
the allocation it points into. The other direction, exports, is ``_interop``'s."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from pygpu._pygpu import (
    DLPackTensor,
    allocation_extent,
    capabilities,
    cudaEvent_t,
    dlpack_from_capsule,
    event_record_raw,
    get_device,
    host_span_is_mapped,
    stream_wait_event_raw,
)
from pygpu.gpuarray._core import GPUArray
from pygpu.gpuarray._creation import to_gpu
from pygpu.gpuarray._dtypes import SUPPORTED, dtype_of_dlpack
from pygpu.gpuarray._interop import (
    _DLPACK_MAX_VERSION,
    KDL_CPU,
    KDL_CUDA,
    KDL_CUDA_HOST,
    KDL_ROCM,
    KDL_ROCM_HOST,
    _check_span,
)
from pygpu.gpuarray._layout import c_strides, extent
from pygpu.gpuarray._ordering import StreamOrder
from pygpu.gpuarray._storage import DevicePointer, make

__all__ = ["asarray", "from_dlpack"]

#
# What an import trusts. A tensor's bytes are [ptr + lo, ptr + hi), lo and hi from its shape
# and strides (exact integers here, so nothing overflows). Everywhere, a tensor whose bytes
# would leave the 64-bit address space or exceed what one allocation can hold, or (for a
# zero-copy view, which kernels read element by element) whose address or strides are not
# multiples of its dtype's alignment, is refused with ValueError. When any of its addresses
# (the producer's data pointer, element 0, the first and the last byte) lies in an allocation
# the backend knows (pygpu's own on the host backend, with a pooled block's bytes as asked for;
# on CUDA whatever the driver allocated, another library's memory included), every byte must
# lie in that allocation. Foreign memory no backend knows is trusted to be the producer's, as
# the protocols say; on the host backend, where numpy then reads it, its pages must at least
# be mapped (host_span_is_mapped), so that a bogus address or offset is a ValueError, not
# SIGSEGV. HIP knows no allocation ranges here: GPU memory there is trusted as it is described.

_ADDRESS_SPACE = 1 << 64
_MAX_BYTES = (1 << 63) - 1


def _import_span(
    ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int, what: str
) -> tuple[int, int]:
    """The byte range [start, end) of a non-empty imported tensor, refusing ones outside the
    address space or larger than any allocation."""
    lo, hi = extent(shape, strides, itemsize)
    start, end = ptr + lo, ptr + hi
    if start < 0 or end > _ADDRESS_SPACE:
        raise ValueError(
            f"{what}: shape {shape} with byte strides {strides} from address 0x{ptr:x} reaches bytes "
            f"[{start:#x}, {end:#x}), outside the 64-bit address space: the offset or strides are wrong"
        )
    if end - start > _MAX_BYTES:
        raise ValueError(
            f"{what}: shape {shape} with strides {strides} spans {end - start} bytes, more than any allocation"
        )
    return start, end


def _check_import(
    ptr: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    dtype: np.dtype[Any],
    what: str,
    *,
    data: int | None = None,
    zero_copy: bool = True,
    check_mapped: bool = True,
) -> bool:
    """Checks an imported tensor's bytes against the allocation they point into (see above):
    True when a known allocation holds them, False for foreign memory; ValueError otherwise.
    Empty tensors touch no memory and pass."""
    size = math.prod(shape)
    if not size:
        return False
    if size * dtype.itemsize > _MAX_BYTES:
        raise ValueError(f"{what}: shape {shape} has {size} elements, more than any array can hold")
    start, end = _import_span(ptr, shape, strides, dtype.itemsize, what)
    if zero_copy:
        align = dtype.alignment
        if ptr % align or any(s % align for d, s in zip(shape, strides) if d > 1):
            raise ValueError(
                f"{what}: address 0x{ptr:x} or byte strides {strides} are not multiples of the {align}-byte "
                f"alignment of {dtype}: kernels cannot read it in place (copy it into an aligned array first)"
            )
    probes = [ptr, start, end - 1] if data is None else [data, ptr, start, end - 1]
    for probe in probes:
        if not 0 <= probe < _ADDRESS_SPACE:
            continue
        found = allocation_extent(probe)
        if found is None:
            continue
        a_start, a_bytes = found
        if a_bytes == 0:
            raise ValueError(
                f"{what}: the tensor's bytes [{start:#x}, {end:#x}) reach pygpu memory at 0x{a_start:x} that "
                "was freed (an idle pool block): the producer's array is gone, or its shape, strides or offset "
                "run outside it"
            )
        if not a_start <= start < end <= a_start + a_bytes:
            raise ValueError(
                f"{what}: the tensor's bytes [{start:#x}, {end:#x}) ({end - start} bytes, from offset "
                f"{start - a_start} of the allocation) run outside the allocation at 0x{a_start:x} of "
                f"{a_bytes} bytes that it points into: its shape {shape}, strides {strides} or offset are wrong"
            )
        return True
    if check_mapped and capabilities().host_memory and host_span_is_mapped(start, end - start) is False:
        raise ValueError(
            f"{what}: bytes [{start:#x}, {end:#x}) are not mapped memory of this process: "
            "the data pointer, offset, shape or strides are wrong"
        )
    return False


class _HostMemory:
    """A numpy view of host memory kept alive by `owner` (for copying foreign CPU data)."""

    def __init__(
        self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any], owner: Any
    ) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "data": (ptr, True),
            "shape": shape,
            "strides": strides,
            "typestr": dtype.str,
            "version": 3,
        }


def _from_tensor(tensor: DLPackTensor, base: Any, copy: bool | None) -> GPUArray:
    code, bits, _lanes = tensor.dtype
    dtype = dtype_of_dlpack(code, bits)
    device_type, device_id = tensor.device
    p = capabilities()
    shape = tuple(tensor.shape)
    strides = tuple(tensor.strides)
    size = math.prod(shape)
    if p.host_memory:
        if device_type not in p.dlpack_host_types:
            raise BufferError(f"cannot use DLPack device type {device_type} memory on the host backend")
        ptr = tensor.ptr
        # Foreign CPU memory is copied (numpy reads it unaligned if it must); pygpu's is wrapped.
        inside = _check_import(ptr, shape, strides, dtype, "DLPack import", data=tensor.data, zero_copy=False)
        if size and inside:
            _check_import(ptr, shape, strides, dtype, "DLPack import", data=tensor.data)
        if size and not inside:
            if copy is False:
                raise BufferError(
                    "this CPU memory is not a pygpu allocation, so it cannot be used without a copy "
                    "(pass copy=None or copy=True)"
                )
            return to_gpu(np.asarray(_HostMemory(ptr, shape, strides, dtype, tensor)))
    else:
        if device_type != p.dlpack_device_type:
            raise BufferError(
                f"cannot wrap DLPack device type {device_type} memory on the {p.backend} backend "
                f"(expected {p.dlpack_device_type}); copy it to the host first"
            )
        current = get_device()
        if device_id != current:
            raise ValueError(
                f"this array is on device {device_id}, but device {current} is current: "
                f"call pygpu.cudaSetDevice({device_id}) first"
            )
        _check_import(tensor.ptr, shape, strides, dtype, "DLPack import", data=tensor.data)
    result = make(GPUArray, tensor, 0, shape, dtype, strides, size, base, None, StreamOrder(), tensor.readonly)
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
    p = capabilities()
    ours = p.dlpack_device_type
    try:
        device_type, _ = x.__dlpack_device__()
    except AttributeError:
        device_type = ours
    if device_type != ours:
        if device_type in (KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST) and copy is not False:
            return to_gpu(np.from_dlpack(x))
        raise BufferError(
            f"cannot use DLPack device type {device_type} memory on the {p.backend} backend"
            + (" without a copy" if copy is False else "")
        )
    # The consumer's stream: CUDA's legacy default stream is 1 in the protocol, others take None.
    stream = 1 if p.dlpack_device_type == KDL_CUDA else None
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
    if dtype not in SUPPORTED:
        raise TypeError(f"unsupported typestr {typestr!r} in __cuda_array_interface__")
    data = cai.get("data")
    if data is None:
        ptr, readonly = 0, False
    else:
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise TypeError(f"__cuda_array_interface__ 'data' must be a 2-tuple (pointer, read_only), not {data!r}")
        try:
            ptr, readonly = operator.index(data[0]), bool(data[1])
        except TypeError as e:
            raise TypeError(f"__cuda_array_interface__ 'data' pointer must be an int, not {data[0]!r}") from e
        if ptr < 0:
            raise ValueError(f"__cuda_array_interface__ 'data' pointer is negative: {ptr}")
    strides = cai.get("strides")
    if strides is None:
        st = c_strides(shape, dtype.itemsize)
    else:
        st = tuple(operator.index(s) for s in strides)
        if len(st) != len(shape):
            raise ValueError(f"__cuda_array_interface__ strides {st} do not match shape {shape}")
    size = math.prod(shape)
    if size and ptr == 0:
        raise ValueError("__cuda_array_interface__ has a null data pointer for a non-empty array")
    if not _check_import(ptr, shape, st, dtype, "__cuda_array_interface__", check_mapped=False):
        # On the host backend this interface must describe pygpu memory (GPU backends cannot tell).
        _check_span(ptr, shape, st, dtype.itemsize, "__cuda_array_interface__ 'data'")
    device = get_device()
    dev = getattr(obj, "__dlpack_device__", None)
    if callable(dev):
        try:
            device_type, device_id = dev()
        except Exception:  # noqa: BLE001 - the hint is optional
            device_type, device_id = None, device
        if device_type in (KDL_CUDA, KDL_ROCM) and device_id != device:
            raise ValueError(
                f"this array is on device {device_id}, but device {device} is current: "
                f"call pygpu.cudaSetDevice({device_id}) first"
            )
    order = StreamOrder()
    stream = cai.get("stream")
    if stream is not None:
        stream = operator.index(stream)
        if stream == 0:
            raise ValueError("__cuda_array_interface__ 'stream' 0 is disallowed (version 3): it is ambiguous")
        if not capabilities().host_memory:
            event = cudaEvent_t(2)
            event_record_raw(event, stream)
            stream_wait_event_raw(0, event)
            order.wrote(None)
    alloc = DevicePointer(ptr, 0, obj, device)
    return make(GPUArray, alloc, 0, shape, dtype, st, size, obj, None, order, readonly)


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
        elif isinstance(obj, np.ndarray) and capabilities().host_memory and obj.size:
            # A view of pygpu memory (np.asarray(g), or a strided view of it) is wrapped when
            # it lies within its allocation and is aligned; one that runs outside is refused.
            inside = _check_import(obj.ctypes.data, obj.shape, obj.strides, obj.dtype, "asarray", zero_copy=False)
            if inside and obj.dtype in SUPPORTED and obj.flags.aligned:
                result = from_dlpack(obj)
            else:
                result = to_gpu(obj)
        else:
            result = to_gpu(obj)
    if dtype is not None and np.dtype(dtype) != result.dtype:
        result = result.astype(dtype)
    return result
