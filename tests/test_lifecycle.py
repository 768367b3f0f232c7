"""Deterministic release, flat memory over many cycles, clean interpreter exit."""

from __future__ import annotations

import gc
import resource

import numpy as np
import pytest

import pygpu
from conftest import run_python


def rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@pytest.mark.device_free_memory
def test_memory_is_released_with_the_last_reference() -> None:
    free_before = pygpu.mem_get_info()[0]
    block = pygpu.mem_alloc(64 << 20)
    assert pygpu.mem_get_info()[0] <= free_before - (64 << 20) + (2 << 20)
    del block
    assert pygpu.mem_get_info()[0] >= free_before - (2 << 20)


@pytest.mark.device_free_memory
def test_100k_allocate_free_cycles_keep_memory_flat() -> None:
    gc.collect()
    for _ in range(1000):  # warm up allocator caches
        pygpu.mem_alloc(4096)
    free_before = pygpu.mem_get_info()[0]
    rss_before = rss_kib()
    for i in range(100_000):
        a = pygpu.mem_alloc(4096 + (i & 255))
        del a
    free_after = pygpu.mem_get_info()[0]
    # Device memory: back to where it was (the driver may keep a page or two).
    assert abs(free_before - free_after) <= 2 << 20
    # Host memory: peak RSS grew by less than 16 MiB over 100k cycles.
    assert rss_kib() - rss_before < 16 * 1024


@pytest.mark.device_free_memory
def test_stream_event_and_array_cycles_do_not_leak_handles() -> None:
    pygpu.cudaGetLastError()  # what earlier tests left; the assertion below is about this loop
    free_before = pygpu.mem_get_info()[0]
    rss_before = rss_kib()
    host = np.zeros(16)
    for _ in range(20_000):
        s = pygpu.cudaStream_t()
        e = pygpu.cudaEvent_t()
        pygpu.cudaEventRecord(e, s)
        da = pygpu.DeviceArray_float64(host)
        da.allocate()
        da.to_device(s)
        del s, e, da
    assert abs(pygpu.mem_get_info()[0] - free_before) <= 2 << 20
    assert rss_kib() - rss_before < 16 * 1024
    assert pygpu.cudaGetLastError() == 0


def test_interpreter_exit_with_live_objects_is_clean() -> None:
    result = run_python(
        """
        import numpy as np, pygpu
        keep = [pygpu.mem_alloc(1 << 20), pygpu.cudaStream_t(), pygpu.cudaEvent_t(),
                pygpu.pagelocked_empty((1000,), np.float64)]
        da = pygpu.DeviceArray_float64(np.arange(10.0)); da.allocate(); da.to_device()
        s = pygpu.cudaStream_t(); pygpu.cudaEventRecord(keep[2], s)
        pygpu.memcpy_htod(keep[0], np.ones(100), stream=s)
        # A reduction's scratch, which the stream lets go only after its work.
        import pygpu.gpuarray as ga; total = ga.sum(ga.to_gpu(np.arange(300000.0)), stream=s)
        # Reference cycles reach the garbage collector at shutdown.
        cycle = [da]; cycle.append(cycle)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert result.stderr == ""


def test_destructor_errors_are_recorded_not_raised() -> None:
    # Closing explicitly and then dropping must not double-destroy or print anything.
    result = run_python(
        """
        import pygpu
        s = pygpu.cudaStream_t(); s.close(); del s
        e = pygpu.cudaEvent_t(); e.close(); del e
        a = pygpu.mem_alloc(10); a.free(); del a
        print(int(pygpu.cudaGetLastError()))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"
    assert result.stderr == ""


def test_100k_array_and_interop_cycles_keep_memory_flat(backend: str) -> None:
    host = np.arange(16, dtype=np.float32)
    for _ in range(1000):  # warm-up: caches, first-use allocations
        pygpu.to_gpu(host).get()
    gc.collect()
    # The pool's bytes in use, not the device's free memory: other processes (the GPU run's
    # client suites) allocate on the same device meanwhile.
    pool = pygpu.get_default_memory_pool()
    used_before = pool.used_bytes()
    rss_before = rss_kib()
    for i in range(100_000):
        g = pygpu.to_gpu(host)
        out = g.get()
        view = g[::2]
        kind = i % 3
        if kind == 0:
            interface = view.__cuda_array_interface__ if backend != "host" else view.__array_interface__
            assert interface["shape"] == (8,)
        elif kind == 1:
            again = pygpu.from_dlpack(g)  # export a capsule and consume it
            assert again.ptr == g.ptr
            del again
        else:
            capsule = g.__dlpack__()  # exported, never consumed: its deleter frees it
            del capsule
        del g, view, out
    gc.collect()
    assert pool.used_bytes() == used_before
    assert rss_kib() - rss_before < 16 * 1024


def test_20k_device_property_queries_keep_memory_flat() -> None:
    """On CUDA, 10k cudaDeviceProp(0) once grew host RSS by ~94 MiB (driver queries per call);
    the properties are now read once per device, and each object is freed with its last
    reference."""
    first = pygpu.cudaDeviceProp(0)
    for _ in range(1000):  # warm-up
        pygpu.cudaDeviceProp(0)
    gc.collect()
    rss_before = rss_kib()
    for _ in range(20_000):
        prop = pygpu.cudaDeviceProp(0)
    assert (prop.name, prop.uuid, prop.totalGlobalMem, prop.compute_capability) == (
        first.name,
        first.uuid,
        first.totalGlobalMem,
        first.compute_capability,
    )
    assert rss_kib() - rss_before < 4 * 1024
