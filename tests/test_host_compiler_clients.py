"""Sources written for PyCUDA by real client libraries (reikna's style): kernels declared through
macros, in namespaces, with C++ linkage (looked up by mangled name), and built under the C++
standard the options ask for. The launch tests run on every backend; the ones about the host
compiler's own machinery skip elsewhere, and those marked `gpu` check NVRTC on the cuda backend."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pygpu
import pygpu.driver as cuda
import pytest
from pygpu._toolchain import host_compiler
from pygpu.compiler import CompileError, SourceModule

host_only = pytest.mark.skipif(pygpu.backend() != "host", reason="the host compiler's kernel discovery")

# reikna's CUDA prelude (its own macros), then code in its style: helpers are templates and
# __device__ functions, kernels are declared with KERNEL, shared memory with LOCAL_MEM.
REIKNA_STYLE = r"""
#define CUDA
#define LOCAL_BARRIER __syncthreads()
#define WITHIN_KERNEL __device__
#define KERNEL extern "C" __global__
#define GLOBAL_MEM /* empty */
#define LOCAL_MEM __shared__
#define INLINE __forceinline__
#define SIZE_T unsigned int
#define VIRTUAL_SKIP_THREADS if (virtual_global_id(0) >= n) return

WITHIN_KERNEL INLINE SIZE_T virtual_global_id(int dim) {
    return dim == 0 ? blockIdx.x * blockDim.x + threadIdx.x : 0;
}

template <typename T>
WITHIN_KERNEL INLINE T mul(T a, T b) { return a * b; }

KERNEL void scale_add(GLOBAL_MEM float *dest, GLOBAL_MEM const float *src, float coeff, int n)
{
    VIRTUAL_SKIP_THREADS;
    const SIZE_T i = virtual_global_id(0);
    dest[i] = mul<float>(src[i], coeff) + 1.0f;
}

