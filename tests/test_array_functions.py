"""pygpu.gpuarray's non-elementwise functions against numpy: arange on the device, concatenate,
stack, hstack, vstack, take, multi_take, multi_put, multi_take_put, transpose, reshape; the
strided device copy; PyCUDA's reshape(order="F"), 0-d shapes and explicit CAI strides."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpu
import pytest
from conftest import count_fuzz_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygpu import gpuarray

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((10,), {}),
        ((0,), {}),
        ((3, 20, 3), {}),
        ((20, 3, -2), {}),
        ((0.0, 1.0, 0.1), {}),
        ((-1.5, 2.25, 0.37), {"dtype": np.float32}),
        ((5,), {"dtype": np.uint8}),
        ((1, 1000, 7), {"dtype": np.int16}),
        ((2.5,), {}),
        ((1, 300), {"dtype": np.float64}),
        ((4,), {"dtype": np.complex64}),
    ],
)
def test_arange_matches_numpy(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    got = gpuarray.arange(*args, **kwargs)
    want = np.arange(*args, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)


def test_arange_is_computed_on_the_device_for_large_ranges() -> None:
    g = gpuarray.arange(1 << 22, dtype=np.int64)
    assert gpuarray.sum(g).get() == (1 << 22) * ((1 << 22) - 1) // 2
    with pytest.raises(ZeroDivisionError):
        gpuarray.arange(0, 10, 0)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_and_friends(axis: int) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(100, 112, dtype=np.float32).reshape(3, 4)
    ga, gb = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    np.testing.assert_array_equal(gpuarray.concatenate([ga, gb], axis=axis).get(), np.concatenate([a, b], axis))
    np.testing.assert_array_equal(gpuarray.stack([ga, gb], axis=axis).get(), np.stack([a, b], axis))
    np.testing.assert_array_equal(gpuarray.hstack([ga, gb]).get(), np.hstack([a, b]))
    np.testing.assert_array_equal(gpuarray.vstack([ga, gb]).get(), np.vstack([a, b]))
    v1, v2 = gpuarray.to_gpu(a[0]), gpuarray.to_gpu(b[1])
    np.testing.assert_array_equal(gpuarray.hstack([v1, v2]).get(), np.hstack([a[0], b[1]]))
    np.testing.assert_array_equal(gpuarray.vstack([v1, v2]).get(), np.vstack([a[0], b[1]]))


def test_concatenate_of_views_with_many_rows_stays_on_the_device() -> None:
    a = np.arange(3000 * 4, dtype=np.int32).reshape(3000, 4)
    g = gpuarray.to_gpu(a)
    got = gpuarray.concatenate([g[:, ::2], g[:, 1:2]], axis=1)
    np.testing.assert_array_equal(got.get(), np.concatenate([a[:, ::2], a[:, 1:2]], 1))


def test_concatenate_errors() -> None:
    a = gpuarray.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="must match exactly"):
        gpuarray.concatenate([a, gpuarray.zeros((2, 4), np.float32)], axis=0)
    with pytest.raises(ValueError, match="at least one"):
        gpuarray.concatenate([])
    with pytest.raises(np.exceptions.AxisError):
        gpuarray.concatenate([a, a], axis=2)
    with pytest.raises(ValueError, match="same shape"):
        gpuarray.stack([a, gpuarray.zeros((3, 2), np.float32)])


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.int32, np.float64, np.complex128])
@pytest.mark.parametrize("index_dtype", [np.int32, np.uint32, np.int64])
def test_take_and_multi_forms(dtype: Any, index_dtype: Any) -> None:
    rng = np.random.default_rng(0)
    arrays = [np.arange(50).astype(dtype) * k for k in (1, 2, 3)]
    g = [gpuarray.to_gpu(a) for a in arrays]
    idx = rng.integers(0, 50, 30).astype(index_dtype)
    gi = gpuarray.to_gpu(idx)
    np.testing.assert_array_equal(gpuarray.take(g[0], gi).get(), arrays[0][idx])
    for got, a in zip(gpuarray.multi_take(g, gi), arrays):
        np.testing.assert_array_equal(got.get(), a[idx])
    dest = rng.permutation(50)[:30].astype(index_dtype)
    outs = [gpuarray.zeros(50, dtype) for _ in arrays]
    gpuarray.multi_put([gpuarray.to_gpu(a[:30]) for a in arrays], gpuarray.to_gpu(dest), out=outs)
    for o, a in zip(outs, arrays):
        want = np.zeros(50, dtype)
        want[dest] = a[:30]
        np.testing.assert_array_equal(o.get(), want)
    src = rng.integers(0, 40, 30).astype(index_dtype)
    outs = [gpuarray.zeros(50, dtype) for _ in arrays]
    gpuarray.multi_take_put(g, gpuarray.to_gpu(dest), gpuarray.to_gpu(src), out=outs, src_offsets=[0, 5, 10])
    for o, a, off in zip(outs, arrays, (0, 5, 10)):
        want = np.zeros(50, dtype)
        want[dest] = a[src + off]
        np.testing.assert_array_equal(o.get(), want)
    fresh = gpuarray.multi_take_put(g, gpuarray.to_gpu(dest), gpuarray.to_gpu(src), dest_shape=(50,))
    assert fresh[0].shape == (50,) and np.array_equal(fresh[0].get()[dest], arrays[0][src])


def test_take_put_errors() -> None:
    g = gpuarray.zeros(10, np.float32)
    with pytest.raises(TypeError, match="int32, uint32, int64 or uint64"):
        gpuarray.take(g, gpuarray.zeros(3, np.float32))
    i32, i64 = gpuarray.zeros(3, np.int32), gpuarray.zeros(3, np.int64)
    with pytest.raises(TypeError, match="same dtype"):
        gpuarray.multi_take_put([g], i32, i64, dest_shape=(10,))
    with pytest.raises(TypeError, match="one dtype"):
        gpuarray.multi_take([g, gpuarray.zeros(10, np.float64)], i32)
    assert gpuarray.multi_take([], i32) == []


def test_transpose_and_reshape_functions() -> None:
    a = np.arange(24).reshape(2, 3, 4)
    g = gpuarray.to_gpu(a)
    np.testing.assert_array_equal(gpuarray.transpose(g, axes=(1, 0, 2)).get(), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(gpuarray.transpose(g).get(), a.T)
    np.testing.assert_array_equal(g.transpose(axes=(2, 1, 0)).get(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(gpuarray.reshape(g, (6, 4)).get(), a.reshape(6, 4))


def test_pycuda_quirks() -> None:
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    g = gpuarray.to_gpu(a)
    # reshape(order="F") re-reads the buffer with Fortran strides: a view, not a reordering
    f = g.reshape((4, 3), order="F")
    assert f.ptr == g.ptr and f.strides == (8, 32)
    np.testing.assert_array_equal(f.get(), a.ravel().reshape((4, 3), order="F"))
    # a 0-d integer numpy array is a length
    assert gpuarray.empty(np.array(5), np.float32).shape == (5,)
    assert gpuarray.zeros(np.array(3, np.int32)).shape == (3,)


@pytest.mark.gpu
def test_cai_strides_are_explicit_for_contiguous_arrays() -> None:
    g = gpuarray.zeros((3, 4), np.float32)
    assert g.__cuda_array_interface__["strides"] == (16, 4)


@st.composite
def copy_cases(draw: st.DrawFn) -> tuple[np.ndarray, Any, Any]:
    dtype = np.dtype(draw(st.sampled_from(["int8", "int16", "float32", "float64", "complex128"])))
    shape = tuple(draw(st.lists(st.integers(1, 30), min_size=1, max_size=3)))
    host = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    key = tuple(slice(None, None, draw(st.sampled_from([1, 2, -1, -2]))) for _ in shape)
    perm = draw(st.permutations(range(len(shape))))
    return host, key, perm


@PROPERTY
@given(copy_cases())
def test_property_strided_copies_match_numpy(case: tuple[np.ndarray, Any, Any]) -> None:
    count_fuzz_case()
    host, key, perm = case
    src = gpuarray.to_gpu(host)[key].transpose(perm)
    want = host[key].transpose(perm)
    np.testing.assert_array_equal(src.copy().get(), want)
    dst = gpuarray.zeros(want.shape[::-1], host.dtype).transpose(tuple(range(want.ndim))[::-1])
    dst[...] = src
    np.testing.assert_array_equal(dst.get(), want)
    assert pygpu.backend() in ("host", "cuda", "hip")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_of_fortran_arrays_keeps_their_values(axis: int) -> None:
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    y = np.asfortranarray(np.arange(6.0, 12.0).reshape(2, 3))
    got = gpuarray.stack([gpuarray.to_gpu(x), gpuarray.to_gpu(y)], axis=axis)
    np.testing.assert_array_equal(got.get(), np.stack([x, y], axis))
