"""The caching device allocator behind GPUArray (pygpu.get_default_memory_pool()): reuse,
returning memory, the limit, the PYGPU_MEMORY_POOL switch, and correctness under threads.
The pool is process-wide, so the statistics are checked as differences."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import pygpu
from conftest import run_python
from pygpu import gpuarray

MiB = 1 << 20


@pytest.fixture
def pool() -> pygpu.MemoryPool:
    pool = pygpu.get_default_memory_pool()
    if not pool.enabled:
        pytest.skip("PYGPU_MEMORY_POOL=0 turned the pool off in this process")
    pool.free_all_blocks()
    return pool


def test_gpuarrays_come_from_the_pool_as_device_allocations(pool: pygpu.MemoryPool) -> None:
    used = pool.used_bytes()
    a = gpuarray.zeros(1000, np.float64)
    assert isinstance(a.gpudata, pygpu.DeviceAllocation)
    assert pool.used_bytes() == used + 8000
    b = gpuarray.to_gpu(np.arange(10, dtype=np.int32))
    assert pool.used_bytes() == used + 8040
    del a, b
    assert pool.used_bytes() == used


def test_a_freed_block_is_reused_and_the_pool_does_not_grow(pool: pygpu.MemoryPool, backend: str) -> None:
    a = gpuarray.empty(12345, np.float64)
    address = int(a.gpudata)
    del a
    held = pool.total_bytes()
    assert held - pool.used_bytes() >= 12345 * 8, "the freed block stays cached"
    for _ in range(20):
        b = gpuarray.empty(12345, np.float64)
        assert pool.total_bytes() == held
        if backend == "host":
            assert int(b.gpudata) == address
        del b


def test_free_all_blocks_returns_the_cached_memory(pool: pygpu.MemoryPool) -> None:
    # In a fresh process: on CUDA the driver's pool reserves memory in chunks and gives back only
    # chunks without a live block, and after the rest of the suite this process holds small live
    # blocks (1,260 bytes on an H100, 2026-11-27) in a chunk the new block may share.
    result = run_python(f"""
        import numpy as np
        import pygpu
        from pygpu import gpuarray
        pool = pygpu.get_default_memory_pool()
        a = gpuarray.empty({32 * MiB}, np.uint8)
        del a
        before = pool.total_bytes()
        assert pool.free_bytes() >= {32 * MiB}, pool.free_bytes()
        pool.free_all_blocks()
        print(before - pool.total_bytes())
    """)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 32 * MiB, "free_all_blocks gave back less than the freed block"


def test_the_limit_raises_a_memory_error_that_says_what_to_do(pool: pygpu.MemoryPool) -> None:
    assert pool.get_limit() == 0
    pool.set_limit(pool.used_bytes() + MiB)
    try:
        assert pool.get_limit() == pool.used_bytes() + MiB
        small = gpuarray.empty(MiB // 2, np.uint8)
        with pytest.raises(pygpu.CudaMemoryError, match="set_limit") as info:
            gpuarray.empty(MiB, np.uint8)
        assert isinstance(info.value, MemoryError)
        del small
        gpuarray.empty(MiB, np.uint8)  # fits again once the first is gone
    finally:
        pool.set_limit(0)
    assert pool.get_limit() == 0
    with pytest.raises(ValueError, match="negative"):
        pool.set_limit(-1)


def test_explicit_mem_alloc_bypasses_the_pool(pool: pygpu.MemoryPool) -> None:
    used = pool.used_bytes()
    a = pygpu.mem_alloc(4096)
    assert pool.used_bytes() == used
    p = pygpu.pool_alloc(4096)
    assert pool.used_bytes() == used + 4096
    p.free()
    p.free()
    assert p.freed and pool.used_bytes() == used
    a.free()


def test_a_pooled_allocation_converts_to_its_address(pool: pygpu.MemoryPool) -> None:
    p = pygpu.pool_alloc(64)
    assert np.intp(p) + 4 == p.ptr + 4
    p.free()
    assert p.freed


def test_results_of_many_additions_stay_correct(pool: pygpu.MemoryPool) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000)
    y = rng.standard_normal(1000)
    a, b = gpuarray.to_gpu(x), gpuarray.to_gpu(y)
    acc, expect = a, x
    for _ in range(300):
        c = a + b
        acc = acc + b
        expect = expect + y
    np.testing.assert_array_equal(c.get(), x + y)
    np.testing.assert_array_equal(acc.get(), expect)
    assert gpuarray.sum(a).get() == pytest.approx(x.sum())


def test_eight_threads_never_share_a_block(pool: pygpu.MemoryPool) -> None:
    errors: list[str] = []
    live_addresses: dict[int, int] = {}
    lock = threading.Lock()

    def work(tid: int) -> None:
        kept = []
        for i in range(40):
            n = 100 + 37 * ((tid + i) % 5)
            value = tid * 1000 + i
            a = gpuarray.empty(n, np.int64)
            with lock:
                address = int(a.gpudata)
                if address in live_addresses:
                    errors.append(
                        f"block 0x{address:x} handed to thread {tid} while thread {live_addresses[address]} holds it"
                    )
                live_addresses[address] = tid
            a.fill(value)
            kept.append((a, value, address))
            if len(kept) > 3:
                old, expected, old_address = kept.pop(0)
                if not (old.get() == expected).all():
                    errors.append(f"thread {tid}: block 0x{old_address:x} was overwritten")
                with lock:
                    del live_addresses[old_address]
                del old
        for old, expected, old_address in kept:
            if not (old.get() == expected).all():
                errors.append(f"thread {tid}: block 0x{old_address:x} was overwritten")
            with lock:
                del live_addresses[old_address]
        kept.clear()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_the_environment_switch_turns_the_pool_off() -> None:
    code = """
        import numpy as np
        import pygpu
        from pygpu import gpuarray
        pool = pygpu.get_default_memory_pool()
        a = gpuarray.to_gpu(np.arange(1000.0))
        b = (a + a).get()
        assert (b == 2 * np.arange(1000.0)).all()
        print(pool.enabled, pool.used_bytes(), pool.total_bytes())
    """
    off = run_python(code, env={"PYGPU_MEMORY_POOL": "0"})
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["False", "0", "0"]
    on = run_python(code, env={"PYGPU_MEMORY_POOL": "1"})
    assert on.returncode == 0, on.stderr
    enabled, used, total = on.stdout.split()
    assert enabled == "True" and int(used) == 8000 and int(total) >= 8000


@pytest.mark.device_free_memory
@pytest.mark.gpu
def test_the_device_pool_keeps_freed_memory_until_free_all_blocks(pool: pygpu.MemoryPool) -> None:
    nbytes = 256 * MiB
    before = pygpu.mem_get_info()[0]
    a = gpuarray.empty(nbytes, np.uint8)
    a.fill(7)
    del a
    pygpu.cudaDeviceSynchronize()
    assert pygpu.mem_get_info()[0] <= before - nbytes // 2, "the freed block stays cached in the pool"
    assert pool.free_bytes() >= nbytes
    pool.free_all_blocks()
    assert pygpu.mem_get_info()[0] > before - nbytes // 2, "free_all_blocks gives it back to the driver"


@pytest.mark.gpu
def test_a_reused_block_is_written_only_after_the_earlier_work_on_it(pool: pygpu.MemoryPool) -> None:
    # A long chain of kernels on the old block, freed while still queued; the next array
    # of the same size may get the block and must not be overwritten by the earlier work.
    n = 1 << 22
    x = gpuarray.zeros(n, np.float32)
    for _ in range(50):
        x += 1.0
    del x
    y = gpuarray.empty(n, np.float32)
    y.fill(-3.0)
    assert (y.get() == -3.0).all()


def test_a_block_still_written_on_a_non_blocking_stream_is_not_handed_out(pool: pygpu.MemoryPool) -> None:
    # The pool orders frees on the legacy default stream, which a non-blocking stream does
    # not synchronise with: the free must wait for the stream's work instead.
    n = 1 << 22
    stream = pygpu.cudaStream_t(1)
    x = gpuarray.empty(n, np.float32)
    for i in range(100):
        x.fill(float(i), stream=stream)
    del x
    y = gpuarray.empty(n, np.float32)
    y.fill(-3.0)
    pygpu.cudaDeviceSynchronize()
    assert (y.get() == -3.0).all()
    stream.close()


# A fresh process per case: the block cache (runtime/block_cache.rs) reuses a freed block
# without a driver call only while no stream but the legacy one has existed during the block's
# life; once a test in this process has made a non-blocking stream, it is off for good.
_REUSE_CASE = """
    import numpy as np
    import pygpu
    from pygpu import gpuarray
    n = 1 << 22
    def chain(stream=None):
        x = gpuarray.empty(n, np.float32)
        for i in range(100):
            x.fill(float(i), stream=stream)
        return x
    def check(y, what):
        pygpu.cudaDeviceSynchronize()
        got = np.unique(y.get())
        assert list(got) == [-3.0], f"{what}: the reused block holds {got}"
