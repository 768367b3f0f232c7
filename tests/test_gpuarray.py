"""GPUArray: round trips, views, assignment, layout operations and bad input, on
whatever backend this process runs (host in CI, cuda on the GPU machine)."""

from __future__ import annotations

import gc

import collections.abc

import numpy as np
import pytest
from conftest import run_python

import pygpu
import pygpu as gpuarray
from pygpu import driver
from pygpu.gpuarray import DevicePointer, GPUArray
from conftest import GPUARRAY_DTYPES

DTYPES = GPUARRAY_DTYPES
SHAPES = [(), (0,), (3, 0), (1,), (7,), (3, 4), (2, 3, 4), (2, 3, 4, 5)]


def sample(shape, dtype, order="C", seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    elif dt.kind == "f":
        flat = (rng.standard_normal(n) * 100).astype(dt)
    else:
        flat = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    return np.asarray(flat.reshape(shape), order=order)


def assert_same(host, expected):
    """Same dtype, shape and values (NaN-free samples)."""
    assert isinstance(host, np.ndarray)
    assert host.dtype == expected.dtype
    assert host.shape == expected.shape
    np.testing.assert_array_equal(host, expected)


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_round_trip(dtype, shape, order):
    host = sample(shape, dtype, order)
    g = gpuarray.to_gpu(host)
    assert g.shape == host.shape and g.dtype == host.dtype
    assert g.strides == host.strides
    assert g.flags.c_contiguous == host.flags.c_contiguous
    assert g.flags.f_contiguous == host.flags.f_contiguous
    back = g.get()
    assert_same(back, host)
    assert back.flags.c_contiguous == host.flags.c_contiguous or host.size <= 1
    # set() of new values, then get() into a given array
    other = sample(shape, dtype, order, seed=1)
    g.set(other)
    out = np.empty_like(other)
    assert g.get(out) is out
    assert_same(out, other)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_non_contiguous_host(dtype):
    host = sample((6, 8), dtype)[::2, 1::3]
    assert not host.flags.forc
    g = gpuarray.to_gpu(host)
    assert g.flags.c_contiguous
    assert_same(g.get(), host)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_async_round_trip_on_a_stream(dtype):
    host = sample((5, 6), dtype)
    stream = driver.Stream()
    g = gpuarray.to_gpu_async(host, stream=stream)
    pinned = driver.pagelocked_empty(host.shape, host.dtype)
    g.get_async(stream, pinned)
    stream.synchronize()
    assert_same(pinned, host)
    g.set_async(host[::-1].copy(), stream=stream)
    assert_same(g.get(), host[::-1])


def test_get_pagelocked_and_big_endian_input():
    host = np.arange(12, dtype=">i4").reshape(3, 4)
    g = gpuarray.to_gpu(host)
    assert g.dtype == np.dtype("=i4")
    out = g.get(pagelocked=True)
    assert out.base is not None
    np.testing.assert_array_equal(out, host)


def test_pygpu_style_constructor_and_attributes():
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    g = GPUArray(host)
    assert_same(g.get(), host)
    assert (g.size, g.nbytes, g.mem_size, g.itemsize, g.ndim) == (24, 96, 24, 4, 3)
    assert g.strides == (48, 16, 4)
    assert g.flags.forc and g.flags["C_CONTIGUOUS"] and not g.flags["F"]
    assert isinstance(g.gpudata, pygpu.DeviceAllocation)
    assert int(g.gpudata) == g.ptr
    assert g.base is None
    assert len(g) == 2


def test_constructor_shares_gpudata_and_uses_allocator():
    calls = []

    def allocator(nbytes):
        calls.append(nbytes)
        return pygpu.mem_alloc(nbytes)

    a = gpuarray.empty((4, 5), np.int32, allocator=allocator)
    assert calls == [80]
    a.set(np.arange(20, dtype=np.int32).reshape(4, 5))
    b = GPUArray((20,), np.int32, gpudata=a.gpudata)
    assert b.ptr == a.ptr
    np.testing.assert_array_equal(b.get(), np.arange(20))
    c = GPUArray((5,), np.int32, gpudata=a.ptr + 20, base=a)
    assert c.base is a and c.gpudata == a.ptr + 20
    np.testing.assert_array_equal(c.get(), np.arange(5, 10))
    with pytest.raises(ValueError, match="gpudata holds 80"):
        GPUArray((21,), np.int32, gpudata=a.gpudata)
    f = GPUArray((3, 2), np.float64, order="F")
    assert f.strides == (8, 24) and f.flags.f_contiguous


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("order", ["C", "F"])
def test_creation_functions(dtype, order):
    shape = (3, 5)
    z = gpuarray.zeros(shape, dtype, order=order)
    o = gpuarray.ones(shape, dtype, order=order)
    e = gpuarray.empty(shape, dtype, order=order)
    assert_same(z.get(), np.zeros(shape, dtype))
    assert_same(o.get(), np.ones(shape, dtype))
    assert e.shape == shape and e.dtype == np.dtype(dtype)
    assert e.flags.f_contiguous == (order == "F")
    for like, value in ((gpuarray.zeros_like, 0), (gpuarray.ones_like, 1), (gpuarray.empty_like, None)):
        r = like(o)
        assert r.shape == shape and r.dtype == np.dtype(dtype) and r.strides == o.strides
        if value is not None:
            assert_same(r.get(), np.full(shape, value, dtype))
    r = gpuarray.zeros_like(o, dtype=np.float32, order="C")
    assert r.dtype == np.float32 and r.flags.c_contiguous


def test_like_order_k_keeps_axis_order():
    g = gpuarray.to_gpu(np.zeros((2, 3, 4))).transpose(1, 2, 0)
    r = gpuarray.empty_like(g)
    np.testing.assert_array_equal(np.argsort(r.strides), np.argsort(g.strides))
    assert r.nbytes == g.nbytes and r.shape == g.shape


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((5,), {}),
        ((2, 11, 3), {}),
        ((0, 1, 0.25), {}),
        ((10, 0, -3), {"dtype": np.int16}),
        ((1, 2, 0.1, np.float32), {}),
        ((), {"start": 1, "stop": 4, "dtype": np.uint8}),
    ],
)
def test_arange(args, kwargs):
    g = gpuarray.arange(*args, **kwargs)
    positional = list(args)
    dtype = kwargs.get("dtype")
    if len(positional) == 4:
        dtype = positional.pop()
    if not positional:
        positional = [kwargs["start"], kwargs["stop"]]
    assert_same(g.get(), np.arange(*positional, dtype=dtype))


