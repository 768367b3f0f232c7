"""Zero-copy interop: DLPack (capsules, lifetimes, flags, streams), the CUDA Array
Interface, numpy on the host backend, and (marked `gpu`) CuPy and PyTorch."""

from __future__ import annotations

import datetime
import gc
import weakref

import numpy as np
import pytest

import pygpu
from pygpu import driver
from pygpu._pygpu import dlpack_capsule, dlpack_from_capsule
from conftest import GPUARRAY_DTYPES

DTYPES = GPUARRAY_DTYPES

host_only = pytest.mark.skipif("pygpu.backend() != 'host'", reason="numpy reads device memory only on the host backend")


def values(dtype, n=12):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.arange(n) % 3 == 0
    return (np.arange(n) * 3 - 5).astype(dt) if dt.kind not in "c" else (np.arange(n) + 2j).astype(dt)


class CAIProducer:
    """A minimal CUDA Array Interface producer over someone else's memory."""

    def __init__(self, owner, **fields):
        self.owner = owner
        self.__cuda_array_interface__ = {
            "shape": owner.shape,
            "typestr": owner.dtype.str,
            "data": (owner.ptr, False),
            "strides": None,
            "version": 3,
            **fields,
        }


# ---------------------------------------------------------------- which interfaces


def test_interfaces_by_backend(backend):
    g = pygpu.zeros(3)
    if backend == "host":
        assert not hasattr(g, "__cuda_array_interface__")
        assert g.__array_interface__["data"] == (g.ptr, False)
        assert g.__dlpack_device__() == (1, 0)
    else:
        assert not hasattr(g, "__array_interface__")
        assert g.__cuda_array_interface__["version"] == 3
        assert g.__dlpack_device__() == ((2 if backend == "cuda" else 10), g.device)


# ---------------------------------------------------------------- numpy on the host backend


@host_only
@pytest.mark.parametrize(
    "key",
    [slice(None), (slice(None, None, -1),), (1, slice(None, None, 2)), (Ellipsis, 0), (slice(0, 0),), (1, 2)],
    ids=repr,
)
def test_numpy_reads_and_writes_in_place(key):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    g = pygpu.to_gpu(host)
    view = np.asarray(g[key])
    np.testing.assert_array_equal(view, host[key])
    assert view.strides == host[key].strides or view.size <= 1
    if view.size:
        view[...] = -1
        host[key] = -1
        np.testing.assert_array_equal(g.get(), host)
    g.fill(5)
    np.testing.assert_array_equal(view, np.full(host[key].shape, 5, np.float32))


@host_only
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_from_dlpack_on_host(dtype):
    host = values(dtype).reshape(3, 4)
    g = pygpu.to_gpu(host)
    for key in (slice(None), (slice(None, None, -1), slice(1, None, 2)), (0,), (1, 1)):
        a = np.from_dlpack(g[key])
        np.testing.assert_array_equal(a, host[key])
        assert a.ctypes.data == g[key].ptr
    shared = np.from_dlpack(g)
    g.fill(host[1, 1])
    np.testing.assert_array_equal(shared, np.full(host.shape, host[1, 1]))
    # and back: pygpu wraps the numpy view of its own memory without a copy
    back = pygpu.from_dlpack(shared)
    assert back.ptr == g.ptr and back.dtype == g.dtype and back.shape == g.shape
    assert pygpu.asarray(shared).ptr == g.ptr


@host_only
def test_numpy_sees_read_only_arrays_as_read_only():
    g = pygpu.to_gpu(np.arange(4.0))
    ro = pygpu.from_dlpack(dlpack_capsule(g, g.ptr, (4,), (1,), 2, 64, 1, 0, True, True))
    a = np.from_dlpack(ro)
    assert not a.flags.writeable
    assert not np.asarray(ro).flags.writeable
    np.testing.assert_array_equal(a, np.arange(4.0))


# ---------------------------------------------------------------- DLPack, any backend


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_round_trip_shares_memory(dtype, versioned):
    host = values(dtype).reshape(3, 4)
    g = pygpu.to_gpu(host)
    for key in (slice(None), (slice(None, None, -1),), (slice(None), slice(None, None, 3)), (2, 3)):
        view = g[key]
        capsule = view.__dlpack__(max_version=(1, 0) if versioned else None)
        imported = pygpu.from_dlpack(capsule)
        assert imported.ptr == view.ptr
        assert imported.shape == view.shape and imported.strides == view.strides
        assert imported.dtype == view.dtype
        np.testing.assert_array_equal(imported.get(), host[key])
    imported = pygpu.from_dlpack(g.__dlpack__(max_version=(1, 0) if versioned else None))
    imported[0, 0] = host[2, 3]
    assert g[0, 0].get() == host[2, 3]


