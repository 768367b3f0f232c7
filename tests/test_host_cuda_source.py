"""Plain CUDA C (as PyCUDA's SourceModule gets it) built for the host backend by
pygpu.compiler (g++ with pygpu_kernel.h force-included) and run by the host fiber runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pygpu
from pygpu._toolchain.host_compiler import kernel_names, rewrite_dynamic_shared
from pygpu.compiler import SourceModule

# As PyCUDA's SourceModule passes it with no_extern_c=True (templates cannot have C linkage).
SOURCE = r"""
template <typename T>
__device__ __forceinline__ T square(T v) { return v * v; }

__device__ int launches;            // a global found by name
__constant__ float weights[2];

// out[blockIdx.x] = weights[0] * sum of the squares of this block's chunk, through dynamic
// shared memory and a tree of __syncthreads; blockDim.x a power of two.
extern "C" __global__ void __launch_bounds__(256) weighted_square_sum(const float* __restrict__ x, float* out, int n) {
  extern __shared__ __align__(16) float partial[];
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? square(x[i]) : 0.0f;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[blockIdx.x] = weights[0] * partial[0];
    atomicAdd(&launches, 1);
  }
}

template <typename T>
__global__ void not_exported(T* x) { x[0] = T(); }
"""


# Common CUDA idioms in PyCUDA's default extern "C" { } wrapping: file-scope, volatile and static
# __shared__, extern __shared__ bytes cast to another type, a struct parameter, __constant__
# structs, vector types, min/max/umin overloads, intrinsics, dim3 in device code.
IDIOMS = r"""#include <stdint.h>
extern "C" {
__shared__ float file_scope_tile[64];
struct Pair { int a; float b; };
__device__ __forceinline__ float2 add2(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __noinline__ int twice(int v) { return 2 * v; }
__constant__ Pair pairs[4];

__global__ void idioms(float* __restrict__ out, const Pair p, uint32_t n, double d) {
  volatile __shared__ int counter;
  static __shared__ float s2[32];
  extern __shared__ unsigned char raw[];
  float* dyn = reinterpret_cast<float*>(raw);
  const unsigned int tid = threadIdx.x + threadIdx.y * blockDim.x;
  if (tid == 0) counter = 0;
  __syncthreads();
  atomicAdd((int*)&counter, 1);
  dyn[tid] = (float)tid;
  s2[tid % 32] = 1.0f;
  file_scope_tile[tid % 64] = 2.0f;
  __syncthreads();
  dim3 g = gridDim;
  float2 v = add2(make_float2(1.f, 2.f), make_float2(p.b, (float)p.a));
  int m = min(twice(3), max(-1, (int)n));
  unsigned um = umin(3u, 4u);
  float f = fminf(__saturatef(v.x), sqrtf(4.0f)) + rsqrtf(4.0f) + __fdividef(1.0f, 2.0f) + fabsf(-1.0f);
  long long c = clock64();
  (void)c; (void)g; (void)um;
  if (tid == 0) {
    out[0] = (float)counter;
    out[1] = v.x + v.y;
    out[2] = (float)m;
    out[3] = f;
    out[4] = (float)(d * pairs[1].b);
    out[5] = dyn[blockDim.x * blockDim.y - 1] + s2[0] + file_scope_tile[5];
    out[6] = (float)__float2int_rn(2.5f) + (float)__popc(0xF0u) + __int_as_float(__float_as_int(1.0f));
  }
}
}
"""

# extern __shared__ at file scope and in a device function template, cast to another type.
DYNAMIC_SHARED = r"""extern "C" {
extern __shared__ float file_level[];
__global__ void reverse_file_level(float* x) {
  file_level[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = file_level[blockDim.x - 1 - threadIdx.x];
}
}
template <typename T>
__device__ void reverse_in_template(T* x) {
  extern __shared__ __align__(sizeof(T)) unsigned char raw[];
  T* s = reinterpret_cast<T*>(raw);
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void reverse_doubles(double* x) { reverse_in_template(x); }
"""


def build(tmp_path: Path, source: str) -> pygpu.Module:
    # The sources carry their own extern "C" where they want it (templates cannot have C linkage).
    return SourceModule(source, no_extern_c=True, cache_dir=str(tmp_path)).module


def test_host_source_finds_kernels_globals_and_dynamic_shared() -> None:
    out = rewrite_dynamic_shared(SOURCE)
    assert "PYGPU_DYNAMIC_SHARED(float, partial);" in out and "extern __shared__" not in out
    assert kernel_names(SOURCE) == (["weighted_square_sum"], ["launches", "weights"])


def test_plain_cuda_source_runs_on_the_host(tmp_path: Path, backend: str) -> None:
    if backend != "host":
        pytest.skip("builds a host kernels library")
    module = build(tmp_path, SOURCE)
    weights_ptr, weights_size = module.get_global("weights")
    assert weights_size == 8
    pygpu.memcpy_htod(weights_ptr, np.array([0.5, 0.0], np.float32))
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    d_x = pygpu.mem_alloc(x.nbytes)
    pygpu.memcpy_htod(d_x, x)
    out = np.zeros(8, np.float32)
    d_out = pygpu.mem_alloc(out.nbytes)
    module.get_function("weighted_square_sum")(d_x, d_out, np.int32(x.size), grid=(8, 1), block=(128, 1, 1), shared=512)
    pygpu.memcpy_dtoh(out, d_out)
    want = 0.5 * np.square(np.concatenate([x, np.zeros(24, np.float32)])).reshape(8, 128).sum(axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    launches_ptr, launches_size = module.get_global("launches")
    count = np.zeros(1, np.int32)
    pygpu.memcpy_dtoh(count, launches_ptr)
    assert launches_size == 4 and count[0] == 8


def test_common_cuda_idioms_run_on_the_host(tmp_path: Path, backend: str) -> None:
    if backend != "host":
        pytest.skip("builds a host kernels library")
    module = build(tmp_path, IDIOMS)
    pairs, size = module.get_global("pairs")
    assert size == 32
    pygpu.memcpy_htod(pairs, np.array([0, 0, 0, 3.0, 0, 0, 0, 0], np.float32))
    out = pygpu.mem_alloc(32)
    pair = np.zeros(1, dtype=[("a", np.int32), ("b", np.float32)])
    pair["a"], pair["b"] = 5, 0.5
    module.get_function("idioms")(
        out, pair[0], np.uint32(7), np.float64(2.0), grid=(2, 1), block=(8, 4, 1), shared=4 * 32
    )
    got = np.zeros(8, np.float32)
    pygpu.memcpy_dtoh(got, out)
    assert got[:7].tolist() == [32, 8.5, 6, 3, 6, 34, 7]


@pytest.mark.parametrize(("kernel", "dtype"), [("reverse_file_level", np.float32), ("reverse_doubles", np.float64)])
def test_extern_shared_at_file_scope_and_in_templates(
    tmp_path: Path, backend: str, kernel: str, dtype: type[np.generic]
) -> None:
    if backend != "host":
        pytest.skip("builds a host kernels library")
    module = build(tmp_path, DYNAMIC_SHARED)
    x: np.ndarray = np.arange(64, dtype=dtype)
    d = pygpu.mem_alloc(x.nbytes)
    pygpu.memcpy_htod(d, x)
    module.get_function(kernel)(d, grid=(1, 1), block=(64, 1, 1), shared=x.nbytes)
    got = np.empty_like(x)
    pygpu.memcpy_dtoh(got, d)
    np.testing.assert_array_equal(got, x[::-1])


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_host_header_builds_with_clang_and_a_new_glibc(arch: str, tmp_path: Path) -> None:
    """Kernel sources build for the host with clang as with g++, against glibc 2.42's headers
    (ziglang's: they declare C23's rsqrt, sinpi and cospi, which CUDA also names), and the
    fibers' context switch assembles for aarch64 too (the aarch64 wheel builds its kernels from
    source on first use)."""
    import subprocess
    import sys

    pytest.importorskip("ziglang", reason="ziglang (scripts/requirements-dev.txt) brings clang and glibc headers")
    repo = Path(__file__).resolve().parents[1]
    command = [
        sys.executable, "-m", "ziglang", "c++", "-target", f"{arch}-linux-gnu.2.28", "-x", "c++", "-std=c++17",
        "-O1", "-fPIC", "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti", "-Wall", "-Wextra", "-Werror",
        "-I", str(repo / "python" / "pygpu" / "include"), "-c", "-o", str(tmp_path / "testing.o"),
        str(repo / "kernels" / "testing.cu"),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "testing.o").stat().st_size > 0
