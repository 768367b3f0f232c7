"""The memory-safety classes of issue 13, each tested as a class: zero-copy exports and free()
(use after free), exports of addresses outside pygpu allocations, host buffers holding Python
objects, DeviceArray_ after its host array changed in place, and what counts as an address.
Everything that would crash if it regressed runs in a subprocess or is refused before memory
is touched."""

from __future__ import annotations

import warnings

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pygpu
from conftest import run_python
from pygpu import driver as drv
from pygpu import gpuarray
from pygpu._pygpu import is_device_memory

SMALL = settings(max_examples=60, deadline=None)


# --- exports and free() --------------------------------------------------------------------


def _dlpack_consumer(g: gpuarray.GPUArray) -> Any:
    return gpuarray.from_dlpack(g.__dlpack__(max_version=(1, 0)))


def _legacy_dlpack_consumer(g: gpuarray.GPUArray) -> Any:
    return gpuarray.from_dlpack(g.__dlpack__())


def _raw_consumer(g: gpuarray.GPUArray) -> Any:
    """What a consumer of the raw-address interface of this backend keeps: numpy on the host
    backend (__array_interface__), the interface dict and its producer on a GPU."""
    if pygpu.backend() == "host":
        return np.asarray(g)
    return (g.__cuda_array_interface__, g)


def _view_kinds(g: gpuarray.GPUArray) -> list[gpuarray.GPUArray]:
    return [g, g[1:], g[::2], g.reshape(2, -1) if g.size % 2 == 0 else g]


CONSUMERS: list[Callable[[gpuarray.GPUArray], Any]] = [_dlpack_consumer, _legacy_dlpack_consumer, _raw_consumer]


@SMALL
@given(consumer=st.sampled_from(CONSUMERS), view=st.integers(0, 3), n=st.integers(2, 64))
def test_free_refuses_while_any_export_lives(consumer: Callable[[gpuarray.GPUArray], Any], view: int, n: int) -> None:
    g = gpuarray.to_gpu(np.arange(n, dtype=np.float32))
    allocation = g.gpudata
    exported = consumer(_view_kinds(g)[view])
    with pytest.raises(BufferError, match="zero-copy export"):
        allocation.free()
    assert not allocation.freed
    np.testing.assert_array_equal(g.get(), np.arange(n, dtype=np.float32))  # still usable
    del exported, g
    allocation.free()  # every consumer gone: free works
    assert allocation.freed


def test_dlpack_export_ends_with_its_consumer() -> None:
    """DLPack leases are exact: the consumer's deleter ends them, while the producer lives on."""
    g = gpuarray.to_gpu(np.arange(8, dtype=np.float64))
    tensor = _dlpack_consumer(g)
    with pytest.raises(BufferError):
        g.gpudata.free()
    del tensor
    g.gpudata.free()
    assert g.gpudata.freed


def test_unconsumed_dlpack_capsule_ends_its_export() -> None:
    g = gpuarray.to_gpu(np.arange(8, dtype=np.float64))
    capsule = g.__dlpack__(max_version=(1, 0))
    with pytest.raises(BufferError):
        g.gpudata.free()
    del capsule
    g.gpudata.free()


def test_use_after_free_through_exports_is_refused_in_a_subprocess() -> None:
    """Issue 13's reproducer: the write into freed memory must never happen."""
    result = run_python(
        """
        import numpy as np, pygpu
        from pygpu import gpuarray
        g = gpuarray.to_gpu(np.zeros(1 << 20, np.float32))
        h = np.asarray(g) if pygpu.backend() == "host" else gpuarray.from_dlpack(g.__dlpack__())
        try:
            g.gpudata.free()
        except BufferError:
            print("refused")
        if pygpu.backend() == "host":
            h[:] = 1
        """
    )
    assert result.returncode == 0 and "refused" in result.stdout, result.stderr


# --- exports of addresses outside pygpu allocations (host backend: the registry) ----------------


