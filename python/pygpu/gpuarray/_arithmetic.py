"""GPUArray's operators and elementwise methods, on the bundled precompiled kernels.

Semantics are PyCUDA's where it fixes them and numpy's otherwise: an operation takes arrays
of one shape, or an array and a scalar (PyCUDA broadcasts nothing else, and neither does
pygpu: other shapes raise ValueError); dtypes promote as numpy's ufuncs do, Python scalars
weakly (``float32_array * 2.0`` is float32); comparisons give bool GPUArrays. Integer
division and remainder by zero give 0, as numpy does (numpy also warns; a GPU cannot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pygpu.gpuarray import _core, _elementwise
from pygpu.gpuarray._dtypes import check_dtype, kernel_suffix
from pygpu.gpuarray._fields import ArrayFields

if TYPE_CHECKING:
    from pygpu.gpuarray._core import GPUArray

__all__ = ["ArithmeticMixin", "binary", "cast_to", "unary"]

_SCALARS = (int, float, complex, bool, np.generic)


def _check_operand(a: GPUArray, other: Any, what: str) -> bool:
    """True for an array operand, False for a scalar; raises for anything else. ``a`` is the
    array whose shape the result has; a 0-d array operand goes with any shape (``_broadcast``)."""
    if isinstance(other, _core.GPUArray):
        if other.shape != a.shape and other.shape != ():
            raise ValueError(
                f"{what}: operands have shapes {a.shape} and {other.shape}; GPUArray operations take arrays of "
                "the same shape, an array and a 0-d array, or an array and a scalar (as PyCUDA, no other broadcasting)"
            )
        return True
    if isinstance(other, _SCALARS):
        return False
    raise TypeError(f"{what}: unsupported operand type {type(other).__name__} (a GPUArray or a scalar)")


def _shaping_operand(x: Any, y: Any) -> GPUArray:
    """The array operand whose shape the result has: PyCUDA takes a 0-d array operand as a scalar
    that lives on the device, so ``b0d + a`` has ``a``'s shape."""
    if isinstance(x, _core.GPUArray) and (x.shape != () or not isinstance(y, _core.GPUArray)):
        return x
    return cast("GPUArray", y)


def _broadcast(x: Any, shape: tuple[int, ...]) -> Any:
    """A 0-d array operand as a view of ``shape`` with zero strides: every element reads its one
    value on the device, without a copy or a round trip through the host."""
    if isinstance(x, _core.GPUArray) and x.shape != shape:
        return x._view(x._offset, shape, (0,) * len(shape))
    return x


def cast_to(a: GPUArray, dtype: np.dtype[Any], stream: Any = None) -> GPUArray:
    """``a`` itself if it has ``dtype``, else a converted C-ordered copy (on the device): an
    operand converted for a kernel."""
    if a.dtype == dtype:
        return a
    return converted(a, _core.new_c(a.shape, dtype, a.allocator), stream)


def converted(a: GPUArray, out: GPUArray, stream: Any = None) -> GPUArray:
    """``out``, of ``a``'s shape and another dtype, filled with ``a``'s values converted."""
    _elementwise.launch("cast", f"cast_{kernel_suffix(a.dtype)}_{kernel_suffix(out.dtype)}", [out], [a], stream)
    return out


def _operand(x: Any, dtype: np.dtype[Any], stream: Any) -> Any:
    if isinstance(x, _core.GPUArray):
        return cast_to(x, dtype, stream)
    return _elementwise.scalar_bytes(x, dtype)


def _shares_memory_differently(out: GPUArray, x: Any) -> bool:
    """Whether input ``x`` overlaps ``out`` other than element for element (reading it while
    writing ``out`` would then read values already overwritten)."""
    return (
        isinstance(x, _core.GPUArray)
        and x._alloc is out._alloc
        and (x._offset != out._offset or x.strides != out.strides)
    )


def _into(
    out: GPUArray | None, result_dtype: np.dtype[Any], a: GPUArray, what: str
) -> tuple[GPUArray, GPUArray | None]:
    """(array the kernel writes, array to cast it into afterwards or None) for a result of
    ``a``'s shape."""
    shape, allocator = a.shape, a.allocator
    if out is None:
        return _core.new_like(a, result_dtype), None
    if not isinstance(out, _core.GPUArray):
        raise TypeError(f"{what}: out must be a GPUArray, not {type(out).__name__}")
    if out.shape != shape:
        raise ValueError(f"{what}: out has shape {out.shape}, the result has shape {shape}")
    if out.dtype == result_dtype:
        return out, None
    if not np.can_cast(result_dtype, out.dtype, "same_kind"):
        raise TypeError(
            f"{what}: cannot cast the {result_dtype} result to out's dtype {out.dtype} (numpy's same_kind rule)"
        )
    return _core.new_c(shape, result_dtype, allocator), out


