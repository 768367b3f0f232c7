"""The fast paths of launch-bound calls (``a + b``, ``cumath.exp(a)``, an ElementwiseKernel
call on contiguous arrays) give what the general paths give, and leave to them every case they
do not handle: other layouts, casts, ``out=``, bad arguments."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pygpu
import pytest
from pygpu import cumath, gpuarray
from pygpu.elementwise import ElementwiseKernel
from pygpu.gpuarray import _arithmetic, _elementwise

SLOT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]


@pytest.mark.parametrize("dtype", SLOT_DTYPES)
def test_scalar_slots_hold_what_numpy_converts(dtype: str) -> None:
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        values: list[Any] = [0, 1, int(info.max), int(info.min), True]
        too_big = [int(info.max) + 1, int(info.min) - 1]
    else:
        values = [0.1, -0.0, 1e-300, 3, 2**53 + 1, float("inf"), float("nan"), np.float64(2.5), True]
        too_big = []
    for v in values:
        assert _elementwise.scalar_bytes(v, dt) == np.asarray(v, dtype=dt).tobytes().ljust(16, b"\0"), v
    for v in too_big:
        with pytest.raises(OverflowError):
            np.asarray(v, dtype=dt)
        with pytest.raises(OverflowError):
            _elementwise.scalar_bytes(v, dt)


def _forbid_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def general(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the general launch path ran")

    monkeypatch.setattr(_elementwise, "launch", general)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex64", "uint8"])
def test_contiguous_operations_take_one_launch(dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x = (rng.random((7, 11)) * 10 + 1).astype(dtype)
    y = (rng.random((7, 11)) * 10 + 1).astype(dtype)
    a, b = gpuarray.to_gpu(x), gpuarray.to_gpu(y)
    _forbid_general_path(monkeypatch)
    np.testing.assert_array_equal((a + b).get(), x + y)
    np.testing.assert_array_equal((a * 3).get(), x * 3)
    np.testing.assert_array_equal((2 - a).get(), 2 - x)
    np.testing.assert_array_equal((a < b).get(), x < y)
    if dtype.startswith("float"):
        np.testing.assert_allclose(cumath.exp(a).get(), np.exp(x), rtol=1e-6)
        np.testing.assert_allclose((a / 2.5).get(), x / 2.5, rtol=1e-6)


def _python_calls(fn: Any) -> int:
    """The Python functions one call of ``fn`` runs (sys.setprofile's call events), ``fn`` itself not counted."""
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls - 1


def test_reflected_operators_take_the_fast_path_as_forward_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """`2 * a`, `2 / a`, `2.5 + a` go through the same seam as `a * 2` (``binary``, the operands in
    order) and, once their plan is cached, straight to the kernel, in as many Python calls."""
    x = np.arange(1, 7, dtype=np.float32)
    a = gpuarray.to_gpu(x)
    pairs = [
        (lambda: a * 2, lambda: 2 * a, x * 2, 2 * x),
        (lambda: a / 2, lambda: 2 / a, x / 2, 2 / x),
        (lambda: a + 2.5, lambda: 2.5 + a, x + 2.5, 2.5 + x),
        (lambda: a - 1, lambda: 1 - a, x - 1, 1 - x),
    ]
    for forward, reflected, _, _ in pairs:
        forward(), reflected()  # their plans are cached
    _forbid_general_path(monkeypatch)

    def no_checks(*args: Any) -> None:
        raise AssertionError("the checked path ran")

    monkeypatch.setattr(_arithmetic, "_shaping_operand", no_checks)
    for forward, reflected, want_forward, want_reflected in pairs:
        np.testing.assert_allclose(forward().get(), want_forward, rtol=1e-6)
        np.testing.assert_allclose(reflected().get(), want_reflected, rtol=1e-6)
        assert reflected().dtype == want_reflected.dtype
        assert _python_calls(reflected) == _python_calls(forward)


def test_other_layouts_and_casts_take_the_general_path() -> None:
    x = np.arange(24, dtype=np.float64).reshape(4, 6) + 1
    a = gpuarray.to_gpu(x)
    b32 = gpuarray.to_gpu(x.astype(np.float32))
    np.testing.assert_array_equal((a.T + a.T).get(), x.T + x.T)
    np.testing.assert_array_equal((a[:, ::2] * 2.0).get(), x[:, ::2] * 2.0)
    np.testing.assert_array_equal((a + b32).get(), x + x.astype(np.float32))
    np.testing.assert_array_equal((a + gpuarray.to_gpu(np.float64(3.0))).get(), x + 3.0)
    empty = gpuarray.zeros((0, 3), np.float64)
    assert (empty + empty).shape == (0, 3)
    out = gpuarray.zeros((4, 6), np.float32)
    cumath.exp(a, out=out)
    np.testing.assert_allclose(out.get(), np.exp(x).astype(np.float32), rtol=1e-6)
    with pytest.raises(ValueError, match="same shape"):
        a + gpuarray.to_gpu(x[:2])


def test_results_are_ordered_on_the_launch_stream() -> None:
    a = gpuarray.to_gpu(np.linspace(0, 1, 1000))
    stream = pygpu.cudaStream_t()
    r = cumath.exp(a, stream=stream)
    assert r._order.pending is stream
    np.testing.assert_allclose(r.get(), np.exp(np.linspace(0, 1, 1000)))
    assert (a + a)._order.pending is None


def test_freed_operands_are_refused() -> None:
    a = gpuarray.GPUArray(8, np.float64, gpudata=pygpu.mem_alloc(64))
    b = gpuarray.zeros(8, np.float64)
    a.gpudata.free()
    with pytest.raises(pygpu.InvalidHandleError):
        a + b
    with pytest.raises(pygpu.InvalidHandleError):
        cumath.exp(a)


AXPY = ("float a, float *x, float *y, float *z", "z[i] = a*x[i] + y[i]")


@pytest.fixture(scope="module")
def axpy() -> ElementwiseKernel:
    return ElementwiseKernel(*AXPY, name="axpy_fast")


@pytest.mark.parametrize("n", [1, 1000, 40_003])
def test_elementwise_kernel_scalars_of_every_kind(axpy: ElementwiseKernel, n: int) -> None:
    rng = np.random.default_rng(n)
    x, y = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    gx, gy, gz = gpuarray.to_gpu(x), gpuarray.to_gpu(y), gpuarray.empty(n, np.float32)
    for a in (2, 2.5, np.float32(2.5), np.float64(0.1), np.int8(-3)):
        axpy(a, gx, gy, gz)
        # a GPU fuses a*x + y (one rounding): absolute slack for the cancellation when a < 0
        np.testing.assert_allclose(gz.get(), np.float32(a) * x + y, rtol=1e-6, atol=1e-6)
    # A string is not a number, though numpy's float32("0.25") would parse it (issue 27, class I).
    with pytest.raises(TypeError, match="pass a number, not str"):
        axpy("0.25", gx, gy, gz)
    stream = pygpu.cudaStream_t()
    axpy(0.5, gx, gy, gz, stream=stream)
    pygpu.cudaStreamSynchronize(stream).check()
    np.testing.assert_allclose(gz.get(), np.float32(0.5) * x + y, rtol=1e-6)


def test_elementwise_kernel_converts_as_numpy_where_prepared_calls_do_not() -> None:
    fill = ElementwiseKernel("int k, int *x", "x[i] = k", name="fill_fast")
    x = gpuarray.zeros(10, np.int32)
    fill(7.9, x)  # numpy: int32(7.9) == 7
    assert (x.get() == 7).all()
    fill(np.int64(-4), x)
    assert (x.get() == -4).all()
    with pytest.raises(TypeError, match="is not a int"):
        fill(1 << 40, x)


def test_elementwise_kernel_bad_calls(axpy: ElementwiseKernel) -> None:
    gx, gy, gz = (gpuarray.zeros(16, np.float32) for _ in range(3))
    with pytest.raises(TypeError, match="takes 4 arguments"):
        axpy(1.0, gx, gy)
    with pytest.raises(TypeError, match="declared as a scalar"):
        axpy(gx, gx, gy, gz)
    with pytest.raises(TypeError, match="an array of float64: pass an array of float32"):
        axpy(1.0, gpuarray.zeros(16, np.float64), gy, gz)
    with pytest.raises(ValueError, match="has 8 elements"):
        axpy(1.0, gx, gpuarray.zeros(8, np.float32), gz)
    with pytest.raises(ValueError, match="contiguous"):
        axpy(1.0, gpuarray.zeros(32, np.float32)[::2], gy, gz)
    with pytest.raises(TypeError, match="unknown keyword"):
        axpy(1.0, gx, gy, gz, strem=None)
    freed = gpuarray.GPUArray(16, np.float32, gpudata=pygpu.mem_alloc(64))
    freed.gpudata.free()
    with pytest.raises(pygpu.InvalidHandleError):
        axpy(1.0, gx, gy, freed)


def test_repeated_calls_keep_the_value_checks() -> None:
    ints = gpuarray.to_gpu(np.arange(1, 9, dtype=np.int32))
    floats = gpuarray.to_gpu(np.arange(1, 9, dtype=np.float64))
    for _ in range(3):
        np.testing.assert_array_equal((ints**2).get(), np.arange(1, 9) ** 2)
        with pytest.raises(ValueError, match="negative integer powers"):
            ints**-1
        with pytest.raises(OverflowError):
            gpuarray.to_gpu(np.arange(4, dtype=np.int8)) + 300
        with pytest.raises(ValueError, match="same shape"):
            floats + gpuarray.zeros(3, np.float64)
        np.testing.assert_array_equal((floats + gpuarray.to_gpu(np.float64(1))).get(), np.arange(2, 10))


def test_a_gpuarray_subclass_operand_is_an_array_not_a_scalar() -> None:
    class Tagged(gpuarray.GPUArray):
        __slots__ = ()

    x = np.arange(6, dtype=np.float64)
    a = gpuarray.to_gpu(x)
    tagged = gpuarray.to_gpu(x * 10).view()
    tagged.__class__ = Tagged
    for _ in range(3):
        np.testing.assert_array_equal((a + tagged).get(), x + x * 10)
        np.testing.assert_array_equal((a + a).get(), x + x)
