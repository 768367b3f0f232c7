"""Names PyCUDA clients import that pygpu added for them (issue 26, part 6): pycuda.autoprimaryctx,
pycuda.VERSION*, pycuda.compyte.dtypes/array, pycuda.gl (refused), the prepared kernels of
pycuda.elementwise's get_*_kernel helpers (scikit-cuda calls get_pow_kernel)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu import elementwise as el
from pygpu import gpuarray as ga
from pygpu import tools
from pygpu.compyte import array as carray
from pygpu.compyte import dtypes as cdtypes


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYGPU_BACKEND": pygpu.backend(), **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=120
    )


# ------------------------------------------------------------------ pycuda.autoprimaryctx


def test_autoprimaryctx_makes_the_default_devices_primary_context_current() -> None:
    result = _run(
        """
        import pygpu.pycuda_alias as alias
        alias.enable()
        import pycuda.autoprimaryctx as apc
        import pycuda.driver as drv
        assert drv.Context.get_current() is apc.context, drv.Context.get_current()
        assert apc.device == drv.Device(0) == apc.context.get_device()
        import pycuda.autoprimaryctx as again
        assert again.context is apc.context
        print("ok", apc.device.ordinal)
        """,
        CUDA_DEVICE="0",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "0"]


def test_autoprimaryctx_honours_cuda_device() -> None:
    result = _run("import pygpu.autoprimaryctx", CUDA_DEVICE="99")
    assert result.returncode != 0
    assert "99" in result.stderr


def test_autoprimaryctx_pops_its_context_at_exit() -> None:
    result = _run(
        """
        import atexit
        import pygpu.autoprimaryctx
        from pygpu import driver
        def check():  # registered after autoprimaryctx's, so it runs before it: still current
            assert driver.Context.get_current() is pygpu.autoprimaryctx.context
            print("current at exit")
        atexit.register(check)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "current at exit" in result.stdout


# ------------------------------------------------------------------ pycuda.VERSION


def test_version_names_are_pycudas_release() -> None:
    from pygpu.pycuda_alias import PYCUDA_VERSION

    assert pygpu.VERSION_TEXT == PYCUDA_VERSION
    assert pygpu.VERSION == tuple(int(p) for p in PYCUDA_VERSION.split("."))
    assert pygpu.VERSION >= (2022, 1)  # the comparisons clients make with PyCUDA releases
    assert pygpu.VERSION_STATUS == ""


# ------------------------------------------------------------------ pycuda.compyte.dtypes


def test_compyte_dtype_to_ctype_is_tools() -> None:
    assert cdtypes.dtype_to_ctype(np.float32) == "float"
    assert cdtypes.dtype_to_ctype(np.dtype(np.uint32)) == "unsigned int"
    assert cdtypes.dtype_to_ctype(np.complex64) == tools.dtype_to_ctype(np.complex64)
    with pytest.raises(ValueError, match="unable to map"):
        cdtypes.dtype_to_ctype(np.dtype([("a", np.int8), ("b", np.float64)]))


def test_compyte_registry_is_shared_with_tools() -> None:
    assert cdtypes.TYPE_REGISTRY.get_or_register_dtype("unsigned short") == np.uint16
    with pytest.raises(cdtypes.TypeNameNotKnown):
        cdtypes.get_or_register_dtype("no_such_type_t")
    with pytest.raises(ValueError):  # TypeNameNotKnown is also what tools raises
        cdtypes.get_or_register_dtype("no_such_type_t")
    cdtypes.TYPE_REGISTRY.get_or_register_dtype("pygpu_test_real_t", np.float64)
    assert tools.get_or_register_dtype("pygpu_test_real_t") == np.float64
    assert tools.parse_c_arg("pygpu_test_real_t *x").dtype == np.float64


def test_compyte_parse_c_arg_backend_uses_the_factories() -> None:
    made = cdtypes.parse_c_arg_backend("float *x", lambda d, n: ("scalar", d, n), lambda d, n: ("vector", d, n))
    assert made == ("vector", np.dtype(np.float32), "x")
    made = cdtypes.parse_c_arg_backend("unsigned int n", lambda d, n: ("scalar", d, n), lambda d, n: ("vector", d, n))
    assert made == ("scalar", np.dtype(np.uint32), "n")


