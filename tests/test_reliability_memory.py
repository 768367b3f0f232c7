"""Issue 27, classes B and C and the first probe's conversions: imported tensors checked against
the allocation they point into, out-of-memory frees that never abort, object dtypes refused
wherever memory is handed out as raw bytes, errors of user conversions kept as they are, and
DeviceArray_ sizes that stay consistent. Cases that crashed the process before their fix run in
a subprocess."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygpu
import pygpu.driver as drv
import pygpu.tools as tools
from pygpu import gpuarray
from pygpu._pygpu import allocation_extent, capabilities

HOST = capabilities().host_memory

# --------------------------------------------------------------------------- DLPack capsules by hand


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
# The ctypes structures must outlive the capsules (they have no deleter): kept for the session.
_KEEP: list[Any] = []


def dlpack_capsule(
    data: int, shape: tuple[int, ...], strides: tuple[int, ...] | None, dtype: Any, byte_offset: int = 0
) -> Any:
    """A legacy "dltensor" capsule describing whatever it is told to (no deleter)."""
    dt = np.dtype(dtype)
    shape_arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    strides_arr = None if strides is None else (ctypes.c_int64 * max(len(shape), 1))(*strides)
    m = _DLManagedTensor()
    m.dl_tensor.data = data or None
    m.dl_tensor.device = _DLDevice(capabilities().dlpack_device_type, 0)
    m.dl_tensor.ndim = len(shape)
    m.dl_tensor.dtype = _DLDataType(_DL_CODES[dt.kind], dt.itemsize * 8, 1)
    m.dl_tensor.shape = shape_arr
    m.dl_tensor.strides = strides_arr
    m.dl_tensor.byte_offset = byte_offset
    _KEEP.append((m, shape_arr, strides_arr))
    return _capsule_new(ctypes.addressof(m), b"dltensor", None)


class _CAI:
    def __init__(self, interface: dict[str, Any]) -> None:
        self.__cuda_array_interface__ = interface


def _run(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env
    )


# --------------------------------------------------------------------------- B: imports


def test_dlpack_huge_byte_offsets_and_bogus_pointers_are_value_errors_not_crashes() -> None:
    if not HOST:
        pytest.skip("host backend: a GPU backend refuses CPU capsules before reading them")
    r = _run(
        """
        import sys, numpy as np
        sys.path.insert(0, %r)
        from test_reliability_memory import dlpack_capsule
        from pygpu import gpuarray
        g = gpuarray.to_gpu(np.arange(10, dtype=np.float32))
        h = np.arange(10, dtype=np.float32)
        cases = [
            (g.ptr, (4,), None, 2**40), (h.ctypes.data, (4,), None, 2**40), (h.ctypes.data, (4,), None, 2**63),
            (g.ptr, (2,), (2**40,), 0), (h.ctypes.data, (2,), (2**40,), 0), (0, (2,), None, 0),
            (4096, (2,), None, 0), (h.ctypes.data, (2,), (2**61,), 0), (g.ptr, (2**62, 2**62), (0, 0), 0),
        ]
        for data, shape, strides, offset in cases:
            try:
                gpuarray.from_dlpack(dlpack_capsule(data, shape, strides, np.float32, offset))
            except ValueError as e:
                assert str(e), "empty message"
                print("refused")
            else:
                print("ACCEPTED", data, shape, strides, offset)
        """
        % os.path.dirname(__file__)
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["refused"] * 9, r.stdout


def test_an_import_running_outside_a_pygpu_allocation_names_the_extent_and_the_allocation() -> None:
    g = gpuarray.to_gpu(np.arange(10, dtype=np.float32))  # 40 bytes in a larger pool block
    # The host backend knows the 40 bytes asked for; CUDA's driver, the block that holds them.
    start, size = allocation_extent(g.ptr)
    assert start <= g.ptr and (size == 40 if HOST else size >= 40)
    past = (start + size - g.ptr) // 4 + 1  # one float32 more than the allocation holds
    with pytest.raises(ValueError, match=rf"run outside the allocation at 0x[0-9a-f]+ of {size} bytes"):
        gpuarray.from_dlpack(dlpack_capsule(g.ptr, (past,), None, np.float32))
    if g.ptr == start:
        with pytest.raises(ValueError, match=f"of {size} bytes"):
            gpuarray.from_dlpack(dlpack_capsule(g.ptr, (3,), (-1,), np.float32))
    cai = {"shape": (past + 1,), "typestr": "<f4", "data": (g.ptr, False), "version": 3}
    with pytest.raises(ValueError, match=f"of {size} bytes"):
        gpuarray.asarray(_CAI(cai))
    cai["shape"] = (10,)
    np.testing.assert_array_equal(gpuarray.asarray(_CAI(cai)).get(), np.arange(10, dtype=np.float32))


def test_a_numpy_view_of_pygpu_memory_running_outside_it_is_refused_by_asarray() -> None:
    if not HOST:
        pytest.skip("numpy views of device memory exist on the host backend only")
    g = gpuarray.to_gpu(np.arange(10, dtype=np.float32))
    a = np.asarray(g)
    with pytest.raises(ValueError, match="of 40 bytes"):
        gpuarray.asarray(np.lib.stride_tricks.as_strided(a, (10,), (8,)))
    np.testing.assert_array_equal(gpuarray.asarray(a[::3]).get(), a[::3])


def test_misaligned_zero_copy_imports_are_refused() -> None:
    g = gpuarray.to_gpu(np.arange(10, dtype=np.float32))
    with pytest.raises(ValueError, match="alignment"):
        gpuarray.from_dlpack(dlpack_capsule(g.ptr, (2,), None, np.float32, byte_offset=2))
    with pytest.raises(ValueError, match="alignment"):
        gpuarray.asarray(_CAI({"shape": (2,), "typestr": "<f4", "data": (g.ptr + 1, False), "version": 3}))


def test_imports_of_freed_pool_memory_are_refused() -> None:
    if not HOST:
        pytest.skip("only the host backend tells an idle pool block from a live one")
    g = gpuarray.to_gpu(np.arange(10, dtype=np.float32))
    ptr = g.ptr
    del g  # the block goes back to the pool's cache, still in the registry
    if allocation_extent(ptr) != (ptr, 0):
        pytest.skip("the pool is off (PYGPU_MEMORY_POOL=0): the freed block left the registry")
    with pytest.raises(ValueError, match="freed"):
        gpuarray.from_dlpack(dlpack_capsule(ptr, (4,), None, np.float32))


def test_empty_imports_touch_no_memory_and_pass() -> None:
    r = gpuarray.from_dlpack(dlpack_capsule(4096, (0, 3), None, np.float32, byte_offset=2**50))
    assert r.shape == (0, 3)


_DTYPES = [np.int8, np.int16, np.float32, np.float64, np.complex128]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dtype=st.sampled_from(_DTYPES),
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple),
    data=st.data(),
    offset=st.one_of(st.integers(-24, 120), st.sampled_from([2**31, 2**40, 2**62, -(2**40)])),
    via=st.sampled_from(["dlpack", "cai"]),
)
def test_imports_against_a_pygpu_allocation_match_numpy_or_raise_value_error(
    dtype: Any, shape: tuple[int, ...], data: Any, offset: int, via: str
) -> None:
    nbytes = 100  # not a multiple of the pool's 512-byte blocks: the check must use these 100
    g = gpuarray.to_gpu(np.arange(nbytes, dtype=np.uint8))
    dt = np.dtype(dtype)
    elements = data.draw(st.lists(st.integers(-9, 9), min_size=len(shape), max_size=len(shape)))
    strides = tuple(s * dt.itemsize for s in elements)
    host = g.get()
    try:
        expected = np.ndarray(shape, dt, buffer=host, offset=offset, strides=strides) if offset >= 0 else None
    except (ValueError, TypeError):
        expected = None  # numpy says the bytes lie outside the 100
    aligned = (g.ptr + offset) % dt.alignment == 0
    ptr = g.ptr + offset
    try:
        if via == "dlpack":
            if ptr < 0 or offset < 0 and abs(offset) > g.ptr:
                return
            if offset < 0:
                result = gpuarray.from_dlpack(dlpack_capsule(ptr, shape, elements, dt))
            else:
                result = gpuarray.from_dlpack(dlpack_capsule(g.ptr, shape, elements, dt, byte_offset=offset))
        else:
            if ptr <= 0:
                return
            cai = {"shape": shape, "typestr": dt.str, "data": (ptr, False), "strides": strides, "version": 3}
            result = gpuarray.asarray(_CAI(cai))
    except ValueError as e:
        assert str(e)
        if math_prod(shape):
            # Refused: it must have been outside the 100 bytes, or misaligned.
            assert expected is None or not aligned, (shape, strides, offset)
        return
    if not math_prod(shape):
        assert result.size == 0
        return
    if HOST:
        assert expected is not None and aligned, f"accepted {shape} {strides} at offset {offset}"
    if expected is not None:
        np.testing.assert_array_equal(result.get(), expected)


def math_prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# --------------------------------------------------------------------------- C: object dtypes


_OBJECT_DTYPES = [np.dtype(object), np.dtype([("x", "f4"), ("o", "O")]), np.dtype([("s", [("o", "O")], (2,))])]


def _constructors() -> list[tuple[str, Any]]:
    managed_flags = drv.mem_attach_flags.GLOBAL
    return [
        ("pagelocked_empty", lambda dt: drv.pagelocked_empty((3,), dt)),
        ("pagelocked_zeros", lambda dt: drv.pagelocked_zeros((3,), dt)),
        ("pagelocked_empty_like", lambda dt: drv.pagelocked_empty_like(np.empty(3, dt))),
        ("pagelocked_zeros_like", lambda dt: drv.pagelocked_zeros_like(np.empty(3, dt))),
        ("aligned_empty", lambda dt: drv.aligned_empty((3,), dt)),
        ("aligned_zeros_like", lambda dt: drv.aligned_zeros_like(np.empty(3, dt))),
        ("managed_empty", lambda dt: drv.managed_empty((3,), dt, mem_flags=managed_flags)),
        ("managed_zeros", lambda dt: drv.managed_zeros((3,), dt, mem_flags=managed_flags)),
        ("register_host_memory", lambda dt: drv.register_host_memory(np.empty(3, dt))),
        ("PageLockedMemoryPool.allocate", lambda dt: tools.PageLockedMemoryPool().allocate((3,), dt)),
        ("GPUArray", lambda dt: gpuarray.GPUArray((3,), dt)),
        ("empty", lambda dt: gpuarray.empty((3,), dt)),
        ("to_gpu", lambda dt: gpuarray.to_gpu(np.empty(3, dt))),
        ("In", lambda dt: drv.In(np.empty(3, dt))),
    ]


@pytest.mark.parametrize("name,make", _constructors(), ids=[n for n, _ in _constructors()])
@pytest.mark.parametrize("dtype", _OBJECT_DTYPES, ids=str)
def test_object_dtypes_are_refused_by_every_raw_memory_constructor(name: str, make: Any, dtype: np.dtype[Any]) -> None:
    if name.startswith("managed") and not _managed_supported():
        pytest.skip("this device has no managed memory")
    with pytest.raises(TypeError, match="Python objects"):
        make(dtype)


def _managed_supported() -> bool:
    try:
        drv.managed_empty((1,), np.uint8, mem_flags=drv.mem_attach_flags.GLOBAL)
    except Exception:  # noqa: BLE001 - only whether the device has it
        return False
    return True


def test_the_page_locked_pool_never_hands_recycled_bytes_out_as_objects() -> None:
    r = _run(
        """
        import numpy as np, pygpu.tools as tools
        pool = tools.PageLockedMemoryPool()
        a = pool.allocate((64,), np.float64)
        a[:] = np.arange(64) * 1e300 + 12345.0  # pointer-like garbage for an object slot
        del a
        for dt in (object, [("x", "f4"), ("o", "O")]):
            try:
                b = pool.allocate((64,), dt)
            except TypeError as e:
                print("refused", "Python objects" in str(e))
            else:
                print("ACCEPTED", repr(b))
        print(pool.allocate((64,), np.float64).sum() != 0)
        """
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["refused", "True", "refused", "True", "True"], r.stdout


@settings(max_examples=30, deadline=None)
@given(
    fields=st.lists(
        st.tuples(st.sampled_from(["f4", "i8", "u1", "O", "c16"]), st.integers(1, 3)), min_size=1, max_size=4
    ),
    nested=st.booleans(),
)
def test_structured_dtypes_are_refused_exactly_when_they_hold_objects(
    fields: list[tuple[str, int]], nested: bool
) -> None:
    dt = np.dtype([(f"f{i}", code, (count,)) for i, (code, count) in enumerate(fields)])
    if nested:
        dt = np.dtype([("inner", dt), ("tail", "f8")])
    for name, make in (
        ("pagelocked_empty", lambda: drv.pagelocked_empty((2,), dt)),
        ("aligned_empty", lambda: drv.aligned_empty((2,), dt)),
        ("PageLockedMemoryPool.allocate", lambda: tools.PageLockedMemoryPool().allocate((2,), dt)),
    ):
        if dt.hasobject:
            with pytest.raises(TypeError, match="Python objects"):
                make()
        else:
            out = make()
            assert out.dtype == dt and out.shape == (2,), name


# --------------------------------------------------------------------------- C: out of host memory


@pytest.mark.parametrize("kind", ["gpuarray", "DeviceMemoryPool", "PageLockedMemoryPool", "mem_alloc"])
def test_freeing_after_running_out_of_host_memory_never_aborts(kind: str) -> None:
    if not HOST:
        pytest.skip("host backend: device memory is host memory, limited here by RLIMIT_AS")
    r = _run(
        """
        import gc, resource, sys, numpy as np
        import pygpu, pygpu.driver as drv, pygpu.tools as tools
        from pygpu import gpuarray
        kind = %r
        pool = tools.DeviceMemoryPool() if kind == "DeviceMemoryPool" else tools.PageLockedMemoryPool()
        gpuarray.zeros(1, np.float32)
        with open("/proc/self/status") as f:
            vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize"))
        limit = vm + (96 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        for size in (600, 3000):
            for _ in range(2):
                held = []
                try:
                    while True:
                        if kind == "gpuarray":
                            held.append(gpuarray.empty(size, np.uint8))
                        elif kind == "DeviceMemoryPool":
                            held.append(pool.allocate(size))
                        elif kind == "PageLockedMemoryPool":
                            held.append(pool.allocate((size,), np.uint8))
                        else:
                            held.append(drv.mem_alloc(size))
                except MemoryError:
                    pass
                assert len(held) > 100, len(held)
                del held
                gc.collect()
        print("survived")
        """
        % kind,
        timeout=300,
    )
    assert r.returncode == 0 and "survived" in r.stdout, (r.returncode, r.stderr[-2000:])


# --------------------------------------------------------------------------- first probe


class _Interrupting:
    """Every conversion raises ``exc``."""

    def __init__(self, exc: type[BaseException]) -> None:
        self.exc = exc

    def _raise(self, *args: object) -> Any:
        raise self.exc("raised by the user's conversion")

    __int__ = __index__ = __float__ = __len__ = __iter__ = _raise


_CONVERTING_CALLS = [
    ("DeviceArray_float64", lambda x: pygpu.DeviceArray_float64(x)),
    ("pointer_wrapper_float64", lambda x: pygpu.pointer_wrapper_float64(x)),
    ("cudaGetErrorName", lambda x: pygpu.cudaGetErrorName(x)),
    ("cudaError.__eq__", lambda x: pygpu.cudaError(2) == x),
    ("PageLockedMemoryPool.allocate", lambda x: tools.PageLockedMemoryPool().allocate(x, np.float32)),
    ("mem_alloc", lambda x: drv.mem_alloc(x)),
]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, ZeroDivisionError], ids=lambda e: e.__name__)
@pytest.mark.parametrize("name,call", _CONVERTING_CALLS, ids=[n for n, _ in _CONVERTING_CALLS])
def test_errors_of_a_users_conversion_propagate_as_they_are(name: str, call: Any, exc: type[BaseException]) -> None:
    with pytest.raises(exc, match="raised by the user's conversion"):
        call(_Interrupting(exc))


def test_device_array_sizes_stay_consistent_after_the_host_dtype_is_reassigned() -> None:
    a = np.zeros(4, np.float64)
    d = pygpu.DeviceArray_float64(a)
    assert (d.size(), d.nbytes(), d.shape(), d.strides()) == (4, 32, [4], [8])
    b = np.zeros(4, np.float64)
    allocated = pygpu.DeviceArray_float64(b)
    assert allocated.allocate() == 0
    with warnings.catch_warnings():
        # numpy 2.5 deprecates assigning dtype; older numpy (and its users' code) still do it.
        warnings.simplefilter("ignore", DeprecationWarning)
        a.dtype = np.float32  # numpy reinterprets the 32 bytes as 8 float32 in place
        b.dtype = np.int16
    for method in (d.size, d.nbytes, d.shape, d.strides, d.allocate, allocated.to_device, allocated.to_host):
        with pytest.raises(TypeError, match="changed in place"):
            method()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        a.dtype = np.float64
    assert (d.size(), d.nbytes()) == (4, 32)
    assert d.allocate() == 0


@pytest.mark.parametrize("shape", [b"abc", bytearray(b"\x02\x03"), b""], ids=repr)
def test_device_array_refuses_bytes_as_a_shape(shape: Any) -> None:
    with pytest.raises(TypeError, match="shape"):
        pygpu.DeviceArray_float64(shape)
