"""Allocations, copies, fills and page-locked host memory."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import pygpu


def test_alloc_round_trip() -> None:
    host = np.random.default_rng(1).standard_normal(1000)
    dev = pygpu.mem_alloc(host.nbytes)
    assert dev.nbytes == host.nbytes and int(dev) == dev.ptr != 0
    pygpu.memcpy_htod(dev, host)
    out = np.empty_like(host)
    pygpu.memcpy_dtoh(out, dev)
    np.testing.assert_array_equal(out, host)


def test_zero_byte_allocation_and_copies() -> None:
    dev = pygpu.mem_alloc(0)
    assert dev.nbytes == 0
    pygpu.memcpy_htod(dev, np.empty(0))
    pygpu.memcpy_dtoh(np.empty(0), dev)
    # Found by the fuzzer: empty operations on a null address aborted the host backend.
    for fill in (pygpu.memset_d8, pygpu.memset_d16, pygpu.memset_d32):
        fill(0, 0, 0)
    pygpu.memcpy_dtod(0, 0, 0)


def test_negative_size_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="negative"):
        pygpu.mem_alloc(-1)
    with pytest.raises(ValueError, match="negative"):
        pygpu.DeviceAllocation(-5)


def test_overflowing_size_is_rejected() -> None:
    with pytest.raises(OverflowError):
        pygpu.mem_alloc(1 << 70)


def test_allocation_larger_than_the_device_then_keeps_working() -> None:
    total = pygpu.mem_get_info()[1]
    with pytest.raises(pygpu.CudaMemoryError) as info:
        pygpu.mem_alloc(total * 4)
    assert info.value.code == 2
    assert isinstance(info.value, MemoryError)
    # The message says what was asked for and what the device had free.
    assert re.search(rf"asked for [0-9.]+ [KMGTP]iB \({total * 4} bytes\)", str(info.value)), info.value
    assert re.search(r"the device has [0-9.]+ [KMGT]?i?B free of [0-9.]+ [KMGT]?i?B", str(info.value)), info.value
    with pytest.raises(pygpu.CudaMemoryError, match=rf"asked for .* \({total * 4} bytes\)"):
        pygpu.pool_alloc(total * 4)
    pygpu.cudaGetLastError()
    small = pygpu.mem_alloc(1024)
    pygpu.memset_d8(small, 7, 1024)
    out = np.empty(1024, np.uint8)
    pygpu.memcpy_dtoh(out, small)
    assert (out == 7).all()


def test_copy_larger_than_allocation_is_refused_without_writing() -> None:
    dev = pygpu.mem_alloc(16)
    pygpu.memset_d8(dev, 1, 16)
    with pytest.raises(ValueError, match="do not fit"):
        pygpu.memcpy_htod(dev, np.zeros(3))
    with pytest.raises(ValueError, match="do not fit"):
        pygpu.memcpy_dtoh(np.zeros(3), dev)
    out = np.zeros(16, np.uint8)
    pygpu.memcpy_dtoh(out, dev)
    assert (out == 1).all()


def test_non_contiguous_or_readonly_host_buffers_are_refused() -> None:
    dev = pygpu.mem_alloc(800)
    with pytest.raises(ValueError, match="C-contiguous"):
        pygpu.memcpy_htod(dev, np.zeros(200)[::2])
    ro = np.zeros(100)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pygpu.memcpy_dtoh(ro, dev)
    with pytest.raises(TypeError):
        pygpu.memcpy_htod(dev, [1.0, 2.0])  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["?", "i1", "u2", ">i4", "<f4", "f8", "c16", [("a", "i4"), ("b", "f8")]])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (1 << 17,), (1 << 17, 2)])
def test_numpy_arrays_of_every_rank_and_size_copy_byte_for_byte(dtype: object, shape: tuple[int, ...]) -> None:
    # Sizes each side of 1 MiB, where copies start releasing the GIL.
    host = np.frombuffer(np.random.default_rng(3).bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize), dtype)
    host = host.reshape(shape)
    dev = pygpu.mem_alloc(max(host.nbytes, 1))
    refs = sys.getrefcount(host)
    pygpu.memcpy_htod(dev, host)
    back = np.zeros_like(host)
    pygpu.memcpy_dtoh(back, dev)
    assert back.tobytes() == host.tobytes()
    assert sys.getrefcount(host) == refs  # the view let go of the array
    with pytest.raises(ValueError, match="C-contiguous"):
        pygpu.memcpy_htod(dev, np.repeat(host.reshape(-1), 4)[::2])
    back.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pygpu.memcpy_dtoh(back, dev)
    # Item types a buffer cannot describe are refused as such, not as non-contiguous.
    with pytest.raises(ValueError, match="item type cannot be copied as bytes.*cannot include dtype 'M'"):
        pygpu.memcpy_htod(dev, np.zeros(shape, "M8[s]"))
    readonly_dates = np.zeros(shape, "M8[s]")
    readonly_dates.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pygpu.memcpy_dtoh(readonly_dates, dev)


def test_freed_allocation_raises_on_use() -> None:
    dev = pygpu.mem_alloc(64)
    dev.free()
    assert dev.freed
    dev.free()
    with pytest.raises(pygpu.InvalidHandleError):
        int(dev)
    with pytest.raises(pygpu.InvalidHandleError):
        pygpu.memcpy_htod(dev, np.zeros(8))
    assert "freed" in repr(dev)


def test_pointer_arguments() -> None:
    dev = pygpu.mem_alloc(32)
    host = np.arange(4, dtype=np.float64)
    pygpu.memcpy_htod(int(dev), host)  # plain int addresses are accepted, as in PyCUDA
    out = np.zeros(4)
    pygpu.memcpy_dtoh(out, dev.ptr)
    np.testing.assert_array_equal(out, host)
    with pytest.raises(TypeError, match="device pointer"):
        pygpu.memcpy_htod("0x1234", host)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pygpu.memcpy_htod(-8, host)


def test_dtod_copy_and_size_inference() -> None:
    a, b = pygpu.mem_alloc(64), pygpu.mem_alloc(32)
    pygpu.memcpy_htod(a, np.arange(8, dtype=np.float64))
    pygpu.memcpy_dtod(b, a)  # min of the two sizes
    out = np.zeros(4)
    pygpu.memcpy_dtoh(out, b)
    np.testing.assert_array_equal(out, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="do not fit"):
        pygpu.memcpy_dtod(b, a, 64)
    with pytest.raises(ValueError, match="size="):
        pygpu.memcpy_dtod(int(b), int(a))
    pygpu.memcpy_dtod(int(b), int(a), 8)


@pytest.mark.parametrize(
    "fill, dtype, value",
    [
        (pygpu.memset_d8, np.uint8, 0xAB),
        (pygpu.memset_d16, np.uint16, 0xBEEF),
        (pygpu.memset_d32, np.uint32, 0xDEADBEEF),
    ],
)
def test_memset(fill, dtype, value) -> None:  # type: ignore[no-untyped-def]
    n = 100
    dev = pygpu.mem_alloc(n * np.dtype(dtype).itemsize)
    fill(dev, value, n)
    out = np.zeros(n, dtype)
    pygpu.memcpy_dtoh(out, dev)
    assert (out == value).all()
    with pytest.raises(ValueError, match="do not fit"):
        fill(dev, value, n + 1)
    with pytest.raises(OverflowError):
        fill(dev, -1, n)


def test_async_copies_on_a_stream() -> None:
    s = pygpu.cudaStream_t()
    host = pygpu.pagelocked_empty((256,), np.float32)
    host[:] = np.linspace(0, 1, 256, dtype=np.float32)
    dev = pygpu.mem_alloc(host.nbytes)
    pygpu.memcpy_htod(dev, host, stream=s)
    out = pygpu.pagelocked_zeros((256,), np.float32)
    pygpu.memcpy_dtoh(out, dev, stream=s)
    pygpu.cudaStreamSynchronize(s)
    np.testing.assert_array_equal(out, host)


@pytest.mark.parametrize("order", ["C", "F"])
def test_pagelocked_arrays(order: str) -> None:
    a = pygpu.pagelocked_empty((3, 5), np.complex64, order=order)
    assert a.shape == (3, 5) and a.dtype == np.complex64
    assert a.flags.writeable
    assert a.flags.c_contiguous if order == "C" else a.flags.f_contiguous
    z = pygpu.pagelocked_zeros((4,), "int16")
    assert (z == 0).all()
    like = pygpu.pagelocked_zeros_like(a)
    assert like.shape == a.shape and like.dtype == a.dtype and (like == 0).all()
    assert pygpu.pagelocked_empty_like(np.zeros((2, 2), order="F")).flags.f_contiguous
    assert pygpu.pagelocked_empty(0, np.float64).shape == (0,)


def test_pagelocked_bad_input() -> None:
    with pytest.raises(ValueError):
        pygpu.pagelocked_empty((-1, 2), np.float64)
    with pytest.raises(ValueError):
        pygpu.pagelocked_empty((2,), np.float64, order="K")
    with pytest.raises(TypeError):
        pygpu.pagelocked_empty((2,), "not-a-dtype")


def test_pagelocked_memory_outlives_the_allocation_object() -> None:
    a = pygpu.pagelocked_empty((1000,), np.int64)
    view = a[10:20]
    del a
    view[:] = 5
    assert int(view.sum()) == 50


def test_numpy_takes_a_device_allocation_for_its_address() -> None:
    # PyCUDA's idiom for pointer arithmetic, np.intp(alloc) + offset, on every backend: no
    # buffer export may make numpy read the allocation's bytes instead.
    dev = pygpu.mem_alloc(32)
    assert np.intp(dev) == int(dev) == dev.ptr
    assert np.intp(dev) + 8 == dev.ptr + 8
    assert np.uint64(dev) == dev.ptr
    with pytest.raises(TypeError):
        memoryview(dev)  # type: ignore[arg-type]
    dev.free()
    assert dev.freed


def test_pinned_memory_larger_than_the_machine_is_refused() -> None:
    # Found by the fuzzer on the GPU machine: the driver tried to pin 8 TiB and the kernel's
    # OOM killer ended the process. Now it is an out-of-memory error, and pinning still works.
    with pytest.raises(pygpu.CudaMemoryError):
        pygpu.pagelocked_empty(2**40, np.float64)
    pygpu.cudaGetLastError()
    assert pygpu.pagelocked_zeros((4,), np.float64).sum() == 0
