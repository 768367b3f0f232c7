"""Idioms of PyCUDA's example programs (examples/from-wiki) that need more than the compiler:
gpu_scalar_mult.py (get_linear_combination_kernel with GPU scalars bound as texture
references; get_elwise_module with the count among the arguments), distance_element_wise3d.py
(filling a GPUArray of 12-byte vec.float3 structs) and mandelbrot_interactive.py
(pycuda::complex<double> constructors in a SourceModule)."""

from __future__ import annotations

import numpy as np
import pygpu.driver as drv
import pytest
from pygpu import gpuarray
from pygpu.compiler import SourceModule
from pygpu.elementwise import ScalarArg, VectorArg, get_elwise_module, get_linear_combination_kernel

F4 = np.dtype(np.float32)
F8 = np.dtype(np.float64)
C8 = np.dtype(np.complex64)


def test_linear_combination_with_gpu_scalars() -> None:
    kernel, slots = get_linear_combination_kernel(((True, F4, F4), (True, F4, F4)), F4)
    assert len(slots) == 2
    rng = np.random.default_rng(1)
    x_h, y_h = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    a, b = gpuarray.to_gpu(np.array(5, np.float32)), gpuarray.to_gpu(np.array(-7, np.float32))
    x, y = gpuarray.to_gpu(x_h), gpuarray.to_gpu(y_h)
    z = gpuarray.empty_like(x)
    assert a.bind_to_texref_ext(slots[0], allow_double_hack=True) == 0
    assert b.bind_to_texref(slots[1]) == 0
    kernel.prepared_call(x._grid, x._block, x.gpudata, y.gpudata, z.gpudata, x.mem_size)
    # a GPU may fuse 5*x - 7*y (one rounding): absolute slack where the terms cancel
    np.testing.assert_allclose(z.get(), 5 * x_h - 7 * y_h, rtol=1e-6, atol=1e-5)
    # Rebinding takes effect on the next call (the value is read on the device at each launch).
    b.fill(2)
    kernel.prepared_call(x._grid, x._block, x.gpudata, y.gpudata, z.gpudata, x.mem_size)
    np.testing.assert_allclose(z.get(), 5 * x_h + 2 * y_h, rtol=1e-6, atol=1e-5)
    # The same descriptors give the same (memoized) kernel and slots, as PyCUDA's.
    assert get_linear_combination_kernel(((True, F4, F4), (True, F4, F4)), F4)[1] is slots


def test_linear_combination_mixes_host_and_gpu_scalars_and_dtypes() -> None:
    kernel, slots = get_linear_combination_kernel(((False, F8, F8), (True, F8, F4)), F8)
    assert len(slots) == 1
    x_h = np.linspace(-1, 1, 300)
    y_h = np.linspace(3, 4, 300, dtype=np.float32)
    x, y = gpuarray.to_gpu(x_h), gpuarray.to_gpu(y_h)
    z = gpuarray.zeros(300, F8)
    gpuarray.to_gpu(np.array([0.25, 99.0])).bind_to_texref_ext(slots[0])  # element 0 is read
    kernel.prepared_call(x._grid, x._block, np.float64(1.5), x.gpudata, y.gpudata, z.gpudata, 300)
    np.testing.assert_allclose(z.get(), 1.5 * x_h + 0.25 * y_h.astype(np.float64), rtol=1e-12)


def test_linear_combination_complex_result_from_real_summands() -> None:
    kernel, slots = get_linear_combination_kernel(((False, C8, F4), (True, C8, C8)), C8)
    x_h = np.arange(50, dtype=np.float32)
    y_h = (np.arange(50) * (1 - 2j)).astype(np.complex64)
    x, y = gpuarray.to_gpu(x_h), gpuarray.to_gpu(y_h)
    z = gpuarray.empty(50, C8)
    gpuarray.to_gpu(np.array(0.5 + 1j, C8)).bind_to_texref_ext(slots[0])
    kernel.prepared_call(x._grid, x._block, np.complex64(2 - 1j), x.gpudata, y.gpudata, z.gpudata, 50)
    np.testing.assert_allclose(z.get(), (2 - 1j) * x_h + (0.5 + 1j) * y_h, rtol=1e-5)


