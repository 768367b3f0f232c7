"""Two CUDA GPUs: peer copies against numpy, kernels reading a peer's memory, IPC between two
processes on different GPUs, and arrays refusing the wrong device. Marked ``gpu`` (skipped on
the host backend); the two-GPU tests skip with their reason on a machine with one. The
backend-independent multi-device tests (test_multi_device.py) run on two GPUs as well."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from conftest import receive_from

import pygpu
import pygpu.driver as cuda
from pygpu.gpuarray import GPUArray

N_DEVICES = pygpu.cudaGetDeviceCount()[0]
two_gpus = pytest.mark.skipif(N_DEVICES < 2, reason=f"needs 2 GPUs, this machine has {N_DEVICES}")
pytestmark = pytest.mark.gpu

spawn = multiprocessing.get_context("spawn")
IPC_TIMEOUT = 120


@pytest.fixture
def peer_access() -> Iterator[bool]:
    """Peer access both ways where the GPUs allow it (NVLink or PCIe P2P); off again after."""
    d0, d1 = cuda.Device(0), cuda.Device(1)
    can = d0.can_access_peer(d1) and d1.can_access_peer(d0)
    contexts = [d0.retain_primary_context(), d1.retain_primary_context()]
    if can:
        for here, there in ((0, 1), (1, 0)):
            with pygpu.Device(here):
                cuda.Context.enable_peer_access(contexts[there])
    yield can
    if can:
        for here, there in ((0, 1), (1, 0)):
            with pygpu.Device(here):
                cuda.Context.disable_peer_access(contexts[there])


@two_gpus
@pytest.mark.parametrize("with_access", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int8])
@pytest.mark.parametrize("n", [1, 4097, 1 << 22])
def test_peer_copies_match_numpy(request: pytest.FixtureRequest, with_access: bool, dtype: Any, n: int) -> None:
    if with_access and not request.getfixturevalue("peer_access"):
        pytest.skip("these GPUs cannot access each other")
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 100).astype(dtype)
    a = pygpu.to_gpu(x)
    b = a.copy_to(1)
    assert b.device == 1
    with pygpu.Device(1):
        np.testing.assert_array_equal(b.get(), x)
        c = b * 2
    back = c.copy_to(0)
    np.testing.assert_array_equal(back.get(), x * 2)
    raw = cuda.mem_alloc(x.nbytes)
    cuda.memcpy_peer(raw, b.gpudata, x.nbytes)
    out = np.empty_like(x)
    cuda.memcpy_dtoh(out, raw)
    np.testing.assert_array_equal(out, x)


@two_gpus
def test_a_kernel_reads_and_writes_a_peers_memory(peer_access: bool) -> None:
    if not peer_access:
        pytest.skip("these GPUs cannot access each other")
    with pygpu.Device(1):
        on1 = pygpu.to_gpu(np.arange(1000.0))
    add = pygpu.load_kernels("testing").get_function("add_scalar_f64")
    # The kernel runs on device 0 and addresses device 1's memory directly.
    add(on1.gpudata, np.int64(1000), np.float64(0.5), block=(256, 1, 1), grid=(4, 1))
    cuda.Context.synchronize()
    with pygpu.Device(1):
        np.testing.assert_array_equal(on1.get(), np.arange(1000.0) + 0.5)


@two_gpus
def test_async_peer_copy_is_ordered_by_events() -> None:
    n = 1 << 20
    a = pygpu.to_gpu(np.arange(n, dtype=np.float32))
    s0 = cuda.Stream()
    with pygpu.Device(1):
        dst = cuda.mem_alloc(a.nbytes)
    cuda.memcpy_peer_async(dst, a.gpudata, a.nbytes, stream=s0)
    done = cuda.Event(cuda.event_flags.DISABLE_TIMING).record(s0)
    with pygpu.Device(1):
        s1 = cuda.Stream()
        s1.wait_for_event(done)
        b = GPUArray((n,), np.float32, gpudata=dst)
        b += 1  # on device 1's legacy default stream, after s1's wait (s1 is a blocking stream)
        s1.synchronize()
        np.testing.assert_array_equal(b.get(), np.arange(n, dtype=np.float32) + 1)


@two_gpus
def test_the_wrong_device_is_refused_on_cuda() -> None:
    with pygpu.Device(1):
        on1 = pygpu.to_gpu(np.ones(8))
        s1 = cuda.Stream()
    add = pygpu.load_kernels("testing").get_function("add_scalar_f64")
    with pytest.raises(ValueError, match=r"device 1\b.* device 0\b"):
        on1 + on1
    with pytest.raises(ValueError, match="belongs to device 1, but device 0 is current"):
        add(on1, np.int64(8), np.float64(1), block=(8, 1, 1), grid=(1, 1), stream=s1)
    with pygpu.Device(1):
        with pytest.raises(ValueError, match="loaded on device 0, but device 1 is current"):
            add(on1, np.int64(8), np.float64(1), block=(8, 1, 1), grid=(1, 1))
    with pytest.raises(ValueError, match="memory of device 1, but the copy names device 0"):
        cuda.memcpy_peer(cuda.mem_alloc(8), on1.gpudata, 8, src_context=cuda.Device(0))


def test_pool_memory_cannot_be_exported_and_says_what_can() -> None:
    if not pygpu.get_default_memory_pool().enabled:
        pytest.skip("PYGPU_MEMORY_POOL=0: pooled memory is plain cuMemAlloc, which can be exported")
    with pytest.raises(pygpu.CudaError, match="mem_alloc"):
        cuda.mem_get_ipc_handle(pygpu.zeros(256).gpudata)


def _gpu_reader(memory_handle: bytes, event_handle: bytes, n: int, results: Any) -> None:
    """In another process: waits (on a stream of device 1, the event's) for the writer's kernel,
    then on device 0 reads its array through IPC, adds one and says so with its own IPC event."""
    with pygpu.Device(1):
        waiting = cuda.Stream()
        waiting.wait_for_event(cuda.Event.from_ipc_handle(event_handle))
        waiting.synchronize()
    shared = cuda.IPCMemoryHandle(memory_handle)  # LAZY_ENABLE_PEER_ACCESS: device 0 may address it
    array = GPUArray((n,), np.float64, gpudata=shared)
    seen = array.get()
    array += 1
    mine = cuda.Event(cuda.event_flags.INTERPROCESS | cuda.event_flags.DISABLE_TIMING).record()
    cuda.Context.synchronize()
    results.put((float(seen.sum()), mine.ipc_handle()))
    results.get(timeout=IPC_TIMEOUT)  # stay alive until the writer has waited on our event
    shared.close()


@two_gpus
def test_ipc_between_processes_on_different_gpus() -> None:
    if not cuda.Device(0).can_access_peer(cuda.Device(1)):
        pytest.skip("the reader on device 0 maps device 1's memory, which needs peer access")
    n = 1 << 16
    with pygpu.Device(1):
        memory = cuda.mem_alloc(n * 8)
        array = GPUArray((n,), np.float64, gpudata=memory)
        array.fill(1.0)
        array *= 3  # a kernel: the reader must wait for it through the event
        written = cuda.Event(cuda.event_flags.INTERPROCESS | cuda.event_flags.DISABLE_TIMING).record()
        handle, event_handle = cuda.mem_get_ipc_handle(memory), written.ipc_handle()
    results = spawn.Queue()
    reader = spawn.Process(target=_gpu_reader, args=(handle, event_handle, n, results))
    reader.start()
    try:
        seen_sum, reader_event = receive_from(results, reader, IPC_TIMEOUT)
        # The reader's event is of its device 0: waited for on a stream of device 0 here.
        cuda.Stream().wait_for_event(cuda.Event.from_ipc_handle(reader_event))
        cuda.Context.synchronize()
        with pygpu.Device(1):
            np.testing.assert_array_equal(array.get(), np.full(n, 4.0))
        results.put("done")
    finally:
        reader.join(IPC_TIMEOUT)
    assert reader.exitcode == 0
    assert seen_sum == 3.0 * n