# ---------------------------------------------------------------- views

INDEXES = [
    0,
    -1,
    1,
    (1, 2),
    (1, 2, 3, 4),
    (-1, -2, -3, -4),
    slice(None),
    slice(1, None),
    slice(None, None, -1),
    slice(None, None, 2),
    slice(None, None, -2),
    slice(3, 0, -1),
    slice(5, 9),
    slice(0, 0),
    (slice(None), 1),
    (Ellipsis, 2),
    (Ellipsis, slice(None, None, -2)),
    (1, Ellipsis, 1),
    (None,),
    (None, 1, None),
    (slice(None), None, Ellipsis, None),
    (Ellipsis, None),
    (slice(None, None, -1), slice(1, 3), slice(None, None, 3), slice(4, 0, -2)),
    (np.int64(1), np.int32(-1)),
    (Ellipsis,),
    (),
    (0, slice(2, 0, -1), None, Ellipsis, -1),
]


@pytest.mark.parametrize("key", INDEXES, ids=repr)
@pytest.mark.parametrize("order", ["C", "F"])
def test_getitem_views_match_numpy(key, order):
    host = sample((3, 4, 5, 6), np.float64, order)
    g = gpuarray.to_gpu(host)
    view = g[key]
    expected = np.asarray(host[key])
    assert view.shape == expected.shape
    if expected.size > 1:
        assert view.strides == expected.strides
    assert_same(view.get(), expected)
    assert view.base is g
    assert view.flags.c_contiguous == expected.flags.c_contiguous
    # a view of a view
    if view.ndim:
        assert_same(view[::-1].get(), expected[::-1])


