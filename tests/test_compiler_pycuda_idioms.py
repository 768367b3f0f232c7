"""pygpu.compiler on idioms of PyCUDA's example programs that the basic tests do not cover:
constant memory declared after preprocessor lines (examples/from-wiki/convolution.py), and
the clear refusal of what pygpu does not do (DynamicSourceModule, texture references)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pygpu.driver as cuda
import pytest
from pygpu import _host_compiler, compiler
from pygpu.compiler import CompileError, DynamicModule, DynamicSourceModule, SourceModule


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PYGPU_CACHE_DIR", str(folder))
    monkeypatch.setattr(compiler, "_memo", {})
    yield folder


CONSTANT_AFTER_DEFINES = """
#define KERNEL_RADIUS 2
#define KERNEL_W (2 * KERNEL_RADIUS + 1)
#define LONG_MACRO(a, b) \\
    ((a) + (b))
__device__ __constant__ float d_weights[KERNEL_W];
__global__ void smooth(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sum = 0;
    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; ++k) {
        int j = min(max(i + k, 0), n - 1);
        sum = LONG_MACRO(sum, d_weights[k + KERNEL_RADIUS] * in[j]);
    }
    out[i] = sum;
}
"""


def test_constant_memory_declared_after_preprocessor_lines() -> None:
    mod = SourceModule(CONSTANT_AFTER_DEFINES)
    address, size = mod.get_global("d_weights")
    assert size == 5 * 4
    weights = np.array([1, 2, 3, 2, 1], np.float32) / 9
    cuda.memcpy_htod(address, weights)
    x = np.arange(40, dtype=np.float32) ** 2
    y = np.zeros_like(x)
    mod.get_function("smooth")(cuda.Out(y), cuda.In(x), np.int32(40), block=(32, 1, 1), grid=(2, 1))
    padded = np.concatenate([[x[0]] * 2, x, [x[-1]] * 2])
    np.testing.assert_allclose(y, np.convolve(padded, weights, mode="valid"), rtol=1e-5)


def test_kernel_discovery_skips_preprocessor_lines() -> None:
    kernels, variables = _host_compiler.kernel_names(
        "#define DECL __device__ int not_a_variable;\n"
        "#if 0\n#endif\n"
        "__constant__ int k = 3;\n"
        "#define F(x) \\\n  __global__ void not_a_kernel(x)\n"
        "__global__ void real(int* x) { }\n"
    )
    assert kernels == ["real"] and variables == ["k"]


def test_dynamic_parallelism_is_refused_with_what_to_use() -> None:
    with pytest.raises(NotImplementedError, match="launch the child kernels from Python"):
        DynamicSourceModule("__global__ void parent() { }")
    with pytest.raises(NotImplementedError, match="device-side linking"):
        DynamicModule()


def test_texture_reference_source_names_the_replacement() -> None:
    source = """
    texture<float, 2> tex;
    __global__ void read(float* out) { out[0] = tex2D(tex, 0.5f, 0.5f); }
    """
    with pytest.raises(CompileError, match="texture object") as excinfo:
        SourceModule(source)
    assert excinfo.value.stderr, "the compiler's log is kept"


class _GeneratedCode:
    """Stands for a code generator's module (cgen's ``Module``): its str() is the source."""

    def __str__(self) -> str:
        return "__global__ void seven(int* x) { x[threadIdx.x] = 7; }"


def test_source_from_a_code_generator_object() -> None:
    out = np.zeros(4, np.int32)
    SourceModule(_GeneratedCode()).get_function("seven")(cuda.Out(out), block=(4, 1, 1))  # type: ignore[arg-type]
    assert (out == 7).all()
    with pytest.raises(TypeError, match="str of CUDA C"):
        SourceModule(object())  # type: ignore[arg-type]
