"""GPUArray's operators and elementwise methods, on the bundled precompiled kernels.

Semantics are PyCUDA's where it fixes them and numpy's otherwise: an operation takes arrays
of one shape, or an array and a scalar (PyCUDA broadcasts nothing else, and neither does
pygpu: other shapes raise ValueError); dtypes promote as numpy's ufuncs do, Python scalars
weakly (``float32_array * 2.0`` is float32); comparisons give bool GPUArrays. Integer
division and remainder by zero give 0, as numpy does (numpy also warns; a GPU cannot).
The result of an operation on a subclass's array is of the subclass (``_storage.result_owner``).

Two seams: ``binary`` is every binary operation's one entry (the operators, forward and
reflected alike, pass their operands in order: ``2 / x`` is ``binary(np.true_divide, ...,
2, x)``), and ``unary`` every unary one's. Each starts with the same fast path, a plan cached
by operation and operand types that goes straight to the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self, TypeVar

import numpy as np

import pygpu.gpuarray._elementwise as _elementwise
import pygpu.gpuarray._storage as _storage
from pygpu.gpuarray._dtypes import check_dtype, kernel_suffix
from pygpu.gpuarray._storage import ArrayFields

__all__ = ["ArithmeticMixin", "binary", "cast_to", "converted", "unary"]

# An operator's result has the class of the array it is called on (for the type checker).
A = TypeVar("A", bound=ArrayFields)

_SCALARS = (int, float, complex, bool, np.generic)


def _check_operand(a: ArrayFields, other: Any, what: str) -> bool:
    """True for an array operand, False for a scalar; raises for anything else. ``a`` is the
    array whose shape the result has; a 0-d array operand goes with any shape (``_broadcast``)."""
    if isinstance(other, ArrayFields):
        if other.shape != a.shape and other.shape != ():
            raise ValueError(
                f"{what}: operands have shapes {a.shape} and {other.shape}; GPUArray operations take arrays of "
                "the same shape, an array and a 0-d array, or an array and a scalar (as PyCUDA, no other broadcasting)"
            )
        return True
    if isinstance(other, _SCALARS):
        return False
    raise TypeError(f"{what}: unsupported operand type {type(other).__name__} (a GPUArray or a scalar)")


def _shaping_operand(x: Any, y: Any, what: str) -> ArrayFields:
    """The array operand whose shape the result has: PyCUDA takes a 0-d array operand as a scalar
    that lives on the device, so ``b0d + a`` has ``a``'s shape."""
    if isinstance(x, ArrayFields) and (x.shape != () or not isinstance(y, ArrayFields)):
        return x
    if not isinstance(y, ArrayFields):
        raise TypeError(
            f"{what}: at least one operand must be a GPUArray, not {type(x).__name__} and {type(y).__name__} "
            "(numpy computes on scalars and host arrays)"
        )
    array: ArrayFields = y
    return array


def _broadcast(x: Any, shape: tuple[int, ...]) -> Any:
    """A 0-d array operand as a view of ``shape`` with zero strides: every element reads its one
    value on the device, without a copy or a round trip through the host."""
    if isinstance(x, ArrayFields) and x.shape != shape:
        return _storage.plain_view(x, x._offset, shape, (0,) * len(shape))
    return x


def cast_to(a: A, dtype: np.dtype[Any], stream: Any = None) -> A:
    """``a`` itself if it has ``dtype``, else a converted C-ordered copy (on the device): an
    operand converted for a kernel."""
    if a.dtype == dtype:
        return a
    return converted(a, _storage.new_c(a.shape, dtype, a.allocator), stream)  # type: ignore[return-value]


def converted(a: ArrayFields, out: ArrayFields, stream: Any = None) -> ArrayFields:
    """``out``, of ``a``'s shape and another dtype, filled with ``a``'s values converted."""
    _elementwise.launch("cast", f"cast_{kernel_suffix(a.dtype)}_{kernel_suffix(out.dtype)}", [out], [a], stream)
    return out


def _operand(x: Any, dtype: np.dtype[Any], stream: Any) -> Any:
    if isinstance(x, ArrayFields):
        return cast_to(x, dtype, stream)
    return _elementwise.scalar_bytes(x, dtype)