def test_linear_combination_refuses_misuse_clearly() -> None:
    kernel, slots = get_linear_combination_kernel(((True, F8, F8),), F8)
    x = gpuarray.zeros(4, F8)
    slots[0].array = None
    with pytest.raises(RuntimeError, match="bind_to_texref_ext"):
        kernel.prepared_call(x._grid, x._block, x.gpudata, x.gpudata, 4)
    with pytest.raises(TypeError, match="declared float64"):
        gpuarray.zeros(1, F4).bind_to_texref_ext(slots[0])
    with pytest.raises(ValueError, match="empty"):
        gpuarray.zeros(0, F8).bind_to_texref_ext(slots[0])
    gpuarray.zeros(1, F8).bind_to_texref_ext(slots[0])
    with pytest.raises(TypeError, match="takes 3 arguments"):
        kernel.prepared_call(x._grid, x._block, x.gpudata, 4)
    with pytest.raises(TypeError, match="summand descriptor"):
        get_linear_combination_kernel((F8,), F8)
    with pytest.raises(ValueError, match="at least one summand"):
        get_linear_combination_kernel((), F8)
    with pytest.raises(NotImplementedError, match="removed in CUDA 12"):
        x.bind_to_texref_ext(object())


def test_get_elwise_module_with_the_count_among_the_arguments() -> None:
    # gpu_scalar_mult.py's kernel without textures: GPU scalars as pointers, n declared by the caller.
    args = [VectorArg(F4, "ga"), VectorArg(F4, "x"), VectorArg(F4, "z"), ScalarArg(np.uintp, "n")]
    mod = get_elwise_module(args, "z[i] = a*x[i]", "scale", loop_prep="float a = *ga")
    func = mod.get_function("scale")
    func.prepare("".join(arg.struct_char for arg in args))
    x_h = np.arange(100, dtype=np.float32)
    a, x = gpuarray.to_gpu(np.array(3, np.float32)), gpuarray.to_gpu(x_h)
    z = gpuarray.zeros_like(x)
    func.prepared_call(x._grid, x._block, a.gpudata, x.gpudata, z.gpudata, 60)
    np.testing.assert_array_equal(z.get(), np.where(np.arange(100) < 60, 3 * x_h, 0))


def test_fill_of_twelve_byte_structs() -> None:
    # distance_element_wise3d.py: n[i, j, k] = vec.make_float3(...) element by element.
    n = gpuarray.zeros((4, 3, 2), gpuarray.vec.float3)
    expected = np.zeros((4, 3, 2), gpuarray.vec.float3)
    rng = np.random.default_rng(2)
    for index in np.ndindex(4, 3, 2):
        value = gpuarray.vec.make_float3(*rng.uniform(-100, 100, 3))
        n[index] = value
        expected[index] = value
    np.testing.assert_array_equal(n.get(), expected)
    # Whole arrays and strided views, and 24-byte structs.
    n[:, 1].fill(gpuarray.vec.make_float3(1, 2, 3))
    expected[:, 1] = gpuarray.vec.make_float3(1, 2, 3)
    np.testing.assert_array_equal(n.get(), expected)
    for dtype, value in [
        (gpuarray.vec.long3, gpuarray.vec.make_long3(-1, 2**40, 7)),  # 24 bytes: 8-byte parts
        (gpuarray.vec.uchar3, gpuarray.vec.make_uchar3(1, 2, 255)),  # 3 bytes: 1-byte parts
    ]:
        d = gpuarray.zeros(7, dtype)
        d[::2] = value
        expected_d = np.zeros(7, dtype)
        expected_d[::2] = value
        np.testing.assert_array_equal(d.get(), expected_d)


def test_distance_kernel_over_float3_points() -> None:
    from pygpu.elementwise import ElementwiseKernel

    rng = np.random.default_rng(3)
    points_h = np.zeros((5, 5, 2), gpuarray.vec.float3)
    for name in "xyz":
        points_h[name] = rng.uniform(-100, 100, (5, 5, 2))
    points = gpuarray.zeros((5, 5, 2), gpuarray.vec.float3)
    for index in np.ndindex(5, 5, 2):
        points[index] = points_h[index]
    distance = ElementwiseKernel(
        "float3 pt, float3 *ns, float *rs",
        "rs[i] = sqrt(pow(pt.x-ns[i].x,2)+pow(pt.y-ns[i].y,2)+pow(pt.z-ns[i].z,2))",
        "euclidean_distance",
        preamble="#include <math.h>",
    )
    r = gpuarray.zeros((5, 5, 2), np.float32)
    pt = gpuarray.vec.make_float3(10, -20, 30)
    distance(pt, points, r)
    expected = np.sqrt(sum((points_h[c].astype(np.float64) - pt[c]) ** 2 for c in "xyz"))
    np.testing.assert_allclose(r.get(), expected, rtol=1e-5)


