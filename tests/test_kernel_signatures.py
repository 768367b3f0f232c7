"""Launches that know their kernel's declaration (docs/kernel_signatures.md): the declaration
read from the source, every conversion of a plain call's arguments and every refusal, keyword
arguments, prepare() without types, and the kernels without a declaration. Runs on every
backend."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pygpu
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpu import driver, gpuarray
from pygpu._toolchain.kernel_declarations import declarations, kernel_base_name
from pygpu.compiler import DynamicSourceModule, SourceModule

SOURCE = r"""
#define KERNEL extern "C" __global__
#define GLOBAL_MEM
typedef double real;
using count_t = unsigned int;
struct pair { int a; double b; };

__global__ void twice(float *x, int n) { for (int i = 0; i < n; i++) x[i] *= 2; }
KERNEL void store(GLOBAL_MEM real *out, count_t n, signed char c, unsigned short us, long long ll,
                  unsigned long long ull, bool flag, float f, double d)
{
  out[0] = n; out[1] = c; out[2] = us; out[3] = (double)ll; out[4] = (double)ull; out[5] = flag;
  out[6] = f; out[7] = d;
}
__global__ void by_value(double *out, float3 v, pair p, pycuda::complex<float> z)
{
  out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = p.a; out[4] = p.b; out[5] = z.real(); out[6] = z.imag();
}
__global__ void untyped(void *raw, char *bytes, const float2 *pairs, float4 *quads, unsigned int *u, float *parts)
{
}
"""

PAIR = np.dtype([("a", np.int32), ("b", np.float64)], align=True)


@pytest.fixture(scope="module")
def module() -> Any:
    return SourceModule("#include <pycuda-complex.hpp>\n" + SOURCE)


def _run(f: Any, *args: Any, **kwargs: Any) -> None:
    f(*args, block=(1, 1, 1), grid=(1, 1), **kwargs)
    pygpu.cudaDeviceSynchronize().check()


# --- what is read from the source ---------------------------------------------------


def test_parameters_come_from_the_declaration(module: Any) -> None:
    params = module.get_function("store").parameters
    assert [(p.name, p.c_type, p.size) for p in params] == [
        ("out", "real *", 8),
        ("n", "count_t", 4),
        ("c", "signed char", 1),
        ("us", "unsigned short", 2),
        ("ll", "long long", 8),
        ("ull", "unsigned long long", 8),
        ("flag", "bool", 1),
        ("f", "float", 4),
        ("d", "double", 8),
    ]
    # A struct's size comes from the backend where it reports sizes (host, CUDA 12.4+).
    p = module.get_function("by_value").parameters
    assert [x.c_type for x in p] == ["double *", "float3", "pair", "pycuda::complex<float>"]
    assert p[1].size == 12 and p[3].size == 8
    assert p[2].size in (16, None)
    assert "name='out'" in repr(p[0])


def test_declaration_reader_forms() -> None:
    d = declarations(
        "#define N 4\n/* __global__ void commented(int a) */\n"
        "__global__ void __launch_bounds__(256, 2) lb(const float* __restrict__ a, int b[], unsigned, long int li) {}\n"
        "namespace ns { __global__ void inner(double *d) {} }\n"
        "__global__ void over(int a) {}\n__global__ void over(float a) {}\n"
        "__global__ void fwd(int n);\n__global__ void fwd(int n) {}\n"
        "__global__ void none(void) {}\n"
    )
    assert [p[:3] for p in d["lb"]] == [
        ("a", "const float *__restrict__", "P"),
        ("b", "int *", "P"),
        (None, "unsigned", "u"),
        ("li", "long int", "i"),
    ]
    assert d["inner"][0][5] == ("f", 8, 1)
    assert "over" not in d  # overloads: which one a mangled name means is not read
    assert d["fwd"] == (("n", "int", "i", 4, 4, None),)
    assert d["none"] == ()
    assert kernel_base_name("_Z5twicePfi") == "twice"
    assert kernel_base_name("_ZN2ns5innerEPd") == "inner"
    assert kernel_base_name("plain") == "plain"


def test_kernels_without_a_declaration(module: Any) -> None:
    # A kernel made by a function-like macro is not read (templates are not either): its
    # launches are checked by size alone, where the backend knows sizes, as before.
    m = SourceModule("#define K(name, T) __global__ void name(T *x) { x[0] = 1; }\nK(made, float)")
    f = m.get_function("made")
    assert f.parameters is None or [(p.name, p.c_type) for p in f.parameters] == [(None, None)]
    x = gpuarray.zeros(1, np.float32)
    _run(f, x)
    assert x.get()[0] == 1
    with pytest.raises(TypeError, match="names are unknown"):
        f(x=x, block=(1, 1, 1))
    with pytest.raises(ValueError, match="needs arg_types"):
        pygpu.Module(pygpu.compiler.compile("__global__ void k(int *x) {}")).get_function("k").prepare()


def test_mangled_names_find_their_declaration() -> None:
    m = SourceModule("__global__ void twice(float *x) { x[0] *= 2; }", no_extern_c=True)
    f = m.get_function("_Z5twicePf")
    assert [p.name for p in f.parameters] == ["x"]
    with pytest.raises(TypeError, match="float64"):
        f(gpuarray.zeros(1, np.float64), block=(1, 1, 1))


def test_dynamic_source_module_declares_its_kernels() -> None:
    m = DynamicSourceModule("__global__ void twice(float *x, int n) { for (int i = 0; i < n; i++) x[i] *= 2; }")
    f = m.get_function("twice")
    x = gpuarray.to_gpu(np.ones(2, np.float32))
    _run(f, x, n=2)
    np.testing.assert_array_equal(x.get(), [2, 2])


# --- conversions --------------------------------------------------------------------


def test_python_and_numpy_numbers_become_the_parameters_types(module: Any) -> None:
    out = gpuarray.zeros(8, np.float64)
    f = module.get_function("store")
    _run(f, out, 7, -3, 65535, -(2**62), 2**63 + 1024, True, 0.1, 1 / 3)
    np.testing.assert_array_equal(out.get(), [7, -3, 65535, -(2**62), 2**63 + 1024, 1, np.float32(0.1), 1 / 3])
    _run(
        f,
        out,
        np.int64(5),
        np.uint8(4),
        np.int32(9),
        np.int8(-1),
        np.uint64(2),
        np.bool_(False),
        np.float64(2.5),
        np.float32(0.5),
    )
    np.testing.assert_array_equal(out.get(), [5, 4, 9, -1, 2, 0, 2.5, 0.5])
    # 0-d and one-element host arrays stand for their element, as PyCUDA passes them.
    _run(f, out, np.array(1), np.array([2]), 3, 4, 5, 1, np.array(6.0), 7.0)
    np.testing.assert_array_equal(out.get(), [1, 2, 3, 4, 5, 1, 6, 7])


@pytest.mark.parametrize(
    ("index", "value", "error"),
    [
        (1, -1, OverflowError),  # unsigned
        (1, 2**32, OverflowError),
        (2, 128, OverflowError),
        (3, 70000, OverflowError),
        (5, -5, OverflowError),
        (6, 2, OverflowError),  # bool
        (7, 1e39, OverflowError),  # float
        (1, 2.0, TypeError),  # a float for an integer: no silent truncation
        (1, "3", TypeError),
        (1, None, TypeError),
        (7, 1j, TypeError),  # a complex for a real
        (7, np.complex64(1 + 1j), TypeError),  # numpy would drop the imaginary part
        (8, "x", TypeError),
        (0, 1.5, TypeError),  # not a pointer
        (0, np.int32(5), TypeError),
        (0, np.zeros(3), TypeError),  # a host array for a device pointer
    ],
)
def test_out_of_range_and_wrong_kinds_are_refused(module: Any, index: int, value: Any, error: type) -> None:
    out = gpuarray.zeros(8, np.float64)
    args: list[Any] = [out, 1, 1, 1, 1, 1, True, 1.0, 1.0]
    args[index] = value
    name = module.get_function("store").parameters[index].name
    with pytest.raises(error, match=f"store\\(\\): argument {index} for parameter '{name}'"):
        _run(module.get_function("store"), *args)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]),
    st.integers(-(2**65), 2**65),
)
def test_integers_convert_exactly_or_raise(dtype: str, value: int) -> None:
    ctype = pygpu.tools.dtype_to_ctype(np.dtype(dtype))
    m = _echo(ctype)
    out = gpuarray.zeros(1, dtype)
    info = np.iinfo(dtype)
    if info.min <= value <= info.max:
        _run(m, out, value)
        assert int(out.get()[0]) == value
    else:
        with pytest.raises(OverflowError, match=f"out of the range of {ctype}"):
            _run(m, out, value)


_echoes: dict[str, Any] = {}


def _echo(ctype: str) -> Any:
    if ctype not in _echoes:
        _echoes[ctype] = SourceModule(f"__global__ void echo({ctype} *out, {ctype} v) {{ *out = v; }}").get_function(
            "echo"
        )
    return _echoes[ctype]


def test_structs_vectors_and_complex_by_value(module: Any) -> None:
    out = gpuarray.zeros(7, np.float64)
    f = module.get_function("by_value")
    pair = np.array((-7, 2.5), PAIR)[()]
    _run(f, out, gpuarray.vec.make_float3(0.5, 1.5, 2.5), pair, 3 - 4j)
    np.testing.assert_array_equal(out.get(), [0.5, 1.5, 2.5, -7, 2.5, 3, -4])
    with pytest.raises(ValueError, match="12-byte struct but a .* of 16 bytes"):
        _run(f, out, np.zeros(4, np.float32), pair, 0j)
    with pytest.raises(TypeError, match="parameter 'v' .* 12-byte struct, not a number"):
        _run(f, out, 1.0, pair, 0j)
    if f.parameters[2].size is not None:
        with pytest.raises(ValueError, match="16-byte struct but a"):
            _run(f, out, gpuarray.vec.make_float3(0, 0, 0), np.zeros(1, np.int32)[0].tobytes(), 0j)


def test_half_parameters() -> None:
    m = SourceModule(
        '#include <cuda_fp16.h>\nextern "C" __global__ void h(__half *o, __half v) { *o = v; }', no_extern_c=True
    )
    f = m.get_function("h")
    out = gpuarray.zeros(1, np.float16)
    for value in (1.5, np.float16(-2.5), 3, np.float32(65504)):
        _run(f, out, value)
        assert out.get()[0] == np.float16(value)
    with pytest.raises(OverflowError, match="out of the range of half"):
        _run(f, out, 1e6)
    with pytest.raises(TypeError, match="array of float32"):
        _run(f, gpuarray.zeros(1, np.float32), 1.0)


# --- pointers -----------------------------------------------------------------------


def test_the_readme_mistake_is_caught(module: Any) -> None:
    twice = module.get_function("twice")
    doubles = gpuarray.to_gpu(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(
        TypeError, match=r"parameter 'x' \(float \*x\) is an array of float64: pass an array of float32"
    ):
        _run(twice, doubles, 3)
    np.testing.assert_array_equal(doubles.get(), [1, 2, 3])  # untouched
    floats = gpuarray.to_gpu(np.array([1.0, 2.0, 3.0], np.float32))
    _run(twice, floats, 3)
    np.testing.assert_array_equal(floats.get(), [2, 4, 6])


@pytest.mark.parametrize(
    ("param", "dtype", "outcome"),
    [
        ("raw", np.float64, "ok"),  # void*
        ("bytes", np.int16, "ok"),  # char*
        ("pairs", np.complex64, "ok"),  # float2* over complex numbers
        ("pairs", np.float32, "ok"),  # float2* over their parts
        ("pairs", np.float64, "error"),
        ("quads", np.float32, "ok"),
        ("quads", np.int32, "warn"),  # same size, another type: the bits are reinterpreted
        ("u", np.int32, "ok"),  # signedness is not checked
        ("u", np.int64, "error"),
        ("u", np.float32, "warn"),  # PyCUDA's own test_large_smem does this
        ("parts", np.complex64, "ok"),  # float* over interleaved parts
        ("parts", np.complex128, "error"),
        ("parts", np.float64, "error"),  # the README's mistake
    ],
)
def test_pointer_element_types(module: Any, param: str, dtype: Any, outcome: str) -> None:
    f = module.get_function("untyped")
    args = {p.name: gpuarray.zeros(4, np.float32 if p.name != "pairs" else np.complex64) for p in f.parameters}
    args["u"] = gpuarray.zeros(4, np.uint32)
    args[param] = gpuarray.zeros(4, dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if outcome == "error":
            with pytest.raises(TypeError, match=f"parameter '{param}' .* is an array of {np.dtype(dtype).name}"):
                _run(f, **args)
        else:
            _run(f, **args)
    kinds = [w.category for w in caught]
    assert kinds == ([pygpu.KernelArgumentWarning] if outcome == "warn" else [])
    if outcome == "warn":
        assert f"parameter '{param}'" in str(caught[0].message)
        with warnings.catch_warnings():
            warnings.simplefilter("error", pygpu.KernelArgumentWarning)
            with pytest.raises(pygpu.KernelArgumentWarning):
                _run(f, **args)


def test_addresses_allocations_and_handlers(module: Any) -> None:
    twice = module.get_function("twice")
    a = gpuarray.to_gpu(np.ones(2, np.float32))
    _run(twice, a.gpudata, 2)
    _run(twice, int(a.gpudata), np.int32(2))
    _run(twice, np.uintp(int(a.gpudata)), 2)
    np.testing.assert_array_equal(a.get(), [8, 8])
    host = np.ones(2, np.float32)
    _run(twice, driver.InOut(host), 2)
    np.testing.assert_array_equal(host, [2, 2])
    with pytest.raises(TypeError, match="array of float64"):
        _run(twice, driver.InOut(np.ones(2)), 2)
    with pytest.raises(TypeError, match="not a device address"):
        _run(twice, -1, 2)


# --- keyword arguments and prepare() --------------------------------------------------


def test_keyword_arguments(module: Any) -> None:
    twice = module.get_function("twice")
    a = gpuarray.to_gpu(np.ones(3, np.float32))
    _run(twice, n=3, x=a)
    _run(twice, a, n=3)
    np.testing.assert_array_equal(a.get(), [4, 4, 4])
    with pytest.raises(TypeError, match="missing 1 required argument: 'n'"):
        _run(twice, a)
    with pytest.raises(TypeError, match="unexpected keyword argument 'size'"):
        _run(twice, a, size=3)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        _run(twice, a, 3, x=a)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        _run(twice, a, 3, 4)


def test_prepare_without_types_takes_the_declaration(module: Any) -> None:
    f = module.get_function("store").prepare()
    out = gpuarray.zeros(8, np.float64)
    f.prepared_call((1, 1), (1, 1, 1), out, 1, 2, 3, 4, 5, True, 0.5, 0.25)
    pygpu.cudaDeviceSynchronize().check()
    np.testing.assert_array_equal(out.get(), [1, 2, 3, 4, 5, 1, 0.5, 0.25])
    g = module.get_function("by_value").prepare()
    g.prepared_call((1, 1), (1, 1, 1), out, gpuarray.vec.make_float3(1, 2, 3), np.array((4, 5.0), PAIR)[()], 6 + 7j)
    pygpu.cudaDeviceSynchronize().check()
    np.testing.assert_array_equal(out.get()[:7], [1, 2, 3, 4, 5, 6, 7])


def test_time_kernel_returns_the_launchs_seconds() -> None:
    # PyCUDA's function_call: time_kernel=True synchronizes, launches, synchronizes again and
    # returns the wall-clock seconds; asynchronous (stream=) invocations cannot be timed.
    f = SourceModule("__global__ void k(float *a) { a[threadIdx.x] *= 2; }").get_function("k")
    a = gpuarray.to_gpu(np.ones(32, np.float32))
    seconds = f(a, block=(32, 1, 1), grid=(1, 1), time_kernel=True)
    assert isinstance(seconds, float) and 0 < seconds < 60
    assert a.get().tolist() == [2.0] * 32  # the launch ran, and was waited for
    assert f(a, block=(32, 1, 1), grid=(1, 1)) is None
    with pytest.raises(ValueError, match="asynchronous invocation"):
        f(a, block=(32, 1, 1), stream=pygpu.cudaStream_t(), time_kernel=True)