def test_views_share_memory():
    g = gpuarray.zeros(10, np.int32)
    v = g[2:8:2]
    v.set(np.array([7, 8, 9], np.int32))
    np.testing.assert_array_equal(g.get(), [0, 0, 7, 0, 8, 0, 9, 0, 0, 0])
    assert v.ptr == g.ptr + 8
    assert isinstance(v.gpudata, DevicePointer) and int(v.gpudata) == v.ptr
    g.fill(1)
    np.testing.assert_array_equal(v.get(), [1, 1, 1])


@pytest.mark.device_free_memory
def test_view_keeps_allocation_alive():
    nbytes = 64 << 20
    pygpu.get_default_memory_pool().free_all_blocks()
    before = pygpu.mem_get_info()[0]
    g = gpuarray.zeros(nbytes // 8)
    g[1:3] = np.array([1.0, 2.0])
    v = g[1:3]
    del g
    gc.collect()
    assert pygpu.mem_get_info()[0] <= before - nbytes // 2
    np.testing.assert_array_equal(v.get(), [1.0, 2.0])
    del v
    gc.collect()
    pygpu.get_default_memory_pool().free_all_blocks()  # the pool caches the freed block until asked
    assert pygpu.mem_get_info()[0] > before - nbytes // 2


def test_zero_d_and_scalars():
    g = gpuarray.to_gpu(np.array([[1.5, 2.5], [3.5, 0.0]]))
    x = g[0, 1]
    assert x.shape == () and x.ndim == 0 and x.size == 1
    assert float(x) == 2.5 and int(g[1, 0]) == 3 and complex(x) == 2.5
    assert bool(x) and not bool(g[1, 1])
    with pytest.raises(ValueError, match="ambiguous"):
        bool(g)
    with pytest.raises(TypeError):
        len(x)
    # As PyCUDA's: not an Iterable (reikna tells arrays from lists so), but rows iterate.
    assert not isinstance(g, collections.abc.Iterable)
    assert [float(r[0]) for r in g] == [1.5, 3.5]
    with pytest.raises(IndexError):
        x[0]
    z = gpuarray.to_gpu(np.float32(4.0))
    assert z.shape == () and z.get() == np.float32(4.0) and z.get().dtype == np.float32


# ---------------------------------------------------------------- assignment

SET_KEYS = [
    slice(None),
    1,
    (1, 2),
    slice(None, None, -1),
    (slice(None), slice(None, None, -2)),
    (slice(1, 3), slice(None), 2),
    (Ellipsis, slice(1, None, 2)),
    (slice(None, None, 2), 0, slice(3, 0, -1)),
    (None, 1),
]


@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.complex128, np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("order", ["C", "F"])
def test_setitem_matches_numpy(key, dtype, order):
    host = sample((4, 5, 6), dtype, order)
    g = gpuarray.to_gpu(host)
    target_shape = host[key].shape
    # scalar
    expected = host.copy(order="K")
    expected[key] = 1
    g[key] = 1
    assert_same(g.get(), expected)
    # ndarray (and broadcasting from a smaller one)
    values = sample(target_shape, dtype, seed=5)
    expected[key] = values
    g[key] = values
    assert_same(g.get(), expected)
    if target_shape:
        row = sample(target_shape[-1:], dtype, seed=6)
        expected[key] = row
        g[key] = row
        assert_same(g.get(), expected)
    # GPUArray source, including a strided one
    src_host = sample(target_shape[::-1], dtype, seed=7).T
    expected[key] = src_host
    g[key] = gpuarray.to_gpu(np.ascontiguousarray(src_host.T)).T
    assert_same(g.get(), expected)


def test_setitem_overlapping_source():
    host = np.arange(20, dtype=np.int64)
    g = gpuarray.to_gpu(host)
    g[1:] = g[:-1]
    host[1:] = host[:-1].copy()
    np.testing.assert_array_equal(g.get(), host)
    g[::-1] = g
    host[::-1] = host.copy()
    np.testing.assert_array_equal(g.get(), host)


def test_setitem_casts_like_numpy():
    g = gpuarray.zeros(4, np.int32)
    g[:2] = 3.9
    g[2:] = np.array([1.5, -2.5])
    np.testing.assert_array_equal(g.get(), [3, 3, 1, -2])
    g[:] = gpuarray.to_gpu(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(g.get(), [1, 2, 3, 4])


def test_strided_set_rewrites_span_but_keeps_gaps():
    host = np.arange(30, dtype=np.float64).reshape(5, 6)
    g = gpuarray.to_gpu(host)
    view = g[::2, 1::2]
    view.set(np.full(view.shape, -1.0))
    host[::2, 1::2] = -1.0
    np.testing.assert_array_equal(g.get(), host)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fill_all_dtypes(dtype):
    value = {"b": True, "c": 1.5 - 2.25j, "f": -3.5}.get(np.dtype(dtype).kind, 7)
    n = 70000  # larger than the host seed of the doubling fill for wide types
    g = gpuarray.empty(n, dtype)
    assert g.fill(value) is g
    assert_same(g.get(), np.full(n, value, dtype))
    # a non-contiguous view with few runs (device copies) and with many (through the host)
    g2 = gpuarray.zeros((4, 10), dtype)
    g2[:, ::3].fill(value)
    expected = np.zeros((4, 10), dtype)
    expected[:, ::3] = value
    assert_same(g2.get(), expected)
    g3 = gpuarray.zeros(2000, dtype)
    g3[::-3].fill(value)
    expected = np.zeros(2000, dtype)
    expected[::-3] = value
    assert_same(g3.get(), expected)


def test_fill_negative_zero_is_not_a_zero_memset():
    g = gpuarray.ones(5, np.float64).fill(-0.0)
    assert np.signbit(g.get()).all()


# ---------------------------------------------------------------- copies and layout


@pytest.mark.parametrize(
    "key",
    [
        slice(None),
        (slice(None, None, -1),),
        (slice(None), slice(None, None, 2)),
        (Ellipsis, 1),
        (slice(1, None), slice(None, None, -1)),
    ],
    ids=repr,
)
def test_copy_is_independent(key):
    host = np.arange(60, dtype=np.float32).reshape(6, 10)
    g = gpuarray.to_gpu(host)
    c = g[key].copy()
    assert c.ptr != g.ptr and c.base is None
    assert_same(c.get(), host[key])
    g.fill(0)
    assert_same(c.get(), host[key])
    assert c.flags.forc


def test_copy_keeps_fortran_and_permuted_layouts():
    host = np.asfortranarray(np.arange(24.0).reshape(2, 3, 4))
    g = gpuarray.to_gpu(host)
    assert g.copy().strides == g.strides
    t = g.transpose(2, 0, 1)
    assert t.copy().strides == t.strides
    assert_same(t.copy().get(), host.transpose(2, 0, 1))


def test_many_run_copy_goes_through_host():
    host = np.arange(4000, dtype=np.int16).reshape(1000, 4)
    g = gpuarray.to_gpu(host)
    c = g[::-1, ::2].copy()
    assert_same(c.get(), host[::-1, ::2])


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("new", [(12, 10), (-1,), (2, -1, 3), (5, 4, 6), (120,), (1, 120, 1)], ids=str)
def test_reshape_and_ravel(order, new):
    host = np.arange(120, dtype=np.int32).reshape(4, 5, 6)
    g = gpuarray.to_gpu(host)
    r = g.reshape(new, order=order)
    # PyCUDA's reshape(order="F") of a C array re-reads the same buffer with Fortran strides
    # (numpy would reorder the elements): the buffer, laid out in F order.
    assert_same(r.get(), host.ravel().reshape(new, order=order))
    assert gpuarray.to_gpu(host).reshape(*new).shape == host.reshape(*new).shape
    # reshape of a C array in C order is a view
    if order == "C":
        assert r.ptr == g.ptr and r.base is g
    # non-contiguous input: reshape copies where numpy would
    t = g.transpose(2, 0, 1)
    assert_same(t.reshape(new, order=order).get(), host.transpose(2, 0, 1).reshape(new, order=order))
    assert_same(g[:, ::-1].ravel().get(), host[:, ::-1].ravel())
    assert_same(g.ravel(order=order).get(), host.ravel(order=order))


def test_reshape_view_of_strided_array_when_possible():
    host = np.arange(48, dtype=np.float64).reshape(4, 12)
    g = gpuarray.to_gpu(host)
    v = g[:, ::2].reshape(4, 2, 3)
    assert v.ptr == g.ptr and v.strides == host[:, ::2].reshape(4, 2, 3).strides
    assert_same(v.get(), host[:, ::2].reshape(4, 2, 3))
    e = gpuarray.empty((0, 3)).reshape(3, 0, 5)
    assert e.shape == (3, 0, 5)


def test_squeeze_transpose_T():
    host = np.arange(30.0).reshape(1, 5, 1, 6)
    g = gpuarray.to_gpu(host)
    assert_same(g.squeeze().get(), host.squeeze())
    assert_same(g.squeeze(0).get(), host.squeeze(0))
    assert_same(g.squeeze((0, -2)).get(), host.squeeze((0, -2)))
    with pytest.raises(ValueError, match="size not equal to one"):
        g.squeeze(1)
    assert_same(g.T.get(), host.T)
    assert g.T.strides == host.T.strides
    assert_same(g.transpose(1, 3, 0, 2).get(), host.transpose(1, 3, 0, 2))
    assert_same(g.transpose((3, 2, 1, 0)).get(), host.transpose((3, 2, 1, 0)))
    with pytest.raises(ValueError, match="repeated axis"):
        g.transpose(0, 0, 1, 2)
    with pytest.raises(ValueError, match="axes don't match"):
        g.transpose(0, 1)


@pytest.mark.parametrize(
    "src, dst",
    [
        (np.float32, np.int32),
        (np.float64, np.uint8),
        (np.int8, np.int16),
        (np.complex128, np.float64),
        (np.uint8, np.bool_),
    ],
    ids=lambda d: np.dtype(d).name,
)
def test_view_dtype(src, dst):
    host = sample((3, 8), src)
    if np.dtype(dst) == np.bool_:
        host = (host % 2).astype(src)
    g = gpuarray.to_gpu(host)
    v = g.view(dst)
    expected = host.view(dst)
    assert v.shape == expected.shape and v.strides == expected.strides and v.ptr == g.ptr
    assert_same(v.get(), expected)
    assert_same(g[1:, ::-1].view(src).get(), host[1:, ::-1])


def test_view_dtype_errors_like_numpy():
    g = gpuarray.zeros((4, 6), np.int16)
    with pytest.raises(ValueError, match="last axis must be contiguous"):
        g[:, ::2].view(np.int32)
    with pytest.raises(ValueError, match="divisor"):
        g[:, :3].view(np.int32)
    with pytest.raises(ValueError, match="0d"):
        g[0, 0].view(np.int32)
    with pytest.raises(TypeError, match="unsupported dtype"):
        g.view(object)


@pytest.mark.parametrize(
    "dtype", [np.float32, np.int64, np.complex64, np.bool_, np.float16], ids=lambda d: np.dtype(d).name
)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 2, 2)], ids=str)
def test_repr_and_str_like_numpy(dtype, shape):
    host = sample(shape, dtype)
    g = gpuarray.to_gpu(host)
    assert repr(g) == repr(host)
    assert str(g) == str(host)