def _shares_memory_differently(out: ArrayFields, x: Any) -> bool:
    """Whether input ``x`` overlaps ``out`` other than element for element (reading it while
    writing ``out`` would then read values already overwritten)."""
    return (
        isinstance(x, ArrayFields) and x._alloc is out._alloc and (x._offset != out._offset or x.strides != out.strides)
    )


def _into(
    out: ArrayFields | None, result_dtype: np.dtype[Any], a: ArrayFields, what: str, owner: ArrayFields | None
) -> tuple[ArrayFields, ArrayFields | None]:
    """(array the kernel writes, array to cast it into afterwards or None) for a result of
    ``a``'s shape, of ``owner``'s class (``_storage.result_owner``) unless ``out`` is given."""
    shape, allocator = a.shape, a.allocator
    if out is None:
        return _storage.result_like(owner, shape, result_dtype, allocator), None
    if not isinstance(out, ArrayFields):
        raise TypeError(f"{what}: out must be a GPUArray, not {type(out).__name__}")
    if out.shape != shape:
        raise ValueError(f"{what}: out has shape {out.shape}, the result has shape {shape}")
    if out.dtype == result_dtype:
        return out, None
    if not np.can_cast(result_dtype, out.dtype, "same_kind"):
        raise TypeError(
            f"{what}: cannot cast the {result_dtype} result to out's dtype {out.dtype} (numpy's same_kind rule)"
        )
    return _storage.new_c(shape, result_dtype, allocator), out


def _finish(result: ArrayFields, target: ArrayFields | None, stream: Any) -> ArrayFields:
    if target is None:
        return result
    _elementwise.launch(
        "cast", f"cast_{kernel_suffix(result.dtype)}_{kernel_suffix(target.dtype)}", [target], [result], stream
    )
    return target


def binary(
    ufunc: np.ufunc,
    kernel: str,
    x: Any,
    y: Any,
    out: ArrayFields | None = None,
    stream: Any = None,
    source: str = "arith",
) -> ArrayFields:
    """``ufunc(x, y)`` with kernel ``<kernel>_<dtype>``; at least one of x, y is a GPUArray, the
    other a GPUArray or a scalar, in either order (reflected operators pass theirs as written)."""
    if out is None:
        # The fast path: plain GPUArrays, and a scalar on either side, whose plan (the kernel
        # and dtypes) an earlier call with the same operation and operand types cached.
        plain = _storage.array_class
        x_plain, y_plain = x.__class__ is plain, y.__class__ is plain
        if x_plain or y_plain:
            fast = _fast_plans.get(
                (ufunc, kernel, source, x.dtype if x_plain else x.__class__, y.dtype if y_plain else y.__class__)
            )
            if fast is not None:
                fn, result_dtype, in_dtype = fast
                try:
                    xs = x if x_plain else _elementwise.scalar_bytes(x, in_dtype)
                    ys = y if y_plain else _elementwise.scalar_bytes(y, in_dtype)
                except OverflowError:
                    pass  # a Python int out of the dtype's range: the checked path says what it means
                else:
                    result = _elementwise.contiguous(fn, result_dtype, x if x_plain else y, (xs, ys), stream)
                    if result is not None:
                        return result
    what = ufunc.__name__
    a = _shaping_operand(x, y, what)
    x_is_array = _check_operand(a, x, what)
    y_is_array = _check_operand(a, y, what)
    owner = _storage.result_owner(x, y)
    key = (ufunc, kernel, _elementwise.weak_type(x), _elementwise.weak_type(y))
    plan = _binary_plans.get(key)
    if plan is None:
        plan = _binary_plans[key] = _binary_plan(ufunc, kernel, x, y)
    in_x, in_y, result_dtype, name = plan
    if ufunc in _COMPARISONS and x_is_array != y_is_array:
        constant = _out_of_range_comparison(ufunc, x, y, in_x if not x_is_array else in_y)
        if constant is not None:
            dst, target = _into(out, result_dtype, a, what, owner)
            dst.fill(constant, stream=stream)
            return _finish(dst, target, stream)
    if ufunc is np.power and x_is_array and not y_is_array and x.dtype.kind == "b" and y.__class__ is int and y == 2:
        # numpy's ``array ** 2`` is ``np.square`` (ndarray's fast scalar power), whose bool
        # loop gives int8, where ``np.power`` would give int64.
        squared = binary(np.power, kernel, cast_to(x, np.dtype(np.int8), stream), 2, out, stream, source)
        return squared if out is not None else _storage.retyped(squared, x)
    if ufunc is np.power and in_x.kind in "iu" and not y_is_array and y < 0:
        _elementwise.scalar_bytes(y, in_x)  # numpy's OverflowError first, for an unsigned type
        raise ValueError("Integers to negative integer powers are not allowed.")
    if out is None and owner is None and (not x_is_array or x.dtype == in_x) and (not y_is_array or y.dtype == in_x):
        fn = _elementwise.kernel(source, name)
        # The next call with these operand types takes the fast path (above): its operands are
        # plain arrays (owner is None) or scalars; not an integer array's power of a scalar,
        # which depends on the exponent's value (its sign, checked above).
        if not (ufunc is np.power and in_x.kind in "iu" and x_is_array and not y_is_array):
            key_x = x.dtype if x_is_array else x.__class__
            _fast_plans[ufunc, kernel, source, key_x, y.dtype if y_is_array else y.__class__] = (fn, result_dtype, in_x)
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
    dst, target = _into(out, result_dtype, a, what, owner)
    if (x_is_array and _shares_memory_differently(dst, xs)) or (y_is_array and _shares_memory_differently(dst, ys)):
        dst, target = _storage.new_c(a.shape, result_dtype, a.allocator), dst if target is None else target
    _elementwise.launch(source, name, [dst], [xs, ys], stream)
    return _finish(dst, target, stream)


