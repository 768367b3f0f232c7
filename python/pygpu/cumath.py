"""pycuda.cumath: elementwise math functions of GPUArrays, on the bundled kernels
(kernels/cumath.cu), with no compiler at run time.

Each function takes PyCUDA's arguments: ``f(array, stream_or_out=None, *, stream=None,
out=None)``. Result dtypes are numpy's (``exp`` of an int32 array is float64; of float32,
float32); float16 computes in float32 and rounds back. ``floor``, ``ceil``, ``fabs``,
``fmod``, ``frexp``, ``ldexp`` and ``modf`` take real types only, as numpy's do; ``frexp``
returns its exponents in the argument's dtype, as PyCUDA does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pygpu.gpuarray import GPUArray
from pygpu.gpuarray._storage import new_like
from pygpu.gpuarray._arithmetic import binary, cast_to, unary
from pygpu.gpuarray._dtypes import kernel_suffix
from pygpu.gpuarray._elementwise import launch, loop_dtypes

__all__ = [
    "acos",
    "asin",
    "atan",
    "ceil",
    "cos",
    "cosh",
    "exp",
    "fabs",
    "floor",
    "fmod",
    "frexp",
    "ldexp",
    "log",
    "log10",
    "modf",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
]


def _stream_and_out(stream_or_out: Any, stream: Any, out: GPUArray | None) -> tuple[Any, GPUArray | None]:
    if isinstance(stream_or_out, GPUArray):
        if out is not None:
            raise TypeError("out given twice (positionally and as out=)")
        return stream, stream_or_out
    if stream_or_out is not None:
        if stream is not None:
            raise TypeError("stream given twice (positionally and as stream=)")
        return stream_or_out, out
    return stream, out


def _unary_function(ufunc: np.ufunc, name: str) -> Any:
    def function(
        array: GPUArray, stream_or_out: Any = None, *, stream: Any = None, out: GPUArray | None = None
    ) -> GPUArray:
        s, o = _stream_and_out(stream_or_out, stream, out)
        return unary(ufunc, name, array, o, s, source="cumath")

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy.{ufunc.__name__} of every element, on the device."
    return function


exp = _unary_function(np.exp, "exp")
log = _unary_function(np.log, "log")
log10 = _unary_function(np.log10, "log10")
sqrt = _unary_function(np.sqrt, "sqrt")
sin = _unary_function(np.sin, "sin")
cos = _unary_function(np.cos, "cos")
tan = _unary_function(np.tan, "tan")
asin = _unary_function(np.arcsin, "asin")
acos = _unary_function(np.arccos, "acos")
atan = _unary_function(np.arctan, "atan")
sinh = _unary_function(np.sinh, "sinh")
cosh = _unary_function(np.cosh, "cosh")
tanh = _unary_function(np.tanh, "tanh")
floor = _unary_function(np.floor, "floor")
ceil = _unary_function(np.ceil, "ceil")
fabs = _unary_function(np.fabs, "fabs")


def fmod(arg: GPUArray, mod: Any, stream: Any = None, *, out: GPUArray | None = None) -> GPUArray:
    """The remainder of ``arg / mod`` with the sign of ``arg`` (C's fmod), elementwise."""
    return binary(np.fmod, "fmod", arg, mod, out, stream, source="cumath")  # type: ignore[return-value]


def _float_arg(arg: GPUArray, what: str, stream: Any) -> GPUArray:
    if not isinstance(arg, GPUArray):
        raise TypeError(f"{what}: expected a GPUArray, not {type(arg).__name__}")
    if arg.dtype.kind in "fiub":
        return cast_to(arg, loop_dtypes(np.frexp, arg)[0], stream)
    raise TypeError(f"{what} takes real arrays, not {arg.dtype}")


def frexp(arg: GPUArray, stream: Any = None) -> tuple[GPUArray, GPUArray]:
    """``(significands, exponents)`` with ``arg == significand * 2**exponent``; both arrays
    have the argument's (float) dtype, as in PyCUDA."""
    x = _float_arg(arg, "frexp", stream)
    significands, exponents = new_like(arg, x.dtype), new_like(arg, x.dtype)
    launch("cumath", f"frexp_{kernel_suffix(x.dtype)}", [significands, exponents], [x], stream)
    return significands, exponents


def ldexp(significand: GPUArray, exponent: Any, stream: Any = None) -> GPUArray:
    """``significand * 2**exponent`` elementwise; ``exponent`` holds integral values (an array
    of the significand's shape, in any real dtype, or a scalar)."""
    x = _float_arg(significand, "ldexp", stream)
    if isinstance(exponent, GPUArray):
        if exponent.shape != x.shape:
            raise ValueError(f"ldexp: significand has shape {x.shape}, exponent {exponent.shape}")
        e: Any = cast_to(exponent, x.dtype, stream)
    else:
        e = np.asarray(exponent, dtype=x.dtype).tobytes().ljust(16, b"\0")
    result = new_like(significand, x.dtype)
    launch("cumath", f"ldexp_{kernel_suffix(x.dtype)}", [result], [x, e], stream)
    return result


def modf(arg: GPUArray, stream: Any = None) -> tuple[GPUArray, GPUArray]:
    """``(fractional parts, integral parts)``, both with the argument's sign."""
    x = _float_arg(arg, "modf", stream)
    fractional, integral = new_like(arg, x.dtype), new_like(arg, x.dtype)
    launch("cumath", f"modf_{kernel_suffix(x.dtype)}", [fractional, integral], [x], stream)
    return fractional, integral
