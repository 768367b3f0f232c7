"""GPUArray's elementwise operations against numpy: every operation x dtype x layout
(contiguous, strided, transposed, reversed, 0-d, empty), with values drawn by hypothesis.

Written for every backend: on the host backend results match numpy bit for bit where numpy
is exact (integers, +, -, *, /, comparisons); tolerances cover what differs on GPUs (libm
implementations, complex formulas) and nothing else."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpu
import pytest
from conftest import count_fuzz_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygpu import cumath
from pygpu import gpuarray as ga

ALL = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
NUMERIC = ALL[1:]
INEXACT = ["float16", "float32", "float64", "complex64", "complex128"]
FLOATS = ["float16", "float32", "float64"]
LAYOUTS = ["contiguous", "strided", "transposed", "reversed", "0-d", "empty"]
FEW = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)
SHAPE = (3, 4)


def values(rng: np.random.Generator, dtype: np.dtype[Any], small: bool = False) -> np.ndarray:
    """Random values of `dtype` in SHAPE: integers over their whole range (or 0..5 when
    `small`), floats in [-8, 8] (exactly representable in every float type), with zeros."""
    if dtype.kind == "b":
        a = rng.random(SHAPE) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (0, 5) if small else (info.min, info.max)
        a = rng.integers(lo, hi, SHAPE, dtype=dtype, endpoint=True)
    elif dtype.kind == "f":
        a = (rng.integers(-64, 64, SHAPE) / 8).astype(dtype)
    else:
        a = ((rng.integers(-64, 64, SHAPE) + 1j * rng.integers(-64, 64, SHAPE)) / 8).astype(dtype)
    a.flat[0] = 0
    return np.asarray(a, dtype=dtype)


def on_device(host: np.ndarray, layout: str) -> tuple[ga.GPUArray, np.ndarray]:
    """(device array with the layout, the numpy array of the same values)."""
    if layout == "contiguous":
        return ga.to_gpu(host), host
    if layout == "strided":
        wide = np.zeros((host.shape[0], host.shape[1] * 2), host.dtype)
        wide[:, ::2] = host
        return ga.to_gpu(wide)[:, ::2], host
    if layout == "transposed":
        return ga.to_gpu(np.ascontiguousarray(host.T)).T, host
    if layout == "reversed":
        return ga.to_gpu(np.ascontiguousarray(host[::-1, ::-1]))[::-1, ::-1], host
    if layout == "0-d":
        h = np.asarray(host.flat[5], dtype=host.dtype)
        return ga.to_gpu(h), h
    assert layout == "empty"
    h = host[:0]
    return ga.to_gpu(h), h


def tolerance(dtype: np.dtype[Any], transcendental: bool = False) -> dict[str, float]:
    if dtype.kind not in "fc":
        return {"rtol": 0, "atol": 0}
    eps = float(np.finfo(dtype).eps)
    if transcendental:
        return {"rtol": 16 * eps, "atol": 16 * eps}
    return {"rtol": 2 * eps, "atol": 0}


def check(got: Any, want: np.ndarray, transcendental: bool = False) -> None:
    count_fuzz_case()
    assert isinstance(got, ga.GPUArray), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    result = got.get()
    if want.dtype.kind == "c" and not transcendental:
        # Complex products and quotients are accurate relative to the magnitude |z|, not to each
        # component: a component that nearly cancels carries the rounding of the whole (and a
        # GPU's fused multiply-adds round differently from numpy's separate operations; Smith's
        # quotient is good to a few ulps of |z|).
        finite = np.isfinite(want)
        np.testing.assert_allclose(result[~finite], want[~finite], equal_nan=True)
        eps = float(np.finfo(want.dtype).eps)
        error = np.abs(result[finite] - want[finite])
        assert np.all(error <= 8 * eps * np.abs(want[finite])), (result, want)
    elif want.dtype.kind in "fc":
        np.testing.assert_allclose(result, want, equal_nan=True, **tolerance(want.dtype, transcendental))
    else:
        np.testing.assert_array_equal(result, want)


def numpy_or_error(fn: Callable[[], Any]) -> Any:
    with np.errstate(all="ignore"):
        try:
            return fn()
        except (TypeError, ValueError, OverflowError) as e:
            return e


OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
FUNCTIONS = ("maximum", "minimum", "logical_and", "logical_or")
GPU_BINARY = {**OPERATORS, **{name: getattr(ga, name) for name in FUNCTIONS}}
NUMPY_BINARY = {**OPERATORS, **{name: getattr(np, name) for name in FUNCTIONS}}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", list(NUMPY_BINARY))
@FEW
@given(seed=SEEDS)
def test_binary_operation_matches_numpy(op: str, dtype: str, seed: int) -> None:
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    small = op == "pow"
    x, y = values(rng, dt, small), values(rng, dt, small)
    if op == "pow" and dt.kind == "c":
        x, y = x / 4, np.round(y.real).astype(dt)  # integral exponents: numpy multiplies them out too
    for layout in LAYOUTS:
        dx, hx = on_device(x, layout)
        dy, hy = on_device(y, layout)
        want = numpy_or_error(lambda hx=hx, hy=hy: NUMPY_BINARY[op](hx, hy))
        if isinstance(want, Exception):
            with pytest.raises(type(want)):
                GPU_BINARY[op](dx, dy)
            return
        check(GPU_BINARY[op](dx, dy), np.asarray(want), transcendental=op == "pow")
    # With a scalar on either side (Python scalars are weak, as in numpy 2).
    scalar = {"b": True, "i": 3, "u": 3, "f": 1.5, "c": 0.5 - 1j}[dt.kind]
    dx, hx = on_device(x, "contiguous")
    for args, host_args in (((dx, scalar), (hx, scalar)), ((scalar, dx), (scalar, hx))):
        want = numpy_or_error(lambda host_args=host_args: NUMPY_BINARY[op](*host_args))
        if isinstance(want, Exception):
            with pytest.raises(type(want)):
                GPU_BINARY[op](*args)
            continue
        check(GPU_BINARY[op](*args), np.asarray(want), transcendental=op == "pow")


UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "neg": (operator.neg, np.negative),
    "abs": (abs, np.absolute),
    "pos": (operator.pos, lambda x: np.array(x, copy=True)),
    "conj": (lambda a: a.conj(), np.conjugate),
    "logical_not": (ga.logical_not, np.logical_not),
}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", list(UNARY))
@FEW
@given(seed=SEEDS)
def test_unary_operation_matches_numpy(op: str, dtype: str, seed: int) -> None:
    dt = np.dtype(dtype)
    x = values(np.random.default_rng(seed), dt)
    ours, theirs = UNARY[op]
    for layout in LAYOUTS:
        dx, hx = on_device(x, layout)
        want = numpy_or_error(lambda hx=hx: theirs(hx))
        if isinstance(want, Exception):
            with pytest.raises(type(want)):
                ours(dx)
            return
        check(ours(dx), np.asarray(want))


@pytest.mark.parametrize("source", ALL)
@pytest.mark.parametrize("target", ALL)
@FEW
@given(seed=SEEDS)
def test_astype_matches_numpy(source: str, target: str, seed: int) -> None:
    x = values(np.random.default_rng(seed), np.dtype(source))
    if np.dtype(source).kind in "fc" and np.dtype(target).kind in "iub":
        x = np.abs(x) if np.dtype(target).kind == "u" else x  # negative floats to unsigned is undefined in C
    for layout in LAYOUTS:
        dx, hx = on_device(x, layout)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want = hx.astype(target)
        check(dx.astype(target), want)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_fill_on_every_layout(dtype: str, layout: str) -> None:
    dt = np.dtype(dtype)
    x = values(np.random.default_rng(0), dt)
    value = {"b": True, "i": -7, "u": 7, "f": -2.5, "c": 1.5 - 2j}[dt.kind]
    if dt.kind == "u":
        value = 7
    dx, hx = on_device(x, layout)
    assert dx.fill(value) is dx
    want = np.empty_like(hx)
    want[...] = value
    check(dx, want)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "float64", "complex128"])
@pytest.mark.parametrize("layout", ["strided", "transposed", "reversed"])
def test_fill_leaves_the_gaps_alone(dtype: str, layout: str) -> None:
    whole = ga.to_gpu(np.arange(48).astype(dtype).reshape(6, 8))
    view = {"strided": whole[::2, 1::3], "transposed": whole.T[::3], "reversed": whole[::-1, ::-2]}[layout]
    host = whole.get()
    host_view = {"strided": host[::2, 1::3], "transposed": host.T[::3], "reversed": host[::-1, ::-2]}[layout]
    view.fill(5)
    host_view[...] = 5
    check(whole, host)


CUMATH = {
    "exp": np.exp,
    "log": np.log,
    "log10": np.log10,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "fabs": np.fabs,
}


@pytest.mark.parametrize("dtype", INEXACT)
@pytest.mark.parametrize("name", list(CUMATH))
@FEW
@given(seed=SEEDS)
def test_cumath_matches_numpy(name: str, dtype: str, seed: int) -> None:
    dt = np.dtype(dtype)
    x = values(np.random.default_rng(seed), dt)
    if name in ("log", "log10", "sqrt", "asin", "acos") and dt.kind == "f":
        x = np.abs(x) / 8  # inside the real domain
    if name in ("exp", "sinh", "cosh", "tanh", "tan", "sin", "cos") or dt.kind == "c":
        x = x / (8 if name in ("tan", "tanh") else 4)  # moderate exp(); tan, tanh away from poles
    if dt.kind == "c" and name in ("log", "log10", "sqrt", "asin", "acos", "atan"):
        x = x + np.asarray(0.3 + 0.1j, dtype=dt)  # off the branch cuts, which never cross a multiple of 1/32
    for layout in LAYOUTS:
        dx, hx = on_device(x, layout)
        want = numpy_or_error(lambda hx=hx: CUMATH[name](hx))
        if isinstance(want, Exception):
            with pytest.raises(type(want)):
                getattr(cumath, name)(dx)
            return
        check_transcendental(getattr(cumath, name)(dx), hx, CUMATH[name])


def check_transcendental(got: Any, x: np.ndarray, f: Callable[[Any], Any]) -> None:
    """got = f(x) to within what an accurate kernel can promise: the exact value (f in double
    precision) within 16 eps, plus the error that rounding its intermediate forms of x (2x, x^2, ...)
    by up to 8 eps causes: f's condition number |x f'(x) / f(x)| times that. Near a pole
    (complex tanh, tan) the condition number is large and so is any implementation's error; a
    fixed tolerance there fails by chance."""
    count_fuzz_case()
    assert isinstance(got, ga.GPUArray), type(got)
    dt = x.dtype
    wide = np.complex128 if dt.kind == "c" else np.float64
    with np.errstate(all="ignore"):
        xw = x.astype(wide)
        exact = f(xw)
        h = 2.0**-20
        above, below = f(xw * (1 + h)), f(xw * (1 - h))
        # x f'(x): a centred difference, one-sided at the end of a domain (acos at 1)
        derivative = np.where(np.isnan(above), (exact - below) / h, (above - below) / (2 * h))
        derivative = np.where(np.isnan(below), (above - exact) / h, derivative)
        condition = np.abs(derivative) / np.where(exact == 0, 1, np.abs(exact))
    want = exact.astype(dt)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    result = got.get().astype(wide)
    eps = float(np.finfo(dt).eps)
    with np.errstate(all="ignore"):
        error = np.abs(result - exact)
        bound = (16 + 8 * condition) * eps * np.abs(exact) + 4 * eps
    same_nonfinite = ~np.isfinite(exact) & ((result == exact) | (np.isnan(result) & np.isnan(exact)))
    bad = ~((error <= bound) | same_nonfinite)
    assert not bad.any(), f"x={x[bad]} got={result[bad]} want={exact[bad]} error={error[bad]} bound={bound[bad]}"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cumath_two_argument_functions(dtype: str, layout: str) -> None:
    dt = np.dtype(dtype)
    x = values(np.random.default_rng(1), dt)
    y = np.where(values(np.random.default_rng(2), dt) == 0, 1, values(np.random.default_rng(2), dt)).astype(dt)
    dx, hx = on_device(x, layout)
    dy, hy = on_device(y, layout)
    check(cumath.fmod(dx, dy), np.fmod(hx, hy))
    fractional, integral = cumath.modf(dx)
    want_f, want_i = np.modf(hx)
    check(fractional, want_f)
    check(integral, want_i)
    significand, exponent = cumath.frexp(dx)
    want_s, want_e = np.frexp(hx)
    check(significand, want_s)
    check(exponent, want_e.astype(dt))
    check(cumath.ldexp(significand, exponent), np.ldexp(want_s, want_e))


def test_cumath_stream_and_out_forms() -> None:
    x = ga.to_gpu(np.linspace(0, 1, 7))
    out = ga.empty_like(x)
    stream = pygpu.cudaStream_t()
    assert cumath.exp(x, out) is out
    np.testing.assert_allclose(out.get(), np.exp(x.get()), rtol=1e-15)
    r = cumath.sin(x, stream)
    stream.synchronize() if hasattr(stream, "synchronize") else pygpu.cudaStreamSynchronize(stream)
    np.testing.assert_allclose(r.get(), np.sin(x.get()), rtol=1e-15)
    assert cumath.cos(x, stream=stream, out=out) is out
    with pytest.raises(TypeError, match="real"):
        cumath.frexp(ga.to_gpu(np.ones(2, np.complex64)))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "0-d", "empty"])
def test_where_and_if_positive(dtype: str, layout: str) -> None:
    dt = np.dtype(dtype)
    rng = np.random.default_rng(3)
    c, x, y = values(rng, np.dtype(np.int16)), values(rng, dt), values(rng, dt)
    dc, hc = on_device(c, layout)
    dx, hx = on_device(x, layout)
    dy, hy = on_device(y, layout)
    check(ga.where(dc, dx, dy), np.where(hc, hx, hy))
    check(ga.if_positive(dc, dx, dy), np.where(hc > 0, hx, hy))
    check(ga.where(dc > 0, dx, 0), np.where(hc > 0, hx, 0))


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "empty"])
def test_mul_add_axpbyz_axpbz(dtype: str, layout: str) -> None:
    dt = np.dtype(dtype)
    rng = np.random.default_rng(4)
    x, y = values(rng, dt, small=True), values(rng, dt, small=True)
    dx, hx = on_device(x, layout)
    dy, hy = on_device(y, layout)
    a, b = (dt.type(2), dt.type(3))
    with np.errstate(all="ignore"):
        check(dx.mul_add(a, dy, b), a * hx + b * hy)
        out = ga.empty_like(dx)
        assert dx._axpbyz(a, dy, b, out) is out
        check(out, a * hx + b * hy)
        assert dx._axpbz(a, b, out) is out
        check(out, a * hx + b)


@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "empty"])
def test_mul_add_into_out_and_with_a_0d_operand(layout: str) -> None:
    # PyCUDA's mul_add(selffac, other, otherfac, add_timer=None, stream=None, out=None).
    rng = np.random.default_rng(14)
    dt = np.dtype(np.float32)
    dx, hx = on_device(values(rng, dt, small=True), layout)
    dy, hy = on_device(values(rng, dt, small=True), layout)
    out = ga.empty_like(dx)
    assert dx.mul_add(2, dy, 3, out=out) is out
    check(out, 2 * hx + 3 * hy)
    assert dx.mul_add(2, dy, 3, stream=None, out=out) is out
    zero_d = ga.to_gpu(np.array(5, dt))
    check(dx.mul_add(2, zero_d, 3), 2 * hx + 3 * np.array(5, dt))


@pytest.mark.parametrize(
    "op", [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.lt, operator.eq]
)
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "empty"])
def test_0d_array_operand_acts_as_a_scalar(op: Callable[[Any, Any], Any], dtype: str, layout: str) -> None:
    # PyCUDA takes a 0-d GPUArray operand as a scalar on the device, on either side.
    dt = np.dtype(dtype)
    if op is operator.lt and dt.kind == "c":
        return
    rng = np.random.default_rng(15)
    dx, hx = on_device(values(rng, dt, small=True), layout)
    h0 = np.array(3, dt)
    d0 = ga.to_gpu(h0)
    with np.errstate(all="ignore"):
        check(op(dx, d0), op(hx, h0))
        check(op(d0, dx), op(h0, hx))
        check(op(d0, d0), op(h0, h0))
        # mixed dtypes promote as numpy's 0-d arrays do
        wide = ga.to_gpu(np.array(2, np.float64))
        check(op(dx, wide), op(hx, np.array(2, np.float64)))


def test_in_place_with_a_0d_view_of_itself() -> None:
    # a += a[2] reads element 2 while writing every element: the result must be as if read first.
    h = np.arange(10.0)
    d = ga.to_gpu(h)
    d += d[2]
    np.testing.assert_array_equal(d.get(), h + h[2])
    d *= ga.to_gpu(np.array(2.0))
    np.testing.assert_array_equal(d.get(), (h + h[2]) * 2)
    with pytest.raises(ValueError, match="out has shape"):
        z = ga.to_gpu(np.array(1.0))
        z += d


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "reversed"])
def test_in_place_operators_write_into_the_array(dtype: str, layout: str) -> None:
    dt = np.dtype(dtype)
    rng = np.random.default_rng(5)
    x, y = values(rng, dt, small=True), values(rng, dt, small=True)
    dx, hx = on_device(x, layout)
    dy, hy = on_device(y, layout)
    before = dx
    if dt.kind == "b":
        dx += dy
        hx = hx + hy
    else:
        dx += dy
        dx *= dy
        dx -= dy
        hx = (hx + hy) * hy - hy
    assert dx is before
    check(dx, np.asarray(hx, dtype=dt))


def test_in_place_with_an_overlapping_operand_reads_the_old_values() -> None:
    a = ga.to_gpu(np.arange(16.0).reshape(4, 4))
    h = a.get()
    a += a.T
    np.testing.assert_array_equal(a.get(), h + h.T)
    b = ga.to_gpu(np.arange(8.0))
    hb = b.get()
    b[1:] += b[:-1]
    hb[1:] += hb[:-1].copy()
    np.testing.assert_array_equal(b.get(), hb)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("int8", "float32"),
        ("uint64", "int64"),
        ("float16", "float64"),
        ("complex64", "float64"),
        ("bool", "int16"),
        ("uint8", "int8"),
        ("int32", "complex64"),
        ("float32", "complex128"),
    ],
)
def test_mixed_dtypes_promote_as_numpy(left: str, right: str) -> None:
    rng = np.random.default_rng(6)
    x, y = values(rng, np.dtype(left), small=True), values(rng, np.dtype(right), small=True)
    dx, dy = ga.to_gpu(x), ga.to_gpu(y)
    with np.errstate(all="ignore"):
        for op in (operator.add, operator.mul, operator.truediv, operator.pow, operator.lt):
            # Complex powers go through exp and log: a transcendental's tolerance.
            transcendental = op is operator.pow
            check(op(dx, dy), np.asarray(op(x, y)), transcendental)
            check(op(dy, dx), np.asarray(op(y, x)), transcendental)


def test_python_scalars_are_weak_and_numpy_scalars_are_not() -> None:
    a = ga.to_gpu(np.arange(4, dtype=np.float32))
    assert (a * 2.0).dtype == np.float32
    assert (2 * a).dtype == np.float32
    assert (a * np.float64(2)).dtype == np.float64
    assert (np.float64(2) * a).dtype == np.float64
    assert isinstance(np.float64(2) * a, ga.GPUArray)
    i = ga.to_gpu(np.arange(4, dtype=np.int8))
    assert (i + 1).dtype == np.int8
    assert (i + 1.5).dtype == np.float64
    with pytest.raises(OverflowError):
        i + 1000


def test_comparisons_return_arrays_never_python_bools() -> None:
    a = ga.to_gpu(np.arange(3))
    for r in (a == 1, a != 1, a < 1, a <= 1, a > 1, a >= 1, a == ga.to_gpu(np.arange(3))):
        assert isinstance(r, ga.GPUArray) and r.dtype == np.bool_
    assert (a == None) is False  # noqa: E711 - GPUArray.__eq__ with None, as numpy's
    with pytest.raises(TypeError):
        hash(a)


def test_real_imag_conj_reverse() -> None:
    z = np.array([1 + 2j, -3 - 4j, 5.5j], np.complex64)
    dz = ga.to_gpu(z)
    check(dz.real, z.real)
    check(dz.imag, z.imag)
    check(dz.conj(), z.conj())
    check(dz.reverse(), z[::-1])
    r = ga.to_gpu(np.arange(3.0))
    assert r.real is r
    # PyCUDA's parts are new arrays in the array's order, not numpy's strided views
    zc = (np.arange(6) + 1j * np.arange(6, 12)).reshape(2, 3)
    zf = np.asfortranarray(zc)
    for d, host in ((ga.to_gpu(zf), zf), (ga.to_gpu(zc), zc), (ga.to_gpu(zc)[:, ::2], zc[:, ::2])):
        for part, expected in ((d.real, host.real), (d.imag, host.imag)):
            check(part, expected)
            assert part.flags.c_contiguous or part.flags.f_contiguous
            assert part.flags.f_contiguous == (host.flags.f_contiguous and not host.flags.c_contiguous)
        before = d.get()
        d.real.fill(0)  # a copy: the array is unchanged
        np.testing.assert_array_equal(d.get(), before)
    check(r.imag, np.zeros(3))
    with pytest.raises(ValueError, match="1-d"):
        ga.to_gpu(np.ones((2, 2))).reverse()


def test_integer_division_by_zero_gives_zero() -> None:
    for dtype in ("int8", "int32", "int64", "uint8", "uint64"):
        a = ga.to_gpu(np.array([7, 0, 5], dtype))
        z = ga.zeros(3, dtype)
        np.testing.assert_array_equal((a // z).get(), [0, 0, 0])
        np.testing.assert_array_equal((a % z).get(), [0, 0, 0])
    m = ga.to_gpu(np.array([np.iinfo(np.int64).min, -7], np.int64))
    np.testing.assert_array_equal((m // -1).get(), [np.iinfo(np.int64).min, 7])
    np.testing.assert_array_equal((m % -1).get(), [0, 0])


def test_bad_input_raises_clear_errors() -> None:
    a = ga.to_gpu(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="same shape, an array and a 0-d array"):
        a + ga.to_gpu(np.arange(3.0))
    with pytest.raises(ValueError, match="same shape"):
        a + ga.to_gpu(np.ones((1, 1)))
    with pytest.raises(TypeError, match="subtract"):
        ga.to_gpu(np.ones(2, bool)) - ga.to_gpu(np.ones(2, bool))
    with pytest.raises(TypeError):
        a + "x"  # type: ignore[operator]
    with pytest.raises(TypeError, match="unsupported operand"):
        a + np.ones((2, 3))
    with pytest.raises(ValueError, match="negative integer powers"):
        ga.to_gpu(np.arange(3)) ** -1
    with pytest.raises(TypeError, match="not supported"):
        cumath.floor(ga.to_gpu(np.ones(2, np.complex64)))
    freed = ga.to_gpu(np.arange(3.0))
    freed.gpudata.free()
    with pytest.raises(pygpu.CudaError):
        freed + 1
    ro = ga.to_gpu(np.arange(3.0))
    ro._readonly = True
    with pytest.raises(ValueError, match="read-only"):
        ro += 1


def test_fill_and_elementwise_ops_are_captured_in_a_graph() -> None:
    a = ga.to_gpu(np.zeros(1000))
    out = ga.empty_like(a)
    cumath.exp(a, out=out)  # loads the kernels' modules outside the capture
    ga.maximum(out, 10.0, out=out).fill(1.5)
    a.get()  # the work above has completed: nothing for the capture to wait on
    out.get()
    s = pygpu.cudaStream_t(1)
    s.begin_capture()
    a.fill(2.5, stream=s)  # not a memset pattern: the copy kernel
    cumath.exp(a, stream=s, out=out)
    ga.maximum(out, 10.0, out=out, stream=s)
    graph = s.end_capture()
    np.testing.assert_array_equal(a.get(), 0)  # nothing ran while capturing
    graph.instantiate().launch(s)
    pygpu.cudaStreamSynchronize(s).check()
    np.testing.assert_array_equal(a.get(), 2.5)
    np.testing.assert_allclose(out.get(), np.maximum(np.exp(2.5), 10.0), rtol=1e-15)


def test_results_are_ordered_on_the_stream_they_are_launched_on() -> None:
    s = pygpu.cudaStream_t(1)
    x = ga.to_gpu_async(np.arange(100_000, dtype=np.float64), stream=s)
    y = cumath.sqrt(x, stream=s)  # queued behind the upload on s
    z = y * 2.0  # default stream: waits for s through the array's ordering
    np.testing.assert_allclose(z.get(), 2 * np.sqrt(np.arange(100_000.0)), rtol=1e-15)


def test_misaligned_views_are_refused_or_filled_safely() -> None:
    raw = ga.to_gpu(np.arange(10, dtype=np.float32))
    odd = raw.view(np.uint8)[1:33].view(np.float32)  # every element straddles two floats
    with pytest.raises(ValueError, match="not aligned"):
        odd * 2
    aligned = ga.empty(odd.shape, odd.dtype)
    aligned.set(odd)
    np.testing.assert_array_equal((aligned * 2).get(), odd.get() * 2)
    strided = raw.view(np.uint8)[1:37].view(np.float32)[::3]
    strided.fill(np.float32(3.0))  # not a kernel's load: staged through the host
    assert (strided.get() == 3.0).all()


@pytest.mark.parametrize("shape", [(), (5,), (1, 3), (3, 1), (2, 3), (0, 3), (2, 1, 4)])
def test_results_have_numpys_contiguity_flags(shape: tuple[int, ...]) -> None:
    """A 1-d result is Fortran-contiguous too, as numpy's is (PyCUDA's tests check the flags of
    conj() and of the parts of F-ordered arrays)."""
    host = (np.arange(int(np.prod(shape))) + 1j).reshape(shape)
    d = ga.to_gpu(host)
    for result, expected in (
        (d + 1, host + 1),
        (d.conj(), host.conj()),
        (ga.zeros(shape, np.float32), np.zeros(shape)),
    ):
        assert result.flags.c_contiguous == expected.flags.c_contiguous, (shape, result.flags)
        assert result.flags.f_contiguous == expected.flags.f_contiguous, (shape, result.flags)


def test_kernels_see_pycudas_complex_functions_whatever_their_argument_types() -> None:
    # PyCUDA's generated kernels include pycuda-complex.hpp: abs(z) on a pycuda::complex
    # argument (the Mandelbrot kernel of "Hands-On GPU Programming with Python and CUDA"), and
    # complex arithmetic inside a kernel whose arguments are all real.
    z = (np.linspace(-2, 1, 64) + 0.5j).astype(np.complex64)
    modulus = pygpu.elementwise.ElementwiseKernel(
        "pycuda::complex<float> *z, float *out", "out[i] = abs(z[i]) + real(exp(z[i]))", "modulus"
    )
    out = ga.empty(64, np.float32)
    modulus(ga.to_gpu(z), out)
    np.testing.assert_allclose(out.get(), np.abs(z) + np.exp(z).real, rtol=1e-5)
    square = pygpu.elementwise.ElementwiseKernel(
        "float *re, float *im", "pycuda::complex<float> w(re[i], im[i]); w = w * w; re[i] = w.real(); im[i] = w.imag()"
    )
    re, im = ga.to_gpu(z.real.copy()), ga.to_gpu(z.imag.copy())
    square(re, im)
    np.testing.assert_allclose(re.get() + 1j * im.get(), z * z, rtol=1e-5)
