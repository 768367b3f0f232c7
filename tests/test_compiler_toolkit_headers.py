"""The CUDA toolkit's headers in SourceModule: math_constants.h, libcu++ (cuda/std), thrust and cub,
found where they are installed (pygpu._toolchain.toolkit_headers), on the host backend (g++) and, in the tests
marked gpu, through NVRTC; a header that is missing names the package that provides it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygpu
import pygpu.driver as drv
import pytest
from pygpu import compiler
from pygpu._toolchain import compile_cache
from pygpu._toolchain import toolkit_headers
from pygpu.compiler import CompileError, SourceModule
from pygpu._toolchain import source_module

CCCL = toolkit_headers.find_toolkit_headers().cccl
needs_cccl = pytest.mark.skipif(CCCL is None, reason="no CCCL headers (pip install nvidia-cuda-cccl)")
host_only = pytest.mark.skipif(pygpu.backend() != "host", reason="what the host backend's g++ builds")


def _touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _toolkit(root: Path, cccl_in_subfolder: bool = True) -> Path:
    _touch(root / "include" / "cuda_runtime.h")
    cccl = root / "include" / ("cccl" if cccl_in_subfolder else "")
    _touch(cccl / "cuda" / "std" / "version")
    return root


def test_search_takes_the_first_toolkit_then_the_wheels(tmp_path: Path) -> None:
    first = _toolkit(tmp_path / "cuda13")
    second = _toolkit(tmp_path / "cuda12", cccl_in_subfolder=False)
    site = tmp_path / "site"
    _touch(site / "nvidia" / "cu13" / "include" / "cuda_runtime.h")
    _touch(site / "nvidia" / "cu13" / "include" / "cccl" / "thrust" / "version.h")

    found = toolkit_headers.search([str(first), str(second)], [str(site)])
    assert found.runtime == first / "include"
    assert found.cccl == first / "include" / "cccl"
    assert found.folders() == [first / "include" / "cccl", first / "include"]

    found = toolkit_headers.search([str(tmp_path / "absent"), str(second)], [str(site)])
    assert found.runtime == second / "include"
    assert found.cccl == second / "include"  # CUDA 12's layout

    found = toolkit_headers.search([], [str(site)])
    assert found.runtime == site / "nvidia" / "cu13" / "include"
    assert found.cccl == site / "nvidia" / "cu13" / "include" / "cccl"


def test_search_takes_each_folder_from_where_it_is(tmp_path: Path) -> None:
    # A toolkit without CCCL and the CUDA 12 wheels: runtime from the toolkit, CCCL from the wheel.
    root = tmp_path / "cuda"
    _touch(root / "include" / "cuda_runtime.h")
    site = tmp_path / "site"
    _touch(site / "nvidia" / "cuda_cccl" / "include" / "cuda" / "std" / "version")
    found = toolkit_headers.search([str(root)], [str(site)])
    assert found.runtime == root / "include"
    assert found.cccl == site / "nvidia" / "cuda_cccl" / "include"
    assert toolkit_headers.search([], [str(tmp_path / "empty")]).folders() == []


@pytest.mark.parametrize(
    ("header", "package"),
    [
        ("thrust/complex.h", "nvidia-cuda-cccl"),
        ("cub/cub.cuh", "nvidia-cuda-cccl"),
        ("cuda/std/complex", "nvidia-cuda-cccl"),
        ("math_constants.h", "nvidia-cuda-runtime"),
        ("cuda_runtime.h", "nvidia-cuda-runtime"),
        ("vector_types.h", "nvidia-cuda-runtime"),
        ("cooperative_groups/reduce.h", "nvidia-cuda-runtime"),
        ("curand_kernel.h", "nvidia-curand"),
        ("my_own_header.h", None),
    ],
)
def test_provider(header: str, package: str | None) -> None:
    assert toolkit_headers.provider(header) == package


def test_hint_names_the_package_in_nvrtc_and_gcc_logs() -> None:
    nvrtc = 'kernel.cu(1): catastrophic error: cannot open source file "math_constants.h"\n'
    hint = toolkit_headers.missing_header_hint(nvrtc, "nvrtc", "#include <math_constants.h>\n")
    assert hint is not None and "pip install nvidia-cuda-runtime" in hint and "CUDA_PATH" in hint
    gcc = "kernel.cu:1:10: fatal error: thrust/complex.h: No such file or directory\n"
    hint = toolkit_headers.missing_header_hint(gcc, "c++", "#include <thrust/complex.h>\n")
    assert hint is not None and "pip install nvidia-cuda-cccl" in hint and "nvidia-cuda-cccl-cu12" in hint
    assert toolkit_headers.missing_header_hint('cannot open source file "mine.h"', "nvrtc", "") is None
    # The host build has no CUDA library device code: installing the wheel would not help there.
    gcc = "kernel.cu:2:10: fatal error: curand_kernel.h: No such file or directory\n"
    hint = toolkit_headers.missing_header_hint(gcc, "c++", "#include <curand_kernel.h>\n")
    assert hint is not None and "cuda backend" in hint and "pygpu.curandom" in hint and "pip install" not in hint


def test_missing_toolkit_header_says_which_package() -> None:
    source = "#include <cub/no_such_header.cuh>\n__global__ void k(float* x) { x[0] = 1; }\n"
    with pytest.raises(CompileError) as e:
        SourceModule(source, cache_dir=False)
    assert "pip install nvidia-cuda-cccl" in str(e.value)


def test_toolkit_header_is_keyed_by_its_folder_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "cccl"
    # The nested include names a header that exists: were the header read and followed, it would count.
    _touch(folder / "thrust" / "complex.h", '#include "detail/inner.h"\n')
    _touch(folder / "thrust" / "detail" / "inner.h")
    source = "#include <thrust/complex.h>\n"
    plain = compile_cache.resolve_includes(source, [folder])
    assert [name for name, _path, _digest in plain] == ["thrust/complex.h", "detail/inner.h"]
    one = compile_cache.resolve_includes(source, [folder], {folder: "cccl 1"})
    two = compile_cache.resolve_includes(source, [folder], {folder: "cccl 2"})
    assert [name for name, _path, _digest in one] == ["thrust/complex.h"]
    assert one[0][2] != two[0][2]


def _run(source: str, n: int, dtype: type, no_extern_c: bool = True) -> np.ndarray:
    mod = SourceModule(source, no_extern_c=no_extern_c, cache_dir=False)
    out: np.ndarray = np.zeros(n, dtype)
    mod.get_function("k")(drv.Out(out), block=(1, 1, 1), grid=(1, 1))
    return out


def test_math_constants() -> None:
    out = _run(
        """#include <math_constants.h>
        __global__ void k(double* o) {
          o[0] = CUDART_PI; o[1] = CUDART_PI_F; o[2] = CUDART_INF_F; o[3] = CUDART_NAN;
          o[4] = CUDART_SQRT_2PI; o[5] = CUDART_LN2; o[6] = CUDART_PIO2_HI + CUDART_PIO2_LO;
          o[7] = CUDART_L2E_F; o[8] = sizeof(CUDART_PI_F); o[9] = CUDART_NEG_ZERO;
        }""",
        10,
        np.float64,
        no_extern_c=False,
    )
    assert out[0] == np.pi
    assert out[1] == np.float32(np.pi)
    assert out[2] == np.inf and np.isnan(out[3])
    # The constant is sqrt(2 pi) rounded once; numpy's rounds 2 pi first: one ulp apart at most.
    assert abs(out[4] - np.sqrt(2 * np.pi)) <= np.spacing(out[4])
    assert out[5] == np.log(2) and out[6] == np.pi / 2
    assert out[7] == np.float32(1 / np.log(2)) and out[8] == 4
    assert out[9] == 0 and np.signbit(out[9])


_A = (1.5, -2.0)
_B = (0.25, 3.0)


def _expected() -> list[complex]:
    a, b = complex(*_A), complex(*_B)
    return [a * b, a / b, a + b * 2.0, np.exp(a), np.sqrt(b), complex(abs(a), 0)]


_COMPLEX_KERNEL = """
{include}
extern "C" __global__ void k({real}* o) {{
  typedef {ns}::complex<{real}> C;
  C a({a0}, {a1}), b({b0}, {b1});
  C r[6] = {{a * b, a / b, a + b * {real}(2), {ns}::exp(a), {ns}::sqrt(b), C({ns}::abs(a), 0)}};
  for (int i = 0; i < 6; ++i) {{ o[2 * i] = r[i].real(); o[2 * i + 1] = r[i].imag(); }}
}}
"""


def _complex_case(include: str, ns: str, real: str) -> None:
    dtype = np.float32 if real == "float" else np.float64
    source = _COMPLEX_KERNEL.format(include=include, ns=ns, real=real, a0=_A[0], a1=_A[1], b0=_B[0], b1=_B[1])
    out = _run(source, 12, dtype)
    got = out[0::2] + 1j * out[1::2]
    np.testing.assert_allclose(got, _expected(), rtol=1e-6 if real == "float" else 1e-14)


@needs_cccl
@pytest.mark.parametrize("real", ["float", "double"])
def test_cuda_std_complex(real: str) -> None:
    _complex_case("#include <cuda/std/complex>", "cuda::std", real)


@needs_cccl
@host_only
@pytest.mark.parametrize("real", ["float", "double"])
def test_thrust_complex_on_host(real: str) -> None:
    _complex_case("#include <thrust/complex.h>", "thrust", real)


@needs_cccl
def test_cccl_inside_extern_c_says_no_extern_c() -> None:
    source = (
        "#include <cuda/std/complex>\n__global__ void k(float* o) { o[0] = cuda::std::complex<float>(1, 2).imag(); }"
    )
    with pytest.raises(CompileError) as e:
        SourceModule(source, cache_dir=False)
    assert "no_extern_c=True" in str(e.value)


@host_only
def test_host_thrust_system_is_the_users_when_chosen() -> None:
    cpp = "-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_CPP"
    default = source_module._Plan("", [], False, None, None, [], "cubin")
    assert cpp in default.toolkit_options
    for options in (["-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP"], ["-D", "THRUST_DEVICE_SYSTEM=3"]):
        chosen = source_module._Plan("", options, False, None, None, [], "cubin")
        assert not any("THRUST_DEVICE_SYSTEM" in o for o in chosen.toolkit_options)


@host_only
def test_cuda_runtime_h_on_host() -> None:
    out = _run('#include <cuda_runtime.h>\nextern "C" __global__ void k(float* o) { o[0] = 7; }', 1, np.float32)
    assert out[0] == 7


@needs_cccl
@host_only
def test_cub_on_host_says_it_cannot() -> None:
    source = """#include <cub/block/block_reduce.cuh>
    extern "C" __global__ void k(int* o) {
      typedef cub::BlockReduce<int, 32> R;
      __shared__ typename R::TempStorage t;
      int v = R(t).Sum(1);
      if (threadIdx.x == 0) o[0] = v;
    }"""
    with pytest.raises(CompileError) as e:
        SourceModule(source, no_extern_c=True, cache_dir=False)
    assert "do not compile on the host backend" in str(e.value)


# The GPU machine: a CUDA 13 toolkit at /usr/local/cuda with thrust, cub, libcu++ and math_constants.h.


@pytest.mark.gpu
def test_toolkit_found_on_gpu_machine() -> None:
    found = toolkit_headers.find_toolkit_headers()
    assert found.runtime is not None and (found.runtime / "math_constants.h").is_file()
    assert found.cccl is not None and (found.cccl / "cuda" / "std" / "complex").is_file()


@pytest.mark.gpu
def test_cub_block_reduce_through_nvrtc() -> None:
    source = """#include <cub/block/block_reduce.cuh>
    extern "C" __global__ void k(const int* x, int* o) {
      typedef cub::BlockReduce<int, 128> R;
      __shared__ typename R::TempStorage t;
      int v = R(t).Sum(x[threadIdx.x]);
      if (threadIdx.x == 0) o[0] = v;
    }"""
    mod = SourceModule(source, no_extern_c=True, cache_dir=False)
    x = np.arange(128, dtype=np.int32) * 3 - 50
    out = np.zeros(1, np.int32)
    mod.get_function("k")(drv.In(x), drv.Out(out), block=(128, 1, 1), grid=(1, 1))
    assert out[0] == x.sum()


@pytest.mark.gpu
@pytest.mark.parametrize("real", ["float", "double"])
def test_thrust_complex_through_nvrtc(real: str) -> None:
    # NVRTC refuses CCCL's own thrust/complex.h; pygpu's stands in for it.
    _complex_case("#include <thrust/complex.h>", "thrust", real)


@pytest.mark.gpu
def test_other_thrust_headers_through_nvrtc_say_why() -> None:
    source = '#include <thrust/reduce.h>\nextern "C" __global__ void k(float* o) { o[0] = 1; }'
    with pytest.raises(CompileError) as e:
        SourceModule(source, no_extern_c=True, cache_dir=False)
    assert "do not compile with NVRTC" in str(e.value)


@pytest.mark.gpu
def test_cub_umbrella_header_through_nvrtc_says_why() -> None:
    source = '#include <cub/cub.cuh>\nextern "C" __global__ void k(float* o) { o[0] = 1; }'
    with pytest.raises(CompileError) as e:
        SourceModule(source, no_extern_c=True, cache_dir=False)
    assert "cub/block/block_reduce.cuh" in str(e.value)


@pytest.mark.gpu
@pytest.mark.parametrize("header", ["cuda_runtime.h", "cuda_fp16.h", "vector_types.h", "cooperative_groups.h"])
def test_runtime_headers_through_nvrtc(header: str) -> None:
    source = f'#include <{header}>\nextern "C" __global__ void k(float* o) {{ o[0] = 5; }}'
    mod = SourceModule(source, no_extern_c=True, cache_dir=False)
    out = np.zeros(1, np.float32)
    mod.get_function("k")(drv.Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out[0] == 5


@pytest.mark.gpu
def test_toolkit_headers_are_keyed_and_cached(tmp_path: Path) -> None:
    source = '#include <math_constants.h>\nextern "C" __global__ void k(double* o) { o[0] = CUDART_PI; }'
    first = compiler.compile(source, no_extern_c=True, cache_dir=str(tmp_path))
    assert len(list((tmp_path / "v1").iterdir())) == 1
    assert compiler.compile(source, no_extern_c=True, cache_dir=str(tmp_path)) == first
