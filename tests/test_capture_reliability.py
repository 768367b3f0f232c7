"""Stream capture (issue 13 item 2): a graph refuses to replay over an allocation its launches
use once that allocation was freed, on every backend (the check is in the runtime layer, on
the backend's identity of an allocation), and allocations made while capturing (staging for
a strided set) do not break the capture on a GPU."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pygpu
from pygpu import driver as drv
from pygpu import gpuarray


@pytest.fixture(scope="module")
def fill() -> pygpu.Function:
    return pygpu.load_kernels("testing").get_function("fill_i32")


def _mem_alloc() -> tuple[Any, Callable[[], None]]:
    d = drv.mem_alloc(4096)
    return d, d.free


def _pooled() -> tuple[Any, Callable[[], None]]:
    d = pygpu.pool_alloc(4096)
    return d, d.free


def _gpuarray() -> tuple[Any, Callable[[], None]]:
    g = gpuarray.zeros(1024, np.int32)
    return g, g.gpudata.free


@pytest.mark.parametrize("make", [_mem_alloc, _pooled, _gpuarray], ids=["mem_alloc", "pool_alloc", "GPUArray"])
def test_replay_after_a_used_allocation_was_freed_is_refused(
    fill: pygpu.Function, make: Callable[[], tuple[Any, Callable[[], None]]]
) -> None:
    target, free = make()
    s = pygpu.cudaStream_t()
    s.begin_capture()
    fill(target, np.int32(1024), np.int32(7), block=256, grid=(4, 1), stream=s)
    exec_ = s.end_capture().instantiate()
    exec_.launch(s)  # every allocation it uses lives: it runs
    pygpu.cudaStreamSynchronize(s)
    out = np.zeros(1024, np.int32)
    drv.memcpy_dtoh(out, target.ptr if isinstance(target, gpuarray.GPUArray) else target)
    assert (out == 7).all()
    free()
    with pytest.raises(pygpu.CudaError, match="was freed before the graph was launched"):
        exec_.launch(s)
    pygpu.cudaGetLastError()


def test_scalar_arguments_are_not_taken_for_allocations(fill: pygpu.Function) -> None:
    """An 8-byte scalar (here the kernel's long long count) is looked up as a possible
    address and found in no allocation: the replay is unaffected."""
    add = pygpu.load_kernels("testing").get_function("add_scalar_f64")
    g = gpuarray.zeros(64, np.float64)
    s = pygpu.cudaStream_t()
    s.begin_capture()
    add(g, np.int64(64), np.float64(2.0), block=64, stream=s)
    exec_ = s.end_capture().instantiate()
    for _ in range(3):
        exec_.launch(s)
    pygpu.cudaStreamSynchronize(s)
    assert g.get().tolist() == [6.0] * 64


def test_allocations_inside_a_capture_leave_it_capturing(fill: pygpu.Function) -> None:
    """cuMemAlloc and cuMemHostAlloc are prohibited on a thread that captures in CUDA's
    thread-local mode; pygpu relaxes the mode for the allocation alone, so work that needs
    memory while capturing (staging) neither fails nor ends the capture."""
    s = pygpu.cudaStream_t()
    s.begin_capture()
    try:
        d = drv.mem_alloc(4096)
        staging = pygpu.pagelocked_empty((1024,), np.int32)
        assert s.is_capturing
        fill(d, np.int32(1024), np.int32(3), block=256, grid=(4, 1), stream=s)
    finally:
        graph = s.end_capture()
    graph.instantiate().launch(s)
    pygpu.cudaStreamSynchronize(s)
    drv.memcpy_dtoh(staging, d)
    assert (staging == 3).all()
    assert pygpu.cudaGetLastError() == 0


@pytest.mark.parametrize("index", [(slice(None, None, 2), slice(1, None, 3)), (slice(None), slice(None, None, 2))])
def test_strided_set_and_fill_capture_and_replay(index: tuple[slice, ...]) -> None:
    """The strided set stages through a contiguous device copy allocated during the capture
    (on CUDA this was mem_alloc while capturing: cudaErrorStreamCaptureUnsupported)."""
    base = gpuarray.zeros((6, 8), np.float32)
    target = base[index]
    values = np.arange(target.size, dtype=np.float32).reshape(target.shape) - 5
    s = pygpu.cudaStream_t()
    s.begin_capture()
    target.set(values, stream=s)
    exec_ = s.end_capture().instantiate()
    gc.collect()
    for _ in range(2):
        base.fill(0)
        exec_.launch(s)
        pygpu.cudaStreamSynchronize(s)
        np.testing.assert_array_equal(target.get(), values)
    expected = np.zeros((6, 8), np.float32)
    expected[index] = values
    np.testing.assert_array_equal(base.get(), expected)


@pytest.mark.gpu
def test_replay_over_a_reused_address_is_refused_on_a_gpu(fill: pygpu.Function) -> None:
    """On a GPU the identity is the driver's buffer ID: an allocation that took the freed one's
    address (the pool hands the same block back) is another allocation, and the graph, which
    would write into it, is refused."""
    g = gpuarray.zeros(1024, np.int32)
    s = pygpu.cudaStream_t()
    s.begin_capture()
    fill(g, np.int32(1024), np.int32(7), block=256, grid=(4, 1), stream=s)
    exec_ = s.end_capture().instantiate()
    address = g.ptr
    g.gpudata.free()
    reused = [gpuarray.zeros(1024, np.int32) for _ in range(8)]
    if not any(r.ptr == address for r in reused):
        pytest.skip("the pool did not hand the freed address back")
    with pytest.raises(pygpu.CudaError, match="was freed before the graph was launched"):
        exec_.launch(s)
    assert all(not r.get().any() for r in reused)