def test_astype():
    g = gpuarray.to_gpu(np.array([1.7, -2.2, 3.0]))
    r = g.astype(np.int32)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.get(), [1, -2, 3])


# ---------------------------------------------------------------- bad input


def test_set_mismatches_raise_and_change_nothing():
    g = gpuarray.to_gpu(np.arange(6, dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        g.set(np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="shape"):
        g.set(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="dtype"):
        g.set(np.zeros(6, np.float64))
    with pytest.raises(ValueError, match="shape"):
        g.set(gpuarray.zeros(3, np.float32))
    with pytest.raises(ValueError, match="dtype"):
        g.get(np.empty(6, np.float64))
    with pytest.raises(ValueError, match="shape"):
        g.get(np.empty(7, np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        g[:] = gpuarray.zeros(4, np.float32)
    with pytest.raises(ValueError):
        g[:] = np.zeros(4)
    np.testing.assert_array_equal(g.get(), np.arange(6))


@pytest.mark.parametrize(
    "key, error",
    [
        (6, IndexError),
        (-7, IndexError),
        ((0, 0), IndexError),
        ((Ellipsis, Ellipsis), IndexError),
        ([0, 1], IndexError),
        (np.array([1, 2]), IndexError),
        (True, IndexError),
        (1.0, IndexError),
        ("a", IndexError),
        (np.array([True] * 6), IndexError),
    ],
    ids=repr,
)
def test_bad_indices(key, error):
    g = gpuarray.zeros(6)
    with pytest.raises(error):
        g[key]
    with pytest.raises(error):
        g[key] = 1.0
    np.testing.assert_array_equal(g.get(), np.zeros(6))


def test_bad_reshape_and_shapes():
    g = gpuarray.zeros((3, 4))
    with pytest.raises(ValueError, match="cannot reshape array of size 12 into shape"):
        g.reshape(5, 3)
    with pytest.raises(ValueError, match="cannot reshape"):
        g.reshape(-1, 5)
    with pytest.raises(ValueError, match="one unknown dimension"):
        g.reshape(-1, -1)
    with pytest.raises(ValueError, match="negative dimensions"):
        gpuarray.empty((2, -1))
    with pytest.raises(TypeError):
        gpuarray.empty((2.5, 1))
    with pytest.raises(ValueError, match="order"):
        gpuarray.empty(3, order="X")


@pytest.mark.parametrize("dtype", [object, "U3", "M8[s]", ">f8", np.longdouble, [("a", "O")]], ids=str)
def test_unsupported_dtypes(dtype):
    if np.dtype(dtype) == np.float64:
        pytest.skip("longdouble is float64 here")
    with pytest.raises(TypeError, match="dtype"):
        gpuarray.empty(3, dtype)
    if np.dtype(dtype).kind in "OUMV":
        with pytest.raises(TypeError, match="dtype"):
            gpuarray.to_gpu(np.zeros(3, dtype))


def test_freed_allocation_raises_everywhere():
    g = gpuarray.to_gpu(np.arange(4.0))
    view = g[1:]
    g.gpudata.free()
    for call in (
        g.get,
        lambda: g.set(np.zeros(4)),
        lambda: g.fill(1.0),
        view.get,
        g.copy,
        lambda: g.ptr,
        lambda: repr(view),
    ):
        with pytest.raises(pygpu.InvalidHandleError, match="released"):
            call()


def test_read_only_arrays_refuse_writes():
    g = gpuarray.to_gpu(np.arange(4.0))
    ro = g[:]
    ro._readonly = True
    for call in (
        lambda: ro.set(np.zeros(4)),
        lambda: ro.fill(0),
        lambda: ro.__setitem__(0, 1.0),
        lambda: ro[1:].set(np.zeros(3)),
        lambda: gpuarray.gpuarray._transfer.copy_into(ro, g, None),
    ):
        with pytest.raises(ValueError, match="read-only"):
            call()
    np.testing.assert_array_equal(g.get(), np.arange(4.0))


def test_array_from_another_device_is_refused():
    result = run_python(
        """
        import numpy as np, pygpu
        pygpu.cudaSetDevice(1).check()
        a = pygpu.to_gpu(np.arange(4.0))
        assert a.device == 1
        pygpu.cudaSetDevice(0).check()
        b = pygpu.zeros(4)
        assert b.device == 0
        try:
            b.set(a)
        except ValueError as e:
            print("refused:", e)
        try:
            b[:] = a
        except ValueError as e:
            print("refused:", e)
        print(b.get().tolist(), a.get().tolist())
        """,
        env={"PYGPU_BACKEND": "host", "PYGPU_HOST_DEVICES": "2"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("refused: cannot copy between devices") == 2
    assert "[0.0, 0.0, 0.0, 0.0] [0.0, 1.0, 2.0, 3.0]" in result.stdout
