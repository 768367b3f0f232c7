"""pygpu.driver under PyCUDA's other names: its exception classes, type names, peer copies and
the asynchronous 2-D memsets, as PyCUDA's example programs and tests use them."""

from __future__ import annotations

import numpy as np
import pygpu
import pygpu.driver as cuda
import pytest
from pygpu.compiler import SourceModule


def test_exception_names() -> None:
    assert issubclass(cuda.MemoryError, cuda.Error) and issubclass(cuda.MemoryError, MemoryError)
    assert cuda.RuntimeError is cuda.Error
    # examples/fill_gpu_with_nans.py: allocate until it fits, catching cuda.MemoryError.
    with pytest.raises(cuda.MemoryError):
        cuda.mem_alloc(1 << 62)
    assert issubclass(cuda.CompileError, cuda.RuntimeError)


def test_type_names() -> None:
    f = SourceModule("__global__ void k(int* x) { x[0] = 1; }").get_function("k")
    assert isinstance(f, cuda.Function) and cuda.Function is pygpu.Function
    assert isinstance(cuda.pagelocked_empty(4, np.float32).base, cuda.PagelockedHostAllocation)


@pytest.mark.parametrize("use_stream", [False, True])
def test_memcpy_peer(use_stream: bool) -> None:
    host = np.arange(64, dtype=np.uint8)
    src = cuda.to_device(host)
    dest = cuda.mem_alloc(64)
    context = cuda.Context.attach()
    if use_stream:
        stream = cuda.Stream()
        cuda.memcpy_peer_async(dest, int(src) + 8, 32, context, context, stream)
        stream.synchronize()
    else:
        cuda.memcpy_peer(dest, int(src) + 8, 32, dest_context=context, src_context=context)
    np.testing.assert_array_equal(cuda.from_device(dest, 32, np.uint8), host[8:40])
    with pytest.raises(TypeError, match="dest_context is a Device, a Context or an ordinal"):
        cuda.memcpy_peer(dest, src, 8, dest_context="device 0")


def test_memset_2d_async() -> None:
    device, pitch = cuda.mem_alloc_pitch(8, 2, 4)
    cuda.memset_d8(device, 0, pitch * 2)
    stream = cuda.Stream()
    cuda.memset_d2d8_async(device, pitch, 1, 2, 2, stream)
    cuda.memset_d2d16_async(int(device) + 2, pitch, 0x0202, 1, 2, stream)
    cuda.memset_d2d32_async(int(device) + 4, pitch, 0x03030303, 1, 2, stream)
    stream.synchronize()
    raw = cuda.from_device(device, (2, pitch), np.uint8)
    np.testing.assert_array_equal(raw[:, :8], [[1, 1, 2, 2, 3, 3, 3, 3]] * 2)
