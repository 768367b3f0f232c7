"""pygpu.tools (PyCUDA's pycuda.tools) and pygpu.characterize: pools, C types, arguments."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import pygpu
from pygpu import characterize, gpuarray, tools, vec


def test_bitlog2() -> None:
    assert [tools.bitlog2(v) for v in (0, 1, 2, 3, 4, 1023, 1024, 1 << 40)] == [0, 0, 1, 1, 2, 9, 10, 40]


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 100, 1000, 1 << 20, (1 << 20) + 1, 12345678])
def test_bin_sizes_hold_the_request_and_are_shared(size: int) -> None:
    pool = tools.DeviceMemoryPool()
    nr = pool.bin_number(size)
    assert pool.alloc_size(nr) >= size
    # Two mantissa bits: a size class wastes less than a quarter (above the tiny sizes).
    if size >= 8:
        assert pool.alloc_size(nr) < size * 1.25 + 1
    # The class is monotonic and its own size maps back to it.
    assert pool.bin_number(pool.alloc_size(nr)) == nr


def test_device_pool_reuses_memory() -> None:
    pool = tools.DeviceMemoryPool()
    a = pool.allocate(1000)
    address = int(a)
    assert (pool.active_blocks, pool.held_blocks) == (1, 0)
    a.free()
    assert (pool.active_blocks, pool.held_blocks) == (0, 1)
    b = pool.allocate(1010)  # same size class
    assert int(b) == address
    assert (pool.active_blocks, pool.held_blocks) == (1, 0)
    del b
    gc.collect()
    assert pool.held_blocks == 1
    pool.free_held()
    assert (pool.held_blocks, pool.managed_bytes) == (0, 0)


def test_device_pool_many_cycles_hold_one_block() -> None:
    pool = tools.DeviceMemoryPool()
    for _ in range(2000):
        pool.allocate(1 << 20).free()
    assert (pool.held_blocks, pool.active_blocks) == (1, 0)
    assert pool.managed_bytes == pool.alloc_size(pool.bin_number(1 << 20))


def test_pooled_allocation_is_an_allocation_everywhere() -> None:
    pool = tools.DeviceMemoryPool()
    x = gpuarray.GPUArray((100,), np.float64, allocator=pool.allocate)
    x.set(np.arange(100.0))
    assert np.array_equal(x.get(), np.arange(100.0))
    y = gpuarray.to_gpu(np.ones(100), allocator=pool.allocate)
    host = np.empty(100)
    pygpu.memcpy_dtod(y.gpudata, x.gpudata, 800)
    pygpu.memcpy_dtoh(host, y.gpudata)
    assert np.array_equal(host, np.arange(100.0))
    assert pool.active_blocks == 2
    address = x.ptr
    del x
    gc.collect()
    z = gpuarray.zeros((100,), np.float64, allocator=pool.allocate)
    assert z.ptr == address
    assert np.all(z.get() == 0)


def test_pool_after_stop_holding_frees_at_once() -> None:
    pool = tools.DeviceMemoryPool()
    a = pool.allocate(4096)
    pool.allocate(4096).free()
    assert pool.held_blocks == 1
    pool.stop_holding()
    assert pool.held_blocks == 0
    a.free()
    assert (pool.held_blocks, pool.active_blocks, pool.managed_bytes) == (0, 0, 0)
    # Still usable, as PyCUDA's: it just no longer keeps anything.
    b = pool.allocate(10)
    b.free()
    b.free()  # idempotent
    assert (pool.held_blocks, pool.managed_bytes) == (0, 0)


def test_pool_rejects_negative_sizes() -> None:
    with pytest.raises(ValueError, match="negative"):
        tools.DeviceMemoryPool().allocate(-1)


def test_pagelocked_pool() -> None:
    pool = tools.PageLockedMemoryPool()
    a = pool.allocate((4, 8), np.float32)
    assert a.shape == (4, 8) and a.dtype == np.float32
    a[:] = 2
    assert pool.active_blocks == 1
    address = a.ctypes.data
    del a
    gc.collect()
    assert (pool.active_blocks, pool.held_blocks) == (0, 1)
    b = pool.allocate(32, np.float32)
    assert b.ctypes.data == address
    with pytest.raises(ValueError, match="order"):
        pool.allocate(3, np.float32, order="K")


@pytest.mark.parametrize(
    ("dtype", "ctype"),
    [
        (np.float32, "float"),
        (np.float64, "double"),
        (np.int32, "int"),
        (np.uint32, "unsigned int"),
        (np.int64, "long"),
        (np.uint64, "unsigned long"),
        (np.int8, "signed char"),
        (np.uint8, "unsigned char"),
        (np.int16, "short"),
        (np.complex64, "pycuda::complex<float>"),
        (vec.float3, "float3"),
    ],
)
def test_dtype_to_ctype_round_trips(dtype: Any, ctype: str) -> None:
    assert tools.dtype_to_ctype(dtype) == ctype
    assert tools.parse_c_arg(f"{ctype} v").dtype == np.dtype(dtype)


def test_dtype_to_ctype_errors() -> None:
    with pytest.raises(ValueError, match="None"):
        tools.dtype_to_ctype(None)
    with pytest.raises(ValueError, match="unable to map"):
        tools.dtype_to_ctype(np.dtype([("a", np.int8), ("b", np.float64)]))


def test_parse_c_arg() -> None:
    v = tools.parse_c_arg("const float * __restrict__ x")
    assert isinstance(v, tools.VectorArg) and v.name == "x" and v.dtype == np.float32
    assert v.declarator() == "float *x"
    s = tools.parse_c_arg("unsigned  int n")
    assert isinstance(s, tools.ScalarArg) and s.name == "n" and s.dtype == np.uint32
    assert tools.parse_c_arg("double a[]").__class__ is tools.VectorArg
    assert tools.get_arg_type("float *x") == "P"
    assert tools.get_arg_type("double a") == "d"
    assert [a.name for a in tools.parse_c_args("float *x, int n, double a")] == ["x", "n", "a"]


@pytest.mark.parametrize("bad", ["", "float", "float *", "int 3", "int n, "])
def test_parse_c_arg_malformed(bad: str) -> None:
    with pytest.raises(ValueError, match="parse|lacks a type|empty"):
        tools.parse_c_args(bad) if "," in bad else tools.parse_c_arg(bad)


def test_parse_c_arg_unknown_type() -> None:
    with pytest.raises(ValueError, match="unknown C type 'quaternion'"):
        tools.parse_c_arg("quaternion *q")


def test_context_dependent_memoize() -> None:
    calls: list[int] = []

    @tools.context_dependent_memoize
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert square(3) == 9 and square(3) == 9
    assert calls == [3]
    tools.clear_context_caches()
    assert square(3) == 9
    assert calls == [3, 3]


def test_make_default_context_and_mark_cuda_test() -> None:
    ctx = tools.make_default_context()
    try:
        assert ctx.device.ordinal == pygpu.cudaGetDevice()[0]
    finally:
        ctx.pop()

    @tools.mark_cuda_test
    def body() -> int:
        return 42

    assert body() == 42


def test_device_data_and_occupancy() -> None:
    data = tools.DeviceData()
    assert data.align_bytes(8) == 128 and data.align_words(8) == 16 and data.coalesce(17) == 32
    full = tools.OccupancyRecord(data, 256)
    assert 0 < full.occupancy <= 1
    smem_bound = tools.OccupancyRecord(data, 32, shared_mem=40000)
    assert smem_bound.limited_by == "smem" and smem_bound.tb_per_mp == 1
    with pytest.raises(ValueError, match="too many threads"):
        tools.OccupancyRecord(data, 4096)


def test_characterize() -> None:
    assert characterize.platform_bits() == 64
    assert characterize.has_double_support()
    assert characterize.sizeof("double") == 8
    assert characterize.sizeof("my_pair", "struct my_pair { int a; double b; };") == 16


def test_init_cuda_context_fixture_is_a_generator_for_fixtures() -> None:
    steps = tools.init_cuda_context_fixture()
    next(steps)
    assert pygpu.driver.Context.get_current() is not None
    with pytest.raises(StopIteration):
        next(steps)


def test_page_locked_pool_allocates_with_its_allocators_flags() -> None:
    mapped = tools.PageLockedMemoryPool(tools.PageLockedAllocator(pygpu.driver.host_alloc_flags.DEVICEMAP))
    host = mapped.allocate((64,), np.float32)
    host[:] = np.arange(64, dtype=np.float32)
    # DEVICEMAP memory has a device address: a device-to-device copy reads the pooled block.
    device = gpuarray.empty(64, np.float32)
    pygpu.driver.memcpy_dtod(device.gpudata, host.base.get_device_pointer(), host.nbytes)
    np.testing.assert_array_equal(device.get(), host)
    assert tools.PageLockedMemoryPool(allocator=tools.PageLockedAllocator()).allocate(3, np.int8).shape == (3,)
    with pytest.raises(ValueError, match="host_alloc_flags"):
        tools.PageLockedAllocator(1 << 6)
    with pytest.raises(ValueError, match="PageLockedAllocator"):
        tools.PageLockedMemoryPool("portable")


def test_get_default_device_is_deprecated_and_reads_cuda_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_DEVICE", "0")
    with pytest.warns(DeprecationWarning, match="make_default_context"):
        assert tools.get_default_device(default=5) == pygpu.driver.Device(0)
    monkeypatch.setenv("CUDA_DEVICE", "zero")
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="integer"):
        tools.get_default_device()
