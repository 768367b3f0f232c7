"""Several devices in one process, and device memory and events shared between processes.

The tests that need two devices run wherever the process has them (two GPUs, or the host
backend with PYGPU_HOST_DEVICES=2); on a one-device host backend
``test_two_host_devices`` runs this file again in a process with two host devices, since
the backend and its devices are fixed once per process.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from conftest import receive_from

import pygpu
import pygpu.driver as cuda
from pygpu.gpuarray import GPUArray

N_DEVICES = pygpu.cudaGetDeviceCount()[0]
two_devices = pytest.mark.skipif(N_DEVICES < 2, reason=f"needs 2 devices, this process has {N_DEVICES}")

# multiprocessing's spawn starts a fresh interpreter (a forked child must not touch the
# parent's devices), which imports this module by name from the parent's sys.path.
spawn = multiprocessing.get_context("spawn")
IPC_TIMEOUT = 60


def test_two_host_devices(backend: str) -> None:
    if backend != "host" or N_DEVICES >= 2:
        pytest.skip("runs this file again in a process with two host devices (here it runs directly)")
    env = dict(os.environ, PYGPU_BACKEND="host", PYGPU_HOST_DEVICES="2")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # Every test ran there but this one, which skips itself.
    assert re.search(r"\d+ passed, 1 skipped in", result.stdout), result.stdout[-2000:]


# ---------------------------------------------------------------- one process, several devices


@two_devices
def test_with_device_switches_and_restores_the_current_device() -> None:
    assert pygpu.cudaGetDevice()[0] == 0
    with pygpu.Device(1) as dev:
        assert dev.ordinal == 1 and pygpu.cudaGetDevice()[0] == 1
        with pygpu.Device(0):
            assert pygpu.cudaGetDevice()[0] == 0
        assert pygpu.cudaGetDevice()[0] == 1
        a = pygpu.zeros(3)
        s = cuda.Stream()
        m = pygpu.mem_alloc(16)
    assert pygpu.cudaGetDevice()[0] == 0
    assert (a.device, s.device, m.device) == (1, 1, 1)
    assert pygpu.zeros(3).device == 0


@two_devices
def test_the_device_is_restored_when_the_block_raises() -> None:
    with pytest.raises(KeyError):
        with pygpu.Device(1):
            raise KeyError("x")
    assert pygpu.cudaGetDevice()[0] == 0


@two_devices
def test_operations_run_on_the_arrays_device() -> None:
    x = np.arange(10.0)
    with pygpu.Device(1):
        a = pygpu.to_gpu(x)
        b = a * 2 + 1
        total = pygpu.sum(b).get()
        rolled = pygpu.concatenate([a, b])
    assert b.device == 1 and rolled.device == 1
    np.testing.assert_array_equal(b.get(), x * 2 + 1)
    assert total == (x * 2 + 1).sum()
    np.testing.assert_array_equal(rolled.get(), np.concatenate([x, x * 2 + 1]))


@two_devices
def test_operations_on_either_device_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import pygpu.elementwise
    from pygpu import cumath
    from pygpu.gpuarray import _elementwise

    x = np.arange(6.0)
    a0 = pygpu.to_gpu(x)
    with pygpu.Device(1):
        a1 = pygpu.to_gpu(x * 2)
    twice = pygpu.elementwise.ElementwiseKernel("double *z, const double *x", "z[i] = 2 * x[i]", "twice_into")

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(_elementwise, "launch", general)
    monkeypatch.setattr(pygpu.elementwise, "pack_arguments", general)
    for _ in range(2):  # alternating: each device finds its own kernel
        np.testing.assert_array_equal((a0 + a0).get(), 2 * x)
        with pygpu.Device(1):
            np.testing.assert_array_equal((a1 + a1).get(), 4 * x)
            np.testing.assert_allclose(cumath.exp(a1).get(), np.exp(2 * x))
    z0 = pygpu.zeros(6)
    twice(z0, a0)
    np.testing.assert_array_equal(z0.get(), 2 * x)


@two_devices
def test_arrays_of_another_device_are_refused_naming_both_devices() -> None:
    with pygpu.Device(1):
        a = pygpu.to_gpu(np.arange(4.0))
    b = pygpu.zeros(4)
    for operation in (lambda: a + 1, lambda: a + b, lambda: pygpu.sum(a), lambda: pygpu.dot(a, a), a.copy):
        with pytest.raises(ValueError, match=r"device 1\b.* device 0\b"):
            operation()
    with pytest.raises(ValueError, match="cannot copy between devices"):
        b[:] = a
    np.testing.assert_array_equal(b.get(), np.zeros(4))


@two_devices
def test_a_kernel_of_another_device_is_refused() -> None:
    mod = pygpu.load_kernels("testing")
    f = mod.get_function("add_scalar_f64")
    a = pygpu.to_gpu(np.zeros(4))
    with pygpu.Device(1):
        s1 = cuda.Stream()
        with pytest.raises(ValueError, match="loaded on device 0, but device 1 is current"):
            f(a, np.int64(4), np.float64(1.0), block=(32, 1, 1), grid=(1, 1))
        with pytest.raises(ValueError, match="loaded on device 0, but device 1 is current"):
            f(a, np.int64(4), np.float64(1.0), block=(32, 1, 1), grid=(1, 1), stream=s1)
    with pytest.raises(ValueError, match="this stream belongs to device 1, but device 0 is current"):
        f(a, np.int64(4), np.float64(1.0), block=(32, 1, 1), grid=(1, 1), stream=s1)
    f(a, np.int64(4), np.float64(1.0), block=(32, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(a.get(), np.ones(4))


@two_devices
def test_a_stream_of_another_device_is_refused() -> None:
    with pygpu.Device(1):
        s1 = cuda.Stream()
    a = pygpu.to_gpu(np.arange(3.0))
    with pytest.raises(ValueError, match="belongs to device 1, but device 0 is current"):
        a.get(stream=s1)
    with pytest.raises(ValueError, match="belongs to device 1, but device 0 is current"):
        pygpu.to_gpu_async(np.arange(3.0), stream=s1)


@two_devices
def test_peer_access_is_enabled_once_and_disabled_once() -> None:
    d0, d1 = cuda.Device(0), cuda.Device(1)
    assert d0.can_access_peer(d1) == d1.can_access_peer(d0)
    if not d0.can_access_peer(d1):
        pytest.skip("these devices cannot access each other")
    c0, c1 = d0.retain_primary_context(), d1.retain_primary_context()
    c0.enable_peer_access(c1)  # PyCUDA's: from the current context (device 0)
    with pytest.raises(pygpu.CudaError, match="already enabled"):
        cuda.Context.enable_peer_access(c1)
    with pygpu.Device(1):
        with pytest.raises(pygpu.CudaError, match="not been enabled"):
            cuda.Context.disable_peer_access(c0)  # 1 -> 0 was never enabled
    c0.disable_peer_access(d1)
    with pytest.raises(pygpu.CudaError, match="not been enabled"):
        c0.disable_peer_access(c1)
    assert pygpu.cudaDeviceEnablePeerAccess(1) == 0 and pygpu.cudaDeviceDisablePeerAccess(1) == 0
    assert pygpu.cudaDeviceEnablePeerAccess(0) == 101, "a device is not its own peer"
    assert pygpu.cudaGetDevice()[0] == 0


@two_devices
@pytest.mark.parametrize("asynchronous", [False, True])
def test_memcpy_peer_copies_between_devices(asynchronous: bool) -> None:
    x = np.random.default_rng(5).standard_normal(1000)
    src = cuda.mem_alloc(x.nbytes)
    cuda.memcpy_htod(src, x)
    with pygpu.Device(1):
        dst = cuda.mem_alloc(x.nbytes)
        stream = cuda.Stream()
        if asynchronous:
            cuda.memcpy_peer_async(dst, src, x.nbytes, stream=stream)
            stream.synchronize()
    if not asynchronous:
        cuda.memcpy_peer(dst, src, x.nbytes)
    out = np.empty_like(x)
    cuda.memcpy_dtoh(out, dst)
    np.testing.assert_array_equal(out, x)
    # Contexts name the devices of plain addresses; a wrong one is refused.
    cuda.memcpy_peer(int(src), int(dst), 8, dest_context=cuda.Device(0), src_context=cuda.Device(1))
    with pytest.raises(ValueError, match="memory of device 1, but the copy names device 0"):
        cuda.memcpy_peer(dst, src, 8, dest_context=cuda.Device(0))
    with pytest.raises(ValueError, match="do not fit"):
        cuda.memcpy_peer(dst, src, x.nbytes + 8)


@two_devices
@pytest.mark.parametrize("layout", ["contiguous", "strided", "fortran", "empty"])
def test_copy_to_gives_the_same_values_on_the_other_device(layout: str) -> None:
    x = np.arange(60, dtype=np.float32).reshape(6, 10)
    with pygpu.Device(1):
        a = pygpu.to_gpu(np.asfortranarray(x) if layout == "fortran" else x)
    view = {"contiguous": a, "strided": a[::2, 1::3], "fortran": a, "empty": a[:0]}[layout]
    b = view.copy_to(0)
    assert b.device == 0 and b.flags.c_contiguous and b.shape == view.shape
    with pygpu.Device(1):
        expected = view.get()
    np.testing.assert_array_equal(b.get(), expected)
    np.testing.assert_array_equal((b + 1).get(), expected + 1)
    back = b.copy_to(cuda.Device(1))
    assert back.device == 1
    np.testing.assert_array_equal(back.get(), expected)


@two_devices
def test_copy_to_on_a_stream_of_the_source_device() -> None:
    with pygpu.Device(1):
        a = pygpu.to_gpu(np.arange(100.0))
        s1 = cuda.Stream()
        b = a.copy_to(0, stream=s1)
        s1.synchronize()
    np.testing.assert_array_equal(b.get(), np.arange(100.0))
    s0 = cuda.Stream()
    with pytest.raises(ValueError, match="a stream of that device"):
        a.copy_to(0, stream=s0)
    with pytest.raises(ValueError, match="no device 7"):
        a.copy_to(7)


@two_devices
def test_the_pool_caches_per_device() -> None:
    pool = pygpu.get_default_memory_pool()
    pool.free_all_blocks()
    with pygpu.Device(1):
        a = pygpu.empty(1000, np.float64)
        address = a.ptr
        del a
        b = pygpu.empty(1000, np.float64)
        if pygpu.backend() == "host":  # a GPU's stream-ordered pool may choose another block
            assert b.ptr == address, "device 1 reuses its own cached block"
    c = pygpu.empty(1000, np.float64)
    assert (b.device, c.device) == (1, 0) and c.ptr != b.ptr


# ---------------------------------------------------------------- across processes


def _reader(memory_handle: bytes, event_handle: bytes, n: int, results: Any) -> None:
    """In another process: waits for the writer's event, reads its array, writes back."""
    stream = cuda.Stream()
    stream.wait_for_event(cuda.Event.from_ipc_handle(event_handle))
    shared = cuda.IPCMemoryHandle(memory_handle)
    seen = np.empty(n)
    cuda.memcpy_dtoh(seen, shared)
    array = GPUArray((n,), np.float64, gpudata=shared)
    array *= 2
    array += 1
    cuda.Context.synchronize()
    results.put(seen.tolist())
    shared.close()


