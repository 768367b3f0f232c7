"""pygpu.compiler on idioms of PyCUDA's example programs that the basic tests do not cover:
constant memory declared after preprocessor lines (examples/from-wiki/convolution.py), and
the clear refusal of what pygpu does not do (texture references)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pygpu.driver as cuda
import pytest
from pygpu import _pygpu, compiler
from pygpu._toolchain import host_compiler
from pygpu._toolchain import rtc
from pygpu.compiler import CompileError, SourceModule
from pygpu._toolchain import source_module


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PYGPU_CACHE_DIR", str(folder))
    monkeypatch.setattr(source_module, "_memo", {})
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
    kernels, variables = host_compiler.kernel_names(
        "#define DECL __device__ int not_a_variable;\n"
        "#if 0\n#endif\n"
        "__constant__ int k = 3;\n"
        "#define F(x) \\\n  __global__ void not_a_kernel(x)\n"
        "__global__ void real(int* x) { }\n"
    )
    assert kernels == ["real"] and variables == ["k"]


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


COMPLEX = """
#include <pygpu-complex.hpp>
typedef pygpu::complex<double> cplx;
__global__ void complex_ops(cplx* out, const cplx* z, const cplx* w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cplx a = z[i], b = w[i];
    cplx acc = a * b + 2.0 * a - b / 3.0;
    acc += conj(a);
    acc *= 0.5;
    out[i * 8 + 0] = acc;
    out[i * 8 + 1] = exp(a);
    out[i * 8 + 2] = log(b);
    out[i * 8 + 3] = sqrt(a);
    out[i * 8 + 4] = pow(a, 3);
    out[i * 8 + 5] = pow(a, b);
    out[i * 8 + 6] = pygpu::make_complex(abs(a), arg(a));
    out[i * 8 + 7] = sin(a) + cos(b) * tanh(a);
}
"""


def test_pygpu_complex_header() -> None:
    """PyCUDA's pycuda-complex.hpp, as pygpu-complex.hpp: functions and mixed operators on
    pygpu::complex, checked against numpy."""
    rng = np.random.default_rng(7)
    z = (rng.normal(size=16) + 1j * rng.normal(size=16)).astype(np.complex128)
    w = (rng.normal(size=16) + 1j * rng.normal(size=16)).astype(np.complex128)
    z[0] = -4.0  # sqrt and log on the branch cut's edge
    out = np.zeros((16, 8), np.complex128)
    SourceModule(COMPLEX).get_function("complex_ops")(
        cuda.Out(out), cuda.In(z), cuda.In(w), np.int32(16), block=(16, 1, 1)
    )
    expected = np.stack(
        [
            (z * w + 2 * z - w / 3 + np.conj(z)) * 0.5,
            np.exp(z),
            np.log(w),
            np.sqrt(z),
            z**3,
            z**w,
            np.abs(z) + 1j * np.angle(z),
            np.sin(z) + np.cos(w) * np.tanh(z),
        ],
        axis=1,
    )
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


NVRTC_12 = (
    Path(__file__).resolve().parent.parent / "kernels/.toolchain/nvrtc-12.0.76/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
)


@pytest.mark.parametrize("real", ["double", "float"])
def test_pygpu_complex_header_compiles_with_nvrtc(real: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On cuda, SourceModule puts pygpu's include folder on NVRTC's path (as nvcc has PyCUDA's)."""
    if not NVRTC_12.is_file():
        pytest.skip("kernels/build.sh cuda installs NVRTC 12.0 into kernels/.toolchain")
    monkeypatch.setattr(source_module, "capabilities", lambda: _pygpu.capabilities("cuda"))
    monkeypatch.setattr(source_module, "_device", lambda: ((9, 0), "Fake H200"))
    monkeypatch.setenv("PYGPU_NVRTC", str(NVRTC_12))
    monkeypatch.setattr(rtc, "_nvrtc_memo", {})
    ptx = compiler.compile(COMPLEX.replace("double", real), target="ptx")
    assert b".entry complex_ops" in ptx


def test_reference_parameters_take_a_device_address() -> None:
    # CUDA allows lvalue-reference kernel parameters (nvcc passes the address): a k-means
    # notebook's kernels take `int &n` with a mem_alloc'd int. The host launcher stored each
    # parameter as P*, which a reference type cannot be.
    module = SourceModule(
        """
        __global__ void scale(float *x, const int &n, float &factor_out) {
            int i = threadIdx.x;
            if (i < n) x[i] *= 2;
            if (i == 0) factor_out = 2.0f;
        }"""
    )
    n = cuda.mem_alloc(4)
    cuda.memcpy_htod(n, np.int32(3))
    factor = cuda.mem_alloc(4)
    x = cuda.to_device(np.ones(8, np.float32))
    module.get_function("scale")(x, n, factor, block=(8, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(cuda.from_device(x, 8, np.float32), [2, 2, 2, 1, 1, 1, 1, 1])
    assert cuda.from_device(factor, 1, np.float32)[0] == 2.0
