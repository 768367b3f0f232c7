"""pygpu.tools' DeviceMemoryPool and PageLockedMemoryPool (PyCUDA's, in Rust): allocations
usable as DeviceAllocations everywhere, reuse without growth, stop_holding, out of memory,
and no block handed out twice under eight threads."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import pygpu
from pygpu import gpuarray, tools

MiB = 1 << 20


def test_the_tools_names_are_the_compiled_classes() -> None:
    assert tools.DeviceMemoryPool is pygpu._pygpu.DeviceMemoryPool
    assert tools.PageLockedMemoryPool is pygpu._pygpu.PageLockedMemoryPool
    a = tools.DeviceMemoryPool().allocate(100)
    assert isinstance(a, tools.PooledDeviceAllocation) and isinstance(a, pygpu.DeviceAllocation)
    assert a.nbytes == 100 and "PooledDeviceAllocation of 100 bytes" in repr(a)


def test_a_pooled_allocation_goes_wherever_an_allocation_does() -> None:
    pool = tools.DeviceMemoryPool()
    a = pool.allocate(8 * 8)
    host = np.arange(8.0)
    pygpu.memcpy_htod(a, host)
    add = pygpu.load_kernels("testing").get_function("add_scalar_f64")
    add(a, np.int64(8), np.float64(1), block=8)  # a kernel argument
    out = np.empty(8)
    pygpu.memcpy_dtoh(out, np.intp(a))  # its address through numpy, PyCUDA's idiom
    assert np.array_equal(out, host + 1)
    view = gpuarray.GPUArray((8,), np.float64, gpudata=a)
    assert view.ptr == int(a) == a.ptr and np.array_equal(view.get(), host + 1)
    with pytest.raises(ValueError, match="do not fit"):
        pygpu.memcpy_htod(a, np.zeros(9))  # bounds come from the size asked for


def test_free_and_drop_give_the_block_back() -> None:
    pool = tools.DeviceMemoryPool()
    a = pool.allocate(1000)
    address = int(a)
    block = pool.alloc_size(pool.bin_number(1000))
    assert (pool.active_blocks, pool.held_blocks, pool.active_bytes, pool.managed_bytes) == (1, 0, block, block)
    a.free()
    assert a.freed and (pool.active_blocks, pool.held_blocks, pool.active_bytes) == (0, 1, 0)
    with pytest.raises(pygpu.CudaError):
        int(a)  # a freed allocation has no address any more
    b = pool(1010)  # the pool is callable, as an allocator; same size class
    assert int(b) == address
    del b
    assert (pool.active_blocks, pool.held_blocks) == (0, 1)
    pool.free_held()
    assert (pool.held_blocks, pool.managed_bytes) == (0, 0)


@pytest.mark.device_free_memory
def test_memory_stays_flat_over_100k_cycles() -> None:
    pool = tools.DeviceMemoryPool()
    pool.allocate(MiB).free()
    free_before = pygpu.mem_get_info()[0]
    allocate = pool.allocate
    for _ in range(100_000):
        allocate(MiB).free()
    assert pygpu.mem_get_info()[0] == free_before
    assert (pool.held_blocks, pool.active_blocks, pool.managed_bytes) == (1, 0, pool.alloc_size(pool.bin_number(MiB)))


@pytest.mark.device_free_memory
def test_stop_holding_frees_what_is_held_and_what_comes_back() -> None:
    pool = tools.DeviceMemoryPool()
    free_at_start = pygpu.mem_get_info()[0]
    kept = pool.allocate(MiB)
    pool.allocate(MiB).free()
    assert pool.held_blocks == 1
    pool.stop_holding()
    assert pool.held_blocks == 0
    kept.free()
    assert (pool.held_blocks, pool.active_blocks, pool.managed_bytes) == (0, 0, 0)
    assert pygpu.mem_get_info()[0] == free_at_start, "the blocks went back to the device"
    # Allocation still works after stop_holding (PyCUDA's pools do the same); nothing is kept.
    later = pool.allocate(4096)
    address = int(later)
    later.free()
    assert (pool.held_blocks, pool.managed_bytes) == (0, 0)
    with pytest.raises(pygpu.CudaError):
        later.ptr  # use after free: an error, not the address of released memory
    assert address


def test_allocations_outlive_their_pool() -> None:
    pool = tools.DeviceMemoryPool()
    a = pool.allocate(256)
    pygpu.memcpy_htod(a, np.arange(32.0))
    del pool
    gc.collect()
    out = np.empty(32)
    pygpu.memcpy_dtoh(out, a)
    assert np.array_equal(out, np.arange(32.0))
    a.free()


def test_out_of_memory_frees_the_held_blocks_then_raises() -> None:
    pool = tools.DeviceMemoryPool()
    pool.allocate(MiB).free()
    assert pool.held_blocks == 1
    with pytest.raises(pygpu.CudaMemoryError):
        pool.allocate(1 << 56)
    assert (pool.held_blocks, pool.active_blocks, pool.managed_bytes) == (0, 0, 0)
    pool.allocate(10).free()  # the pool still works


def test_bad_requests_say_what_is_wrong() -> None:
    pool = tools.DeviceMemoryPool()
    with pytest.raises(ValueError, match="negative"):
        pool.allocate(-1)
    with pytest.raises(TypeError):
        pool.allocate("1 MiB")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="past the address space"):
        pool.alloc_size(1000)
    with pytest.raises(OverflowError):
        pool.allocate(1 << 70)


def test_eight_threads_never_share_a_block() -> None:
    pool = tools.DeviceMemoryPool()
    errors: list[str] = []
    live: dict[int, int] = {}
    lock = threading.Lock()

    def work(tid: int) -> None:
        kept: list[tuple[pygpu.DeviceAllocation, np.ndarray]] = []
        for i in range(300):
            size = 64 << ((tid + i) % 3)
            a = pool.allocate(size)
            with lock:
                if int(a) in live:
                    errors.append(f"0x{int(a):x} handed to thread {tid} while thread {live[int(a)]} holds it")
                live[int(a)] = tid
            data = np.full(size // 8, tid * 1000 + i, np.int64)
            pygpu.memcpy_htod(a, data)
            kept.append((a, data))
            if len(kept) > 2:
                old, expected = kept.pop(0)
                got = np.empty_like(expected)
                pygpu.memcpy_dtoh(got, old)
                if not np.array_equal(got, expected):
                    errors.append(f"thread {tid}: block 0x{int(old):x} was overwritten")
                with lock:
                    del live[int(old)]
                old.free()
        for old, _ in kept:
            with lock:
                del live[int(old)]
            old.free()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert pool.active_blocks == 0 and pool.held_blocks <= 8 * 3 * 3


def test_page_locked_pool_reuses_blocks_held_by_views() -> None:
    pool = tools.PageLockedMemoryPool()
    a = pool.allocate((4, 8), np.float32)
    assert a.shape == (4, 8) and a.dtype == np.float32 and a.flags.c_contiguous
    assert isinstance(a.base, tools.PooledHostAllocation)
    address = a.base.ptr
    a[:] = 3
    view = a[1:]
    del a
    assert (pool.active_blocks, pool.held_blocks) == (1, 0), "a view keeps the block"
    del view
    assert (pool.active_blocks, pool.held_blocks) == (0, 1)
    b = pool.allocate(32, np.float32, order="F")
    assert b.base.ptr == address and b.shape == (32,)
    fortran = pool.allocate((3, 5), np.int16, "F")
    assert fortran.flags.f_contiguous
    with pytest.raises(ValueError, match="order"):
        pool.allocate(3, np.float32, order="K")
    with pytest.raises(ValueError, match="non-negative"):
        pool.allocate((2, -1), np.float32)
    pool.stop_holding()
    del b, fortran
    assert (pool.held_blocks, pool.active_blocks, pool.managed_bytes) == (0, 0, 0)