# ------------------------------------------------------------------ pycuda.compyte.array


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 1, 5), (2, 0, 3), ()])
def test_contiguous_strides_match_numpy(shape: tuple[int, ...]) -> None:
    c = np.empty(shape, np.float64, order="C")
    f = np.empty(shape, np.float64, order="F")
    if 0 not in shape:
        assert carray.c_contiguous_strides(8, shape) == c.strides
        assert carray.f_contiguous_strides(8, shape) == f.strides
    assert carray.is_c_contiguous_strides(c.strides, 8, shape)
    assert carray.is_f_contiguous_strides(f.strides, 8, shape)


def test_strides_flags_of_a_transposed_array() -> None:
    a = np.empty((3, 4), np.float32)
    assert not carray.is_c_contiguous_strides(a.T.strides, 4, a.T.shape)
    assert carray.is_f_contiguous_strides(a.T.strides, 4, a.T.shape)
    flags = carray.ArrayFlags(a.T)
    assert (flags.c_contiguous, flags.f_contiguous, flags.forc) == (False, True, True)
    step = a[:, ::2]
    flags = carray.ArrayFlags(step)
    assert (flags.c_contiguous, flags.f_contiguous, flags.forc) == (False, False, False)
    # a GPUArray works too
    g = ga.zeros((3, 4), np.float32)
    assert carray.ArrayFlags(g).c_contiguous and not carray.ArrayFlags(g).f_contiguous


def test_equal_strides_ignores_unit_axes() -> None:
    assert carray.equal_strides((40, 4), (4, 4), (1, 10))
    assert not carray.equal_strides((40, 4), (40, 8), (2, 10))
    assert carray.equal_strides((1, 2), (3, 4), (0, 5))


def test_get_common_dtype() -> None:
    f32 = np.zeros(2, np.float32)
    assert carray.get_common_dtype(f32, 2.5, True) == np.float32
    assert carray.get_common_dtype(f32, np.zeros(1, np.float64), True) == np.float64
    assert carray.get_common_dtype(f32, np.zeros(1, np.float64), False) == np.float32
    assert carray.get_common_dtype(f32, np.zeros(1, np.complex128), False) == np.complex64
    assert carray.get_common_dtype(np.zeros(1, np.int32), np.zeros(1, np.uint32), True) == np.int64


def test_bound_and_as_strided() -> None:
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert carray.bound(a) == (0, 48)
    assert carray.bound(a[::-1]) == (-32, 16)
    v = carray.as_strided(a, shape=(3,), strides=(20,))
    assert v.tolist() == [0, 5, 10]


# ------------------------------------------------------------------ pycuda.gl


