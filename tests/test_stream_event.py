"""Streams and events: life cycle, ordering, timing, misuse."""

from __future__ import annotations

import time

import numpy as np
import pytest

import pygpu
from conftest import run_python, run_threads


def test_stream_life_cycle() -> None:
    s = pygpu.cudaStream_t()
    assert s.flags == 0 and not s.closed
    assert int(s) == s.handle != 0
    assert s.__cuda_stream__() == (0, s.handle)
    assert pygpu.cudaStreamSynchronize(s) == 0
    assert pygpu.cudaStreamQuery(s) == 0
    s.close()
    assert s.closed
    s.close()  # idempotent
    with pytest.raises(pygpu.InvalidHandleError, match="released"):
        pygpu.cudaStreamSynchronize(s)
    with pytest.raises(pygpu.InvalidHandleError):
        _ = s.handle
    assert "closed" in repr(s)


def test_stream_destroy_function() -> None:
    s = pygpu.cudaStream_t(1)
    assert s.flags == 1
    assert pygpu.cudaStreamDestroy(s) == 0
    with pytest.raises(pygpu.InvalidHandleError):
        pygpu.cudaStreamDestroy(s)


@pytest.mark.parametrize("flags", [2, 7, 1 << 20])
def test_bad_stream_flags(flags: int) -> None:
    with pytest.raises(ValueError, match="cudaStreamNonBlocking"):
        pygpu.cudaStream_t(flags)


def test_negative_flags_are_type_errors() -> None:
    with pytest.raises(OverflowError):
        pygpu.cudaStream_t(-1)


def test_default_stream_is_none() -> None:
    assert pygpu.cudaStreamSynchronize() == 0
    assert pygpu.cudaStreamSynchronize(None) == 0
    assert pygpu.cudaStreamQuery(None) == 0


