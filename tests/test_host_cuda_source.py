"""Plain CUDA C (as PyCUDA's SourceModule gets it) built for the host backend with g++ and
pygpu_kernel.h force-included: the path pygpu.compiler takes on the host backend."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import pygpu
from pygpu._host_source import INCLUDE_DIR, host_source

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


def compiler() -> str:
    for name in ("g++", "g++-12", "c++", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no C++ compiler")


def test_host_source_finds_kernels_globals_and_dynamic_shared() -> None:
    out = host_source(SOURCE)
    assert "PYGPU_DYNAMIC_SHARED(float, partial);" in out and "extern __shared__" not in out
    tail = out.split("// Added for the host backend:")[1].split()
    assert tail == ["PYGPU_EXPORT(weighted_square_sum)", "PYGPU_EXPORT_GLOBAL(launches)", "PYGPU_EXPORT_GLOBAL(weights)"]


def test_plain_cuda_source_runs_on_the_host(tmp_path: Path, backend: str) -> None:
    if backend != "host":
        pytest.skip("builds a host kernels library")
    source = tmp_path / "user.cu"
    source.write_text(host_source(SOURCE))
    library = tmp_path / "libuser.so"
    command = [compiler(), "-x", "c++", "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
               "-fno-exceptions", "-fno-rtti", "-fno-gnu-unique", "-ffp-contract=off", "-Wl,-Bsymbolic",
               "-Wl,--as-needed", "-Wl,-z,defs", "-I", INCLUDE_DIR, "-include", "pygpu_kernel.h",
               "-o", str(library), str(source)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    module = pygpu.Module.from_file(str(library))
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