def _finish(result: GPUArray, target: GPUArray | None, stream: Any) -> GPUArray:
    if target is None:
        return result
    _elementwise.launch(
        "cast", f"cast_{kernel_suffix(result.dtype)}_{kernel_suffix(target.dtype)}", [target], [result], stream
    )
    return target


def binary(
    ufunc: np.ufunc, kernel: str, x: Any, y: Any, out: GPUArray | None = None, stream: Any = None, source: str = "arith"
) -> GPUArray:
    """``ufunc(x, y)`` with kernel ``<kernel>_<dtype>``; at least one of x, y is a GPUArray."""
    if out is None and x.__class__ is _core.GPUArray:
        y_array = y.__class__ is _core.GPUArray
        fast = _fast_plans.get((ufunc, kernel, source, x.dtype, y.dtype if y_array else y.__class__))
        if fast is not None:
            fn, result_dtype, in_dtype = fast
            try:
                operand = y if y_array else _elementwise.scalar_bytes(y, in_dtype)
            except OverflowError:
                operand = None  # a Python int out of the dtype's range: the checked path says what it means
            if operand is not None:
                result = _elementwise.contiguous(fn, result_dtype, x, (x, operand), stream)
                if result is not None:
                    return result
    a = _shaping_operand(x, y)
    what = ufunc.__name__
    x_is_array = _check_operand(a, x, what)
    y_is_array = _check_operand(a, y, what)
    key = (ufunc, kernel, _elementwise.weak_type(x), _elementwise.weak_type(y))
    plan = _binary_plans.get(key)
    if plan is None:
        plan = _binary_plans[key] = _binary_plan(ufunc, kernel, x, y)
    in_x, in_y, result_dtype, name = plan
    if ufunc in _COMPARISONS and x_is_array != y_is_array:
        constant = _out_of_range_comparison(ufunc, x, y, in_x if not x_is_array else in_y)
        if constant is not None:
            dst, target = _into(out, result_dtype, a, what)
            dst.fill(constant, stream=stream)
            return _finish(dst, target, stream)
    if ufunc is np.power and x_is_array and not y_is_array and x.dtype.kind == "b" and y.__class__ is int and y == 2:
        # numpy's ``array ** 2`` is ``np.square`` (ndarray's fast scalar power), whose bool
        # loop gives int8, where ``np.power`` would give int64.
        return binary(np.power, kernel, cast_to(x, np.dtype(np.int8), stream), 2, out, stream, source)
    if ufunc is np.power and in_x.kind in "iu" and not y_is_array and y < 0:
        _elementwise.scalar_bytes(y, in_x)  # numpy's OverflowError first, for an unsigned type
        raise ValueError("Integers to negative integer powers are not allowed.")
    if (
        out is None
        and a.__class__ is _core.GPUArray
        and (not x_is_array or x.dtype == in_x)
        and (not y_is_array or y.dtype == in_x)
    ):
        fn = _elementwise.kernel(source, name)
        exact_y = y.__class__ is _core.GPUArray if y_is_array else not (ufunc is np.power and in_x.kind in "iu")
        if x.__class__ is _core.GPUArray and exact_y:
            # The next call with these types goes straight to the kernel (see the top).
            _fast_plans[ufunc, kernel, source, x.dtype, y.dtype if y_is_array else y.__class__] = (
                fn,
                result_dtype,
                in_x,
            )
        result = _elementwise.contiguous(
            fn,
            result_dtype,
            a,
            (
                x if x_is_array else _elementwise.scalar_bytes(x, in_x),
                y if y_is_array else _elementwise.scalar_bytes(y, in_x),
            ),
            stream,
        )
        if result is not None:
            return result
    xs = (x if x.dtype == in_x else cast_to(x, in_x, stream)) if x_is_array else _elementwise.scalar_bytes(x, in_x)
    ys = (y if y.dtype == in_y else cast_to(y, in_y, stream)) if y_is_array else _elementwise.scalar_bytes(y, in_y)
    xs, ys = _broadcast(xs, a.shape), _broadcast(ys, a.shape)
    dst, target = _into(out, result_dtype, a, what)
    if (x_is_array and _shares_memory_differently(dst, xs)) or (y_is_array and _shares_memory_differently(dst, ys)):
        dst, target = _core.new_c(a.shape, result_dtype, a.allocator), dst if target is None else target
    _elementwise.launch(source, name, [dst], [xs, ys], stream)
    return _finish(dst, target, stream)