def test_pycuda_gl_import_raises_import_error_naming_the_alternative() -> None:
    result = _run(
        """
        import pygpu.pycuda_alias as alias
        alias.enable()
        try:
            import pycuda.gl
        except ImportError as e:
            print("fallback:", e)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "fallback:" in result.stdout and "cudaGraphicsGLRegisterBuffer" in result.stdout


# ------------------------------------------------------------------ pycuda.elementwise get_*_kernel


def test_get_elwise_kernel_is_prepared() -> None:
    f = el.get_elwise_kernel("float a, float *x", "x[i] = a * i", "scaled_index")
    x = ga.zeros(7, np.float32)
    f.prepared_async_call(x._grid, x._block, None, 2.0, x.gpudata, x.mem_size)
    np.testing.assert_array_equal(x.get(), 2.0 * np.arange(7))


def test_get_elwise_range_kernel_is_prepared() -> None:
    func, args = el.get_elwise_kernel_and_types("float *x", "x[i] = 1", "ones_range", use_range=True)
    assert [a.name for a in args] == ["x"]
    x = ga.zeros(8, np.float32)
    func.prepared_call((1, 1), (1, 1, 1), x.gpudata, 1, 7, 2)
    np.testing.assert_array_equal(x.get(), [0, 1, 0, 1, 0, 1, 0, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_get_pow_kernel_in_place_as_scikit_cuda(dtype: type) -> None:
    host = np.arange(6, dtype=dtype)
    x = ga.to_gpu(host)
    func = el.get_pow_kernel(x.dtype)
    func.prepared_async_call(x._grid, x._block, None, 2, x.gpudata, x.gpudata, x.mem_size)
    np.testing.assert_allclose(x.get(), host**2)
    assert el.get_pow_kernel(x.dtype) is func  # memoized per device


def test_get_pow_array_kernel() -> None:
    base = ga.to_gpu(np.array([2, 3, 4], np.float64))
    exp = ga.to_gpu(np.array([3, 2, 0.5], np.float64))
    z = ga.empty(3, np.float64)
    el.get_pow_array_kernel(base.dtype, exp.dtype, z.dtype).prepared_call(
        base._grid, base._block, base.gpudata, exp.gpudata, z.gpudata, 3
    )
    np.testing.assert_allclose(z.get(), [8, 9, 2])
    el.get_pow_array_kernel(np.dtype(np.float64), exp.dtype, z.dtype, False, True).prepared_call(
        base._grid, base._block, 2.0, exp.gpudata, z.gpudata, 3
    )
    np.testing.assert_allclose(z.get(), 2.0 ** np.array([3, 2, 0.5]))


def test_get_copy_kernel_converts() -> None:
    src = ga.to_gpu(np.array([1.75, -2.5, 3.0], np.float64))
    dest = ga.empty(3, np.int32)
    el.get_copy_kernel(dest.dtype, src.dtype).prepared_call(src._grid, src._block, dest.gpudata, src.gpudata, 3)
    np.testing.assert_array_equal(dest.get(), [1, -2, 3])


def test_get_axpbyz_and_axpbz_kernels() -> None:
    x = ga.to_gpu(np.arange(4, dtype=np.float32))
    y = ga.to_gpu(np.full(4, 10, np.float32))
    z = ga.empty(4, np.float32)
    el.get_axpbyz_kernel(x.dtype, y.dtype, z.dtype).prepared_call(
        x._grid, x._block, 2.0, x.gpudata, 0.5, y.gpudata, z.gpudata, 4
    )
    np.testing.assert_array_equal(z.get(), 2 * np.arange(4) + 5)
    el.get_axpbyz_kernel(x.dtype, y.dtype, z.dtype, y_is_scalar=True).prepared_call(
        x._grid, x._block, 1.0, x.gpudata, 1.0, ga.to_gpu(np.array([100, 0, 0, 0], np.float32)).gpudata, z.gpudata, 4
    )
    np.testing.assert_array_equal(z.get(), np.arange(4) + 100)
    el.get_axpbz_kernel(x.dtype, z.dtype).prepared_call(x._grid, x._block, 3.0, x.gpudata, -1.0, z.gpudata, 4)
    np.testing.assert_array_equal(z.get(), 3 * np.arange(4) - 1)


@pytest.mark.parametrize("op, expected", [("+", [11, 12, 13]), ("*", [10, 20, 30]), ("-", [-9, -8, -7])])
def test_get_binary_op_and_scalar_op_kernels(op: str, expected: list[int]) -> None:
    x = ga.to_gpu(np.array([1, 2, 3], np.int32))
    y = ga.to_gpu(np.full(3, 10, np.int32))
    z = ga.empty(3, np.int32)
    el.get_binary_op_kernel(x.dtype, y.dtype, z.dtype, op).prepared_call(
        x._grid, x._block, x.gpudata, y.gpudata, z.gpudata, 3
    )
    np.testing.assert_array_equal(z.get(), expected)
    z.fill(0)
    el.get_scalar_op_kernel(x.dtype, np.dtype(np.int32), z.dtype, op).prepared_call(
        x._grid, x._block, x.gpudata, 10, z.gpudata, 3
    )
    np.testing.assert_array_equal(z.get(), expected)


def test_get_rdivide_fill_reverse_arange_kernels() -> None:
    x = ga.to_gpu(np.array([1, 2, 4], np.float32))
    z = ga.empty(3, np.float32)
    el.get_rdivide_elwise_kernel(x.dtype, z.dtype).prepared_call(x._grid, x._block, x.gpudata, 8.0, z.gpudata, 3)
    np.testing.assert_array_equal(z.get(), [8, 4, 2])
    el.get_fill_kernel(z.dtype).prepared_call(z._grid, z._block, 7.0, z.gpudata, 3)
    np.testing.assert_array_equal(z.get(), [7, 7, 7])
    el.get_reverse_kernel(x.dtype).prepared_call(x._grid, x._block, x.gpudata, z.gpudata, 3)
    np.testing.assert_array_equal(z.get(), [4, 2, 1])
    el.get_arange_kernel(z.dtype).prepared_call(z._grid, z._block, z.gpudata, 1.0, 0.25, 3)
    np.testing.assert_array_equal(z.get(), [1, 1.25, 1.5])


def test_get_minmax_and_binary_func_kernels() -> None:
    x = ga.to_gpu(np.array([1, 5, -3], np.float32))
    y = ga.to_gpu(np.array([2, 4, -4], np.float32))
    z = ga.empty(3, np.float32)
    el.get_binary_minmax_kernel("max", x.dtype, y.dtype, z.dtype, False).prepared_call(
        x._grid, x._block, x.gpudata, y.gpudata, z.gpudata, 3
    )
    np.testing.assert_array_equal(z.get(), [2, 5, -3])
    i = ga.to_gpu(np.array([1, 5, -3], np.int32))
    iz = ga.empty(3, np.int32)
    el.get_binary_minmax_kernel("min", i.dtype, i.dtype, i.dtype, True).prepared_call(
        i._grid, i._block, i.gpudata, 0, iz.gpudata, 3
    )
    np.testing.assert_array_equal(iz.get(), [0, 0, -3])
    with pytest.raises(ValueError, match="'max' or 'min'"):
        el.get_binary_minmax_kernel("mean", x.dtype, y.dtype, z.dtype, False)
    el.get_binary_func_kernel("fmodf", x.dtype, y.dtype, z.dtype).prepared_call(
        x._grid, x._block, x.gpudata, y.gpudata, z.gpudata, 3
    )
    np.testing.assert_array_equal(z.get(), np.fmod([1, 5, -3], [2, 4, -4]))


def test_get_unary_and_if_positive_kernels() -> None:
    x = ga.to_gpu(np.array([1, 4, 9], np.float64))
    z = ga.empty(3, np.float64)
    el.get_unary_func_kernel("sqrt", x.dtype).prepared_call(x._grid, x._block, x.gpudata, z.gpudata, 3)
    np.testing.assert_array_equal(z.get(), [1, 2, 3])
    crit = ga.to_gpu(np.array([1, -1, 0], np.int32))
    then_ = ga.to_gpu(np.array([10, 20, 30], np.float64))
    el.get_if_positive_kernel(crit.dtype, x.dtype).prepared_call(
        x._grid, x._block, crit.gpudata, then_.gpudata, x.gpudata, z.gpudata, 3
    )
    np.testing.assert_array_equal(z.get(), [10, 4, 9])


def test_complex_part_kernels() -> None:
    c = ga.to_gpu(np.array([3 + 4j, -1 - 2j], np.complex64))
    r = ga.empty(2, np.float32)
    for getter, expected in [
        (el.get_real_kernel, [3, -1]),
        (el.get_imag_kernel, [4, -2]),
        (el.get_abs_kernel, [5, 5**0.5]),
    ]:
        getter(c.dtype, np.float32).prepared_call(c._grid, c._block, c.gpudata, r.gpudata, 2)
        np.testing.assert_allclose(r.get(), expected, rtol=1e-6)
    conj = ga.empty_like(c)
    el.get_conj_kernel(c.dtype).prepared_call(c._grid, c._block, c.gpudata, conj.gpudata, 2)
    np.testing.assert_array_equal(conj.get(), np.conj(c.get()))
    i = ga.to_gpu(np.array([-3, 2], np.int64))
    iz = ga.empty_like(i)
    el.get_abs_kernel(i.dtype).prepared_call(i._grid, i._block, i.gpudata, iz.gpudata, 2)
    np.testing.assert_array_equal(iz.get(), [3, 2])