_COMPARISONS = frozenset((np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal))


def _out_of_range_comparison(ufunc: np.ufunc, x: Any, y: Any, dtype: np.dtype[Any]) -> bool | None:
    """numpy 2's result of comparing an integer array (of loop type ``dtype``) with a Python int
    outside that type's range, which numpy compares by value: every element then compares the
    same way (``int8_array < 300`` is all True). None when the scalar is in range."""
    array, scalar = (x, y) if isinstance(x, ArrayFields) else (y, x)
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
    ufunc: np.ufunc,
    kernel: str,
    x: A,
    out: ArrayFields | None = None,
    stream: Any = None,
    source: str = "arith",
) -> A:
    """``ufunc(x)`` with kernel ``<kernel>_<dtype>``: a new array of ``x``'s class unless ``out``
    is given."""
    if out is None and x.__class__ is _storage.array_class:
        fast = _fast_plans.get((ufunc, kernel, source, x.dtype))
        if fast is not None:
            result = _elementwise.contiguous(fast[0], fast[1], x, (x,), stream)
            if result is not None:
                return result  # type: ignore[return-value]
    if not isinstance(x, ArrayFields):
        raise TypeError(f"{ufunc.__name__}: expected a GPUArray, not {type(x).__name__}")
    key = (ufunc, kernel, source, x.dtype)
    plan = _unary_plans.get(key)
    if plan is None:
        loop = _elementwise.loop_dtypes(ufunc, x)
        plan = _unary_plans[key] = (loop[0], loop[1], f"{kernel}_{kernel_suffix(loop[0])}")
    in_dtype, result_dtype, name = plan
    owner = _storage.result_owner(x)
    if out is None and owner is None and x.dtype == in_dtype:
        fn = _elementwise.kernel(source, name)
        _fast_plans[ufunc, kernel, source, x.dtype] = (fn, result_dtype, in_dtype)
        result = _elementwise.contiguous(fn, result_dtype, x, (x,), stream)
        if result is not None:
            return result  # type: ignore[return-value]
    xs = cast_to(x, in_dtype, stream)
    dst, target = _into(out, result_dtype, x, ufunc.__name__, owner)
    if _shares_memory_differently(dst, xs):
        dst, target = _storage.new_c(x.shape, result_dtype, x.allocator), dst if target is None else target
    _elementwise.launch(source, name, [dst], [xs], stream)
    return _finish(dst, target, stream)  # type: ignore[return-value]


