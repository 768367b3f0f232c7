"""The one table of the dtypes GPUArray holds: numpy dtype, DLPack type code and the
suffix of the bundled kernels' names (``pygpu/include/pygpu_types.h`` lists the same dtypes)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pygpu._pygpu import raw_memory_dtype

__all__ = ["DTYPES", "SUPPORTED", "check_dtype", "dtype_of_dlpack", "host_array", "kernel_suffix"]


class DtypeInfo(NamedTuple):
    dtype: np.dtype[Any]
    #: DLDataTypeCode: 0 int, 1 uint, 2 float, 5 complex, 6 bool.
    dlpack_code: int
    #: The suffix of the bundled kernels' names for this dtype (``add_f64``, ``cast_i32_f16``).
    suffix: str


DTYPES: dict[np.dtype[Any], DtypeInfo] = {
    info.dtype: info
    for info in (
        DtypeInfo(np.dtype(np.bool_), 6, "b1"),
        DtypeInfo(np.dtype(np.int8), 0, "i8"),
        DtypeInfo(np.dtype(np.int16), 0, "i16"),
        DtypeInfo(np.dtype(np.int32), 0, "i32"),
        DtypeInfo(np.dtype(np.int64), 0, "i64"),
        DtypeInfo(np.dtype(np.uint8), 1, "u8"),
        DtypeInfo(np.dtype(np.uint16), 1, "u16"),
        DtypeInfo(np.dtype(np.uint32), 1, "u32"),
        DtypeInfo(np.dtype(np.uint64), 1, "u64"),
        DtypeInfo(np.dtype(np.float16), 2, "f16"),
        DtypeInfo(np.dtype(np.float32), 2, "f32"),
        DtypeInfo(np.dtype(np.float64), 2, "f64"),
        DtypeInfo(np.dtype(np.complex64), 5, "c64"),
        DtypeInfo(np.dtype(np.complex128), 5, "c128"),
    )
}

SUPPORTED = frozenset(DTYPES)
_BY_DLPACK = {(info.dlpack_code, info.dtype.itemsize * 8): info.dtype for info in DTYPES.values()}


def kernel_suffix(dtype: np.dtype[Any]) -> str:
    return DTYPES[dtype].suffix


def check_dtype(dtype: Any) -> np.dtype[Any]:
    try:
        dt: np.dtype[Any] = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"not a dtype: {dtype!r}") from e
    if dt in SUPPORTED:
        return dt
    raw_memory_dtype(dt, "GPUArray")
    if dt.fields is not None:
        return dt  # structs (pygpu.vec types): stored and copied; generated kernels compute on them
    if dt.newbyteorder("=") in SUPPORTED:
        raise TypeError(f"dtype {dt.str!r} is not in native byte order: use {dt.newbyteorder('=').str!r}")
    raise TypeError(
        f"unsupported dtype {dt}: GPUArray holds bool, int8..int64, uint8..uint64, float16/32/64 and complex64/128"
    )


def host_array(ary: Any) -> np.ndarray[Any, Any]:
    """A numpy array of a supported dtype (converting byte order if needed)."""
    host: np.ndarray[Any, Any] = np.asarray(ary)
    dt = host.dtype
    if dt not in SUPPORTED:
        native = dt.newbyteorder("=")
        if native in SUPPORTED:
            converted: np.ndarray[Any, Any] = host.astype(native)
            return converted
        check_dtype(dt)
    return host


def dtype_of_dlpack(code: int, bits: int) -> np.dtype[Any]:
    dt = _BY_DLPACK.get((code, bits))
    if dt is None:
        raise BufferError(f"DLPack dtype (code {code}, {bits} bits) is not supported by GPUArray")
    return dt