def test_struct_astype_to_another_dtype_is_refused_clearly() -> None:
    # PyCUDA's copy kernel (dest[i] = src[i]) does not compile between a struct and a number.
    n = gpuarray.zeros(3, gpuarray.vec.float3)
    with pytest.raises(TypeError, match="structs .* are copied, not converted"):
        n.astype(np.float32)
    with pytest.raises(TypeError, match="structs"):
        gpuarray.zeros(3, np.float32).astype(gpuarray.vec.float3)
    assert n.astype(gpuarray.vec.float3).get().tolist() == [(0.0, 0.0, 0.0)] * 3


COMPLEX_CONSTRUCTORS = """
#include <pycuda-complex.hpp>
typedef pycuda::complex<double> cd;
typedef pycuda::complex<float> cf;
__global__ void build(double *re, double *im, cd *out_d, cf *out_f, int n)
{
    int i = threadIdx.x + blockDim.x * blockIdx.x;
    if (i >= n) return;
    cd from_both(re[i], im[i]);       // (re, im)
    cd from_real(re[i]);              // im = 0
    cd zero = cd();                   // value-initialized: 0
    cf narrowed = from_both;          // double -> float, implicit as PyCUDA's
    cd widened = cf(1.5f, -2.0f);     // float -> double
    out_d[4 * i + 0] = from_both;
    out_d[4 * i + 1] = from_real + zero;
    out_d[4 * i + 2] = widened * 2.0;
    out_d[4 * i + 3] = cd(re[i], im[i]) * cd(0, 1);
    out_f[i] = narrowed;
}
"""


def test_complex_constructors() -> None:
    n = 16
    re = np.linspace(-2, 2, n)
    im = np.linspace(3, -1, n)
    out_d = np.zeros(4 * n, np.complex128)
    out_f = np.zeros(n, np.complex64)
    build = SourceModule(COMPLEX_CONSTRUCTORS).get_function("build")
    build(drv.In(re), drv.In(im), drv.Out(out_d), drv.Out(out_f), np.int32(n), block=(8, 1, 1), grid=(2, 1))
    z = re + 1j * im
    out = out_d.reshape(n, 4)
    np.testing.assert_array_equal(out[:, 0], z)
    np.testing.assert_array_equal(out[:, 1], re + 0j)
    np.testing.assert_array_equal(out[:, 2], np.full(n, 3 - 4j))
    np.testing.assert_allclose(out[:, 3], z * 1j, rtol=1e-15)
    np.testing.assert_array_equal(out_f, z.astype(np.complex64))


MANDELBROT = """
#include <pycuda-complex.hpp>
typedef pycuda::complex<double> pyComplex;
__device__ float norma(pyComplex z) { return norm(z); }
__global__ void mandelbrot(double x0, double y0, double side, int L, int power, int *M)
{
    int n_x = blockDim.x * gridDim.x;
    int idx = threadIdx.x + blockDim.x * blockIdx.x;
    int idy = threadIdx.y + blockDim.y * blockIdx.y;
    double delta = side / n_x;
    pyComplex c(x0 - side / 2. + delta * idx, y0 - side / 2. + delta * idy);
    pyComplex z(x0 - side / 2. + delta * idx, y0 - side / 2. + delta * idy);
    int h = 0;
    while (h < L && norma(z) < 2.0f) {
        z = pow(z, power) + c;
        h += 1;
    }
    M[idy * n_x + idx] = h;
}
"""


def test_mandelbrot_iteration_counts_match_numpy() -> None:
    # mandelbrot_interactive.py's kernel (its delta in double here, so numpy can follow exactly).
    n, limit, x0, y0, side = 32, 40, -0.5, 0.0, 3.0
    counts = np.zeros((n, n), np.int32)
    func = SourceModule(MANDELBROT).get_function("mandelbrot")
    func(
        np.float64(x0), np.float64(y0), np.float64(side), np.int32(limit), np.int32(2), drv.Out(counts),
        block=(8, 8, 1), grid=(4, 4, 1),
    )  # fmt: skip
    delta = side / n
    c = (x0 - side / 2 + delta * np.arange(n))[None, :] + 1j * (y0 - side / 2 + delta * np.arange(n))[:, None]
    z = c.copy()
    expected = np.zeros((n, n), np.int32)
    for _ in range(limit):
        live = (z.real**2 + z.imag**2).astype(np.float32) < 2.0
        expected += live
        z = np.where(live, z * z + c, z)
    # Points on the boundary of the escape test can differ by rounding: nearly all agree.
    assert np.mean(counts == expected) > 0.98
    assert counts.max() == limit and counts.min() == 0