KERNEL void block_reverse(GLOBAL_MEM double *data)
{
    LOCAL_MEM double tile[64];
    const SIZE_T t = threadIdx.x;
    tile[t] = data[blockIdx.x * 64 + t];
    LOCAL_BARRIER;
    data[blockIdx.x * 64 + t] = tile[63 - t];
}
"""


def _launch_reikna_style(module: SourceModule) -> None:
    src = np.linspace(-3, 5, 300).astype(np.float32)
    dest = np.zeros_like(src)
    module.get_function("scale_add")(
        cuda.Out(dest), cuda.In(src), np.float32(2.5), np.int32(src.size), block=(128, 1, 1), grid=(3, 1)
    )
    # A GPU contracts the multiply-add into one rounding (fma): an ulp near 0 is a large relative error.
    np.testing.assert_allclose(dest, src * 2.5 + 1, rtol=1e-6, atol=1e-6)
    data = np.arange(128, dtype=np.float64)
    module.get_function("block_reverse")(cuda.InOut(data), block=(64, 1, 1), grid=(2, 1))
    np.testing.assert_array_equal(data, np.concatenate([np.arange(63, -1, -1), np.arange(127, 63, -1)]))


def test_macro_declared_kernels_launch() -> None:
    _launch_reikna_style(SourceModule(REIKNA_STYLE, no_extern_c=True, cache_dir=False))


def test_macro_declared_kernels_with_extern_c_wrapping() -> None:
    # The default wrapping puts the source in extern "C" { }: a KERNEL's own extern "C" nests.
    _launch_reikna_style(
        SourceModule(
            REIKNA_STYLE.replace("template <typename T>\n", "")
            .replace("mul<float>", "mul")
            .replace("T mul(T a, T b)", "float mul(float a, float b)"),
            cache_dir=False,
        )
    )


def test_macro_from_options_declares_the_kernel() -> None:
    # The macro comes from a -D option: only preprocessing with the build's options sees it.
    source = "MY_KERNEL void fill(int* out) { out[threadIdx.x] = VALUE; }\n"
    module = SourceModule(
        source, no_extern_c=True, options=['-DMY_KERNEL=extern "C" __global__', "-DVALUE=41"], cache_dir=False
    )
    out = np.zeros(16, np.int32)
    module.get_function("fill")(cuda.Out(out), block=(16, 1, 1), grid=(1, 1))
    assert (out == 41).all()


def test_kernel_behind_a_conditional_is_found_only_when_compiled(tmp_path: Path) -> None:
    source = """
    #ifdef WITH_EXTRA
    extern "C" __global__ void extra(int* out) { out[0] = 7; }
    #endif
    extern "C" __global__ void base(int* out) { out[0] = 1; }
    """
    # The same source and cache folder, two option sets: the key covers what discovery saw.
    with_extra = SourceModule(source, no_extern_c=True, options=["-DWITH_EXTRA"], cache_dir=str(tmp_path))
    without = SourceModule(source, no_extern_c=True, cache_dir=str(tmp_path))
    out = np.zeros(1, np.int32)
    with_extra.get_function("extra")(cuda.Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out[0] == 7
    without.get_function("base")(cuda.Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out[0] == 1
    with pytest.raises(cuda.Error):
        without.get_function("extra")


NAMESPACED = r"""
namespace physics {
namespace detail {
__device__ float square(float x) { return x * x; }
}
struct Params { float scale; int n; };
extern "C" __global__ void energy(float* out, const float* v, Params p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) out[i] = p.scale * detail::square(v[i]);
}
extern "C" {
__global__ void in_block(int* out) { out[threadIdx.x] = threadIdx.x * 3; }
}
}  // namespace physics
namespace {
extern "C" __global__ void anonymous_ns(int* out) { out[threadIdx.x] = 9; }
}
"""


@pytest.mark.parametrize("no_extern_c", [True, False])
def test_extern_c_kernels_in_namespaces_launch(no_extern_c: bool) -> None:
    module = SourceModule(NAMESPACED, no_extern_c=no_extern_c, cache_dir=False)
    v = np.arange(50, dtype=np.float32)
    out = np.zeros_like(v)
    params = np.array([(0.5, 50)], dtype=[("scale", np.float32), ("n", np.int32)])[0]
    module.get_function("energy")(cuda.Out(out), cuda.In(v), params, block=(32, 1, 1), grid=(2, 1))
    np.testing.assert_allclose(out, 0.5 * v * v)
    ints = np.zeros(8, np.int32)
    module.get_function("in_block")(cuda.Out(ints), block=(8, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(ints, np.arange(8) * 3)
    # An anonymous namespace gives internal linkage, even to extern "C": nvcc exports no such kernel.
    with pytest.raises(cuda.Error, match="anonymous_ns"):
        module.get_function("anonymous_ns")


# no_extern_c=True without extern "C": nvcc and NVRTC export the Itanium-mangled names, which
# PyCUDA users pass to get_function; the host's g++ mangles the same way.
MANGLED = r"""
namespace lib {
struct Pair { float a, b; };
__global__ void apply(Pair p, float* out) { out[threadIdx.x] = p.a * threadIdx.x + p.b; }
__global__ void apply(double* out) { out[threadIdx.x] = -1.0; }
}
__global__ void plain_cxx(int* out);
__global__ void plain_cxx(int* values) { values[threadIdx.x] += 100; }
namespace lib { __global__ void later(int* out); }
__global__ void lib::later(int* out) { out[0] = 3; }
"""


def test_cxx_linkage_kernels_by_mangled_name() -> None:
    module = SourceModule(MANGLED, no_extern_c=True, cache_dir=False)
    out = np.zeros(4, np.float32)
    pair = np.array([(2.0, 0.5)], dtype=[("a", np.float32), ("b", np.float32)])[0]
    module.get_function("_ZN3lib5applyENS_4PairEPf")(pair, cuda.Out(out), block=(4, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(out, [0.5, 2.5, 4.5, 6.5])
    doubles = np.zeros(4, np.float64)
    module.get_function("_ZN3lib5applyEPd")(cuda.Out(doubles), block=(4, 1, 1), grid=(1, 1))
    assert (doubles == -1).all()
    ints = np.arange(4, dtype=np.int32)
    module.get_function("_Z9plain_cxxPi")(cuda.InOut(ints), block=(4, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(ints, [100, 101, 102, 103])
    # Declared in its namespace, defined outside it: one kernel, one export.
    module.get_function("_ZN3lib5laterEPi")(cuda.InOut(ints), block=(1, 1, 1), grid=(1, 1))
    assert ints[0] == 3


@host_only
def test_host_cxx_kernel_keeps_its_plain_name_and_checks_arguments() -> None:
    module = SourceModule(MANGLED, no_extern_c=True, cache_dir=False)
    ints = np.zeros(2, np.int32)
    module.get_function("plain_cxx")(cuda.InOut(ints), block=(2, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(ints, [100, 100])
    # The mangled export carries the parameter sizes too: a wrong argument list is refused.
    with pytest.raises((cuda.Error, TypeError, ValueError)):
        module.get_function("_ZN3lib5applyEPd")(np.float32(1), np.float32(2), block=(1, 1, 1), grid=(1, 1))
    # An overloaded name has no plain export: which one would it be?
    with pytest.raises(cuda.Error):
        module.get_function("apply")


# Code that an older standard accepts and C++17 does not (`register`, dynamic exception
# specifications), as old CUDA sources have.
OLD_STANDARD = r"""
struct Acc { float total; };
__device__ float accumulate(const float* v, int n) throw() {
    register float s = 0;
    for (int i = 0; i < n; ++i) s += v[i];
    return s;
}
extern "C" __global__ void sums(float* out, const float* v, int n) {
    out[threadIdx.x] = accumulate(v + threadIdx.x * n, n) + __cplusplus / 100 % 100 * 1000;
}
"""


@pytest.mark.parametrize(
    ("options", "year"),
    [(["-std=c++11"], 11), (["-std=c++14"], 14), (["--std=c++14"], 14), (["-std", "c++11"], 11)],
)
def test_older_standard_builds_and_runs(options: list[str], year: int) -> None:
    module = SourceModule(OLD_STANDARD, no_extern_c=True, options=options, cache_dir=False)
    v = np.arange(12, dtype=np.float32)
    out = np.zeros(3, np.float32)
    module.get_function("sums")(cuda.Out(out), cuda.In(v), np.int32(4), block=(3, 1, 1), grid=(1, 1))
    # The kernel adds the standard's year (__cplusplus 201103 -> 11): it really was that standard.
    np.testing.assert_array_equal(out, v.reshape(3, 4).sum(axis=1) + year * 1000)


def test_older_standard_with_pygpu_kernel_header() -> None:
    source = r"""
    #include "pygpu_kernel.h"
    PYGPU_KERNEL void twice(double* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = 2 * x[i];
    }
    PYGPU_EXPORT(twice)
    """
    x = np.arange(10, dtype=np.float64)
    module = SourceModule(source, no_extern_c=True, options=["-std=c++11"], cache_dir=False)
    module.get_function("twice")(cuda.InOut(x), np.int32(10), block=(16, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(x, 2 * np.arange(10))


@host_only
def test_pre_cxx11_standard_is_raised_with_a_warning() -> None:
    source = 'extern "C" __global__ void year(int* out) { out[0] = (int)(__cplusplus / 100 % 100); }'
    with pytest.warns(pygpu.errors.HostStandardWarning, match=r"-std=c\+\+03.*c\+\+11"):
        module = SourceModule(source, options=["-std=c++03"], cache_dir=False)
    out = np.zeros(1, np.int32)
    module.get_function("year")(cuda.Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out[0] == 11


@host_only
def test_cxx11_standard_is_kept_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert host_compiler._raise_old_standard(["-O2", "-std=c++11"]) == ["-O2", "-std=c++11"]
    assert host_compiler.translate_options(["--std", "c++14", "--std=c++17"]) == ["-std=c++14", "-std=c++17"]
    with pytest.raises(ValueError, match="needs a value"):
        host_compiler.translate_options(["-std"])


@host_only
def test_preprocessed_kernels_finds_scopes_and_linkage() -> None:
    text = "\n".join(
        [
            '# 1 "kernel.cu"',
            'extern "C" { __global__ void a(int* x) { { } } }',
            "namespace n1 { inline namespace v2 { __global__ void b(float* f, int k); } }",
            'namespace n1::n3 { extern "C" __global__ void c(); }',
            "template <typename T> __global__ void t(T* x) { }",
            "template __global__ void t<float>(float*);",
            "__device__ void helper(int (*f)(int)) { }",
            "struct S { int x[2]; } s = { { 1, 2 } };",
            'extern "C++" { __global__ void __launch_bounds__(64) d(int* x); }',
            '# 1 "/usr/include/stdio.h" 1 3 4',
            "__global__ void from_a_system_header(int* x);",
            '# 9 "kernel.cu" 2',
            "__global__ void n1::v2::b(float* g, int m) { }",
            "__attribute__((noinline)) __global__ void e(int x) { }",
        ]
    )
    found = host_compiler.preprocessed_kernels(text)
    assert [(k.name, k.scope, k.c_linkage) for k in found] == [
        ("a", (), True),
        ("b", (("n1", False), ("v2", True)), False),
        ("c", (("n1", False), ("n3", False)), True),
        ("d", (), False),
        ("e", (), False),
    ]
    assert found[1].params == "float * f , int k"


@host_only
def test_kernel_in_an_included_header_is_exported(tmp_path: Path) -> None:
    (tmp_path / "kernels.cuh").write_text(
        '#define DECLARE(n) extern "C" __global__ void n(int* o)\nDECLARE(from_header) { o[0] = 5; }\n'
    )
    module = SourceModule('#include "kernels.cuh"\n', no_extern_c=True, include_dirs=[str(tmp_path)], cache_dir=False)
    out = np.zeros(1, np.int32)
    module.get_function("from_header")(cuda.Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out[0] == 5


@host_only
def test_preprocessor_error_is_a_compile_error() -> None:
    with pytest.raises(CompileError, match="no_such_header"):
        SourceModule('#include "no_such_header.cuh"\n__global__ void k() {}', cache_dir=False)


# ------------------------------------------------------------------- cuda backend (NVRTC)


@pytest.mark.gpu
@pytest.mark.parametrize("std", ["c++11", "c++14", "c++17"])
def test_nvrtc_builds_pygpu_header_under_older_standard(std: str) -> None:
    # What SourceModule prepends and pygpu_kernel.h must be valid under every standard NVRTC takes.
    source = r"""
    #include "pygpu_kernel.h"
    PYGPU_KERNEL void year(int* out) { out[0] = (int)(__cplusplus / 100 % 100); }
    PYGPU_EXPORT(year)
    """
    module = SourceModule(source, no_extern_c=True, options=[f"-std={std}"], cache_dir=False)
    out = np.zeros(1, np.int32)
    module.get_function("year")(cuda.Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out[0] == int(std[-2:])


@pytest.mark.gpu
def test_nvrtc_reikna_style_and_mangled_names_match_the_host() -> None:
    _launch_reikna_style(SourceModule(REIKNA_STYLE, no_extern_c=True, options=["-std=c++11"], cache_dir=False))
    # The names test_cxx_linkage_kernels_by_mangled_name uses on the host are NVRTC's too.
    module = SourceModule(MANGLED, no_extern_c=True, cache_dir=False)
    for name in ("_ZN3lib5applyENS_4PairEPf", "_ZN3lib5applyEPd", "_Z9plain_cxxPi", "_ZN3lib5laterEPi"):
        assert module.get_function(name) is not None
    with pytest.raises(cuda.Error):
        module.get_function("plain_cxx")


@pytest.mark.gpu
def test_nvrtc_separate_std_value() -> None:
    module = SourceModule(OLD_STANDARD, no_extern_c=True, options=["-std", "c++14"], cache_dir=False)
    out = np.zeros(1, np.float32)
    module.get_function("sums")(
        cuda.Out(out), cuda.In(np.ones(4, np.float32)), np.int32(4), block=(1, 1, 1), grid=(1, 1)
    )
    assert out[0] == 4 + 14 * 1000


def test_mangled_kernels_of_two_linked_sources() -> None:
    if pygpu.backend() == "hip":
        pytest.skip("DynamicModule has no hip path")
    from pygpu.compiler import DynamicModule

    first = "namespace a { __global__ void set(int* out) { out[threadIdx.x] = 1; } }\n"
    second = "namespace b { __global__ void set(int* out) { out[threadIdx.x] = 2; } }\n"
    module = DynamicModule(no_extern_c=True, cache_dir=False).add_source(first).add_source(second).link()
    out = np.zeros(4, np.int32)
    module.get_function("_ZN1a3setEPi")(cuda.Out(out), block=(4, 1, 1), grid=(1, 1))
    assert (out == 1).all()
    module.get_function("_ZN1b3setEPi")(cuda.Out(out), block=(4, 1, 1), grid=(1, 1))
    assert (out == 2).all()


# reikna's memory macros: a __constant__ array and dynamic shared memory declared through them,
# which the host compiler must see after preprocessing (the raw text shows neither keyword).
REIKNA_MEMORY = r"""
#define KERNEL extern "C" __global__
#define LOCAL_MEM __shared__
#define LOCAL_MEM_DYNAMIC extern __shared__
#define CONSTANT_MEM __constant__
#define LOCAL_BARRIER __syncthreads()