def test_capsule_names_and_single_consumption():
    g = pygpu.zeros(4)
    legacy = g.__dlpack__()
    versioned = g.__dlpack__(max_version=(1, 1))
    assert '"dltensor"' in repr(legacy)
    assert '"dltensor_versioned"' in repr(versioned)
    t = dlpack_from_capsule(versioned)
    assert t.version == (1, 0) and t.device[1] == 0 and t.shape == (4,) and int(t) == g.ptr
    assert '"used_dltensor_versioned"' in repr(versioned)
    assert dlpack_from_capsule(legacy).version is None
    assert '"used_dltensor"' in repr(legacy)
    for capsule in (legacy, versioned):
        with pytest.raises(ValueError, match="already been consumed"):
            pygpu.from_dlpack(capsule)
    assert (pygpu.from_dlpack(pygpu.to_gpu(np.ones(2)).__dlpack__()).get() == 1).all()


def test_bad_capsules():
    with pytest.raises(TypeError, match="DLPack capsule"):
        dlpack_from_capsule(object())
    with pytest.raises(ValueError, match="not a DLPack capsule"):
        dlpack_from_capsule(datetime.datetime_CAPI)
    with pytest.raises(TypeError, match="does not support DLPack"):
        pygpu.from_dlpack([1, 2, 3])
    g = pygpu.zeros(4)
    bf16 = dlpack_capsule(g, g.ptr, (4,), (1,), 4, 16, pygpu.zeros(1).__dlpack_device__()[0], 0, True)
    with pytest.raises(BufferError, match="not supported"):
        pygpu.from_dlpack(bf16)
    with pytest.raises(ValueError, match="same length"):
        dlpack_capsule(g, g.ptr, (4,), (), 2, 64, 1, 0, True)


def test_capsule_lifetimes():
    g = pygpu.zeros(8)
    alive = weakref.ref(g)
    capsule = g.__dlpack__()
    del g
    gc.collect()
    assert alive() is not None
    del capsule  # never consumed: its destructor releases the array
    gc.collect()
    assert alive() is None

    g = pygpu.zeros(8)
    alive = weakref.ref(g)
    imported = pygpu.from_dlpack(g.__dlpack__(max_version=(1, 0)))
    del g
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(imported.get(), np.zeros(8))
    del imported
    gc.collect()
    assert alive() is None


def test_read_only_export():
    g = pygpu.to_gpu(np.arange(3.0))
    ro = pygpu.from_dlpack(
        dlpack_capsule(g, g.ptr, (3,), (1,), 2, 64, g.__dlpack_device__()[0], g.__dlpack_device__()[1], True, True)
    )
    with pytest.raises(ValueError, match="read-only"):
        ro[0] = 1.0
    with pytest.raises(BufferError, match="read-only"):
        ro.__dlpack__()
    again = pygpu.from_dlpack(ro.__dlpack__(max_version=(1, 0)))
    with pytest.raises(ValueError, match="read-only"):
        again.fill(0)
    np.testing.assert_array_equal(g.get(), np.arange(3.0))


def test_dlpack_copy_and_device_arguments(backend):
    host = np.arange(6.0).reshape(2, 3)
    g = pygpu.to_gpu(host)
    copied = pygpu.from_dlpack(g.__dlpack__(max_version=(1, 0), copy=True))
    assert copied.ptr != g.ptr
    np.testing.assert_array_equal(copied.get(), host)
    same = pygpu.from_dlpack(g.__dlpack__(max_version=(1, 0), copy=False, dl_device=g.__dlpack_device__()))
    assert same.ptr == g.ptr
    if backend == "host":
        with pytest.raises(BufferError, match="cannot export"):
            g.__dlpack__(dl_device=(2, 0))
    else:
        on_host = np.from_dlpack(g, device="cpu")  # the producer copies to kDLCPU
        np.testing.assert_array_equal(on_host, host)
        with pytest.raises(BufferError, match="cannot export"):
            g.__dlpack__(dl_device=(1, 0), copy=False)
    assert pygpu.from_dlpack(g, copy=True).ptr != g.ptr
    assert pygpu.from_dlpack(g) is g


def test_dlpack_stream_argument(backend):
    g = pygpu.zeros(3)
    with pytest.raises(TypeError, match="stream"):
        g.__dlpack__(stream="default")
    assert pygpu.from_dlpack(g.__dlpack__(stream=-1)).ptr == g.ptr
    if backend == "host":
        with pytest.raises(BufferError, match="stream must be None"):
            g.__dlpack__(stream=5)
    elif backend == "cuda":
        with pytest.raises(ValueError, match="ambiguous"):
            g.__dlpack__(stream=0)


