"""ElementwiseKernel, ReductionKernel and the scan kernels against numpy: several dtypes,
lengths 0, 1, a block, a block + 1 and a larger size; the bad-input cases."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import pygpu
from pygpu import gpuarray, tools, vec
from pygpu.compiler import CompileError
from pygpu.elementwise import ElementwiseKernel, get_elwise_kernel
from pygpu.reduction import ReductionKernel
from pygpu.scan import ExclusiveScanKernel, InclusiveScanKernel

# The GPU block sizes are 256 (elementwise, scan) and 512 (reduction); the host's 1 and 32.
BIG = 1 << 16 if pygpu.backend() == "host" else (1 << 24) + 3
LENGTHS = [0, 1, 32, 33, 256, 257, 513, BIG]
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint32, np.int16, np.uint8]


def _data(n: int, dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    return rng.integers(0, 50, n).astype(dt)


# ------------------------------------------------------------------ elementwise


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_linear_combination(dtype: Any) -> None:
    ctype = tools.dtype_to_ctype(dtype)
    kernel = ElementwiseKernel(f"{ctype} a, {ctype} *x, {ctype} *y, {ctype} *z", "z[i] = a*x[i] + y[i]", "lin")
    for n in LENGTHS:
        x, y = _data(n, dtype, 1), _data(n, dtype, 2)
        z = gpuarray.zeros(n, dtype)
        kernel(3, gpuarray.to_gpu(x), gpuarray.to_gpu(y), z)
        expected = (np.asarray(3, dtype) * x + y).astype(dtype)
        # A GPU fuses a*x + y into one rounding; numpy rounds twice: the results differ by an
        # ulp of the terms, which is large relative to a result that nearly cancels.
        eps = np.finfo(dtype).eps if np.dtype(dtype).kind == "f" else 0
        terms = np.abs(np.asarray(3, dtype) * x) + np.abs(y)
        assert np.all(np.abs(z.get() - expected) <= 2 * eps * terms)


def test_elementwise_index_preamble_and_loop_parts() -> None:
    kernel = ElementwiseKernel(
        "long *out, long offset",
        "out[i] = twice(i) + offset + base",
        "indexed",
        preamble="template <class T> __device__ T twice(T v) { return 2 * v; }",
        loop_prep="long base = 7",
    )
    out = gpuarray.zeros(1000, np.int64)
    kernel(out, np.int64(5))
    assert np.array_equal(out.get(), 2 * np.arange(1000) + 12)


def test_elementwise_range_and_slice() -> None:
    kernel = ElementwiseKernel("float *z", "z[i] = i", "mark")
    z = gpuarray.zeros(100, np.float32)
    kernel(z, range=slice(3, 50, 7))
    expected = np.zeros(100, np.float32)
    expected[3:50:7] = np.arange(100)[3:50:7]
    assert np.array_equal(z.get(), expected)
    z.fill(0)
    kernel(z, slice=slice(None, None, -3))
    expected = np.zeros(100, np.float32)
    expected[::-3] = np.arange(100)[::-3]
    assert np.array_equal(z.get(), expected)
    kernel(z, range=slice(5, 5))  # nothing to do


def test_elementwise_on_a_stream_and_pool() -> None:
    pool = tools.DeviceMemoryPool()
    kernel = ElementwiseKernel("double *x", "x[i] = x[i] * 2", "double_it")
    stream = pygpu.driver.Stream()
    x = gpuarray.to_gpu(np.arange(5000.0), allocator=pool.allocate)
    kernel(x, stream=stream)
    stream.synchronize()
    assert np.array_equal(x.get(), 2 * np.arange(5000.0))


def test_get_elwise_kernel() -> None:
    func = get_elwise_kernel("int *x", "x[i] = i * i", "squares")
    x = gpuarray.zeros(77, np.int32)
    func(x, np.int64(77), block=(32, 1, 1), grid=(3, 1))
    assert np.array_equal(x.get(), np.arange(77) ** 2)


def test_elementwise_struct_scalar_by_value() -> None:
    kernel = ElementwiseKernel("float *out, float3 v", "out[i] = v.x + 10 * v.y + 100 * v.z", "dot3")
    out = gpuarray.zeros(40, np.float32)
    kernel(out, vec.make_float3(1, 2, 3))
    assert np.all(out.get() == 321)
    with pytest.raises(TypeError, match="struct dtype"):
        kernel(out, 1.0)


def test_elementwise_registered_struct_layout_is_checked() -> None:
    vec.register_struct(
        "pygpu_test_pair",
        np.dtype([("a", np.int32), ("b", np.float64)], align=True),
        "struct pygpu_test_pair { int a; double b; };",
    )
    kernel = ElementwiseKernel("double *out, pygpu_test_pair p", "out[i] = p.a + p.b", "pair_sum")
    out = gpuarray.zeros(3, np.float64)
    value = np.array((2, 0.5), dtype=vec.c_name_to_dtype("pygpu_test_pair"))[()]
    kernel(out, value)
    assert np.all(out.get() == 2.5)
    # The same C struct, described by a packed dtype: the padding differs.
    vec.register_struct(
        "pygpu_test_packed",
        np.dtype([("a", np.int32), ("b", np.float64)]),
        "struct pygpu_test_packed { int a; double b; };",
    )
    with pytest.raises(ValueError, match="field b is at byte 8 in C but at byte 4"):
        ElementwiseKernel("double *out, pygpu_test_packed p", "out[i] = p.b", "packed")
    # Same offsets, but numpy's item is longer than the C struct.
    vec.register_struct(
        "pygpu_test_padded",
        np.dtype({"names": ["a"], "formats": [np.int32], "itemsize": 8}),
        "struct pygpu_test_padded { int a; };",
    )
    with pytest.raises(CompileError, match="sizeof"):
        ElementwiseKernel("int *out, pygpu_test_padded p", "out[i] = p.a", "padded")
    # Same size, fields swapped: only the offsets show it.
    vec.register_struct(
        "pygpu_test_swapped",
        np.dtype({"names": ["a", "b"], "formats": [np.int32, np.int32], "offsets": [4, 0]}),
        "struct pygpu_test_swapped { int a; int b; };",
    )
    with pytest.raises(ValueError, match="field a is at byte 0 in C but at byte 4"):
        ElementwiseKernel("int *out, pygpu_test_swapped p", "out[i] = p.a", "swapped")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("float *x,", "empty declaration"),
        ("float", "lacks a type or a name"),
        ("quaternion *q", "unknown C type"),
        ("float *x, float *x", "unique"),
        ("float *i", "used by the generated loop"),
        ("float a", "at least one array"),
    ],
)
def test_elementwise_bad_arguments(arguments: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ElementwiseKernel(arguments, "x[i] = 0")


def test_elementwise_bad_operation_shows_the_compiler_log() -> None:
    with pytest.raises(CompileError) as info:
        ElementwiseKernel("float *x", "x[i] = undefined_thing(i)", "broken")
    assert "undefined_thing" in str(info.value)


def test_elementwise_bad_calls() -> None:
    kernel = ElementwiseKernel("float a, float *x, float *y", "y[i] = a * x[i]", "scale")
    x = gpuarray.zeros(10, np.float32)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        kernel(1.0, x)
    with pytest.raises(
        TypeError, match=r"parameter 'y' \(float \*y\) is an array of float64: pass an array of float32"
    ):
        kernel(1.0, x, gpuarray.zeros(10, np.float64))
    with pytest.raises(TypeError, match="pass a GPUArray"):
        kernel(1.0, x, np.zeros(10, np.float32))
    with pytest.raises(TypeError, match="scalar float, got an array"):
        kernel(x, x, x)
    with pytest.raises(ValueError, match="has 5 elements but the kernel runs over 10"):
        kernel(1.0, x, gpuarray.zeros(5, np.float32))
    with pytest.raises(ValueError, match="contiguous"):
        kernel(1.0, gpuarray.zeros(20, np.float32)[::2], x)
    with pytest.raises(TypeError, match="unknown keyword"):
        kernel(1.0, x, x, blocks=3)
    with pytest.raises(ValueError, match="step cannot be zero"):
        kernel(1.0, x, x, range=slice(0, 10, 0))


def test_generated_kernels_take_arrays_as_any_launch_does() -> None:
    # PyCUDA checks no element types here; pygpu applies its launches' rules
    # (docs/kernel_signatures.md): signedness aside, char* over any array, a warning for another
    # type of the same size. PyCUDA's word-count example reads uint8 text through char*.
    text = np.frombuffer(b"the quick brown fox jumps over the lazy dog " * 20, np.uint8)
    words = ReductionKernel(np.int32, "0", "a+b", "(a[i]==32)*(b[i]!=32)", "char* a, char* b")
    on_device = gpuarray.to_gpu(text)
    assert int(words(on_device[:-1], on_device[1:]).get()) == int(((text[:-1] == 32) & (text[1:] != 32)).sum())
    counts = gpuarray.to_gpu(np.arange(3, dtype=np.int32))
    ElementwiseKernel("unsigned int *a", "a[i] += 1")(counts)
    assert counts.get().tolist() == [1, 2, 3]
    with pytest.warns(pygpu.KernelArgumentWarning, match="reads as int"):
        ElementwiseKernel("int *a", "a[i] = 0")(gpuarray.ones(3, np.float32))
    # A scan too: a uint32 array through an int32 scan (an example program's), float64 refused.
    scan = ExclusiveScanKernel(np.int32, "a+b", "0")
    assert scan(gpuarray.to_gpu(np.arange(1, 6, dtype=np.uint32))).get().tolist() == [0, 1, 3, 6, 10]
    with pytest.raises(TypeError, match="array of float64: pass an array of int32"):
        scan(gpuarray.zeros(4, np.float64))


# ------------------------------------------------------------------ reduction


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduction_sum_and_dot(dtype: Any) -> None:
    ctype = tools.dtype_to_ctype(dtype)
    total = ReductionKernel(dtype, "0", "a+b", arguments=f"const {ctype} *in", name="total")
    dot = ReductionKernel(np.float64, "0", "a+b", "(double)x[i]*y[i]", f"const {ctype} *x, const {ctype} *y")
    for n in LENGTHS:
        x, y = _data(n, dtype, 3), _data(n, dtype, 4)
        gx, gy = gpuarray.to_gpu(x), gpuarray.to_gpu(y)
        result = total(gx)
        assert result.shape == () and result.dtype == np.dtype(dtype)
        np.testing.assert_allclose(result.get(), x.sum(dtype=dtype), rtol=1e-4 if x.dtype == np.float32 else 1e-10)
        np.testing.assert_allclose(dot(gx, gy).get(), x.astype(np.float64) @ y, rtol=1e-10)


def test_reduction_max_out_and_allocator() -> None:
    biggest = ReductionKernel(np.float32, "-3.0e38f", "fmaxf(a, b)", arguments="const float *in", name="biggest")
    pool = tools.DeviceMemoryPool()
    x = _data(5000, np.float32)
    out = gpuarray.zeros((), np.float32)
    result = biggest(gpuarray.to_gpu(x), out=out, allocator=pool.allocate)
    assert result is out and out.get() == x.max()
    assert biggest(gpuarray.zeros(0, np.float32)).get() == np.float32(-3.0e38)


def test_reduction_struct_result() -> None:
    sum3 = ReductionKernel(
        vec.float3,
        "make_float3(0, 0, 0)",
        "make_float3(a.x + b.x, a.y + b.y, a.z + b.z)",
        "make_float3(x[i], 2 * x[i], 1)",
        "const float *x",
        name="sum3",
    )
    x = np.arange(1000, dtype=np.float32)
    result = sum3(gpuarray.to_gpu(x))
    assert result.dtype == vec.float3
    got = result.get()[()]
    assert (got["x"], got["y"], got["z"]) == (x.sum(), 2 * x.sum(), 1000)


def test_reduction_errors() -> None:
    with pytest.raises(CompileError) as info:
        ReductionKernel(np.float32, "0", "a +* b", arguments="const float *in", name="bad_reduce")
    assert "error" in str(info.value).lower() and "bad_reduce" not in type(info.value).__name__
    with pytest.raises(ValueError, match="named 'in'"):
        ReductionKernel(np.float32, "0", "a+b", arguments="const float *x")
    with pytest.raises(ValueError, match="arguments="):
        ReductionKernel(np.float32, "0", "a+b")
    total = ReductionKernel(np.float32, "0", "a+b", arguments="const float *in", name="total32")
    with pytest.raises(TypeError, match=r"'in' \(float \*in\) is an array of float64"):
        total(gpuarray.zeros(4, np.float64))
    with pytest.raises(ValueError, match="out="):
        total(gpuarray.zeros(4, np.float32), out=gpuarray.zeros(3, np.float32))


# ------------------------------------------------------------------ scan


@pytest.mark.parametrize("dtype", DTYPES)
def test_scans_against_numpy(dtype: Any) -> None:
    inclusive = InclusiveScanKernel(dtype, "a+b")
    exclusive = ExclusiveScanKernel(dtype, "a+b", "0")
    for n in LENGTHS:
        x = _data(n, dtype, 5)
        g = gpuarray.to_gpu(x)
        out = gpuarray.empty(n, dtype)
        assert inclusive(g, out) is out
        inclusive_sums, exclusive_sums = out.get(), exclusive(g).get()
        if x.dtype.kind == "f":
            # The exact prefix sums (float64 for float32 input; float64 round-off is negligible at
            # these sizes) and the bound of any summation order: a few eps times log2(n) times
            # the prefix sum of |x|; numpy's own serial float32 cumsum is farther off than that.
            exact = np.cumsum(x.astype(np.float64))
            bound = 4 * np.finfo(dtype).eps * max(1.0, np.log2(max(n, 2))) * np.cumsum(np.abs(x.astype(np.float64)))
            assert np.all(np.abs(inclusive_sums - exact) <= bound)
            assert np.all(
                np.abs(exclusive_sums - np.concatenate([[0], exact[:-1]])[:n]) <= np.concatenate([[0], bound])[:n]
            )
        else:
            expected = np.cumsum(x, dtype=dtype)
            assert np.array_equal(inclusive_sums, expected)
            assert np.array_equal(exclusive_sums, np.concatenate([[0], expected[:-1]])[:n].astype(dtype))


def test_scan_keeps_the_order_of_a_non_commutative_operator() -> None:
    n = 3000
    x = np.arange(n, dtype=np.int32) + 1
    # "keep the first"/"keep the last" are associative but not commutative.
    assert np.all(InclusiveScanKernel(np.int32, "a", name_prefix="first")(gpuarray.to_gpu(x)).get() == 1)
    assert np.array_equal(InclusiveScanKernel(np.int32, "b", name_prefix="last")(gpuarray.to_gpu(x)).get(), x)
    running_max = InclusiveScanKernel(np.float64, "fmax(a, b)", name_prefix="runmax")
    y = _data(n, np.float64)
    assert np.array_equal(running_max(gpuarray.to_gpu(y)).get(), np.maximum.accumulate(y))


def test_scan_errors() -> None:
    with pytest.raises(ValueError, match="neutral"):
        ExclusiveScanKernel(np.int32, "a+b")
    cumsum = InclusiveScanKernel(np.int32, "a+b")
    with pytest.warns(pygpu.KernelArgumentWarning, match="the kernel reads as"):  # same size: reinterpreted
        cumsum(gpuarray.zeros(3, np.float32))
    with pytest.raises(TypeError, match="float64"):
        cumsum(gpuarray.zeros(3, np.float64))
    with pytest.raises(ValueError, match="elements"):
        cumsum(gpuarray.zeros(3, np.int32), gpuarray.zeros(4, np.int32))
    with pytest.raises(CompileError):
        InclusiveScanKernel(np.int32, "a ++ b +", name_prefix="broken")
    gc.collect()


def test_complex_elementwise_and_reduction() -> None:
    ctype = "pycuda::complex<double>"
    scale = ElementwiseKernel(f"{ctype} a, {ctype} *x, {ctype} *z", "z[i] = a * x[i]", "cscale")
    x = (np.arange(300) + 1j * np.arange(300)[::-1]).astype(np.complex128)
    z = gpuarray.zeros(300, np.complex128)
    scale(np.complex128(2 + 1j), gpuarray.to_gpu(x), z)
    np.testing.assert_allclose(z.get(), (2 + 1j) * x)
    total = ReductionKernel(np.complex64, "0", "a+b", arguments="pycuda::complex<float> *in", name="ctotal")
    y = x.astype(np.complex64)
    np.testing.assert_allclose(total(gpuarray.to_gpu(y)).get(), y.sum(), rtol=1e-6)


def test_gpuarray_stores_struct_dtypes() -> None:
    points = np.zeros(5, vec.float3)
    points["x"], points["y"], points["z"] = np.arange(5), 2 * np.arange(5), 3
    g = gpuarray.to_gpu(points)
    assert g.dtype == vec.float3
    assert np.array_equal(g.get(), points)
    shift = ElementwiseKernel("float3 *p, float3 d", "p[i].x += d.x; p[i].y += d.y; p[i].z += d.z", "shift3")
    shift(g, vec.make_float3(1, 1, 1))
    got = g.get()
    assert np.array_equal(got["x"], points["x"] + 1) and np.all(got["z"] == 4)


def test_reduction_allocations() -> None:
    pool = tools.DeviceMemoryPool()
    uses: list[int] = []

    def allocator(nbytes: int) -> Any:
        uses.append(nbytes)
        return pool.allocate(nbytes)

    total = ReductionKernel(np.float64, "0", "a+b", arguments="const double *in", name="total_alloc")
    small = gpuarray.to_gpu(np.ones(20))
    assert total(small, allocator=allocator).get() == 20
    assert len(uses) == 1  # one block: the result only, as PyCUDA's single-stage case
    big = gpuarray.to_gpu(np.ones(5000))
    assert total(big, allocator=allocator).get() == 5000
    assert len(uses) == 3  # the result and the partials