_COMPARISONS = frozenset((np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal))


def _out_of_range_comparison(ufunc: np.ufunc, x: Any, y: Any, dtype: np.dtype[Any]) -> bool | None:
    """numpy 2's result of comparing an integer array (of loop type ``dtype``) with a Python int
    outside that type's range, which numpy compares by value: every element then compares the
    same way (``int8_array < 300`` is all True). None when the scalar is in range."""
    array, scalar = (x, y) if isinstance(x, _core.GPUArray) else (y, x)
    # numpy's by-value comparison is for integer arrays only (a bool array's loop is int64, and
    # a Python int outside it raises OverflowError there as here).
    if array.dtype.kind not in "iu" or dtype.kind not in "iu" or scalar.__class__ is not int:
        return None
    info = np.iinfo(dtype)
    if info.min <= scalar <= info.max:
        return None
    # The array's elements all lie strictly between -inf and +inf, where the scalar stands.
    far = float("inf") if scalar > info.max else float("-inf")
    left, right = (far, 0.0) if scalar is x else (0.0, far)
    return bool(ufunc(left, right))


# (ufunc, kernel, source, x's dtype[, y's dtype or scalar type]) -> (kernel, result dtype, input
# dtype), for an array x and operands that need no cast: a repeated ``a + b``, ``a * 2.0`` or
# ``cumath.exp(a)``.
_fast_plans: dict[tuple[Any, ...], tuple[Any, np.dtype[Any], np.dtype[Any]]] = {}

# (ufunc, kernel, operand types as numpy's type resolution sees them) -> _binary_plan's result:
# resolving dtypes costs more than a launch-bound kernel, and a program uses few combinations.
_binary_plans: dict[tuple[Any, ...], tuple[np.dtype[Any], np.dtype[Any], np.dtype[Any], str]] = {}


def _binary_plan(
    ufunc: np.ufunc, kernel: str, x: Any, y: Any
) -> tuple[np.dtype[Any], np.dtype[Any], np.dtype[Any], str]:
    """(dtype x is cast to, dtype y is cast to, result dtype, kernel name)."""
    loop = _elementwise.loop_dtypes(ufunc, x, y)
    in_x, in_y, result_dtype = loop[0], loop[1], loop[2]
    if in_x != in_y:
        # numpy's only mixed loops: int64 against uint64 comparisons, exact (not in float64),
        # kernels <op>_i64_u64 and <op>_u64_i64 (kernels/arith.cu).
        return in_x, in_y, result_dtype, f"{kernel}_{kernel_suffix(in_x)}_{kernel_suffix(in_y)}"
    return in_x, in_y, result_dtype, f"{kernel}_{kernel_suffix(in_x)}"


def unary(
    ufunc: np.ufunc, kernel: str, x: GPUArray, out: GPUArray | None = None, stream: Any = None, source: str = "arith"
) -> GPUArray:
    """``ufunc(x)`` with kernel ``<kernel>_<dtype>``."""
    if out is None and x.__class__ is _core.GPUArray:
        fast = _fast_plans.get((ufunc, kernel, source, x.dtype))
        if fast is not None:
            result = _elementwise.contiguous(fast[0], fast[1], x, (x,), stream)
            if result is not None:
                return result
    if not isinstance(x, _core.GPUArray):
        raise TypeError(f"{ufunc.__name__}: expected a GPUArray, not {type(x).__name__}")
    key = (ufunc, kernel, source, x.dtype)
    plan = _unary_plans.get(key)
    if plan is None:
        loop = _elementwise.loop_dtypes(ufunc, x)
        plan = _unary_plans[key] = (loop[0], loop[1], f"{kernel}_{kernel_suffix(loop[0])}")
    in_dtype, result_dtype, name = plan
    if out is None and x.__class__ is _core.GPUArray and x.dtype == in_dtype:
        fn = _elementwise.kernel(source, name)
        _fast_plans[ufunc, kernel, source, x.dtype] = (fn, result_dtype, in_dtype)
        result = _elementwise.contiguous(fn, result_dtype, x, (x,), stream)
        if result is not None:
            return result
    xs = cast_to(x, in_dtype, stream)
    dst, target = _into(out, result_dtype, x, ufunc.__name__)
    if _shares_memory_differently(dst, xs):
        dst, target = _core.new_c(x.shape, result_dtype, x.allocator), dst if target is None else target
    _elementwise.launch(source, name, [dst], [xs], stream)
    return _finish(dst, target, stream)


# (ufunc, kernel, source, dtype) -> (input dtype, result dtype, kernel name)
_unary_plans: dict[tuple[Any, ...], tuple[np.dtype[Any], np.dtype[Any], str]] = {}


