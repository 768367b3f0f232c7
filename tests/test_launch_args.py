"""The launch path's argument packing, against numpy's own conversions: every scalar kind
(Python int/float/complex, numpy scalars of every dtype), GPUArrays, DeviceAllocations and
numpy.intp addresses as pointers, structs by value in prepare() (PyCUDA's vector types and
record dtypes, their C layout checked), and the bad inputs. Runs on every backend (the host
one compiles the kernels with the system C++ compiler)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pygpu
import pytest
from pygpu import gpuarray
from pygpu.compiler import SourceModule
from pygpu.tools import dtype_to_ctype

# Every dtype a kernel takes by value, by the C type it has in a kernel.
SCALAR_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]
COMPLEX_C = {"complex64": "float2", "complex128": "double2"}

RECORD = np.dtype([("a", np.int32), ("b", np.float64), ("c", np.int8)], align=True)
STRUCT_SOURCE = r"""
struct record { int a; double b; signed char c; };
__global__ void fields(double *out, int k, float3 v, record r, double d)
{
  out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = r.a; out[4] = r.b; out[5] = r.c; out[6] = k; out[7] = d;
}
"""


def _echo_source() -> str:
    kernels = [
        f"__global__ void echo_{name}({dtype_to_ctype(name)} *out, {dtype_to_ctype(name)} v) {{ *out = v; }}"
        for name in SCALAR_DTYPES
    ]
    kernels += [f"__global__ void echo_{name}({c} *out, {c} v) {{ *out = v; }}" for name, c in COMPLEX_C.items()]
    kernels.append("__global__ void echo_bool(bool *out, bool v) { *out = v; }")
    kernels.append("__global__ void copy_at(double *out, const double *src) { out[0] = src[0]; }")
    return "\n".join(kernels)


@pytest.fixture(scope="module")
def echo() -> Any:
    return SourceModule(_echo_source())


@pytest.fixture(scope="module")
def structs() -> Any:
    return SourceModule(STRUCT_SOURCE)


def _echoed(echo: Any, dtype: str, value: Any, prepared: bool) -> np.ndarray:
    out = gpuarray.zeros(1, dtype)
    f = echo.get_function(f"echo_{dtype}")
    if prepared:
        f.prepare([np.intp, np.dtype(dtype)])
        f.prepared_call((1, 1), (1, 1, 1), out, value)
    else:
        f(out, value, block=(1, 1, 1))
    return out.get()


@pytest.mark.parametrize("dtype", [*SCALAR_DTYPES, *COMPLEX_C, "bool"])
def test_numpy_scalars_of_every_dtype_pass_their_value(echo: Any, dtype: str) -> None:
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    values = [np.dtype(dtype).type(v) for v in ((info.min, info.max, 1) if info else (1.5, -2.25e-3))]
    if np.dtype(dtype).kind == "c":
        values = [np.dtype(dtype).type(complex(1.5, -2.5)), np.dtype(dtype).type(complex(-0.0, 3e-3))]
    if dtype == "bool":
        values = [np.True_, np.False_]
    for v in values:
        assert _echoed(echo, dtype, v, prepared=False).tobytes() == np.asarray(v).tobytes()
        assert _echoed(echo, dtype, v, prepared=True).tobytes() == np.asarray(v).tobytes()


@pytest.mark.parametrize("dtype", SCALAR_DTYPES)
def test_prepared_python_numbers_convert_as_numpy(echo: Any, dtype: str) -> None:
    dt = np.dtype(dtype)
    values: list[Any] = [1, 0, int(np.iinfo(dt).max)] if dt.kind in "iu" else [0.1, -1e30, 3, float("inf")]
    if dt.kind == "i":
        values.append(int(np.iinfo(dt).min))
    for v in values:
        expected = np.asarray(v).astype(dt) if dt.kind == "f" else np.asarray(v, dtype=dt)
        if dt == np.float32 and v == -1e30:
            expected = np.float32(-1e30)
        assert _echoed(echo, dtype, v, prepared=True)[0] == expected


@pytest.mark.parametrize("dtype", list(COMPLEX_C))
def test_prepared_python_complex(echo: Any, dtype: str) -> None:
    assert _echoed(echo, dtype, complex(0.1, -3.0), prepared=True)[0] == np.dtype(dtype).type(complex(0.1, -3.0))


def test_numpy_scalars_of_other_types_convert_to_the_prepared_type(echo: Any) -> None:
    # Only a scalar of the parameter's own type is read in place; others convert (and are
    # range-checked) as Python numbers do.
    assert _echoed(echo, "int32", np.int64(-7), prepared=True)[0] == -7
    assert _echoed(echo, "float64", np.float32(0.1), prepared=True)[0] == np.float64(np.float32(0.1))
    assert _echoed(echo, "int16", np.uint8(200), prepared=True)[0] == 200
    with pytest.raises(OverflowError):
        _echoed(echo, "int32", np.int64(1 << 40), prepared=True)


class _Float64Subclass(np.float64):
    pass


def test_a_subclass_of_a_numpy_scalar_passes_its_value(echo: Any) -> None:
    value = _Float64Subclass(-3.25)
    assert _echoed(echo, "float64", value, prepared=False)[0] == -3.25
    assert _echoed(echo, "float64", value, prepared=True)[0] == -3.25


def test_pointers_from_every_kind_of_device_memory(echo: Any) -> None:
    host = np.arange(4, dtype=np.float64) + 0.5
    a = gpuarray.to_gpu(host)
    alloc = pygpu.mem_alloc(host.nbytes)
    pygpu.memcpy_htod(alloc, host)
    f = echo.get_function("copy_at")
    sources: list[tuple[Any, float]] = [
        (a[2:], 2.5),
        (a, 0.5),
        (alloc, 0.5),
        (np.intp(int(alloc)) + 16, 2.5),
        (int(alloc) + 24, 3.5),
        (a[1:].gpudata, 1.5),
    ]
    for src, expected in sources:
        if src.__class__ is int:
            continue  # an unprepared call needs sized types: a Python int is refused (see below)
        out = gpuarray.zeros(1, np.float64)
        f(out, src, block=(1, 1, 1))
        assert out.get()[0] == expected, type(src)
    for signature in ("PP", [np.intp, np.intp]):
        f.prepare(signature)
        for src, expected in sources:
            out = gpuarray.zeros(1, np.float64)
            f.prepared_call((1, 1), (1, 1, 1), out, src)
            assert out.get()[0] == expected, (signature, type(src))


def test_freed_memory_is_refused(echo: Any) -> None:
    f = echo.get_function("copy_at")
    out = gpuarray.zeros(1, np.float64)
    alloc = pygpu.mem_alloc(8)
    alloc.free()
    with pytest.raises(pygpu.InvalidHandleError):
        f(out, alloc, block=(1, 1, 1))
    a = gpuarray.GPUArray(4, np.float64, gpudata=pygpu.mem_alloc(32))
    a.gpudata.free()
    with pytest.raises(pygpu.InvalidHandleError):
        f(out, a, block=(1, 1, 1))
    f.prepare("PP")
    with pytest.raises(pygpu.InvalidHandleError):
        f.prepared_call((1, 1), (1, 1, 1), out, a)


def test_bad_scalar_arguments(echo: Any) -> None:
    f = echo.get_function("echo_int32")
    out = gpuarray.zeros(1, np.int32)
    with pytest.raises(TypeError, match=r"parameter 'v' \(int v\) is 1.5 \(float\): the parameter takes an integer"):
        f(out, 1.5, block=(1, 1, 1))
    with pytest.raises(TypeError, match="'seven' \\(str\\): the parameter takes an integer"):
        f(out, "seven", block=(1, 1, 1))
    f.prepare("Pi")
    with pytest.raises(TypeError):
        f.prepared_call((1, 1), (1, 1, 1), out, "seven")
    with pytest.raises(OverflowError):
        f.prepared_call((1, 1), (1, 1, 1), out, 1 << 31)
    with pytest.raises(ValueError, match="prepared for 2 arguments but got 3"):
        f.prepared_call((1, 1), (1, 1, 1), out, 1, 2)
    with pytest.raises(TypeError, match=r"echo_int32\(\) takes 2 arguments \(int \*out, int v\) but 3 were given"):
        f(out, np.int32(1), np.int32(2), block=(1, 1, 1))


@pytest.mark.parametrize(
    "signature",
    [
        [np.intp, np.int32, gpuarray.vec.float3, RECORD, np.float64],
        "Pi12s24sd",
        ["P", "i", "12s", RECORD, "d"],
    ],
)
def test_structs_by_value_in_prepared_calls(structs: Any, signature: Any) -> None:
    f = structs.get_function("fields").prepare(signature)
    out = gpuarray.zeros(8, np.float64)
    record = np.array((-7, 2.5, -3), RECORD)[()]
    f.prepared_call((1, 1, 1), (1, 1, 1), out, 11, gpuarray.vec.make_float3(0.5, 1.5, 2.5), record, 0.125)
    np.testing.assert_array_equal(out.get(), [0.5, 1.5, 2.5, -7, 2.5, -3, 11, 0.125])
    # The same values unprepared (numpy scalars carry their types) and as bytes of the struct.
    out.fill(0)
    f.prepared_call((1, 1, 1), (1, 1, 1), out, 11, gpuarray.vec.make_float3(0.5, 1.5, 2.5).tobytes(), record, 0.125)
    np.testing.assert_array_equal(out.get(), [0.5, 1.5, 2.5, -7, 2.5, -3, 11, 0.125])
    out.fill(0)
    structs.get_function("fields")(
        out, np.int32(11), gpuarray.vec.make_float3(0.5, 1.5, 2.5), record, np.float64(0.125), block=(1, 1, 1)
    )
    np.testing.assert_array_equal(out.get(), [0.5, 1.5, 2.5, -7, 2.5, -3, 11, 0.125])


def test_prepared_with_a_vector_type_as_pycuda_tests_it(structs: Any) -> None:
    module = SourceModule(
        "__global__ void cuda_function(float3 input) { float3 result = make_float3(input.x, input.y, input.z); "
        "(void)result; }"
    )
    kernel = module.get_function("cuda_function")
    kernel.prepare([gpuarray.vec.float3])
    kernel.prepared_call((1, 1, 1), (1, 1, 1), gpuarray.vec.make_float3(0.0, 1.0, 2.0))
    pygpu.cudaDeviceSynchronize().check()


def test_struct_layout_and_size_mismatches_are_refused(structs: Any) -> None:
    f = structs.get_function("fields")
    packed = np.dtype([("a", np.int32), ("b", np.float64), ("c", np.int8)])  # no C padding
    with pytest.raises(ValueError, match="align=True"):
        f.prepare([np.intp, np.int32, gpuarray.vec.float3, packed, np.float64])
    with pytest.raises(ValueError, match="align=True"):
        f.prepare([np.dtype({"names": ["a", "b"], "formats": [np.int32, np.int8], "offsets": [0, 4]})])
    with pytest.raises(ValueError, match="1 to 4096 bytes"):
        f.prepare("P0s")
    with pytest.raises(ValueError, match="ends with a count"):
        f.prepare("Pi12")
    f.prepare("Pi12s24sd")
    out = gpuarray.zeros(8, np.float64)
    record = np.array((-7, 2.5, -3), RECORD)[()]
    with pytest.raises(ValueError, match="12-byte struct but a bytes of 16 bytes"):
        f.prepared_call((1, 1, 1), (1, 1, 1), out, 1, b"\0" * 16, record, 0.0)
    with pytest.raises(ValueError, match="12-byte struct but a .* of 16 bytes"):
        f.prepared_call((1, 1, 1), (1, 1, 1), out, 1, np.zeros(4, np.float32), record, 0.0)
    with pytest.raises(TypeError, match="not a number"):
        f.prepared_call((1, 1, 1), (1, 1, 1), out, 1, 1.0, record, 0.0)
    with pytest.raises(TypeError, match="24-byte struct"):
        f.prepared_call((1, 1, 1), (1, 1, 1), out, 1, gpuarray.vec.make_float3(0, 0, 0), object(), 0.0)


def test_struct_size_disagreeing_with_the_kernel(structs: Any) -> None:
    f = structs.get_function("fields")
    # Where the backend knows the kernel's parameter sizes (host, CUDA 12.4+), prepare() says
    # which struct is wrong; otherwise the call is refused by its argument sizes.
    try:
        f.prepare("Pi16s24sd")
    except ValueError as e:
        assert "16-byte struct but parameter 2 of fields has 12 bytes" in str(e)
        return
    with pytest.raises(pygpu.InvalidValueError):
        f.prepared_call((1, 1, 1), (1, 1, 1), gpuarray.zeros(8), 1, b"\0" * 16, b"\0" * 24, 0.0)
    pygpu.cudaGetLastError()


def test_prepared_calls_free_at_once_what_packing_drops(echo: Any) -> None:
    # An np.intp parameter given an object with a `ptr` is tried as an integer first, and the
    # exception its __index__ raises is dropped. It must be freed then, not queued until some
    # other call into pygpu (the prepared calls bypass PyO3's usual entry). Only a GPU backend
    # can show the queueing: a host launch re-enters PyO3, which frees the queue.
    class Dropped(TypeError):
        pass

    raised: list[weakref.ref[Dropped]] = []

    def dropped() -> Dropped:
        e = Dropped("not an integer")
        raised.append(weakref.ref(e))
        return e

    class Pointer:
        def __init__(self, ptr: int) -> None:
            self.ptr = ptr

        def __index__(self) -> int:
            raise dropped()

    out, src = gpuarray.zeros(1, np.float64), gpuarray.to_gpu(np.array([2.5]))
    call = echo.get_function("copy_at").prepare([np.intp, np.intp]).prepared_call
    call((1, 1), (1, 1, 1), Pointer(out.ptr), Pointer(src.ptr))
    alive = sum(r() is not None for r in raised)  # before any other call into pygpu
    assert len(raised) == 2 and alive == 0
    assert out.get()[0] == 2.5