@pytest.mark.parametrize("address", [0xDEAD0000, 8, 2**48])
def test_exports_of_bogus_addresses_are_refused(address: int, backend: str) -> None:
    if backend != "host":
        pytest.skip("GPU backends cannot tell a bogus device address; the host backend checks its registry")
    g = gpuarray.GPUArray((10,), np.float32, gpudata=address)
    with pytest.raises(ValueError, match="not inside one live pygpu allocation"):
        np.asarray(g)
    with pytest.raises(ValueError, match="not inside one live pygpu allocation"):
        g.__dlpack__()

    class Foreign:
        __cuda_array_interface__ = {"shape": (10,), "typestr": "<f4", "data": (address, False), "version": 3}

    with pytest.raises(ValueError, match="not inside one live pygpu allocation"):
        gpuarray.asarray(Foreign())


@SMALL
@given(size=st.integers(1, 256), start=st.integers(-300, 300), length=st.integers(1, 300))
def test_export_spans_are_checked_against_the_allocation(size: int, start: int, length: int, backend: str) -> None:
    if backend != "host":
        pytest.skip("host backend registry")
    allocation = drv.mem_alloc(size)
    inside = 0 <= start and start + length <= size
    g = gpuarray.GPUArray((length,), np.uint8, gpudata=int(allocation) + start)
    if inside:
        assert np.asarray(g).shape == (length,)
    else:
        with pytest.raises(ValueError, match="not inside one live pygpu allocation"):
            np.asarray(g)
    assert is_device_memory(int(allocation) + start, length) is inside


def test_is_device_memory_says_none_where_it_cannot_tell(backend: str) -> None:
    a = drv.mem_alloc(64)
    address = int(a)
    expected = True if backend == "host" else None
    assert is_device_memory(address, 64) is expected
    a.free()
    assert is_device_memory(address, 64) is (False if backend == "host" else None)


# --- host buffers holding Python objects -----------------------------------------------------