# (ufunc, kernel, source, dtype) -> (input dtype, result dtype, kernel name)
_unary_plans: dict[tuple[Any, ...], tuple[np.dtype[Any], np.dtype[Any], str]] = {}


def _axpbyz(
    selffac: Any, x: ArrayFields, otherfac: Any, y: Any, out: ArrayFields | None, stream: Any, what: str
) -> ArrayFields:
    """out = selffac * x + otherfac * y (y an array or a scalar), in numpy's result dtype."""
    y_is_array = _check_operand(x, y, what)
    dtype = np.result_type(*(v.dtype if isinstance(v, ArrayFields) else v for v in (x, selffac, y, otherfac)))
    dtype = check_dtype(dtype)
    if dtype.kind == "b":
        dtype = np.dtype(np.int8)
    xs = cast_to(x, dtype, stream)
    ys = _broadcast(_operand(y, dtype, stream), x.shape)
    dst, target = _into(out, dtype, x, what, _storage.result_owner(x, y))
    if _shares_memory_differently(dst, xs) or (y_is_array and _shares_memory_differently(dst, ys)):
        dst, target = _storage.new_c(x.shape, dtype, x.allocator), dst if target is None else target
    # The kernel reads its factors from scalar slots 0 and 1 and a scalar y from slot 2.
    factors = (_elementwise.scalar_bytes(selffac, dtype), _elementwise.scalar_bytes(otherfac, dtype))
    if isinstance(ys, bytes):
        _elementwise.launch("arith", f"axpbyz_{kernel_suffix(dtype)}", [dst], [xs, None], stream, (*factors, ys))
    else:
        _elementwise.launch("arith", f"axpbyz_{kernel_suffix(dtype)}", [dst], [xs, ys], stream, factors)
    return _finish(dst, target, stream)


def _operator_methods(
    ufunc: np.ufunc, kernel: str
) -> tuple[Callable[[A, Any], A], Callable[[A, Any], A], Callable[[A, Any], A]]:
    """The forward (``x + y``), reflected (``2 + x``) and in-place (``x += y``) methods of a binary
    operator: one seam, ``binary``, with the operands in the order they are written, so that a
    reflected operator reaches the same cached fast path as a forward one."""

    def forward(self: A, other: Any) -> A:
        return binary(ufunc, kernel, self, other)  # type: ignore[return-value]

    def reflected(self: A, other: Any) -> A:
        return binary(ufunc, kernel, other, self)  # type: ignore[return-value]

    def in_place(self: A, other: Any) -> A:
        return binary(ufunc, kernel, self, other, out=self)  # type: ignore[return-value]

    for method, prefix in ((forward, ""), (reflected, "r"), (in_place, "i")):
        # The kernels' names are the operators': add, sub, ..., truediv, pow, lt.
        method.__name__ = method.__qualname__ = f"__{prefix}{kernel}__"
    return forward, reflected, in_place