def test_dlpack_strides_that_are_not_whole_elements():
    g = pygpu.zeros((3, 5), np.int8)[:, :4].view(np.int32)
    assert g.strides == (5, 4)
    with pytest.raises(BufferError, match="multiples of the itemsize"):
        g.__dlpack__()


def test_from_dlpack_copies_foreign_host_memory(backend):
    host = np.arange(5.0)
    g = pygpu.from_dlpack(host)
    np.testing.assert_array_equal(g.get(), host)
    if backend == "host":
        assert g.ptr != host.ctypes.data
    with pytest.raises(BufferError):
        pygpu.from_dlpack(np.arange(5.0), copy=False)
    with pytest.raises(ValueError, match="device"):
        pygpu.from_dlpack(host, device="cpu")


# ---------------------------------------------------------------- CUDA Array Interface import


def test_asarray_wraps_cai_without_copy():
    g = pygpu.to_gpu(np.arange(12.0).reshape(3, 4))
    producer = CAIProducer(g)
    a = pygpu.asarray(producer)
    assert a.ptr == g.ptr and a.base is producer and a.shape == (3, 4)
    a[1] = 0.0
    np.testing.assert_array_equal(g.get()[1], np.zeros(4))
    alive = weakref.ref(producer)
    del producer
    gc.collect()
    assert alive() is not None
    del a
    gc.collect()
    assert alive() is None


def test_asarray_cai_strides_readonly_and_stream():
    g = pygpu.to_gpu(np.arange(12, dtype=np.int32).reshape(3, 4))
    t = CAIProducer(g, shape=(4, 3), strides=(4, 16), data=(g.ptr, True), stream=1)
    a = pygpu.asarray(t)
    np.testing.assert_array_equal(a.get(), np.arange(12).reshape(3, 4).T)
    with pytest.raises(ValueError, match="read-only"):
        a[0, 0] = 1
    legacy = CAIProducer(g, version=2)
    assert "stream" not in legacy.__cuda_array_interface__
    np.testing.assert_array_equal(pygpu.asarray(legacy).get(), g.get())


@pytest.mark.parametrize(
    "fields, error, match",
    [
        ({"mask": object()}, ValueError, "mask"),
        ({"typestr": "<M8[s]"}, TypeError, "typestr"),
        ({"typestr": ">f8"}, TypeError, "typestr"),
        ({"typestr": "|V8"}, TypeError, "typestr"),
        ({"typestr": "bogus"}, TypeError, "typestr"),
        ({"stream": 0}, ValueError, "stream"),
        ({"shape": (3, -1)}, ValueError, "negative"),
        ({"strides": (8,)}, ValueError, "strides"),
        ({"data": (0, False)}, ValueError, "null"),
    ],
    ids=["mask", "datetime", "big-endian", "void", "bogus", "stream0", "negative", "strides", "null"],
)
def test_bad_cai(fields, error, match):
    g = pygpu.zeros((3, 4))
    with pytest.raises(error, match=match):
        pygpu.asarray(CAIProducer(g, **fields))


def test_asarray_of_other_inputs(backend):
    g = pygpu.zeros(3)
    assert pygpu.asarray(g) is g
    converted = pygpu.asarray(g, dtype=np.float32)
    assert converted.dtype == np.float32 and converted.ptr != g.ptr
    from_list = pygpu.asarray([[1, 2], [3, 4]])
    np.testing.assert_array_equal(from_list.get(), [[1, 2], [3, 4]])
    host = np.arange(4.0)
    copy = pygpu.asarray(host)
    assert copy.ptr != host.ctypes.data
    np.testing.assert_array_equal(copy.get(), host)
    if backend == "host":
        view = np.asarray(g)
        assert pygpu.asarray(view).ptr == g.ptr


# ---------------------------------------------------------------- CUDA Array Interface export (GPU)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype, typestr",
    [(np.float64, "<f8"), (np.bool_, "|b1"), (np.int8, "|i1"), (np.complex64, "<c8"), (np.uint16, "<u2")],
)
def test_cai_export(dtype, typestr):
    g = pygpu.to_gpu(np.zeros((4, 6), dtype))
    cai = g.__cuda_array_interface__
    assert cai["typestr"] == typestr and cai["shape"] == (4, 6) and cai["version"] == 3
    assert cai["data"] == (g.ptr, False) and cai["strides"] == g.strides  # explicit, as PyCUDA gives them
    assert cai["stream"] != 0
    view = g[::2, ::-1]
    vcai = view.__cuda_array_interface__
    assert vcai["strides"] == view.strides and vcai["data"][0] == view.ptr