def _axpbyz(selffac: Any, x: GPUArray, otherfac: Any, y: Any, out: GPUArray | None, stream: Any, what: str) -> GPUArray:
    """out = selffac * x + otherfac * y (y an array or a scalar), in numpy's result dtype."""
    y_is_array = _check_operand(x, y, what)
    dtype = np.result_type(*(v.dtype if isinstance(v, _core.GPUArray) else v for v in (x, selffac, y, otherfac)))
    dtype = check_dtype(dtype)
    if dtype.kind == "b":
        dtype = np.dtype(np.int8)
    xs = cast_to(x, dtype, stream)
    ys = _broadcast(_operand(y, dtype, stream), x.shape)
    dst, target = _into(out, dtype, x, what)
    if _shares_memory_differently(dst, xs) or (y_is_array and _shares_memory_differently(dst, ys)):
        dst, target = _core.GPUArray(x.shape, dtype, x.allocator), dst if target is None else target
    # The kernel reads its factors from scalar slots 0 and 1 and a scalar y from slot 2.
    factors = (_elementwise.scalar_bytes(selffac, dtype), _elementwise.scalar_bytes(otherfac, dtype))
    if isinstance(ys, bytes):
        _elementwise.launch("arith", f"axpbyz_{kernel_suffix(dtype)}", [dst], [xs, None], stream, (*factors, ys))
    else:
        _elementwise.launch("arith", f"axpbyz_{kernel_suffix(dtype)}", [dst], [xs, ys], stream, factors)
    return _finish(dst, target, stream)


