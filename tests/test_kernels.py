"""Loading and launching kernels: the bundled kernels against numpy, every argument kind,
prepared calls, streams, graphs, and the error cases. Runs on every backend."""

from __future__ import annotations

import inspect
import sys

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pygpu
from pygpu._toolchain import bundled_kernels


@pytest.fixture(scope="module")
def testing() -> pygpu.Module:
    return pygpu.load_kernels("testing")


@pytest.fixture(scope="module")
def undeclared() -> pygpu.Module:
    """The testing kernels loaded without their declarations, as a module loaded from a
    binary alone is: launches are checked by parameter size only, as PyCUDA's are not."""
    from pygpu._toolchain.bundled_kernels import _load_kernels

    return _load_kernels("testing")


@pytest.fixture(scope="module")
def burgers() -> pygpu.Module:
    return pygpu.load_kernels("burgers")


def to_device(a: np.ndarray) -> pygpu.DeviceAllocation:
    d = pygpu.mem_alloc(a.nbytes)
    pygpu.memcpy_htod(d, np.ascontiguousarray(a))
    return d


def from_device(d: pygpu.DeviceAllocation, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    pygpu.memcpy_dtoh(out, d)
    return out


# --- every bundled kernel against numpy ------------------------------------------


@pytest.mark.parametrize("grid, block", [(1, 1), (3, 64), (64, 256)])
def test_add_scalar(testing: pygpu.Module, grid: int, block: int) -> None:
    x = np.random.default_rng(0).standard_normal(1000)
    d = to_device(x)
    testing.get_function("add_scalar_f64")(d, np.int64(x.size), np.float64(0.25), grid=(grid, 1), block=(block, 1, 1))
    np.testing.assert_allclose(from_device(d, x), x + 0.25, rtol=0, atol=1e-15)


def test_axpy(testing: pygpu.Module) -> None:
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(513).astype(np.float32), rng.standard_normal(513).astype(np.float32)
    dx, dy = to_device(x), to_device(y)
    testing.get_function("axpy_f32")(dy, dx, np.float32(3.0), np.int32(513), grid=4, block=128)
    np.testing.assert_allclose(from_device(dy, y), 3.0 * x + y, rtol=1e-6, atol=1e-6)


def test_fill(testing: pygpu.Module) -> None:
    x = np.zeros(300, np.int32)
    d = to_device(x)
    testing.get_function("fill_i32")(d, np.int32(250), np.int32(-7), block=(32, 1, 1))
    out = from_device(d, x)
    assert (out[:250] == -7).all() and (out[250:] == 0).all()


def test_pointer_int32_float64_layout(testing: pygpu.Module) -> None:
    out = np.zeros(1)
    d = to_device(out)
    testing.get_function("scale_args")(d, np.int32(-3), np.float64(0.5), block=1)
    assert from_device(d, out)[0] == -1.5


def test_global_variable(testing: pygpu.Module) -> None:
    ptr, size = testing.get_global("pygpu_test_counter")
    assert size == 4
    pygpu.memcpy_htod(ptr, np.array([10], np.int32))
    bump = testing.get_function("bump_counter")
    bump(np.int32(5), block=(64, 1, 1), grid=(4, 1))
    bump(np.int32(-2), block=1)
    out = np.zeros(1, np.int32)
    pygpu.memcpy_dtoh(out, ptr)
    assert out[0] == 13


def test_empty_kernel(testing: pygpu.Module) -> None:
    testing.get_function("empty_kernel")(block=1)
    assert pygpu.cudaDeviceSynchronize() == 0


def numpy_burgers(u: np.ndarray, steps: int, nu_dt_h2: float, dt_2h: float) -> np.ndarray:
    u = u.copy()
    for _ in range(steps):
        u[0], u[-1] = u[-2], u[1]
        new = u.copy()
        new[1:-1] = u[1:-1] + nu_dt_h2 * (u[2:] - 2 * u[1:-1] + u[:-2]) - u[1:-1] * dt_2h * (u[2:] - u[:-2])
        u = new
    u[0], u[-1] = u[-2], u[1]
    return u


@pytest.mark.parametrize("fused", [False, True])
def test_burgers_against_numpy(burgers: pygpu.Module, fused: bool) -> None:
    nx, nu, dt = 256, 0.01, 0.001
    h = 2 * np.pi / nx
    x = np.arange(-1, nx + 1) * h
    u0 = np.sin(x)
    a, b = nu * dt / h**2, dt / (2 * h)
    ua, ub = to_device(u0), to_device(u0)
    n = np.int32(nx + 2)
    step = burgers.get_function("burgers_step_periodic" if fused else "burgers_step")
    ghosts = burgers.get_function("burgers_ghosts")
    for _ in range(50):
        if not fused:
            ghosts(ua, n, block=1)
        step(ua, ub, n, np.float64(a), np.float64(b), grid=2, block=128)
        ua, ub = ub, ua
    if not fused:
        ghosts(ua, n, block=1)
    np.testing.assert_allclose(from_device(ua, u0), numpy_burgers(u0, 50, a, b), rtol=0, atol=1e-13)


# --- argument kinds --------------------------------------------------------------


def test_argument_kinds(testing: pygpu.Module) -> None:
    f = testing.get_function("add_scalar_f64")
    x = np.arange(8.0)
    alloc = to_device(x)
    f(alloc, np.int64(8), np.float64(1), block=8)  # DeviceAllocation
    f(np.uintp(int(alloc)), np.int64(8), np.float64(1), block=8)  # an address as numpy.uintp, as in PyCUDA
    f(pygpu.pointer_wrapper_float64(int(alloc)), np.int64(8), np.float64(1), block=8)  # pointer wrapper
    da = pygpu.DeviceArray_float64(x.copy())
    da.allocate()
    da.to_device()
    f(da.device_data(), np.int64(8), np.float64(1), block=8)
    np.testing.assert_array_equal(from_device(alloc, x), x + 3)
    da.to_host()
    np.testing.assert_array_equal(da.host_array(), x + 1)


def test_cuda_array_interface_argument(testing: pygpu.Module) -> None:
    x = np.arange(4.0)
    alloc = to_device(x)

    class Foreign:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f8", "data": (int(alloc), False), "version": 3}

    testing.get_function("add_scalar_f64")(Foreign(), np.int64(4), np.float64(2), block=4)
    np.testing.assert_array_equal(from_device(alloc, x), x + 2)


def test_in_out_inout(testing: pygpu.Module) -> None:
    import pygpu.driver as drv

    out = np.zeros(16, np.int32)
    testing.get_function("fill_i32")(drv.Out(out), np.int32(16), np.int32(4), block=16)
    assert (out == 4).all()
    y = np.ones(16, np.float32)
    x = np.arange(16, dtype=np.float32)
    testing.get_function("axpy_f32")(drv.InOut(y), drv.In(x), np.float32(2), np.int32(16), block=16)
    np.testing.assert_array_equal(y, 2 * x + 1)
    np.testing.assert_array_equal(x, np.arange(16))
    z = np.zeros(8, np.int32)
    stream = drv.Stream()
    testing.get_function("fill_i32")(drv.Out(z), np.int32(8), np.int32(6), block=8, stream=stream)
    assert (z == 6).all()
    with pytest.raises(ValueError, match="C-contiguous"):
        drv.In(np.zeros(8)[::2])
    read_only = np.zeros(8)
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        drv.Out(read_only)


def test_argument_handler_protocol_of_a_client_subclass(testing: pygpu.Module) -> None:
    """A library's own ArgumentHandler (reikna's Buffer): its own __init__, get_device_alloc only;
    the launch passes its memory and calls pre_call/post_call around the kernel."""
    import pygpu.driver as drv

    calls = []

    class Buffer(drv.ArgumentHandler):
        def __init__(self, size: int) -> None:
            self._buffer = drv.mem_alloc(size)

        def get_device_alloc(self) -> Any:
            return self._buffer

        def pre_call(self, stream: Any) -> None:
            calls.append(("pre", stream))

    class Plain(drv.ArgumentHandler):
        def __init__(self, size: int) -> None:
            self._buffer = drv.mem_alloc(size)

        def get_device_alloc(self) -> Any:
            return self._buffer

    buf, plain = Buffer(16 * 4), Plain(16 * 4)
    testing.get_function("fill_i32")(buf, np.int32(16), np.int32(9), block=16)
    testing.get_function("fill_i32")(plain, np.int32(16), np.int32(5), block=16)
    assert calls == [("pre", None)]
    assert (drv.from_device(buf.get_device_alloc(), 16, np.int32) == 9).all()
    assert (drv.from_device(plain.get_device_alloc(), 16, np.int32) == 5).all()


def test_python_scalars_need_a_type_without_a_declaration(undeclared: pygpu.Module) -> None:
    f = undeclared.get_function("scale_args")
    d = to_device(np.zeros(1))
    for bad in (3, 1.5, True):
        with pytest.raises(TypeError, match="numpy.int32"):
            f(d, bad, np.float64(1), block=1)
    with pytest.raises(TypeError, match="not a device pointer"):
        f("x", np.int32(1), np.float64(1), block=1)


# --- prepared calls --------------------------------------------------------------


@pytest.mark.parametrize("signature", ["Pid", ["P", "i", "d"], [np.intp, np.int32, np.float64]])
def test_prepared_call(testing: pygpu.Module, signature: object) -> None:
    out = np.zeros(1)
    d = to_device(out)
    f = testing.get_function("scale_args").prepare(signature)
    f.prepared_call((1, 1), (1, 1, 1), d, 7, 0.5)
    assert from_device(d, out)[0] == 3.5
    s = pygpu.cudaStream_t()
    f.prepared_async_call((1, 1), (1, 1, 1), s, d, 2, 2.0)
    pygpu.cudaStreamSynchronize(s)
    assert from_device(d, out)[0] == 4.0


def test_prepared_call_errors(testing: pygpu.Module) -> None:
    f = testing.get_function("scale_args")
    d = to_device(np.zeros(1))
    with pytest.raises(ValueError, match="prepare"):
        f.prepared_call(1, 1, d, 1, 1.0)
    f.prepare("Pid")
    with pytest.raises(ValueError, match="prepared for 3 arguments but got 2"):
        f.prepared_call(1, 1, d, 1)
    with pytest.raises(OverflowError):
        f.prepared_call(1, 1, d, 1 << 40, 1.0)
    with pytest.raises(ValueError, match="unknown type"):
        f.prepare("Pz")
    with pytest.raises(ValueError):
        f.prepare([object])


def test_prepared_calls_read_their_arguments_as_python_passes_them(testing: pygpu.Module) -> None:
    # prepared_call and prepared_async_call read Python's argument array directly (not through
    # PyO3's *args tuple): what PyO3 checked for them is checked here.
    out = np.zeros(1)
    d = to_device(out)
    f = testing.get_function("scale_args").prepare("Pid")
    assert str(inspect.signature(f.prepared_async_call)) == "(grid, block, stream, *args, shared_size=0)"
    assert str(inspect.signature(f.prepared_call)) == "(grid, block, *args, shared_size=0)"
    call = f.prepared_call  # bound once, as a step loop does
    call((1, 1), (1, 1, 1), d, 5, 0.5, shared_size=16)
    assert from_device(d, out)[0] == 2.5
    pygpu.Function.prepared_async_call(f, (1,), (1,), None, d, 3, 1.0)
    pygpu.cudaDeviceSynchronize()
    assert from_device(d, out)[0] == 3.0
    with pytest.raises(TypeError, match="missing required argument 'block' \\(grid, block come before"):
        f.prepared_call((1, 1))
    with pytest.raises(TypeError, match="missing required argument 'stream'"):
        f.prepared_async_call((1, 1), (1, 1, 1))
    with pytest.raises(TypeError, match="multiple values for argument 'grid'"):
        f.prepared_call((1, 1), (1, 1, 1), d, 1, 1.0, grid=(1,))
    with pytest.raises(TypeError, match="stream must be a pygpu.cudaStream_t or None, not int"):
        f.prepared_async_call((1, 1), (1, 1, 1), 0, d, 1, 1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'stream': the kernel's arguments go by"):
        f.prepared_call((1, 1), (1, 1, 1), d, 1, 1.0, stream=None)
    for bad in (-1, 1 << 32, "8"):
        with pytest.raises(ValueError, match="shared_size must be a number of bytes"):
            f.prepared_call((1, 1), (1, 1, 1), d, 1, 1.0, shared_size=bad)
    empty = testing.get_function("empty_kernel").prepare("")
    empty.prepared_call(grid=(1, 1), block=(1, 1, 1))  # by name, as PyCUDA's signature allows
    empty.prepared_async_call((1,), block=(1,), stream=pygpu.cudaStream_t())
    with pytest.raises(TypeError, match="doesn't apply to a 'int' object"):
        pygpu.Function.prepared_call(3, (1,), (1,))
    with pytest.raises(ValueError, match="block must be a positive int"):
        f.prepared_call((1, 1), (0, 1, 1), d, 1, 1.0)
    assert from_device(d, out)[0] == 3.0  # no failed call launched
    f.prepare("Pi")  # prepared again: the next call takes the new types
    with pytest.raises(ValueError, match="prepared for 2 arguments but got 3"):
        call((1, 1), (1, 1, 1), d, 5, 0.5)


def test_prepared_calls_keep_no_reference_to_their_arguments(testing: pygpu.Module) -> None:
    # The argument array is borrowed: a call, or a failed one, must leave every count as it was.
    d = to_device(np.zeros(1))
    f = testing.get_function("scale_args").prepare("Pid")
    s = pygpu.cudaStream_t()
    grid, block, x, size = (1, 1), (1, 1, 1), 1.0 + 0.5, 1 << 40
    objects = (f, d, s, grid, block, x, size)
    before = [sys.getrefcount(o) for o in objects]
    for _ in range(1000):
        f.prepared_call(grid, block, d, 3, x, shared_size=0)
        f.prepared_async_call(grid, block, s, d, 3, x)
        with pytest.raises(OverflowError):
            f.prepared_async_call(grid, block, s, d, size, x)
        with pytest.raises(TypeError):
            f.prepared_async_call(grid, block, x, d, 3, x)
    pygpu.cudaStreamSynchronize(s)
    assert [sys.getrefcount(o) for o in objects] == before


# --- launch configuration and errors ---------------------------------------------


def test_block_too_large_is_a_cuda_error(testing: pygpu.Module) -> None:
    f = testing.get_function("empty_kernel")
    with pytest.raises(pygpu.CudaError) as info:
        f(block=(2048, 1, 1))
    assert info.value.code == 1 and info.value.name == "cudaErrorInvalidValue"
    assert "2048 threads" in str(info.value)
    pygpu.cudaGetLastError()
    f(block=(1024, 1, 1))  # and the next launch works


def test_too_much_shared_memory_is_a_cuda_error(testing: pygpu.Module) -> None:
    with pytest.raises(pygpu.CudaError) as info:
        testing.get_function("empty_kernel")(block=1, shared=1 << 30)
    assert info.value.code != 0
    pygpu.cudaGetLastError()


@pytest.mark.parametrize("bad", [0, -1, (1, 2, 3, 4), (), "x", (1 << 33,)])
def test_bad_launch_dimensions(testing: pygpu.Module, bad: object) -> None:
    with pytest.raises(ValueError, match="block must be"):
        testing.get_function("empty_kernel")(block=bad)


def test_missing_kernel_and_global(testing: pygpu.Module) -> None:
    with pytest.raises(pygpu.ModuleError) as info:
        testing.get_function("no_such_kernel")
    assert info.value.code == 500 and "no_such_kernel" in str(info.value)
    with pytest.raises(pygpu.ModuleError):
        testing.get_global("no_such_global")
    pygpu.cudaGetLastError()


@pytest.mark.parametrize("image", [b"", b"garbage", b"\x7fELF\x02\x01\x01" + b"\0" * 64])
def test_corrupt_code_objects(image: bytes) -> None:
    with pytest.raises(pygpu.CudaError) as info:
        pygpu.Module(image)
    assert info.value.code in (200, 218, 222, 300, 1)
    pygpu.cudaGetLastError()


def test_missing_file_and_bundled_name() -> None:
    with pytest.raises(FileNotFoundError):
        pygpu.Module.from_file("/nonexistent/kernels.ptx")
    with pytest.raises(FileNotFoundError, match="available"):
        pygpu.load_kernels("no_such_source")


def test_function_attributes(testing: pygpu.Module, backend: str) -> None:
    f = testing.get_function("axpy_f32")
    assert f.name == "axpy_f32" and "axpy_f32" in repr(f)
    assert f.max_threads_per_block >= 256
    assert f.num_regs >= (1 if backend == "cuda" else 0)
    assert f.shared_size_bytes == 0
    min_grid, block = f.max_potential_block_size()
    assert min_grid >= 1 and 32 <= block <= f.max_threads_per_block
    assert f.max_potential_block_size(0, 64)[1] <= 64


def test_module_close(testing: pygpu.Module) -> None:
    m = pygpu.load_kernels("testing")
    f = m.get_function("empty_kernel")
    m.close()
    m.close()
    with pytest.raises(pygpu.InvalidHandleError):
        m.get_function("empty_kernel")
    with pytest.raises(pygpu.InvalidHandleError):
        f(block=1)


def test_functions_keep_their_module_loaded() -> None:
    f = pygpu.load_kernels("testing").get_function("fill_i32")
    import gc

    gc.collect()
    out = np.zeros(4, np.int32)
    d = to_device(out)
    f(d, np.int32(4), np.int32(2), block=4)
    assert (from_device(d, out) == 2).all()


# --- streams and graphs ----------------------------------------------------------


def test_launches_on_streams_are_ordered(testing: pygpu.Module) -> None:
    s = pygpu.cudaStream_t()
    x = np.zeros(1 << 16)
    d = to_device(x)
    add = testing.get_function("add_scalar_f64")
    start, end = pygpu.cudaEvent_t(), pygpu.cudaEvent_t()
    pygpu.cudaEventRecord(start, s)
    for _ in range(10):
        add(d, np.int64(x.size), np.float64(1.0), grid=64, block=256, stream=s)
    pygpu.cudaEventRecord(end, s)
    out = pygpu.pagelocked_empty(x.shape, x.dtype)
    pygpu.memcpy_dtoh(out, d, stream=s)
    pygpu.cudaStreamSynchronize(s)
    assert (out == 10).all()
    ms, err = pygpu.cudaEventElapsedTime(start, end)
    assert err == 0 and ms >= 0


def test_graph_replay_matches_the_plain_loop(burgers: pygpu.Module) -> None:
    nx = 1000
    h = 2 * np.pi / nx
    u0 = np.sin(np.arange(-1, nx + 1) * h)
    a, b = np.float64(0.01 * 0.001 / h**2), np.float64(0.001 / (2 * h))
    n = np.int32(nx + 2)
    step = burgers.get_function("burgers_step_periodic")

    plain = [to_device(u0), to_device(u0)]
    for i in range(100):
        step(plain[i % 2], plain[(i + 1) % 2], n, a, b, grid=4, block=256)

    graphed = [to_device(u0), to_device(u0)]
    s = pygpu.cudaStream_t(1)
    s.begin_capture()
    assert s.is_capturing
    for i in range(10):
        step(graphed[i % 2], graphed[(i + 1) % 2], n, a, b, grid=4, block=256, stream=s)
    graph = s.end_capture()
    assert not s.is_capturing
    # Nothing ran while capturing.
    np.testing.assert_array_equal(from_device(graphed[0], u0), u0)
    exec_ = graph.instantiate()
    for _ in range(10):
        exec_.launch(s)
    pygpu.cudaStreamSynchronize(s)
    np.testing.assert_array_equal(from_device(graphed[0], u0), from_device(plain[0], u0))


def test_graphs_keep_the_captured_kernels_loaded() -> None:
    """A graph holds the modules of the kernels captured into it: replaying it after the module
    was closed and its functions dropped runs the kernel (the host backend would otherwise call
    into an unloaded library)."""
    import gc

    m = pygpu.load_kernels("testing")
    fill = m.get_function("fill_i32")
    d = pygpu.mem_alloc(16)
    s = pygpu.cudaStream_t()
    s.begin_capture()
    fill(d, np.int32(4), np.int32(7), block=4, stream=s)
    graph = s.end_capture()
    exec_ = graph.instantiate()
    m.close()
    with pytest.raises(pygpu.InvalidHandleError):
        fill(d, np.int32(4), np.int32(7), block=4)
    del fill, m, graph
    gc.collect()
    exec_.launch(s)
    pygpu.cudaStreamSynchronize(s)
    out = np.zeros(4, np.int32)
    pygpu.memcpy_dtoh(out, d)
    assert out.tolist() == [7] * 4


def test_graph_with_copies_and_memsets(testing: pygpu.Module) -> None:
    s = pygpu.cudaStream_t()
    a, b = pygpu.mem_alloc(64), pygpu.mem_alloc(64)
    s.begin_capture()
    pygpu.memset_d32(a, 3, 16, stream=s)
    testing.get_function("fill_i32")(b, np.int32(8), np.int32(5), block=8, stream=s)
    pygpu.memcpy_dtod(a, b, 16, stream=s)
    g = s.end_capture().instantiate()
    g.launch(s)
    pygpu.cudaStreamSynchronize(s)
    out = np.zeros(16, np.int32)
    pygpu.memcpy_dtoh(out, a)
    assert out.tolist() == [5] * 4 + [3] * 12


def test_capture_errors() -> None:
    s = pygpu.cudaStream_t()
    with pytest.raises(pygpu.CudaError):
        s.end_capture()  # never began
    s.begin_capture()
    with pytest.raises(pygpu.CudaError):
        s.begin_capture()  # twice
    s.end_capture()
    pygpu.cudaGetLastError()


@pytest.mark.parametrize(
    "args",
    [
        (),  # too few
        (np.float64(1),),  # pointer expected, 8 bytes but then too few
        (np.uintp(0), np.int64(1), np.float64(1)),  # int64 where the kernel takes int32
        (np.uintp(0), np.int32(1), np.float64(1), np.int32(5)),  # too many
    ],
)
def test_wrong_argument_list_is_refused_before_launch(undeclared: pygpu.Module, args: tuple) -> None:
    with pytest.raises(pygpu.InvalidValueError) as info:
        undeclared.get_function("scale_args")(*args, block=1)
    assert "scale_args takes 3 arguments of [8, 4, 8] bytes" in str(info.value)
    pygpu.cudaGetLastError()


def test_declared_kernels_convert_python_numbers_and_refuse_wrong_lists(testing: pygpu.Module) -> None:
    f = testing.get_function("scale_args")
    assert [(p.name, p.c_type, p.size) for p in f.parameters] == [
        ("out", "double *", 8),
        ("i", "int", 4),
        ("d", "double", 8),
    ]
    out = np.zeros(1)
    d = to_device(out)
    f(d, 3, 1.5, block=1)
    assert from_device(d, out)[0] == 4.5
    f(d, np.int64(-2), np.float32(0.5), block=1)  # converted to int and double, values kept
    assert from_device(d, out)[0] == -1.0
    f(d=2.0, i=5, out=d, block=1)
    assert from_device(d, out)[0] == 10.0
    with pytest.raises(TypeError, match="takes 3 arguments"):
        f(d, 1, 2.0, 4, block=1)
    with pytest.raises(TypeError, match="missing 2 required arguments: 'i', 'd'"):
        f(d, block=1)
    with pytest.raises(TypeError, match="'i' .* takes an integer"):
        f(d, 1.5, 1.0, block=1)
    with pytest.raises(TypeError, match="not a device pointer"):
        f(np.float64(1), 1, 1.0, block=1)


def test_prepared_signature_that_disagrees_with_the_kernel(testing: pygpu.Module) -> None:
    f = testing.get_function("scale_args").prepare("Pqd")
    with pytest.raises(pygpu.InvalidValueError, match="takes 3 arguments"):
        f.prepared_call(1, 1, 0, 1, 1.0)
    pygpu.cudaGetLastError()


# --- the cubin a CUDA device loads out of a bundled fatbin --------------------------


def fatbin(*entries: tuple[int, int, bytes]) -> bytes:
    """A fatbin container of (kind, architecture, payload) entries, laid out as nvcc's."""
    body = b""
    for kind, arch, payload in entries:
        header = kind.to_bytes(2, "little") + (0x101).to_bytes(2, "little") + (64).to_bytes(4, "little")
        header += len(payload).to_bytes(8, "little") + bytes(12) + arch.to_bytes(4, "little")
        body += header.ljust(64, b"\0") + payload
    return (
        (0xBA55ED50).to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + (len(body).to_bytes(8, "little") + body)
    )


ELF80, ELF90, PTX = b"\x7fELF sm_80 image", b"\x7fELF sm_90 image", b".version 8.0 ..."


@pytest.mark.parametrize(
    "capability, expected",
    [((9, 0), ELF90), ((8, 0), ELF80), ((8, 9), ELF80), ((10, 0), None), ((7, 5), None), ((12, 1), None)],
)
def test_native_cubin_is_the_devices_own(capability: tuple[int, int], expected: bytes | None) -> None:
    image = fatbin((1, 70, PTX), (2, 80, ELF80), (2, 90, ELF90))
    assert bundled_kernels.native_cubin(image, capability) == expected


@pytest.mark.parametrize(
    "image",
    [
        b"",
        b"\x7fELF not a fatbin",
        fatbin((2, 90, b"compressed bytes")),  # not an ELF: only the driver unpacks it
        fatbin((2, 90, ELF90))[:40],  # cut inside an entry header
        fatbin((2, 90, ELF90))[:-4],  # cut inside the payload
    ],
)
def test_native_cubin_leaves_what_it_cannot_read_to_the_driver(image: bytes) -> None:
    assert bundled_kernels.native_cubin(image, (9, 0)) is None


def test_bundled_fatbins_hold_a_cubin_for_each_architecture_they_are_built_for() -> None:
    """kernels/build.sh builds sm_80 and sm_90 cubins; what native_cubin takes out is a whole
    ELF image with the module's kernels (checked here without a GPU)."""
    path = Path(bundled_kernels.KERNELS_DIR) / "arith_f64.fatbin"
    if not path.is_file():
        pytest.skip("this install has no CUDA kernels (kernels/build.sh cuda builds them)")
    data = path.read_bytes()
    for capability in ((8, 0), (9, 0)):
        cubin = bundled_kernels.native_cubin(data, capability)
        assert cubin is not None and cubin.startswith(b"\x7fELF") and b"add_f64" in cubin
        # ELF64: e_shoff + e_shnum * e_shentsize is the image's end, inside what was taken
        shoff = int.from_bytes(cubin[0x28:0x30], "little")
        shnum, shentsize = int.from_bytes(cubin[0x3C:0x3E], "little"), int.from_bytes(cubin[0x3A:0x3C], "little")
        assert shoff + shnum * shentsize <= len(cubin) < len(data)


def test_numpy_arrays_by_value_as_pycuda_packs_them(testing: pygpu.Module) -> None:
    """A 0-d or one-element array is a scalar's bytes (PyCUDA sends every ndarray's bytes); a
    larger host array is refused, naming what to pass instead."""
    import pygpu.driver as drv

    out = np.zeros(8, np.int32)
    fill = testing.get_function("fill_i32")
    fill(drv.Out(out), np.array(8, np.int32), np.array([3], np.int32), block=8)
    assert (out == 3).all()
    with pytest.raises(TypeError, match=r"host numpy array of shape \(4,\).*to_gpu"):
        fill(np.zeros(4, np.int32), np.int32(4), np.int32(1), block=4)
