"""DeviceArray_<dtype> and pointer_wrapper_<dtype>, PyGPU's low-level interface."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pygpu

DTYPES = {
    "int16": pygpu.DeviceArray_int16,
    "int32": pygpu.DeviceArray_int32,
    "int64": pygpu.DeviceArray_int64,
    "uint16": pygpu.DeviceArray_uint16,
    "uint32": pygpu.DeviceArray_uint32,
    "uint64": pygpu.DeviceArray_uint64,
    "float32": pygpu.DeviceArray_float32,
    "float64": pygpu.DeviceArray_float64,
    "complex64": pygpu.DeviceArray_complex64,
    "complex128": pygpu.DeviceArray_complex128,
}
POINTERS = {
    "int16": pygpu.pointer_wrapper_int16,
    "int32": pygpu.pointer_wrapper_int32,
    "int64": pygpu.pointer_wrapper_int64,
    "uint16": pygpu.pointer_wrapper_uint16,
    "uint32": pygpu.pointer_wrapper_uint32,
    "uint64": pygpu.pointer_wrapper_uint64,
    "float32": pygpu.pointer_wrapper_float32,
    "float64": pygpu.pointer_wrapper_float64,
    "complex64": pygpu.pointer_wrapper_complex64,
    "complex128": pygpu.pointer_wrapper_complex128,
}


def sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(7)
    values = rng.integers(0, 1000, size=shape)
    a = values.astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.integers(0, 1000, size=shape).astype(dtype)
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype: str) -> None:
    host = sample(dtype, (6, 5))
    expected = host.copy()
    da = DTYPES[dtype](host)
    assert not da.allocated()
    assert da.allocate() == 0 and da.allocated()
    assert da.to_device() == 0
    host[:] = 0
    assert da.to_host() == 0
    np.testing.assert_array_equal(host, expected)
    assert da.last_status() == 0
    assert da.size() == 30 and da.nbytes() == 30 * np.dtype(dtype).itemsize
    assert da.shape() == [6, 5]
    assert da.strides() == [5 * np.dtype(dtype).itemsize, np.dtype(dtype).itemsize]
    assert da.host_array() is host


def test_the_readme_example() -> None:
    a = np.array([1, 2, 3, 4, 5, 6])
    da = pygpu.DeviceArray_int64(a)
    da.allocate()
    da.to_device()
    ptr = da.device_data()
    assert isinstance(ptr, pygpu.pointer_wrapper_int64) and not ptr.is_safe()
    # Change the device data behind the array's back, then read it back into `a`.
    pygpu.memcpy_htod(int(ptr), np.array([6, 5, 4, 3, 2, 1]))
    da.to_host()
    assert a.tolist() == [6, 5, 4, 3, 2, 1]


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[:, ::2],
        lambda a: a[::-1],
        lambda a: a.T,
        lambda a: a[1:, 3:0:-2],
        lambda a: np.asfortranarray(a),
    ],
)
def test_non_contiguous_host_arrays_copy_in_logical_order(view) -> None:  # type: ignore[no-untyped-def]
    base = np.arange(48, dtype=np.float64).reshape(6, 8)
    host = view(base)
    expected = host.copy()
    da = pygpu.DeviceArray_float64(host)
    da.allocate()
    da.to_device()
    # The device holds the logical (C-order) sequence, not the raw memory.
    flat = np.zeros(host.size)
    pygpu.memcpy_dtoh(flat, int(da.device_data()))
    np.testing.assert_array_equal(flat, expected.ravel())
    host[...] = -1
    da.to_host()
    np.testing.assert_array_equal(host, expected)
    # Every element of the view was written back.
    assert (base != -1).all()


def test_shape_constructor() -> None:
    da = pygpu.DeviceArray_float32((2, 3, 4))
    assert da.shape() == [2, 3, 4] and da.size() == 24
    host = da.host_array()
    assert host.dtype == np.float32 and (host == 0).all()
    assert pygpu.DeviceArray_int32(5).shape() == [5]
    empty = pygpu.DeviceArray_int32((0, 3))
    assert empty.allocate() == 0 and empty.to_device() == 0 and empty.to_host() == 0


def test_dtype_mismatch_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="dtype"):
        pygpu.DeviceArray_float64(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="dtype"):
        pygpu.DeviceArray_uint16(np.zeros(3, np.int16))


def test_bad_constructor_arguments() -> None:
    with pytest.raises(TypeError):
        pygpu.DeviceArray_float64("abc")
    with pytest.raises(TypeError):
        pygpu.DeviceArray_float64((2, -3))
    with pytest.raises(ValueError, match="too large"):
        pygpu.DeviceArray_float64((1 << 40, 1 << 40))


def test_use_before_allocate_raises() -> None:
    da = pygpu.DeviceArray_float64(np.zeros(4))
    with pytest.raises(ValueError, match="allocate"):
        da.to_device()
    with pytest.raises(ValueError, match="allocate"):
        da.to_host()
    with pytest.raises(ValueError, match="allocate"):
        da.device_data()


def test_read_only_host_array_cannot_receive() -> None:
    host = np.zeros(4)
    da = pygpu.DeviceArray_float64(host)
    da.allocate()
    da.to_device()
    host.flags.writeable = False
    with pytest.raises(ValueError, match="cannot write"):
        da.to_host()


def test_allocation_failure_is_a_status() -> None:
    total = pygpu.mem_get_info()[1]
    da = pygpu.DeviceArray_uint64(
        np.lib.stride_tricks.as_strided(np.zeros(1, np.uint64), shape=(total // 2,), strides=(0,))
    )
    err = da.allocate()
    assert err == 2 and da.last_status() == 2 and not da.allocated()
    pygpu.cudaGetLastError()


def test_stream_argument() -> None:
    s = pygpu.cudaStream_t()
    host = np.arange(10, dtype=np.int32)
    da = pygpu.DeviceArray_int32(host)
    da.allocate()
    assert da.to_device(s) == 0
    host[:] = 0
    assert da.to_host(stream=s) == 0
    pygpu.cudaStreamSynchronize(s)
    assert host.tolist() == list(range(10))


def test_device_pointer_keeps_array_alive() -> None:
    da = pygpu.DeviceArray_float64(np.arange(3.0))
    da.allocate()
    da.to_device()
    ptr = da.device_data()
    address = int(ptr)
    del da
    out = np.zeros(3)
    pygpu.memcpy_dtoh(out, address)
    np.testing.assert_array_equal(out, [0, 1, 2])
    assert ptr.__index__() == address


@pytest.mark.parametrize("dtype", POINTERS)
def test_safe_pointer_reads_host_memory(dtype: str) -> None:
    host = sample(dtype, (4,))
    ptr = POINTERS[dtype](host)
    assert ptr.is_safe()
    assert int(ptr) == host.ctypes.data
    assert ptr.get() == host[0]
    assert ptr.get(3) == host[3]
    with pytest.raises(IndexError):
        ptr.get(4)
    assert "safe" in repr(ptr)


def test_unsafe_pointer_refuses_to_read() -> None:
    ptr = pygpu.pointer_wrapper_float64(0xDEAD0000)
    assert not ptr.is_safe() and int(ptr) == 0xDEAD0000
    with pytest.raises(ValueError, match="unsafe"):
        ptr.get()


def test_pointer_wrapper_bad_input() -> None:
    with pytest.raises(TypeError):
        pygpu.pointer_wrapper_float64(np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="C-contiguous"):
        pygpu.pointer_wrapper_float64(np.zeros(6)[::2])
    with pytest.raises(TypeError):
        pygpu.pointer_wrapper_int32(-1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_host_data_is_a_safe_pointer_to_the_host_array(dtype: str) -> None:
    host = sample(dtype, (3, 4))
    da = DTYPES[dtype](host)
    pointer = da.host_data()
    assert type(pointer).__name__ == f"pointer_wrapper_{dtype}"
    assert pointer.is_safe() and int(pointer) == host.ctypes.data
    assert pointer.get() == host.flat[0] and pointer.get(11) == host.flat[11]
    with pytest.raises(IndexError, match="out of range"):
        pointer.get(12)
    # It reads what the host array holds now, e.g. after a round trip through the device.
    assert da.allocate() == 0 and da.to_device() == 0
    host[...] = 0
    assert da.to_host() == 0
    assert pointer.get(5) == sample(dtype, (3, 4)).flat[5]


def test_host_data_keeps_the_host_array_alive() -> None:
    da = pygpu.DeviceArray_float64(np.arange(4.0) + 0.5)
    pointer = da.host_data()
    del da
    gc.collect()
    assert [pointer.get(i) for i in range(4)] == [0.5, 1.5, 2.5, 3.5]


def test_host_data_of_a_strided_host_array_says_to_use_host_array() -> None:
    base = np.arange(12.0)
    da = pygpu.DeviceArray_float64(base[::2])
    with pytest.raises(ValueError, match=r"not C-contiguous.*host_array\(\)"):
        da.host_data()
    assert da.host_array().base is base