class ArithmeticMixin(ArrayFields):
    """Operators, comparisons and elementwise methods of GPUArray."""

    __slots__ = ()

    # numpy must not turn a GPUArray into an ndarray to apply its own operators
    # (np.float64(2) * a): it returns NotImplemented, and a.__rmul__ runs.
    __array_ufunc__ = None

    def __add__(self, other: Any) -> GPUArray:
        return binary(np.add, "add", self, other)

    # Reflected operators of commutative operations swap their operands, so that `2 * x` takes
    # the array-first path (and its cached plan) as `x * 2` does: same dtypes, same values.
    def __radd__(self, other: Any) -> GPUArray:
        return binary(np.add, "add", self, other)

    def __iadd__(self, other: Any) -> GPUArray:
        return binary(np.add, "add", self, other, out=cast("GPUArray", self))

    def __sub__(self, other: Any) -> GPUArray:
        return binary(np.subtract, "sub", self, other)

    def __rsub__(self, other: Any) -> GPUArray:
        return binary(np.subtract, "sub", other, self)

    def __isub__(self, other: Any) -> GPUArray:
        return binary(np.subtract, "sub", self, other, out=cast("GPUArray", self))

    def __mul__(self, other: Any) -> GPUArray:
        return binary(np.multiply, "mul", self, other)

    def __rmul__(self, other: Any) -> GPUArray:
        return binary(np.multiply, "mul", self, other)

    def __imul__(self, other: Any) -> GPUArray:
        return binary(np.multiply, "mul", self, other, out=cast("GPUArray", self))

    def __truediv__(self, other: Any) -> GPUArray:
        return binary(np.true_divide, "truediv", self, other)

    def __rtruediv__(self, other: Any) -> GPUArray:
        return binary(np.true_divide, "truediv", other, self)

    def __itruediv__(self, other: Any) -> GPUArray:
        return binary(np.true_divide, "truediv", self, other, out=cast("GPUArray", self))

    __div__ = __truediv__
    __rdiv__ = __rtruediv__
    __idiv__ = __itruediv__

    def __floordiv__(self, other: Any) -> GPUArray:
        return binary(np.floor_divide, "floordiv", self, other)

    def __rfloordiv__(self, other: Any) -> GPUArray:
        return binary(np.floor_divide, "floordiv", other, self)

    def __ifloordiv__(self, other: Any) -> GPUArray:
        return binary(np.floor_divide, "floordiv", self, other, out=cast("GPUArray", self))

    def __mod__(self, other: Any) -> GPUArray:
        return binary(np.remainder, "mod", self, other)

    def __rmod__(self, other: Any) -> GPUArray:
        return binary(np.remainder, "mod", other, self)

    def __imod__(self, other: Any) -> GPUArray:
        return binary(np.remainder, "mod", self, other, out=cast("GPUArray", self))

    def __pow__(self, other: Any) -> GPUArray:
        return binary(np.power, "pow", self, other)

    def __rpow__(self, other: Any) -> GPUArray:
        return binary(np.power, "pow", other, self)

    def __ipow__(self, other: Any) -> GPUArray:
        return binary(np.power, "pow", self, other, out=cast("GPUArray", self))

    def __neg__(self) -> GPUArray:
        return unary(np.negative, "neg", cast("GPUArray", self))

    def __pos__(self) -> GPUArray:
        return self.copy()

    def __abs__(self) -> GPUArray:
        return unary(np.absolute, "abs", cast("GPUArray", self))

    # Comparisons give bool GPUArrays, as numpy's and PyCUDA's do (so GPUArray is unhashable,
    # as ndarray is).
    def __eq__(self, other: object) -> GPUArray:  # type: ignore[override]
        if not isinstance(other, (_core.GPUArray, *_SCALARS)):
            return NotImplemented
        return binary(np.equal, "eq", self, other)

    def __ne__(self, other: object) -> GPUArray:  # type: ignore[override]
        if not isinstance(other, (_core.GPUArray, *_SCALARS)):
            return NotImplemented
        return binary(np.not_equal, "ne", self, other)

    def __lt__(self, other: Any) -> GPUArray:
        return binary(np.less, "lt", self, other)

    def __le__(self, other: Any) -> GPUArray:
        return binary(np.less_equal, "le", self, other)

    def __gt__(self, other: Any) -> GPUArray:
        return binary(np.greater, "gt", self, other)

    def __ge__(self, other: Any) -> GPUArray:
        return binary(np.greater_equal, "ge", self, other)

    __hash__ = None  # type: ignore[assignment]

    # ---------------------------------------------------------------- PyCUDA's methods

    def mul_add(
        self,
        selffac: Any,
        other: Any,
        otherfac: Any,
        add_timer: Any = None,
        stream: Any = None,
        out: GPUArray | None = None,
    ) -> GPUArray:
        """``selffac * self + otherfac * other`` in one kernel, into ``out`` if given (as PyCUDA's)."""
        return _axpbyz(selffac, cast("GPUArray", self), otherfac, other, out, stream, "mul_add")

    def _axpbyz(
        self, selffac: Any, other: Any, otherfac: Any, out: GPUArray, add_timer: Any = None, stream: Any = None
    ) -> GPUArray:
        """``out = selffac * self + otherfac * other``."""
        return _axpbyz(selffac, cast("GPUArray", self), otherfac, other, out, stream, "axpbyz")

    def _axpbz(self, selffac: Any, other: Any, out: GPUArray, stream: Any = None) -> GPUArray:
        """``out = selffac * self + other`` (``other`` a scalar)."""
        return _axpbyz(selffac, cast("GPUArray", self), 1, other, out, stream, "axpbz")

    axpbyz = _axpbyz
    axpbz = _axpbz

    def conj(self, out: GPUArray | None = None, stream: Any = None) -> GPUArray:
        """The complex conjugate (a copy for real dtypes)."""
        dtype = self.dtype
        if dtype.kind != "c":
            # The values themselves, in numpy's result dtype (int8 for bool).
            result_dtype = _elementwise.loop_dtypes(np.conjugate, self)[1]
            if out is None:
                return self.astype(result_dtype, stream)
            out.set(cast_to(cast("GPUArray", self), result_dtype, stream), stream=stream)
            return out
        return unary(np.conjugate, "conj", cast("GPUArray", self), out, stream)

    conjugate = conj

    @property
    def real(self) -> GPUArray:
        """The real part: a new array of a complex array (contiguous, in the array's order, as
        PyCUDA's is: numpy's strided view would not be), the array itself otherwise."""
        if self.dtype.kind != "c":
            return cast("GPUArray", self)
        return self._part(0)

    @property
    def imag(self) -> GPUArray:
        """The imaginary part: a new array of a complex array (as ``real``), zeros otherwise."""
        if self.dtype.kind != "c":
            return _core.GPUArray(self.shape, self.dtype, self.allocator).fill(0)
        return self._part(1)

    def _part(self, which: int) -> GPUArray:
        part = np.dtype(f"f{self.dtype.itemsize // 2}")
        view = self._view(self._offset + which * part.itemsize, self.shape, self.strides, part)
        flags = self.flags
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
        result = _core.new_like(cast("GPUArray", self), part, order)
        result.set(view)
        return result

    def reverse(self, stream: Any = None) -> GPUArray:
        """A copy with the elements in reverse order (1-d arrays, as PyCUDA)."""
        if len(self.shape) != 1:
            raise ValueError(f"reverse() takes a 1-d array, not one of shape {self.shape}")
        result = _core.new_like(cast("GPUArray", self), self.dtype)
        result.set(self[::-1], stream=stream)
        return result