def test_another_process_reads_and_writes_the_same_device_memory() -> None:
    n = 512
    x = np.arange(n, dtype=np.float64)
    memory = cuda.mem_alloc(x.nbytes)
    cuda.memcpy_htod(memory, x[: n // 2])  # before the handle is made ...
    handle = cuda.mem_get_ipc_handle(memory)
    cuda.memcpy_htod(int(memory) + x.nbytes // 2, x[n // 2 :])  # ... and after
    event = cuda.Event(cuda.event_flags.INTERPROCESS | cuda.event_flags.DISABLE_TIMING).record()
    assert cuda.mem_get_ipc_handle(memory) == handle, "one allocation, one handle"
    results = spawn.Queue()
    reader = spawn.Process(target=_reader, args=(handle, event.ipc_handle(), n, results))
    reader.start()
    try:
        seen = receive_from(results, reader, IPC_TIMEOUT)
    finally:
        reader.join(IPC_TIMEOUT)
    assert reader.exitcode == 0
    np.testing.assert_array_equal(seen, x)
    out = np.empty_like(x)
    cuda.memcpy_dtoh(out, memory)
    np.testing.assert_array_equal(out, 2 * x + 1)


def _open_and_report(handle: bytes, results: Any) -> None:
    try:
        cuda.IPCMemoryHandle(handle)
        results.put("opened")
    except pygpu.CudaError as e:
        results.put(str(e))


def test_a_handle_of_freed_memory_is_refused_in_the_other_process(backend: str) -> None:
    if backend != "host":
        pytest.skip("what a GPU driver answers for freed memory is its own")
    memory = cuda.mem_alloc(4096)
    handle = cuda.mem_get_ipc_handle(memory)
    memory.free()
    results = spawn.Queue()
    other = spawn.Process(target=_open_and_report, args=(handle, results))
    other.start()
    try:
        answer = receive_from(results, other, IPC_TIMEOUT)
    finally:
        other.join(IPC_TIMEOUT)
    assert "exited or freed the allocation" in answer


def test_ipc_refuses_pool_memory_and_events_made_without_the_flag() -> None:
    with pytest.raises(pygpu.CudaError, match="pool"):
        cuda.mem_get_ipc_handle(pygpu.zeros(16).gpudata)
    with pytest.raises(pygpu.CudaError):
        cuda.Event(cuda.event_flags.DISABLE_TIMING).ipc_handle()
    with pytest.raises(ValueError, match="together with DISABLE_TIMING"):
        cuda.Event(cuda.event_flags.INTERPROCESS)
    with pytest.raises(ValueError, match="64 bytes"):
        cuda.Event.from_ipc_handle(b"abc")


def test_ipc_memory_can_back_a_gpuarray_made_with_mem_alloc() -> None:
    a = GPUArray((8,), np.float32, allocator=cuda.mem_alloc)
    a.fill(3)
    handle = cuda.mem_get_ipc_handle(a.gpudata)
    assert len(handle) == 64
    np.testing.assert_array_equal(a.get(), np.full(8, 3, np.float32))


def test_pygpu_exports_the_multi_device_names() -> None:
    from pygpu._driver import devices

    assert set(devices.__all__) <= set(pygpu.__all__)
    assert pygpu.Device is cuda.Device and pygpu.memcpy_peer is cuda.memcpy_peer
    assert {"Device", "memcpy_peer", "memcpy_peer_async", "cudaMemcpyPeer"} <= set(pygpu.__all__)


@two_devices
def test_the_peer_copy_benchmark_measures_and_checks_its_copies() -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    import peer_copy

    figures = peer_copy.measure(1, 0, 1 << 16, samples=1, reps=1, cu=None)
    assert set(figures) == {"pygpu", "pygpu copy_to"} and all(v > 0 for v in figures.values())


@two_devices
def test_random_numbers_and_generated_kernels_refuse_arrays_of_another_device() -> None:
    from pygpu.curandom import XORWOWRandomNumberGenerator
    from pygpu.elementwise import ElementwiseKernel

    with pygpu.Device(1):
        a = pygpu.zeros(16, np.float32)
    with pytest.raises(ValueError, match="arrays on device 1 used while device 0 is current"):
        XORWOWRandomNumberGenerator().fill_uniform(a)
    twice = ElementwiseKernel("float *x", "x[i] = 2 * x[i]", "twice")
    with pytest.raises(ValueError, match="arrays on device 1 used while device 0 is current"):
        twice(a)
    with pygpu.Device(1):
        XORWOWRandomNumberGenerator().fill_uniform(a)
        assert 0 < float(pygpu.sum(a).get()) < 16


@two_devices
def test_host_transfers_run_on_the_arrays_device_and_fills_are_refused() -> None:
    with pygpu.Device(1):
        a = pygpu.zeros((3, 4), np.float64)
    a.set(np.ones((3, 4)))  # from device 0: the copy runs on device 1
    np.testing.assert_array_equal(a.get(), np.ones((3, 4)))
    np.testing.assert_array_equal(a[:, ::2].get(), np.ones((3, 2)))
    assert pygpu.cudaGetDevice()[0] == 0
    with pytest.raises(ValueError, match="arrays on device 1 used while device 0 is current"):
        a.fill(2.0)
    with pytest.raises(ValueError, match="arrays on device 1 used while device 0 is current"):
        a[...] = a
