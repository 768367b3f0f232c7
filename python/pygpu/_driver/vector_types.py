"""CUDA's vector types as numpy structured dtypes (``pygpu.vec``, PyCUDA's ``gpuarray.vec``):
``vec.float3`` is ``np.dtype([("x", f4), ("y", f4), ("z", f4)])``, ``vec.make_float3(1, 2, 3)``
a scalar of it that kernels take by value; GPUArrays of them pass as ``float3 *``.

Structs of your own: ``register_struct("my_t", dtype, c_decl)`` names a structured dtype so
generated kernels (ElementwiseKernel, ReductionKernel) accept ``my_t`` in their argument
lists; a kernel that uses it checks ``sizeof`` at compile time and every field's offset
once by a probe kernel (``pygpu._kernelgen.generated_kernel``), so a padding mismatch is an
error, not garbage.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "c_name_to_dtype",
    "dtype_to_c_name",
    "layout_checks",
    "register_struct",
    "struct_definitions",
]

_c_name_to_dtype: dict[str, np.dtype] = {}
_dtype_to_c_name: dict[np.dtype, str] = {}
# C definitions that generated kernels need for registered structs (CUDA's own vector
# types are built in on the device; the host header defines them too, see _VECTOR_DEFS).
_definitions: dict[str, str] = {}

_FIELDS = "xyzw"
# CUDA's vector types: (base name, numpy type, counts, CUDA's alignment per count).
_VECTORS: list[tuple[str, Any, tuple[int, ...]]] = [
    ("char", np.int8, (1, 2, 3, 4)),
    ("uchar", np.uint8, (1, 2, 3, 4)),
    ("short", np.int16, (1, 2, 3, 4)),
    ("ushort", np.uint16, (1, 2, 3, 4)),
    ("int", np.int32, (1, 2, 3, 4)),
    ("uint", np.uint32, (1, 2, 3, 4)),
    ("long", np.int64, (1, 2, 3, 4)),
    ("ulong", np.uint64, (1, 2, 3, 4)),
    ("longlong", np.int64, (1, 2)),
    ("ulonglong", np.uint64, (1, 2)),
    ("float", np.float32, (1, 2, 3, 4)),
    ("double", np.float64, (1, 2)),
]


def register_struct(c_name: str, dtype: Any, c_decl: str | None = None) -> np.dtype:
    """Makes the structured ``dtype`` known to generated kernels as the C type ``c_name``.
    ``c_decl`` is its C definition (``struct c_name {...};``), added to the kernels that use
    it; leave it out for a type the kernel's preamble (or CUDA) already defines."""
    dt: np.dtype = np.dtype(dtype)
    if dt.fields is None:
        raise ValueError(f"register_struct({c_name!r}): {dt} is not a structured dtype")
    known = _c_name_to_dtype.get(c_name)
    if known is not None and known != dt:
        raise ValueError(f"C type {c_name!r} is already registered with a different dtype ({known})")
    _c_name_to_dtype[c_name] = dt
    _dtype_to_c_name.setdefault(dt, c_name)
    if c_decl is not None:
        _definitions[c_name] = c_decl
    return dt


def c_name_to_dtype(c_name: str) -> np.dtype | None:
    """The numpy dtype registered for a C type name (``"float4"``), or None."""
    found: np.dtype | None = _c_name_to_dtype.get(c_name)
    return found


def dtype_to_c_name(dtype: Any) -> str | None:
    """The C type name registered for a numpy dtype (``vec.float4`` -> ``"float4"``), or None."""
    return _dtype_to_c_name.get(np.dtype(dtype))


def struct_definitions(dtypes: list[np.dtype]) -> str:
    """The C definitions of the registered structs among ``dtypes``."""
    out = []
    for dt in dtypes:
        name = _dtype_to_c_name.get(dt)
        if name is not None and name in _definitions:
            out.append(_definitions[name])
    return "\n".join(dict.fromkeys(out))


def layout_checks(dtypes: list[np.dtype]) -> str:
    """``static_assert``s that the C size of each struct among ``dtypes`` is numpy's (field
    offsets are not constant expressions in NVRTC: a probe kernel checks them,
    ``pygpu._kernelgen.generated_kernel.check_field_offsets``)."""
    lines = []
    for dt in dict.fromkeys(dtypes):
        name = _dtype_to_c_name.get(dt)
        if name is None or dt.fields is None:
            continue
        lines.append(
            f"static_assert(sizeof({name}) == {dt.itemsize}, \"sizeof({name}) differs from its numpy dtype's "
            f'itemsize {dt.itemsize}: make the dtype match the C struct (padding, align=True)");'
        )
    return "\n".join(lines)


def _vector_dtype(base: Any, count: int) -> np.dtype:
    return np.dtype([(_FIELDS[i], base) for i in range(count)])


def _named(function: Any, name: str, doc: str) -> Any:
    """Gives a generated function its public name and docstring (help(), the docs' reference)."""
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def _make(dtype: np.dtype, name: str) -> Any:
    def make(*values: Any) -> Any:
        if len(values) != len(dtype.names or ()):
            raise TypeError(f"expected {len(dtype.names or ())} components, got {len(values)}")
        return np.array(values, dtype=dtype)[()]

    return _named(make, f"make_{name}", f"A {name} (a numpy scalar of ``vec.{name}``) from its components, x first.")


def _fill(dtype: np.dtype, name: str) -> Any:
    def filled(value: Any) -> Any:
        return np.array((value,) * len(dtype.names or ()), dtype=dtype)[()]

    return _named(filled, f"filled_{name}", f"A {name} whose every component is ``value``.")


def _zero(dtype: np.dtype, name: str) -> Any:
    def zero() -> Any:
        return np.zeros((), dtype=dtype)[()]

    return _named(zero, f"zero_{name}", f"A {name} whose every component is 0.")


for _base, _np_type, _counts in _VECTORS:
    for _count in _counts:
        _name = f"{_base}{_count}"
        _dt = _vector_dtype(_np_type, _count)
        register_struct(_name, _dt)
        globals()[_name] = _dt
        globals()[f"make_{_name}"] = _make(_dt, _name)
        globals()[f"filled_{_name}"] = _fill(_dt, _name)
        globals()[f"zero_{_name}"] = _zero(_dt, _name)
        __all__ += [_name, f"make_{_name}", f"filled_{_name}", f"zero_{_name}"]  # noqa: PLE0604
del _base, _np_type, _counts, _count, _name, _dt


def __getattr__(name: str) -> Any:
    # The vector types above are made in a loop; this tells type checkers they exist.
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