"""


@pytest.mark.parametrize(
    "case",
    [
        # Freed while its writes are queued on the legacy stream, reused there.
        "x = chain(); address = int(x.gpudata); del x\n"
        "y = gpuarray.empty(n, np.float32); y.fill(-3.0); check(y, 'legacy')\n"
        "print(int(y.gpudata) == address)",
        # Cached before a stream existed, reused on a new blocking stream.
        "x = chain(); del x\ns = pygpu.cudaStream_t()\n"
        "y = gpuarray.empty(n, np.float32); y.fill(-3.0, stream=s); check(y, 'new stream')",
        # Written on one blocking stream, freed, reused on another: not ordered by the legacy stream.
        "s1, s2 = pygpu.cudaStream_t(), pygpu.cudaStream_t()\nx = chain(s1); del x\n"
        "y = gpuarray.empty(n, np.float32); y.fill(-3.0, stream=s2); check(y, 'two streams')",
        # Written on a stream that is destroyed before the block is freed.
        "s1 = pygpu.cudaStream_t()\nx = chain(s1); s1.close(); del x\ns2 = pygpu.cudaStream_t()\n"
        "y = gpuarray.empty(n, np.float32); y.fill(-3.0, stream=s2); check(y, 'closed stream')",
        # Cached blocks go back to the device with free_all_blocks.
        "pool = pygpu.get_default_memory_pool()\nx = chain(); del x\n"
        "pool.free_all_blocks(); assert pool.total_bytes() == pool.used_bytes(), pool.total_bytes()",
    ],
    ids=["legacy", "cached-then-new-stream", "two-streams", "closed-stream", "free-all-blocks"],
)
def test_a_reused_block_is_ordered_after_its_earlier_work(case: str) -> None:
    result = run_python(_REUSE_CASE + "\n".join("    " + line for line in case.split("\n")))
    assert result.returncode == 0, result.stderr
    if "address" in case:
        assert result.stdout.split() == ["True"], "the freed block was handed out again"


@pytest.mark.gpu
def test_a_block_shared_with_another_library_is_not_reused_before_its_work() -> None:
    pytest.importorskip("cupy")
    # CuPy writes the block on a blocking stream of its own, which pygpu never sees; the block
    # must go back through the driver's free on the legacy stream, which waits for that work.
    case = (
        "import cupy\nx = gpuarray.zeros(n, np.float32); view = cupy.asarray(x)\n"
        "with cupy.cuda.Stream():\n    for i in range(200): view += 1\n"
        "del view, x\ns = pygpu.cudaStream_t()\n"
        "y = gpuarray.empty(n, np.float32); y.fill(-3.0, stream=s); check(y, 'shared with cupy')"
    )
    result = run_python(_REUSE_CASE + "\n".join("    " + line for line in case.split("\n")))
    assert result.returncode == 0, result.stderr


@pytest.mark.gpu
def test_out_of_memory_gives_the_cache_back_and_retries(pool: pygpu.MemoryPool) -> None:
    free = pygpu.mem_get_info()[0]
    big = int(free * 0.6) // MiB * MiB
    a = gpuarray.empty(big, np.uint8)
    del a  # cached: the device now has about 40% free
    b = gpuarray.empty(big + 64 * MiB, np.uint8)  # fits only once the cached block is returned
    assert pool.used_bytes() >= big
    del b
    pool.free_all_blocks()
