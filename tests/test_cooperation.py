"""Kernels whose threads work together (kernels/cooperation.cu): shared memory and barriers,
dynamic shared memory, atomics from many blocks, warp shuffles and votes, CUDA's device API.
They run on every backend; the host backend runs a block's threads as fibers."""

from __future__ import annotations


import numpy as np
import pytest

import pygpu
from conftest import interrupt_python, run_python
from pygpu import gpuarray
from pygpu.compiler import SourceModule


@pytest.fixture(scope="module")
def coop() -> pygpu.Module:
    return pygpu.load_kernels("cooperation")


def to_device(a: np.ndarray) -> pygpu.DeviceAllocation:
    d = pygpu.mem_alloc(max(a.nbytes, 1))
    pygpu.memcpy_htod(d, np.ascontiguousarray(a))
    return d


def from_device(d: pygpu.DeviceAllocation, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    pygpu.memcpy_dtoh(out, d)
    return out


@pytest.mark.parametrize("n, grid, block", [(1, 1, 1), (5000, 3, 256), (100_000, 7, 64), (33, 2, 32)])
def test_block_tree_reduction_in_shared_memory(coop: pygpu.Module, n: int, grid: int, block: int) -> None:
    x = np.random.default_rng(n).standard_normal(n)
    partial = np.zeros(grid)
    d_partial = to_device(partial)
    coop.get_function("block_sum_f64")(to_device(x), d_partial, np.int64(n), grid=(grid, 1), block=(block, 1, 1))
    np.testing.assert_allclose(from_device(d_partial, partial).sum(), x.sum(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [16, 37])
def test_tiled_matmul_with_syncthreads(coop: pygpu.Module, n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    dc = to_device(c)
    tiles = (n + 15) // 16
    coop.get_function("matmul_tiled_f32")(
        to_device(a), to_device(b), dc, np.int32(n), grid=(tiles, tiles), block=(16, 16, 1)
    )
    np.testing.assert_allclose(from_device(dc, c), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block", [1, 32, 100, 1024])
def test_dynamic_shared_memory(coop: pygpu.Module, block: int) -> None:
    n = block * 3
    x = np.arange(n, dtype=np.int32)
    d = to_device(x)
    coop.get_function("reverse_chunks_i32")(d, np.int32(n), grid=(3, 1), block=(block, 1, 1), shared=4 * block)
    np.testing.assert_array_equal(from_device(d, x), x.reshape(3, block)[:, ::-1].ravel())


def test_too_much_dynamic_shared_memory_is_refused(coop: pygpu.Module) -> None:
    d = to_device(np.zeros(32, np.int32))
    with pytest.raises(pygpu.CudaError):
        coop.get_function("reverse_chunks_i32")(d, np.int32(32), grid=(1, 1), block=(32, 1, 1), shared=1 << 20)


def test_histogram_with_atomics_from_many_blocks(coop: pygpu.Module) -> None:
    x = np.random.default_rng(2).integers(0, 1 << 20, 200_000, dtype=np.uint32)
    bins = np.zeros(200, np.uint32)
    d_bins = to_device(bins)
    coop.get_function("histogram_u32")(
        to_device(x), np.int64(x.size), d_bins, np.uint32(200), grid=(64, 1), block=(128, 1, 1)
    )
    np.testing.assert_array_equal(from_device(d_bins, bins), np.bincount(x % 200, minlength=200))


def test_every_atomic(coop: pygpu.Module) -> None:
    n = 20_000
    x = np.random.default_rng(3).integers(-1000, 1000, n, dtype=np.int32)
    out_i = np.array([0, 1 << 30, -(1 << 30), 0, 0, 0, 0], np.int32)
    out_u = np.zeros(2, np.uint32)
    out_ull = np.zeros(2, np.uint64)
    out_f, out_d = np.zeros(1, np.float32), np.zeros(1, np.float64)
    outs: list[np.ndarray] = [out_i, out_u, out_ull, out_f, out_d]
    devs = [to_device(a) for a in outs]
    coop.get_function("atomics_mix")(to_device(x), np.int64(n), *devs, grid=(40, 1), block=(96, 1, 1))
    got_i, got_u, got_ull, got_f, got_d = (from_device(d, a) for d, a in zip(devs, outs, strict=True))
    assert got_i.tolist() == [n, x.min(), x.max(), -n, (1 << 31) - 1, n % 2, 7]
    assert got_u.tolist() == [n % 10, (10 - n % 10) % 10]
    assert int(got_ull[0]) == int(x.astype(np.int64).sum()) % (1 << 64)
    assert int(got_ull[1]) == int(x.max()) + 1000
    assert got_f[0] == n and got_d[0] == x.astype(np.float64).sum()


def test_warp_shuffle_reduction(coop: pygpu.Module) -> None:
    x = np.random.default_rng(4).integers(-50, 50, 4 * 256).astype(np.float32)
    out = np.zeros(x.size // 32, np.float32)
    d_out = to_device(out)
    coop.get_function("warp_sum_f32")(to_device(x), d_out, grid=(4, 1), block=(256, 1, 1))
    np.testing.assert_array_equal(from_device(d_out, out), x.reshape(-1, 32).sum(axis=1))


def test_warp_shuffle_widths_and_votes(coop: pygpu.Module) -> None:
    threads = 64
    x = np.ones(threads, np.int32)
    x[5] = 0  # warp 0: not all positive
    x[32:] = 0
    x[40] = 1  # warp 1: one positive
    out = np.zeros(6 * threads, np.int32)
    d_out = to_device(out)
    coop.get_function("warp_lanes_i32")(to_device(x), d_out, grid=(1, 1), block=(threads, 1, 1))
    got = from_device(d_out, out).reshape(threads, 6)
    i = np.arange(threads)
    lane = i % 32
    np.testing.assert_array_equal(got[:, 0], i - lane % 8 + 3)
    np.testing.assert_array_equal(got[:, 1], np.where(lane >= 1, i - 1, i))
    np.testing.assert_array_equal(got[:, 2], i ^ 5)
    np.testing.assert_array_equal(got[:, 3], np.where(lane % 16 + 2 < 16, i + 2, i))
    ballots = np.array([sum(1 << b for b in range(32) if x[w * 32 + b] > 0) for w in range(2)], np.uint32)
    np.testing.assert_array_equal(got[:, 4].view(np.uint32), np.repeat(ballots, 32))
    np.testing.assert_array_equal(got[:, 5], np.repeat([0 + 2, 0 + 2], 32))


def test_shuffle_within_half_a_warp(coop: pygpu.Module) -> None:
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(128, np.int32)
    d_out = to_device(out)
    coop.get_function("half_warp_sum_i32")(to_device(x), d_out, grid=(1, 1), block=(64, 1, 1))
    got = from_device(d_out, out)
    assert got[:2].tolist() == [sum(range(16)), sum(range(32, 48))]
    assert got[64:][x % 32 >= 16].all()


def test_a_shuffle_not_reached_by_its_whole_mask_is_an_error(coop: pygpu.Module, backend: str) -> None:
    if backend != "host":
        pytest.skip("undefined on a GPU; only the host backend can report it")
    with pytest.raises(pygpu.CudaError, match=r"warp-synchronous .*not reached .* warp 0 of block \(0,0,0\)"):
        coop.get_function("divergent_shuffle")(to_device(np.zeros(32, np.int32)), grid=(1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("block", [(64, 1, 1), (8, 4, 2), (5, 3, 1), (32, 32, 1)])
def test_syncthreads_count_and_or(coop: pygpu.Module, block: tuple[int, int, int]) -> None:
    threads = block[0] * block[1] * block[2]
    for x in (np.ones(threads, np.int32), np.zeros(threads, np.int32), (np.arange(threads) % 3 == 0).astype(np.int32)):
        out = np.zeros(3, np.int32)
        d_out = to_device(out)
        coop.get_function("barrier_votes_i32")(to_device(x), d_out, grid=(2, 1), block=block)
        count = int((x > 0).sum())
        assert from_device(d_out, out).tolist() == [count, int(count == threads), int(count > 0)]


def test_vector_types(coop: pygpu.Module) -> None:
    x = np.arange(4 * 50, dtype=np.float32)
    d = to_device(x)
    coop.get_function("scale_float4")(d, np.int32(50), np.float32(2.0), grid=(2, 1), block=(32, 1, 1))
    np.testing.assert_array_equal(from_device(d, x), 2 * x)


def test_intrinsics(coop: pygpu.Module) -> None:
    u = np.array([0x00F0_1234, 0x8000_0003], np.uint32)
    f = np.array([2.5, 0.75], np.float32)
    out_u, out_f = np.zeros(9, np.uint32), np.zeros(9, np.float32)
    d_u, d_f = to_device(out_u), to_device(out_f)
    coop.get_function("intrinsics")(to_device(u), to_device(f), d_u, d_f, grid=(1, 1), block=(32, 1, 1))
    a, b = int(u[0]), int(u[1])
    brev = int(f"{a:032b}"[::-1], 2)
    mul24 = ((b & 0xFFFFFF) - (1 << 24) if b & 0x800000 else b & 0xFFFFFF) * 3 & 0xFFFFFFFF
    want_u = [a.bit_count(), 8, 3, brev, (a * b) >> 32, mul24, min(a, b), max(a, b), int(f.view(np.uint32)[0])]
    assert from_device(d_u, out_u).tolist() == want_u
    want_f = [1 / np.sqrt(2.5), 0.75, 0.0, 0.75, 2.5 / 0.75, np.sin(2.5), np.cos(2.5), 0.75, 2.5]
    np.testing.assert_allclose(from_device(d_f, out_f), np.array(want_f, np.float32), rtol=2e-6)


def test_device_printf(coop: pygpu.Module, capfd: pytest.CaptureFixture[str]) -> None:
    coop.get_function("say_hello")(np.int32(42), grid=(2, 1), block=(4, 1, 1))
    pygpu.cudaDeviceSynchronize()
    assert capfd.readouterr().out.count("hello from the device: 42") == 1


def test_a_barrier_waits_only_for_threads_that_have_not_exited(coop: pygpu.Module) -> None:
    # Threads 16-31 skip the barrier and exit; 0-15 wait at it. PTX's barrier.sync waits for the
    # non-exited threads, so a GPU completes this (real code relies on it: `if (i >= n) return;`
    # before a __syncthreads, PyNUFFT's loops with per-thread trip counts); the host must too.
    d = to_device(np.zeros(32, np.int32))
    coop.get_function("divergent_barrier")(d, grid=(2, 1), block=(32, 1, 1))
    assert from_device(d, np.zeros(32, np.int32)).tolist() == [1] * 32
    counted = SourceModule(
        r"""
        __global__ void k(int* out) {
          if (threadIdx.x >= 40) return;  // 40 of 64 threads stay, over two warps
          int n = __syncthreads_count(1);
          for (int i = 0; i < (threadIdx.x < 8 ? 3 : 1); ++i) __syncthreads();  // uneven counts
          out[threadIdx.x] = n;
        }"""
    ).get_function("k")
    out = gpuarray.zeros(64, np.int32)
    counted(out, block=(64, 1, 1), grid=(1, 1))
    assert out.get().tolist() == [40] * 40 + [0] * 24


def test_a_warp_operation_that_can_never_complete_is_an_error(backend: str) -> None:
    if backend != "host":
        pytest.skip("a GPU hangs here; only the host backend can report it")
    # Lanes 16-31 wait at __syncwarp for lanes 0-15, which wait at __syncthreads for them.
    deadlock = SourceModule(
        r"""
        __global__ void k(int* x) {
          if (threadIdx.x < 16) __syncthreads(); else __syncwarp();
          x[threadIdx.x] = 1;
        }"""
    ).get_function("k")
    d = gpuarray.zeros(32, np.int32)
    with pytest.raises(pygpu.CudaError, match=r"warp-synchronous .*warp 0 of block \([01],0,0\).*hang") as info:
        deadlock(d, grid=(2, 1), block=(32, 1, 1))
    assert "719" in str(info.value) or getattr(info.value, "code", 719) == 719
    # The backend is still usable afterwards.
    votes = pygpu.load_kernels("cooperation").get_function("barrier_votes_i32")
    out = to_device(np.zeros(32, np.int32))
    votes(to_device(np.ones(32, np.int32)), out, grid=(1, 1), block=(32, 1, 1))
    assert from_device(out, np.zeros(32, np.int32))[:3].tolist() == [32, 1, 1]


def test_ctrl_c_interrupts_a_long_host_launch_between_blocks(backend: str) -> None:
    if backend != "host":
        pytest.skip("GPU launches return at once; test_reliability covers Ctrl-C during a GPU wait")
    code = """
        import numpy as np, pygpu, sys
        spin = pygpu.load_kernels("cooperation").get_function("spin_every_block")
        print("ready", flush=True)
        try:
            # 100000 blocks of a few milliseconds each: minutes, unless interrupted.
            spin(np.int64(2_000_000), grid=(100_000, 1), block=(1, 1, 1))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
        print("not interrupted", flush=True)
    """
    # Within 10 s of the signal, or the helper fails the test.
    result = interrupt_python(code, after=0.5, timeout=10)
    assert result.returncode == 3 and "interrupted" in result.stdout, (result.stdout, result.stderr)


def test_launches_from_several_threads_at_once(coop: pygpu.Module) -> None:
    """Each launching thread has its own fibers and the blocks share one pool."""
    import threading

    x = np.random.default_rng(5).standard_normal(20_000)
    d_x = to_device(x)
    results: list[float] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            partial = np.zeros(16)
            d_partial = to_device(partial)
            for _ in range(5):
                coop.get_function("block_sum_f64")(d_x, d_partial, np.int64(x.size), grid=(16, 1), block=(128, 1, 1))
                results.append(float(from_device(d_partial, partial).sum()))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 15
    np.testing.assert_allclose(results, x.sum(), rtol=1e-12, atol=1e-12)


def test_a_forked_child_runs_multi_block_launches(backend: str) -> None:
    """The block pool's threads do not survive fork(): the child runs the blocks itself."""
    if backend != "host":
        pytest.skip("GPU backends refuse a forked child (test_reliability)")
    result = run_python(
        """
        import os, numpy as np, pygpu
        f = pygpu.load_kernels("cooperation").get_function("block_sum_f64")
        x = np.arange(10_000.0)
        d, p = pygpu.mem_alloc(x.nbytes), pygpu.mem_alloc(8 * 16)
        pygpu.memcpy_htod(d, x)
        f(d, p, np.int64(x.size), grid=(16, 1), block=(128, 1, 1))  # starts the pool
        pid = os.fork()
        if pid == 0:
            f(d, p, np.int64(x.size), grid=(16, 1), block=(128, 1, 1))
            r = np.zeros(16)
            pygpu.memcpy_dtoh(r, p)
            print("child", r.sum() == x.sum(), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "child True" in result.stdout
