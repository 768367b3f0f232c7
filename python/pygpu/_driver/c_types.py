"""The C type names of numpy dtypes, both ways: the one registry that generated kernels,
``pygpu.tools`` (``dtype_to_ctype``, ``get_or_register_dtype``) and ``pygpu.compyte.dtypes``
read. C's own types are listed here; CUDA's vector types and registered structs are
``vector_types``'s."""

from __future__ import annotations

import struct
import sys
from typing import Any

import numpy as np

from pygpu._driver import vector_types

__all__ = ["dtype_of_ctype", "dtype_to_ctype", "get_or_register_dtype", "register_dtype"]


def _platform_bits() -> int:
    return struct.calcsize("P") * 8


_DTYPE_TO_CTYPE = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.bool_): "bool",
    np.dtype(np.float16): "__half",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.complex64): "pycuda::complex<float>",
    np.dtype(np.complex128): "pycuda::complex<double>",
}


def dtype_to_ctype(dtype: Any, with_fp_tex_hack: bool = False) -> str:
    """The C type name of a numpy dtype, as generated kernels spell it."""
    if dtype is None:
        raise ValueError("dtype may not be None")
    dt = np.dtype(dtype)
    if dt.kind in "iu" and dt.itemsize == 8:
        long = "long long" if sys.platform == "win32" or _platform_bits() != 64 else "long"
        return long if dt.kind == "i" else f"unsigned {long}"
    if with_fp_tex_hack and dt in (np.dtype(np.float32), np.dtype(np.float64)):
        return "fp_tex_float" if dt == np.float32 else "fp_tex_double"
    name = _DTYPE_TO_CTYPE.get(dt)
    if name is not None:
        return name
    name = vector_types.dtype_to_c_name(dt)
    if name is None:
        raise ValueError(
            f"unable to map dtype {dt!r} to a C type: register a struct dtype with pygpu.vec.register_struct"
        )
    return name


_CTYPE_TO_DTYPE = {
    "float": np.float32,
    "double": np.float64,
    "__half": np.float16,
    "half": np.float16,
    "pycuda::complex<float>": np.complex64,
    "pycuda::complex<double>": np.complex128,
    "pygpu::complex<float>": np.complex64,
    "pygpu::complex<double>": np.complex128,
    "int": np.int32,
    "signed int": np.int32,
    "signed": np.int32,
    "unsigned": np.uint32,
    "unsigned int": np.uint32,
    "long long": np.int64,
    "long long int": np.int64,
    "signed long long": np.int64,
    "unsigned long long": np.uint64,
    "unsigned long long int": np.uint64,
    "short": np.int16,
    "short int": np.int16,
    "signed short": np.int16,
    "unsigned short": np.uint16,
    "unsigned short int": np.uint16,
    "short unsigned int": np.uint16,
    "char": np.int8,
    "signed char": np.int8,
    "unsigned char": np.uint8,
    "bool": np.bool_,
    "int8_t": np.int8,
    "uint8_t": np.uint8,
    "int16_t": np.int16,
    "uint16_t": np.uint16,
    "int32_t": np.int32,
    "uint32_t": np.uint32,
    "int64_t": np.int64,
    "uint64_t": np.uint64,
    "size_t": np.uintp,
    "ptrdiff_t": np.intp,
}


def _long_dtype(unsigned: bool) -> Any:
    if _platform_bits() == 64 and sys.platform != "win32":
        return np.uint64 if unsigned else np.int64
    return np.uint32 if unsigned else np.int32


def dtype_of_ctype(ctype: str) -> Any:
    """The numpy type of a C type name (``"unsigned long"``, ``"float3"``, a registered
    struct's name), or None for a name nothing is registered under."""
    if ctype in ("long", "long int", "signed long", "signed long int"):
        return _long_dtype(False)
    if ctype in ("unsigned long", "unsigned long int", "long unsigned int"):
        return _long_dtype(True)
    if ctype in _CTYPE_TO_DTYPE:
        return _CTYPE_TO_DTYPE[ctype]
    return vector_types.c_name_to_dtype(ctype)


def get_or_register_dtype(c_names: str | list[str], dtype: Any = None) -> np.dtype:
    """The dtype registered for the C type name(s) ``c_names``; with ``dtype``, registers it
    under those names first (structured dtypes through :func:`pygpu.vec.register_struct`)."""
    names = [c_names] if isinstance(c_names, str) else list(c_names)
    if not names:
        raise ValueError("get_or_register_dtype needs at least one C type name")
    if dtype is None:
        for name in names:
            found = _CTYPE_TO_DTYPE.get(name)
            known = np.dtype(found) if found is not None else vector_types.c_name_to_dtype(name)
            if known is not None:
                return known
        raise ValueError(f"C type {names[0]!r} is not registered: pass its dtype")
    dt: np.dtype = np.dtype(dtype)
    for name in names:
        if dt.fields is not None:
            vector_types.register_struct(name, dt)
        else:
            known_type = _CTYPE_TO_DTYPE.get(name)
            if known_type is not None and np.dtype(known_type) != dt:
                raise ValueError(f"C type {name!r} is already registered as {np.dtype(known_type)}, not {dt}")
            _CTYPE_TO_DTYPE[name] = dt.type
    return dt


def register_dtype(dtype: Any, c_names: str | list[str], alias_ok: bool = False) -> None:
    """PyCUDA's older spelling of :func:`get_or_register_dtype` (arguments swapped)."""
    del alias_ok
    get_or_register_dtype(c_names, dtype)
