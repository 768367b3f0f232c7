"""Managed memory (pygpu.driver.managed_*): numpy arrays whose base is a ManagedAllocation,
passed to kernels by address, used as GPUArray gpudata and as copy endpoints; flags,
attach, free and the memory's lifetime."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import pygpu
import pygpu.driver as cuda
import pygpu.gpuarray as gpuarray
from pygpu.compiler import SourceModule

GLOBAL = cuda.mem_attach_flags.GLOBAL


@pytest.fixture(scope="module")
def scale() -> Any:
    """a[i] *= k for i < n."""
    mod = SourceModule(
        "__global__ void scale(int *a, int k, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; "
        "if (i < n) a[i] *= k; }"
    )
    return mod.get_function("scale")


def address(a: np.ndarray[Any, Any]) -> int:
    return int(a.__array_interface__["data"][0])


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.complex128])
def test_managed_arrays_are_numpy_arrays_over_a_managed_allocation(dtype: Any) -> None:
    a = cuda.managed_empty((3, 5), dtype, mem_flags=GLOBAL)
    assert isinstance(a, np.ndarray) and a.shape == (3, 5) and a.dtype == dtype
    assert isinstance(a.base, cuda.ManagedAllocation)
    assert a.base.nbytes == a.nbytes
    # One address for the host and the device.
    assert a.base.get_device_pointer() == address(a) == int(a.base) == a.base.ptr
    z = cuda.managed_zeros((4,), dtype)
    assert (z == 0).all() and isinstance(z.base, cuda.ManagedAllocation)


def test_orders_and_like_variants() -> None:
    f = cuda.managed_empty((2, 3), np.float64, order="F")
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    like = cuda.managed_zeros_like(np.ones((2, 3), order="F"))
    assert like.flags.f_contiguous and (like == 0).all() and like.dtype == np.float64
    empty_like = cuda.managed_empty_like(np.ones((7,), np.int16), mem_flags=cuda.mem_attach_flags.HOST)
    assert empty_like.shape == (7,) and empty_like.dtype == np.int16
    assert cuda.managed_zeros(0, np.float32).shape == (0,)
    with pytest.raises(ValueError, match="order"):
        cuda.managed_empty(3, np.float32, order="K")


@pytest.mark.parametrize("flags", [cuda.mem_attach_flags.SINGLE, 3, -1, "GLOBAL"])
def test_bad_allocation_flags_are_refused(flags: Any) -> None:
    with pytest.raises(ValueError, match="GLOBAL or HOST"):
        cuda.managed_empty(4, np.int32, mem_flags=flags)
    with pytest.raises((ValueError, TypeError, OverflowError)):
        cuda.ManagedAllocation(4, flags)


def test_impossible_sizes_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="more than an allocation can hold"):
        cuda.managed_empty((1 << 40, 1 << 30), np.float64)
    with pytest.raises(cuda.MemoryError):
        cuda.ManagedAllocation(1 << 62)
    with pytest.raises(OverflowError):
        cuda.ManagedAllocation(-1)


def test_zero_flags_mean_global() -> None:
    a = cuda.managed_zeros(4, np.int32, mem_flags=0)
    assert (a == 0).all()


def test_kernels_take_managed_arrays_views_and_allocations_by_address(scale: Any) -> None:
    a = cuda.managed_empty(10, np.int32, mem_flags=GLOBAL)
    a[:] = np.arange(10)
    scale(a, np.int32(2), np.int32(10), block=(16, 1, 1))
    cuda.Context.synchronize()
    assert (a == 2 * np.arange(10)).all()
    scale(a[4:], np.int32(3), np.int32(2), block=(16, 1, 1))  # a view starts at its own element
    scale(a.base, np.int32(-1), np.int32(1), block=(1, 1, 1))
    cuda.Context.synchronize()
    assert a.tolist() == [0, 2, 4, 6, 24, 30, 12, 14, 16, 18]
    scale.prepare("Pii")
    scale.prepared_call((1, 1), (16, 1, 1), a, 10, 10)
    scale.prepared_call((1, 1), (16, 1, 1), int(a.base.get_device_pointer()), 1, 10)
    cuda.Context.synchronize()
    assert a.tolist() == [0, 20, 40, 60, 240, 300, 120, 140, 160, 180]


def test_ordinary_numpy_arrays_are_still_refused_as_pointers(scale: Any) -> None:
    with pytest.raises(TypeError, match="not a device pointer"):
        scale(np.zeros(4, np.int32), np.int32(1), np.int32(4), block=(4, 1, 1))


def test_gpuarray_over_managed_memory_and_copies() -> None:
    a = cuda.managed_zeros(8, np.float32)
    a[:] = np.arange(8, dtype=np.float32)
    g = gpuarray.GPUArray(a.shape, a.dtype, gpudata=a.base)
    assert (g.get() == np.arange(8)).all()
    g.fill(np.float32(5))
    cuda.Context.synchronize()
    assert (a == 5).all()
    cuda.memcpy_htod(a.base, np.full(8, 7, np.float32))
    assert (a == 7).all()
    out = np.empty(8, np.float32)
    cuda.memcpy_dtoh(out, a.base)
    assert (out == 7).all()


def test_attach_checks_its_flags_and_stream() -> None:
    a = cuda.managed_zeros(16, np.uint8)
    stream = cuda.Stream()
    a.base.attach(cuda.mem_attach_flags.HOST)
    a.base.attach(cuda.mem_attach_flags.SINGLE, stream)
    a.base.attach(GLOBAL, stream)
    stream.synchronize()
    with pytest.raises(ValueError, match="stream"):
        a.base.attach(cuda.mem_attach_flags.SINGLE)
    with pytest.raises(ValueError, match="GLOBAL"):
        a.base.attach(3)
    with pytest.raises(TypeError):
        a.base.attach(GLOBAL, "not a stream")  # type: ignore[arg-type]


def test_free_ends_use_but_arrays_stay_valid(scale: Any) -> None:
    a = cuda.managed_zeros(4, np.int32)
    a[:] = [1, 2, 3, 4]
    allocation = a.base
    allocation.free()
    allocation.free()  # idempotent
    assert "freed" in repr(allocation)
    for use in (allocation.get_device_pointer, lambda: int(allocation), lambda: memoryview(allocation)):
        with pytest.raises(pygpu.InvalidHandleError, match="released"):
            use()
    with pytest.raises(pygpu.InvalidHandleError):
        scale(a, np.int32(2), np.int32(4), block=(4, 1, 1))
    with pytest.raises(pygpu.InvalidHandleError):
        allocation.attach(GLOBAL)
    # The array still owns readable memory: it goes with the array.
    assert a.tolist() == [1, 2, 3, 4]


@pytest.mark.device_free_memory
@pytest.mark.skipif(pygpu.backend() != "host", reason="the host backend counts managed memory exactly")
def test_memory_is_released_with_the_last_array() -> None:
    gc.collect()
    free_before, _ = cuda.mem_get_info()
    a = cuda.managed_empty(1 << 20, np.uint8)
    view = a[10:]
    assert cuda.mem_get_info()[0] == free_before - (1 << 20)
    a.base.free()
    del a
    gc.collect()
    assert cuda.mem_get_info()[0] == free_before - (1 << 20)  # the view still holds it
    del view
    gc.collect()
    assert cuda.mem_get_info()[0] == free_before


@pytest.mark.gpu
def test_managed_memory_on_the_gpu(scale: Any) -> None:
    """A kernel on a stream the memory is attached to, the host reading after synchronising."""
    if not cuda.Context.get_device().get_attribute(cuda.device_attribute.MANAGED_MEMORY):
        pytest.skip("the device has no managed memory")
    n = 1 << 20
    a = cuda.managed_empty(n, np.int32, mem_flags=cuda.mem_attach_flags.HOST)
    a[:] = np.arange(n, dtype=np.int32) % 1000
    stream = cuda.Stream()
    a.base.attach(cuda.mem_attach_flags.SINGLE, stream)
    scale(a, np.int32(3), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1), stream=stream)
    stream.synchronize()
    assert (a == 3 * (np.arange(n, dtype=np.int32) % 1000)).all()