OBJECT_BUFFERS: list[Callable[[], Any]] = [
    lambda: np.empty(4, object),
    lambda: np.empty(2, [("x", "f8"), ("y", object)]),
    lambda: np.empty(2, [("O", "f8"), ("inner", [("z", object)])]),
    lambda: memoryview(np.empty(4, object)),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("make", OBJECT_BUFFERS)
def test_buffers_of_python_objects_are_refused(make: Callable[[], Any]) -> None:
    a = drv.mem_alloc(64)
    drv.memset_d8(a, 0x41, 64)
    for call in (
        lambda: drv.memcpy_dtoh(make(), a),
        lambda: drv.memcpy_htod(a, make()),
        lambda: drv.Out(make()),
        lambda: drv.In(make()),
        lambda: drv.InOut(make()),
    ):
        with pytest.raises(TypeError, match="Python objects"):
            call()


def test_structured_dtypes_without_objects_still_copy() -> None:
    host = np.zeros(3, [("O", "f8"), ("n", "i4")])  # a field *named* O holds no object
    host["O"] = [1, 2, 3]
    a = drv.mem_alloc(host.nbytes)
    drv.memcpy_htod(a, host)
    back = np.empty_like(host)
    drv.memcpy_dtoh(back, a)
    np.testing.assert_array_equal(back, host)


# --- DeviceArray_ after its host array changed in place ---------------------------------------


@pytest.mark.parametrize("new_dtype", [np.int8, np.float32, np.complex128, np.uint64])
def test_device_array_refuses_a_host_array_whose_dtype_changed(new_dtype: Any) -> None:
    host = np.zeros(64, np.float64)
    d = pygpu.DeviceArray_float64(host)
    d.allocate()
    d.to_device()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy >= 2.5 deprecates it, still allows it
        host.dtype = new_dtype  # type: ignore[misc]  # numpy allows it; that is the point
    before = host.copy()
    with pytest.raises(TypeError, match="changed in place"):
        d.to_host()
    with pytest.raises(TypeError, match="changed in place"):
        d.to_device()
    np.testing.assert_array_equal(host, before)


def test_device_array_refuses_a_host_array_resized_in_place() -> None:
    host = np.arange(16, dtype=np.float64)
    d = pygpu.DeviceArray_float64(host)
    d.allocate()
    host.resize(64, refcheck=False)
    with pytest.raises(ValueError, match="resized in place"):
        d.to_host()
    host.resize(16, refcheck=False)
    assert d.to_device() == pygpu.cudaError(0)


def test_device_array_refuses_host_arrays_larger_than_memory() -> None:
    with pytest.raises(MemoryError, match="more than is available"):
        pygpu.DeviceArray_float64((1 << 50,))


# --- what is an address --------------------------------------------------------------------


def test_a_one_element_gpuarray_is_its_memory_not_its_value() -> None:
    other = gpuarray.zeros(4, np.float32)
    g = gpuarray.to_gpu(np.array([other.ptr], np.uint64))  # its value is another address
    drv.memcpy_htod(g, np.array([7], np.uint64))
    assert g.get().tolist() == [7]
    np.testing.assert_array_equal(other.get(), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="do not fit"):
        drv.memcpy_htod(g, np.zeros(2, np.uint64))
    out = np.zeros(1, np.uint64)
    drv.memcpy_dtoh(out, g)
    assert out.tolist() == [7]


def test_non_contiguous_gpuarrays_are_not_one_span() -> None:
    g = gpuarray.zeros(8, np.float32)[::2]
    with pytest.raises(ValueError, match="non-contiguous"):
        drv.memcpy_htod(g, np.zeros(4, np.float32))


class _IntOnly:
    def __int__(self) -> int:
        return 4096


class _IndexRaises:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __index__(self) -> int:
        raise self.error


@pytest.mark.parametrize("value", [1.5, np.float64(4096.0), _IntOnly(), "4096", None])
def test_values_without_index_are_not_addresses(value: Any) -> None:
    with pytest.raises(TypeError, match="expected a device pointer"):
        drv.memset_d8(value, 0, 0)


@pytest.mark.parametrize("error", [KeyboardInterrupt(), pygpu.InvalidHandleError("freed", 400), RuntimeError("x")])
def test_errors_raised_while_taking_an_address_keep_their_cause(error: BaseException) -> None:
    with pytest.raises(type(error)):
        drv.memset_d8(_IndexRaises(error), 0, 0)


def test_a_freed_allocation_behind_a_pointer_says_so() -> None:
    a = drv.mem_alloc(64)
    p = gpuarray.DevicePointer(a, 8, a)
    a.free()
    with pytest.raises(pygpu.InvalidHandleError, match="released"):
        drv.memset_d8(p, 0, 8)


@pytest.mark.parametrize("address", [-1, 2**64, -(2**63)])
def test_addresses_out_of_range_say_so(address: int) -> None:
    with pytest.raises(TypeError, match="non-negative 64-bit"):
        drv.memset_d8(address, 0, 1)


# --- graphs keep what they use, or refuse -----------------------------------------------------


def test_capturing_a_copy_of_pageable_host_memory_is_refused(backend: str) -> None:
    if backend != "host":
        pytest.skip("the host backend's graphs; CUDA's driver decides for itself")
    s = pygpu.cudaStream_t()
    a = drv.mem_alloc(64)
    s.begin_capture()
    try:
        with pytest.raises(pygpu.CudaError, match="pageable host memory cannot be captured"):
            drv.memcpy_htod(a, np.zeros(8), stream=s)
        with pytest.raises(pygpu.CudaError, match="pageable host memory cannot be captured"):
            drv.memcpy_dtoh(np.zeros(8), a, stream=s)
        pinned = pygpu.pagelocked_zeros((8,), np.float64)
        pinned[:] = 4
        drv.memcpy_htod(a, pinned, stream=s)  # page-locked memory can be captured
    finally:
        graph = s.end_capture()
    graph.instantiate().launch(s)
    pygpu.cudaStreamSynchronize(s)
    out = np.zeros(8)
    drv.memcpy_dtoh(out, a)
    assert out.tolist() == [4.0] * 8


def test_replaying_a_graph_whose_allocation_was_freed_is_refused(backend: str) -> None:
    if backend != "host":
        pytest.skip("the host backend checks its registry; on a GPU the fault is error 700")
    fill = pygpu.load_kernels("testing").get_function("fill_i32")
    d = drv.mem_alloc(1 << 20)
    s = pygpu.cudaStream_t()
    s.begin_capture()
    fill(d, np.int32(4), np.int32(7), block=4, stream=s)
    exec_ = s.end_capture().instantiate()
    exec_.launch(s)  # fine while d lives
    d.free()
    with pytest.raises(pygpu.CudaError, match="was freed before the graph was launched"):
        exec_.launch(s)


def test_a_stream_released_while_capturing_ends_its_capture() -> None:
    a = drv.mem_alloc(64)  # not inside a capture: cudaMalloc would end a GPU capture
    for _ in range(200):
        s = pygpu.cudaStream_t()
        s.begin_capture()
        drv.memset_d8(a, 1, 64, stream=s)
        del s  # released while capturing: nothing may stay behind (host: the recorded work)
    pygpu.cudaGetLastError()


def test_prepared_intp_parameters_take_arrays_by_address() -> None:
    """PyCUDA's idiom: prepare([np.intp, ...]) for a pointer, then pass a GPUArray."""
    fill = pygpu.load_kernels("testing").get_function("fill_i32")
    fill.prepare([np.intp, np.int32, np.int32])
    g = gpuarray.zeros(4, np.int32)
    one = gpuarray.to_gpu(np.array([5], np.int64))  # one element: still its address, not its value
    fill.prepared_call((1, 1), (4, 1, 1), g, 4, 7)
    assert g.get().tolist() == [7] * 4
    fill.prepared_call((1, 1), (1, 1, 1), one, 1, 9)
    assert one.get().view(np.int32)[0] == 9


def test_a_freed_array_as_a_kernel_argument_says_it_was_freed() -> None:
    fill = pygpu.load_kernels("testing").get_function("fill_i32")
    g = gpuarray.zeros(4, np.int32)
    g.gpudata.free()
    with pytest.raises(pygpu.InvalidHandleError, match="released"):
        fill(g, np.int32(4), np.int32(7), block=4)


@pytest.mark.parametrize("index", [(slice(None), slice(None, None, 2)), (slice(None, None, 2),)])
def test_view_of_an_empty_strided_array_changes_itemsize_as_numpy(index: tuple[slice, ...]) -> None:
    host = np.zeros((0, 4), np.float32)[index]
    g = gpuarray.zeros((0, 4), np.float32)[index]
    assert g.view(np.float64).shape == host.view(np.float64).shape


@pytest.mark.parametrize("layout", ["contiguous", "strided", "fortran"])
def test_set_inside_a_capture_replays_the_values(layout: str) -> None:
    """set() inside a stream capture goes through page-locked staging that the graph keeps,
    and writes a strided destination on the device: each replay writes the values again."""
    base = gpuarray.zeros((6, 8), np.float32)
    target = {"contiguous": base, "strided": base[::2, 1::3], "fortran": base.T}[layout]
    values = np.arange(target.size, dtype=np.float32).reshape(target.shape) + 1
    s = pygpu.cudaStream_t()
    s.begin_capture()
    try:
        target.set(values, stream=s)
    finally:
        graph = s.end_capture()  # a failed test leaves no capture open for the next ones
    assert not base.get().any()  # nothing ran while capturing
    exec_ = graph.instantiate()
    del graph
    import gc

    gc.collect()  # the instance alone keeps the staging alive
    for _ in range(2):
        exec_.launch(s)
        pygpu.cudaStreamSynchronize(s)
        np.testing.assert_array_equal(target.get(), values)
        base.fill(0)
