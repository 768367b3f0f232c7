"""Kernel Tuner 1.5 programs, run under pygpu's PyCUDA alias (``lang="CUDA"`` is Kernel Tuner's
PyCUDA backend): what its users write, end to end, each result checked against numpy.

Run by ``scripts/client_kernel_tuner.sh``, with Kernel Tuner and its dependencies on the path.
Exits non-zero on the first program whose results are wrong.
"""

from __future__ import annotations

from typing import Any

import pygpu.pycuda_alias

pygpu.pycuda_alias.enable()  # before Kernel Tuner imports pycuda

import kernel_tuner  # noqa: E402
import numpy as np  # noqa: E402

_VECTOR_ADD = """
__global__ void vector_add(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

# Constant memory (cmem_args), dynamic shared memory (smem_args), a 2-D grid.
_POLYNOMIAL = """
__constant__ float coeffs[4];
__global__ void polynomial(float *out, const float *in, int n, int m) {
    extern __shared__ float tile[];
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int y = blockIdx.y * block_size_y + threadIdx.y;
    int t = threadIdx.y * block_size_x + threadIdx.x;
    tile[t] = (x < n && y < m) ? in[y * n + x] : 0.0f;
    __syncthreads();
    if (x < n && y < m) {
        float v = tile[t];
        out[y * n + x] = coeffs[0] + v * (coeffs[1] + v * (coeffs[2] + v * coeffs[3]));
    }
}
"""

# A templated kernel: Kernel Tuner instantiates it through an extern "C" wrapper of its own.
_SCALE = """
template <typename T, int U>
__global__ void scale(T *out, const T *in, T factor, int n) {
    int i = (blockIdx.x * block_size_x + threadIdx.x) * U;
    for (int k = 0; k < U; k++)
        if (i + k < n) out[i + k] = in[i + k] * factor;
}
"""


def _tuned(name: str, results: list[dict[str, Any]], configurations: int) -> None:
    if len(results) != configurations or not all(float(r["time"]) > 0 for r in results):
        raise SystemExit(f"{name}: {len(results)} timed configurations of {configurations}: {results}")
    print(f"{name}: {configurations} configurations tuned and verified")


def main() -> None:
    rng = np.random.default_rng(7)
    size = 100_000
    a, b = rng.standard_normal(size, np.float32), rng.standard_normal(size, np.float32)
    params = {"block_size_x": [32, 64, 128, 256, 512]}
    results, env = kernel_tuner.tune_kernel(
        "vector_add", _VECTOR_ADD, size, [np.zeros_like(a), a, b, np.int32(size)], params,
        answer=[a + b, None, None, None], lang="CUDA", verbose=False,
    )  # fmt: skip
    _tuned("vector_add", results, 5)
    print(f"  device {env['device_name']!r}, compute capability {env['compute_capability']}")

    n, m = 300, 200
    grid_in = rng.standard_normal((m, n), np.float32)
    coeffs = np.array([1, 2, 3, 4], np.float32)
    expected = coeffs[0] + grid_in * (coeffs[1] + grid_in * (coeffs[2] + grid_in * coeffs[3]))
    results, _ = kernel_tuner.tune_kernel(
        "polynomial", _POLYNOMIAL, (n, m), [np.zeros_like(grid_in), grid_in, np.int32(n), np.int32(m)],
        {"block_size_x": [16, 32], "block_size_y": [4, 8]},
        cmem_args={"coeffs": coeffs},
        smem_args={"size": lambda p: p["block_size_x"] * p["block_size_y"] * 4},
        answer=[expected, None, None, None], atol=1e-3, lang="CUDA", verbose=False,
    )  # fmt: skip
    _tuned("polynomial (constant and shared memory, 2-D)", results, 4)

    results, _ = kernel_tuner.tune_kernel(
        "scale<float, unroll>", _SCALE, size, [np.zeros_like(a), a, np.float32(3), np.int32(size)],
        {"block_size_x": [64, 128], "unroll": [1, 2, 4]}, grid_div_x=["block_size_x", "unroll"],
        answer=[a * 3, None, None, None], lang="CUDA", verbose=False,
    )  # fmt: skip
    _tuned("scale<float, unroll> (templated)", results, 6)

    out = kernel_tuner.run_kernel(
        "scale<float, 2>", _SCALE, size, [np.zeros_like(a), a, np.float32(-2), np.int32(size)],
        {"block_size_x": 128, "unroll": 2}, grid_div_x=["block_size_x", "unroll"], lang="CUDA",
    )  # fmt: skip
    if not np.array_equal(out[0], a * np.float32(-2)):
        raise SystemExit("run_kernel: scale<float, 2> gave wrong results")
    print("run_kernel: scale<float, 2> verified")


if __name__ == "__main__":
    main()