CONSTANT_MEM float arr1[10];
CONSTANT_MEM int offset;

KERNEL void read_constant(float* out)
{
    const int i = threadIdx.x;
    if (i < 10) out[i] = arr1[i] + offset;
}

KERNEL void reverse_in_shared(float* data)
{
    LOCAL_MEM_DYNAMIC float dyn[];
    const int i = threadIdx.x;
    dyn[i] = data[blockIdx.x * blockDim.x + i] * 2;
    LOCAL_BARRIER;
    data[blockIdx.x * blockDim.x + i] = dyn[blockDim.x - 1 - i];
}
"""


@pytest.mark.parametrize("no_extern_c", [False, True])
def test_macro_declared_constant_array_set_and_read(no_extern_c: bool) -> None:
    module = SourceModule(REIKNA_MEMORY, no_extern_c=no_extern_c, cache_dir=False)
    values = np.arange(10, dtype=np.float32) * 1.5
    address, size = module.get_global("arr1")
    assert size == values.nbytes
    cuda.memcpy_htod(address, values)
    cuda.memcpy_htod(module.get_global("offset")[0], np.array([7], np.int32))
    out = np.zeros(10, np.float32)
    module.get_function("read_constant")(cuda.Out(out), block=(16, 1, 1))
    np.testing.assert_array_equal(out, values + 7)


@pytest.mark.parametrize("no_extern_c", [False, True])
def test_macro_declared_dynamic_shared_memory(no_extern_c: bool) -> None:
    module = SourceModule(REIKNA_MEMORY, no_extern_c=no_extern_c, cache_dir=False)
    data = np.arange(96, dtype=np.float32)
    module.get_function("reverse_in_shared")(cuda.InOut(data), block=(32, 1, 1), grid=(3, 1), shared=32 * 4)
    expected = np.concatenate([np.arange(31, -1, -1), np.arange(63, 31, -1), np.arange(95, 63, -1)]) * 2
    np.testing.assert_array_equal(data, expected.astype(np.float32))


@host_only
def test_macro_declared_dynamic_shared_at_namespace_scope_with_alignment() -> None:
    # Outside any kernel, aligned, through a function-like macro: all spelled alike once preprocessed.
    source = r"""
#define DYNAMIC(T, name) extern __shared__ __align__(16) T name[]
DYNAMIC(double, scratch);
__global__ void sum_pairs(double* data)
{
    const int i = threadIdx.x;
    scratch[i] = data[i];
    __syncthreads();
    data[i] = scratch[i] + scratch[i ^ 1];
}
"""
    module = SourceModule(source, cache_dir=False)
    data = np.arange(8, dtype=np.float64)
    module.get_function("sum_pairs")(cuda.InOut(data), block=(8, 1, 1), shared=8 * 8)
    np.testing.assert_array_equal(data, [1, 1, 5, 5, 9, 9, 13, 13])


@host_only
def test_preprocessed_variables_skip_static_and_namespaces() -> None:
    preprocessed = (
        '# 1 "kernel.cu"\n__constant__ float a[4];\nstatic __device__ int hidden;\n'
        "namespace n { __device__ int inner; }\n__device__ int b = 3;\n"
        '# 1 "/usr/include/x.h" 1 3\n__device__ int system_one;\n'
    )
    assert host_compiler.preprocessed_variables(preprocessed) == ["a", "b"]