@pytest.mark.gpu
def test_cai_stream_names_the_pending_writer():
    stream = driver.Stream()
    g = pygpu.zeros(1 << 24)
    g.set_async(np.ones(1 << 24), stream=stream)
    assert g.__cuda_array_interface__["stream"] in (None, stream.handle)
    stream.synchronize()
    assert g.__cuda_array_interface__["stream"] is None


# ---------------------------------------------------------------- CuPy and PyTorch (GPU)


@pytest.mark.gpu
def test_cupy_shares_memory_both_ways():
    cp = pytest.importorskip("cupy")
    g = pygpu.to_gpu(np.arange(10.0))
    c = cp.asarray(g)
    assert c.data.ptr == g.ptr
    c[0] = 42.0
    cp.cuda.runtime.deviceSynchronize()
    assert g.get()[0] == 42.0
    g.fill(3.0)
    assert float(c.sum()) == 30.0
    source = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    wrapped = pygpu.asarray(source)
    assert wrapped.ptr == source.data.ptr and wrapped.base is source
    np.testing.assert_array_equal(wrapped.get(), np.arange(6, dtype=np.float32).reshape(2, 3))
    via_dlpack = pygpu.from_dlpack(source)
    assert via_dlpack.ptr == source.data.ptr
    back = cp.from_dlpack(g)
    assert back.data.ptr == g.ptr


@pytest.mark.gpu
def test_torch_shares_memory_both_ways():
    torch = pytest.importorskip("torch")
    g = pygpu.to_gpu(np.arange(8, dtype=np.float32))
    t = torch.as_tensor(g, device="cuda")
    assert t.data_ptr() == g.ptr
    t.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(g.get(), np.arange(8, dtype=np.float32) * 2)
    t2 = torch.from_dlpack(g)
    assert t2.data_ptr() == g.ptr
    source = torch.arange(12, device="cuda", dtype=torch.int64).reshape(3, 4)
    wrapped = pygpu.from_dlpack(source)
    assert wrapped.ptr == source.data_ptr()
    np.testing.assert_array_equal(wrapped.get(), np.arange(12).reshape(3, 4))
    wrapped.fill(7)
    assert int(source.sum()) == 7 * 12
    via_cai = pygpu.asarray(source.T)
    assert via_cai.ptr == source.data_ptr() and via_cai.strides == (8, 32)


@pytest.mark.gpu
def test_stream_hand_off_orders_consumers():
    torch = pytest.importorskip("torch")
    n = 1 << 26  # 512 MiB of float64: the async copy takes milliseconds
    host = driver.pagelocked_empty(n, np.float64)
    host.fill(1.0)
    ours = driver.Stream(1)
    g = pygpu.zeros(n)
    g.set_async(host, stream=ours)
    theirs = torch.cuda.Stream()
    with torch.cuda.stream(theirs):
        t = torch.from_dlpack(g)  # __dlpack__(stream=theirs): an event orders it after our copy
        total = t.sum()
    theirs.synchronize()
    assert float(total) == float(n)
    # and the other way: torch writes on its stream, pygpu reads on the default stream
    with torch.cuda.stream(theirs):
        t.fill_(2.0)
        again = pygpu.from_dlpack(t)
    assert float(again.get()[-1]) == 2.0


@pytest.mark.gpu
@pytest.mark.parametrize("consumer", ["from_dlpack(tensor)", "legacy capsule, tensor freed first"])
def test_a_torch_round_trip_gives_pygpu_memory_back(consumer):
    # pygpu -> torch -> pygpu: dropping our import of torch's export can free torch's tensor,
    # whose storage is our export, from inside our own deallocation; torch switches the
    # thread's Python state on the way, and our deleter once decref'd its owner without the GIL.
    torch = pytest.importorskip("torch")
    pool = pygpu.get_default_memory_pool()
    gc.collect()
    before = pool.used_bytes()
    g = pygpu.arange(1 << 20, dtype=np.float32)
    t = torch.from_dlpack(g)
    if consumer == "from_dlpack(tensor)":
        again = pygpu.from_dlpack(t)  # keeps t as its base, released before its memory
    else:
        again = pygpu.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    del g, t
    assert float(again.get()[-1]) == (1 << 20) - 1
    del again
    gc.collect()
    assert pool.used_bytes() == before


@pytest.mark.gpu
def test_cupy_consumer_waits_for_the_cai_stream():
    cp = pytest.importorskip("cupy")
    n = 1 << 26
    host = driver.pagelocked_empty(n, np.float64)
    host.fill(1.0)
    ours = driver.Stream(1)
    g = pygpu.zeros(n)
    g.set_async(host, stream=ours)
    with cp.cuda.Stream(non_blocking=True):
        total = float(cp.asarray(g).sum())
    assert total == float(n)
