"""pycuda.gpuarray's elementwise module functions: ``where``, ``if_positive``, ``maximum``,
``minimum`` and ``logical_and/or/not``, each one kernel launch (plus casts of operands whose
dtype differs from numpy's result dtype)."""

from __future__ import annotations

from typing import Any

import numpy as np

import pygpu.gpuarray._core as _core
import pygpu.gpuarray._elementwise as _elementwise
from pygpu.gpuarray._arithmetic import binary, cast_to, unary
from pygpu.gpuarray._dtypes import check_dtype, kernel_suffix
from pygpu.gpuarray._storage import ArrayFields

__all__ = ["if_positive", "logical_and", "logical_not", "logical_or", "maximum", "minimum", "where"]

_BOOL = np.dtype(np.bool_)


def maximum(a: Any, b: Any, out: _core.GPUArray | None = None, stream: Any = None) -> _core.GPUArray:
    """The elementwise maximum (NaN wins, as numpy's); either operand may be a scalar."""
    return binary(np.maximum, "maximum", a, b, out, stream)  # type: ignore[return-value]


def minimum(a: Any, b: Any, out: _core.GPUArray | None = None, stream: Any = None) -> _core.GPUArray:
    """The elementwise minimum (NaN wins, as numpy's); either operand may be a scalar."""
    return binary(np.minimum, "minimum", a, b, out, stream)  # type: ignore[return-value]


def logical_and(x1: Any, x2: Any, /, out: _core.GPUArray | None = None, stream: Any = None) -> _core.GPUArray:
    """Elementwise ``x1 and x2`` as a bool ``GPUArray`` (numpy's ``logical_and``); either may be a scalar."""
    return binary(np.logical_and, "logical_and", x1, x2, out, stream)  # type: ignore[return-value]


def logical_or(x1: Any, x2: Any, /, out: _core.GPUArray | None = None, stream: Any = None) -> _core.GPUArray:
    """Elementwise ``x1 or x2`` as a bool ``GPUArray`` (numpy's ``logical_or``); either may be a scalar."""
    return binary(np.logical_or, "logical_or", x1, x2, out, stream)  # type: ignore[return-value]


def logical_not(x: _core.GPUArray, /, out: _core.GPUArray | None = None, stream: Any = None) -> _core.GPUArray:
    """Elementwise ``not x`` as a bool ``GPUArray`` (numpy's ``logical_not``)."""
    return unary(np.logical_not, "logical_not", x, out, stream)


def _select(
    condition: ArrayFields, then_: Any, else_: Any, out: _core.GPUArray | None, stream: Any, what: str
) -> _core.GPUArray:
    if not isinstance(condition, ArrayFields):
        raise TypeError(f"{what}: the criterion must be a GPUArray, not {type(condition).__name__}")
    shape = condition.shape
    for name, v in (("then_", then_), ("else_", else_)):
        if isinstance(v, _core.GPUArray):
            if v.shape != shape:
                raise ValueError(
                    f"{what}: {name} has shape {v.shape}, the criterion {shape}; arrays must have one shape "
                    "(scalars are allowed for then_ and else_)"
                )
        elif not isinstance(v, (int, float, complex, bool, np.generic)):
            raise TypeError(f"{what}: {name} must be a GPUArray or a scalar, not {type(v).__name__}")
    weak = [v.dtype if isinstance(v, _core.GPUArray) else v for v in (then_, else_)]
    dtype = check_dtype(np.result_type(*weak))
    if out is not None:
        if not isinstance(out, _core.GPUArray) or out.shape != shape:
            raise ValueError(f"{what}: out must be a GPUArray of shape {shape}")
        dtype = out.dtype
    result = out if out is not None else _core.GPUArray(shape, dtype, condition.allocator)
    operands = [v if not isinstance(v, _core.GPUArray) else cast_to(v, dtype, stream) for v in (then_, else_)]
    packed = [v if isinstance(v, _core.GPUArray) else _elementwise.scalar_bytes(v, dtype) for v in operands]
    _elementwise.launch("arith", f"where_{kernel_suffix(dtype)}", [result], [condition, *packed], stream)
    return result


def where(
    criterion: _core.GPUArray, then_: Any, else_: Any, out: _core.GPUArray | None = None, stream: Any = None
) -> _core.GPUArray:
    """``then_`` where ``criterion`` is nonzero, else ``else_`` (numpy's where for one shape)."""
    if not isinstance(criterion, _core.GPUArray):
        raise TypeError(f"where: the criterion must be a GPUArray, not {type(criterion).__name__}")
    return _select(cast_to(criterion, _BOOL, stream), then_, else_, out, stream, "where")


def if_positive(
    criterion: _core.GPUArray, then_: Any, else_: Any, out: _core.GPUArray | None = None, stream: Any = None
) -> _core.GPUArray:
    """``then_`` where ``criterion > 0``, else ``else_`` (PyCUDA's if_positive)."""
    if not isinstance(criterion, _core.GPUArray):
        raise TypeError(f"if_positive: the criterion must be a GPUArray, not {type(criterion).__name__}")
    positive = binary(np.greater, "gt", criterion, 0, None, stream)
    return _select(positive, then_, else_, out, stream, "if_positive")