class ArithmeticMixin(ArrayFields):
    """Operators, comparisons and elementwise methods of GPUArray."""

    __slots__ = ()

    # numpy must not turn a GPUArray into an ndarray to apply its own operators
    # (np.float64(2) * a): it returns NotImplemented, and a.__rmul__ runs.
    __array_ufunc__ = None

    # Every binary operator is one entry of this table: its forward, reflected and in-place
    # methods all call ``binary`` with the operands as written (``_operator_methods``).
    __add__, __radd__, __iadd__ = _operator_methods(np.add, "add")
    __sub__, __rsub__, __isub__ = _operator_methods(np.subtract, "sub")
    __mul__, __rmul__, __imul__ = _operator_methods(np.multiply, "mul")
    __truediv__, __rtruediv__, __itruediv__ = _operator_methods(np.true_divide, "truediv")
    __div__, __rdiv__, __idiv__ = __truediv__, __rtruediv__, __itruediv__
    __floordiv__, __rfloordiv__, __ifloordiv__ = _operator_methods(np.floor_divide, "floordiv")
    __mod__, __rmod__, __imod__ = _operator_methods(np.remainder, "mod")
    __pow__, __rpow__, __ipow__ = _operator_methods(np.power, "pow")

    def __neg__(self) -> Self:
        return unary(np.negative, "neg", self)

    def __pos__(self) -> Self:
        return self.copy()

    def __abs__(self) -> Self:
        return unary(np.absolute, "abs", self)

    # Comparisons give bool GPUArrays, as numpy's and PyCUDA's do (so GPUArray is unhashable,
    # as ndarray is).
    def __eq__(self, other: object) -> Self:  # type: ignore[override]
        if not isinstance(other, (ArrayFields, *_SCALARS)):
            return NotImplemented
        return binary(np.equal, "eq", self, other)  # type: ignore[return-value]

    def __ne__(self, other: object) -> Self:  # type: ignore[override]
        if not isinstance(other, (ArrayFields, *_SCALARS)):
            return NotImplemented
        return binary(np.not_equal, "ne", self, other)  # type: ignore[return-value]

    # Reflected comparisons are the forward ones of the other operand (Python swaps them).
    __lt__ = _operator_methods(np.less, "lt")[0]
    __le__ = _operator_methods(np.less_equal, "le")[0]
    __gt__ = _operator_methods(np.greater, "gt")[0]
    __ge__ = _operator_methods(np.greater_equal, "ge")[0]

    __hash__ = None  # type: ignore[assignment]

    # ---------------------------------------------------------------- PyCUDA's methods

    def mul_add(
        self,
        selffac: Any,
        other: Any,
        otherfac: Any,
        add_timer: Any = None,
        stream: Any = None,
        out: ArrayFields | None = None,
    ) -> Self:
        """``selffac * self + otherfac * other`` in one kernel, into ``out`` if given (as PyCUDA's)."""
        return _axpbyz(selffac, self, otherfac, other, out, stream, "mul_add")  # type: ignore[return-value]

    def _axpbyz(
        self, selffac: Any, other: Any, otherfac: Any, out: ArrayFields, add_timer: Any = None, stream: Any = None
    ) -> ArrayFields:
        """``out = selffac * self + otherfac * other``."""
        return _axpbyz(selffac, self, otherfac, other, out, stream, "axpbyz")

    def _axpbz(self, selffac: Any, other: Any, out: ArrayFields, stream: Any = None) -> ArrayFields:
        """``out = selffac * self + other`` (``other`` a scalar)."""
        return _axpbyz(selffac, self, 1, other, out, stream, "axpbz")

    axpbyz = _axpbyz
    axpbz = _axpbz

    def conj(self, out: ArrayFields | None = None, stream: Any = None) -> Self:
        """The complex conjugate (a copy for real dtypes)."""
        dtype = self.dtype
        if dtype.kind != "c":
            # The values themselves, in numpy's result dtype (int8 for bool).
            result_dtype = _elementwise.loop_dtypes(np.conjugate, self)[1]
            if out is None:
                return self.astype(result_dtype, stream)
            if not isinstance(out, ArrayFields):
                raise TypeError(f"conj: out= must be a GPUArray, not {type(out).__name__}")
            out.set(cast_to(self, result_dtype, stream), stream=stream)
            return out  # type: ignore[return-value]
        return unary(np.conjugate, "conj", self, out, stream)

    conjugate = conj

    @property
    def real(self) -> Self:
        """The real part: a new array of a complex array (contiguous, in the array's order, as
        PyCUDA's is: numpy's strided view would not be), the array itself otherwise."""
        if self.dtype.kind != "c":
            return self
        return self._part(0)

    @property
    def imag(self) -> Self:
        """The imaginary part: a new array of a complex array (as ``real``), zeros otherwise."""
        if self.dtype.kind != "c":
            return _storage.new_like(self, self.dtype).fill(0)
        return self._part(1)

    def _part(self, which: int) -> Self:
        part = np.dtype(f"f{self.dtype.itemsize // 2}")
        view = self._view(self._offset + which * part.itemsize, self.shape, self.strides, part)
        flags = self.flags
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
        result = _storage.new_like(self, part, order)
        result.set(view)
        return result

    def reverse(self, stream: Any = None) -> Self:
        """A copy with the elements in reverse order (1-d arrays, as PyCUDA)."""
        if len(self.shape) != 1:
            raise ValueError(f"reverse() takes a 1-d array, not one of shape {self.shape}")
        result = _storage.new_like(self, self.dtype)
        result.set(self[::-1], stream=stream)
        return result