def test_wrong_argument_type() -> None:
    with pytest.raises(TypeError):
        pygpu.cudaStreamSynchronize(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pygpu.cudaEventRecord(pygpu.cudaStream_t())  # type: ignore[arg-type]


def test_event_timing_measures_host_side_work() -> None:
    start, end = pygpu.cudaEvent_t(), pygpu.cudaEvent_t()
    assert pygpu.cudaEventRecord(start) == 0
    host = np.arange(1 << 20, dtype=np.float64)
    dev = pygpu.mem_alloc(host.nbytes)
    for _ in range(5):
        pygpu.memcpy_htod(dev, host)
    time.sleep(0.01)
    assert pygpu.cudaEventRecord(end) == 0
    assert pygpu.cudaEventSynchronize(end) == 0
    assert pygpu.cudaEventQuery(end) == 0
    ms, err = pygpu.cudaEventElapsedTime(start, end)
    assert err == 0
    assert ms > 0.0
    back, err = pygpu.cudaEventElapsedTime(end, start)
    assert err == 0 and back == pytest.approx(-ms, rel=1e-3, abs=1e-3)


def test_event_on_stream_and_wait() -> None:
    s1, s2 = pygpu.cudaStream_t(), pygpu.cudaStream_t(1)
    ev = pygpu.cudaEvent_t()
    host = np.arange(4096, dtype=np.int32)
    a = pygpu.mem_alloc(host.nbytes)
    b = pygpu.mem_alloc(host.nbytes)
    pinned = pygpu.pagelocked_empty(host.shape, host.dtype)
    pinned[:] = host
    pygpu.memcpy_htod(a, pinned, stream=s1)
    assert pygpu.cudaEventRecord(ev, s1) == 0
    assert pygpu.cudaStreamWaitEvent(s2, ev) == 0
    pygpu.memcpy_dtod(b, a, stream=s2)
    out = pygpu.pagelocked_zeros(host.shape, host.dtype)
    pygpu.memcpy_dtoh(out, b, stream=s2)
    assert pygpu.cudaStreamSynchronize(s2) == 0
    np.testing.assert_array_equal(out, host)


def test_unrecorded_event_elapsed_is_an_error_status() -> None:
    a, b = pygpu.cudaEvent_t(), pygpu.cudaEvent_t()
    pygpu.cudaEventRecord(a)
    ms, err = pygpu.cudaEventElapsedTime(a, b)
    assert err != 0 and ms == 0.0
    pygpu.cudaGetLastError()


def test_timing_disabled_event() -> None:
    a, b = pygpu.cudaEvent_t(2), pygpu.cudaEvent_t(2)
    assert a.flags == 2
    pygpu.cudaEventRecord(a)
    pygpu.cudaEventRecord(b)
    pygpu.cudaEventSynchronize(b)
    _, err = pygpu.cudaEventElapsedTime(a, b)
    assert err == 400
    pygpu.cudaGetLastError()


def test_event_release() -> None:
    ev = pygpu.cudaEvent_t()
    assert pygpu.cudaEventDestroy(ev) == 0
    assert ev.closed
    with pytest.raises(pygpu.InvalidHandleError):
        pygpu.cudaEventRecord(ev)
    with pytest.raises(pygpu.InvalidHandleError):
        pygpu.cudaStreamWaitEvent(None, ev)
    with pytest.raises(ValueError, match="cudaEventDisableTiming"):
        pygpu.cudaEvent_t(8)


def test_stream_wait_event_flags_must_be_zero() -> None:
    with pytest.raises(ValueError):
        pygpu.cudaStreamWaitEvent(None, pygpu.cudaEvent_t(), 3)


def test_stream_of_another_device_is_refused() -> None:
    # The host backend can present several devices, which exercises the check on CI.
    result = run_python(
        """
        import pygpu
        assert pygpu.cudaGetDeviceCount() == (2, 0)
        s = pygpu.cudaStream_t()          # on device 0
        assert pygpu.cudaSetDevice(1) == 0
        try:
            pygpu.cudaStreamSynchronize(s)
        except ValueError as e:
            print("refused:", e)
        assert pygpu.cudaSetDevice(0) == 0
        assert pygpu.cudaStreamSynchronize(s) == 0
        """,
        env={"PYGPU_BACKEND": "host", "PYGPU_HOST_DEVICES": "2"},
    )
    assert result.returncode == 0, result.stderr
    assert "refused: this stream belongs to device 0, but device 1 is current" in result.stdout


def test_current_device_is_per_thread() -> None:
    result = run_python(
        """
        import threading, pygpu
        pygpu.cudaSetDevice(1)
        seen = []
        t = threading.Thread(target=lambda: seen.append(pygpu.cudaGetDevice()[0]))
        t.start(); t.join()
        print(seen[0], pygpu.cudaGetDevice()[0])
        """,
        env={"PYGPU_BACKEND": "host", "PYGPU_HOST_DEVICES": "2"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1"]


_EXCLUSIVE = r"""
extern "C" __global__ void exclusive(int* busy, int* overlaps, int spins) {
  // One thread notes whether another launch is inside at the same time, lingers, and leaves.
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    if (atomicAdd(busy, 1) != 0) atomicAdd(overlaps, 1);
    volatile int x = 0;
    for (int i = 0; i < spins; ++i) x = x + i;
    atomicSub(busy, 1);
  }
}
"""


@pytest.mark.parametrize("on", ["a new stream", "the legacy stream", "a graph replayed on a new stream"])
def test_launches_of_several_threads_on_one_stream_run_one_at_a_time(on: str) -> None:
    # A stream runs its work in order, whichever thread enqueued it. The host backend runs a
    # launch on the thread that makes it: it must still not overlap another thread's launch on
    # the same stream (kernels that share a buffer per stream, as the reductions' scratch, would
    # see each other's writes).
    from pygpu import gpuarray
    from pygpu.compiler import SourceModule

    kernel = SourceModule(_EXCLUSIVE, no_extern_c=True).get_function("exclusive")
    busy, overlaps = gpuarray.zeros(1, np.int32), gpuarray.zeros(1, np.int32)
    stream = None if on == "the legacy stream" else pygpu.cudaStream_t(1)
    spins = np.int32(300_000)  # long enough that another thread gets to launch meanwhile
    replay = None
    if on.startswith("a graph"):
        graph = pygpu.Graph()
        graph.add_kernel_node(kernel, busy, overlaps, spins, block=(1, 1, 1), grid=(1, 1))
        replay = graph.instantiate()

    def launch_many(_: int) -> None:
        for _ in range(30):
            if replay is not None:
                replay.launch(stream)
            else:
                kernel(busy, overlaps, spins, block=(1, 1, 1), grid=(1, 1), stream=stream)

    run_threads(launch_many, 4, switch_interval=1e-5)
    pygpu.cudaDeviceSynchronize()
    assert int(overlaps.get()[0]) == 0
    assert int(busy.get()[0]) == 0


_HELD = r"""
extern "C" __global__ void held(int* busy, const volatile int* release, long long limit) {
  // Stays inside until the host sets *release; `limit` clock64 ticks end it if none comes.
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    atomicAdd(busy, 1);
    long long start = clock64();
    while (*release == 0 && clock64() - start < limit) {
    }
    atomicSub(busy, 1);
  }
}
"""


def test_a_stream_is_busy_while_another_threads_launch_on_it_runs() -> None:
    # The host backend runs a launch on the thread that makes it; another thread must still see
    # the stream busy meanwhile, and its synchronize must wait for that launch, as on a GPU. The
    # kernel waits for a word the test sets, so no step here depends on how long anything takes.
    import threading

    from pygpu import gpuarray
    from pygpu.compiler import SourceModule

    kernel = SourceModule(_HELD, no_extern_c=True).get_function("held")
    busy, release = gpuarray.zeros(1, np.int32), gpuarray.zeros(1, np.int32)
    stream = pygpu.cudaStream_t(1)
    limit = np.int64(60_000_000_000)  # 60 s on the host (ns), about 30 s on a GPU (cycles)

    launcher = threading.Thread(
        target=lambda: kernel(busy, release, limit, block=(1, 1, 1), grid=(1, 1), stream=stream)
    )
    launcher.start()
    try:
        deadline = time.monotonic() + 30
        while int(busy.get()[0]) == 0 and time.monotonic() < deadline:
            pass
        assert int(busy.get()[0]) == 1, "the kernel was never seen running"
        assert pygpu.cudaStreamQuery(stream).name == "cudaErrorNotReady"
        releaser = threading.Timer(0.2, lambda: release.set(np.ones(1, np.int32)))
        releaser.start()
        assert pygpu.cudaStreamSynchronize(stream) == 0
        assert int(busy.get()[0]) == 0  # the wait ended with the launch, after the release
        assert int(release.get()[0]) == 1
        assert pygpu.cudaStreamQuery(stream) == 0
        releaser.join()
    finally:
        release.set(np.ones(1, np.int32))  # a failing test leaves no kernel spinning
        launcher.join()
