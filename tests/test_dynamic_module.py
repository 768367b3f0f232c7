"""pygpu.compiler.DynamicModule / DynamicSourceModule: sources linked into one module, so that a
kernel calls an extern __device__ function of another source; the host backend links objects
with the C++ compiler, cuda with the driver's JIT linker (and libcudadevrt for kernels that
launch kernels). The tests without a mark run on every backend; `gpu` ones need cuda."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pygpu
import pygpu.driver as cuda
import pytest
from pygpu import compiler
from pygpu._toolchain import cuda_linker
from pygpu.compiler import CompileError, DynamicModule, DynamicSourceModule, SourceModule
from pygpu.driver import LogicError, jit_input_type, jit_option
from pygpu._toolchain import source_module

on_host = pytest.mark.skipif(pygpu.backend() != "host", reason="what the host backend refuses")
on_cuda = pytest.mark.skipif(pygpu.backend() != "cuda", reason="the CUDA linker")

# The kernel's source calls a function, reads a variable and launches with indices that the
# other source defines or uses: it links only if both are in one module, and gives the right
# numbers only if the other source's code sees this launch's block (barriers, blockIdx).
KERNEL = """
extern __device__ float scale(float x);
extern __device__ int offset;
__global__ void apply(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = scale(i < n ? in[i] : 0.0f);
  if (i < n) out[i] = v + offset;
}
"""
HELPERS = """
__device__ int offset = 5;
__device__ float scale(float x) {
  __shared__ float tile[128];
  tile[threadIdx.x] = x;
  __syncthreads();
  return 3.0f * tile[(threadIdx.x + 1) % blockDim.x] + blockIdx.x;
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PYGPU_CACHE_DIR", str(folder))
    monkeypatch.setattr(source_module, "_memo", {})
    yield folder


def _apply(module: DynamicModule, n: int = 1000, block: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Runs `apply`; returns (what it wrote, what numpy says it should have)."""
    # Integers: exact in float32 whether or not the GPU fuses the multiply-add.
    x = np.random.default_rng(1).integers(-1000, 1000, n).astype(np.float32)
    y = np.zeros_like(x)
    grid = (n + block - 1) // block
    module.get_function("apply")(cuda.Out(y), cuda.In(x), np.int32(n), block=(block, 1, 1), grid=(grid, 1))
    padded = np.zeros(grid * block, np.float32)
    padded[:n] = x
    tiles = padded.reshape(grid, block)
    expected = 3 * np.roll(tiles, -1, axis=1) + np.arange(grid, dtype=np.float32)[:, None] + 5
    return y, expected.reshape(-1)[:n]


def test_two_sources_linked_with_an_extern_device_function() -> None:
    module = DynamicModule().add_source(KERNEL).add_source(HELPERS, name="helpers")
    assert module.link() is module
    y, expected = _apply(module)
    np.testing.assert_array_equal(y, expected)
    address, size = module.get_global("offset")
    assert size == 4
    value = np.zeros(1, np.int32)
    cuda.memcpy_dtoh(value, address)
    assert value[0] == 5
    assert isinstance(module.module, pygpu.Module)


def test_message_handler_hears_of_the_link() -> None:
    heard: list[tuple[bool, str, str]] = []
    module = DynamicModule(message_handler=lambda ok, info, error: heard.append((ok, info, error)))
    module.add_source(KERNEL).add_source(HELPERS).link()
    assert [ok for ok, _, _ in heard] == [True]


def test_dynamic_source_module_without_device_launches_runs_as_a_source_module() -> None:
    module = DynamicSourceModule("__global__ void fill(int* out) { out[threadIdx.x] = 2 * threadIdx.x; }")
    out = np.zeros(64, np.int32)
    module.get_function("fill")(cuda.Out(out), block=(64, 1, 1))
    np.testing.assert_array_equal(out, 2 * np.arange(64))


# ------------------------------------------------------------------------ errors


def test_link_twice_and_adding_after_link_are_errors() -> None:
    module = DynamicModule().add_source(KERNEL).add_source(HELPERS).link()
    with pytest.raises(LogicError, match="already called"):
        module.link()
    with pytest.raises(LogicError, match="already called"):
        module.add_source(HELPERS)


def test_lookups_before_link_are_errors() -> None:
    module = DynamicModule().add_source(KERNEL)
    with pytest.raises(LogicError, match=r"call link\(\)"):
        module.get_function("apply")
    with pytest.raises(LogicError, match=r"call link\(\)"):
        module.get_global("offset")


def test_unknown_input_type_and_missing_file(tmp_path: Path) -> None:
    module = DynamicModule()
    with pytest.raises(ValueError, match="unknown input type 99.*PTX"):
        module.add_data(b"\0", 99)
    with pytest.raises(FileNotFoundError, match="no such file"):
        module.add_file(tmp_path / "absent.o", jit_input_type.OBJECT)


def test_syntax_error_in_one_source_names_it_with_the_log() -> None:
    module = DynamicModule().add_source(HELPERS)
    with pytest.raises(CompileError) as excinfo:
        module.add_source("__global__ void broken(int* x) { x[0] = ; }")
    assert "error" in (excinfo.value.stderr or "")


def test_unresolved_extern_is_a_link_error_with_the_log() -> None:
    module = DynamicModule().add_source(KERNEL)  # HELPERS, which defines scale, left out
    with pytest.raises(CompileError, match="link") as excinfo:
        module.link()
    assert "scale" in (excinfo.value.stderr or "")


def test_a_function_defined_twice_is_a_link_error() -> None:
    """CUDA's linker reports the second definition as the input that brings it is added (each
    input fails the call that added it); the host's linker, at link()."""
    with pytest.raises(CompileError) as excinfo:
        DynamicModule().add_source(HELPERS).add_source(HELPERS, name="again").link()
    assert "scale" in (excinfo.value.stderr or "")


# ------------------------------------------------------------------------ host backend


@on_host
def test_host_links_host_objects_and_archives(tmp_path: Path) -> None:
    """Plain C++ objects and archives (OBJECT, LIBRARY) link with the kernels: what else a
    CPU can run."""
    cxx = shutil.which("g++") or shutil.which("clang++")
    assert cxx, "the host backend's tests need a C++ compiler"
    (tmp_path / "square.cpp").write_text('extern "C" float square(float x) { return x * x; }\n')
    (tmp_path / "cube.cpp").write_text('extern "C" float cube(float x) { return x * x * x; }\n')
    for name in ("square", "cube"):
        subprocess.run([cxx, "-c", "-fPIC", "-O2", f"{name}.cpp"], cwd=tmp_path, check=True)
    subprocess.run(["ar", "rcs", "libcube.a", "cube.o"], cwd=tmp_path, check=True)
    source = """
    float square(float x);
    float cube(float x);
    __global__ void powers(float* out, const float* in) {
      int i = threadIdx.x;
      out[i] = square(in[i]) + cube(in[i]);
    }
    """
    module = DynamicModule().add_source(source)
    module.add_data((tmp_path / "square.o").read_bytes(), jit_input_type.OBJECT, "square.o")
    module.add_file(tmp_path / "libcube.a", jit_input_type.LIBRARY).link()
    x = np.arange(-16, 16, dtype=np.float32)  # exact in float32, however it is summed
    y = np.zeros_like(x)
    module.get_function("powers")(cuda.Out(y), cuda.In(x), block=(32, 1, 1))
    np.testing.assert_array_equal(y, x**2 + x**3)


@on_host
def test_host_refuses_nvidia_formats_and_cuda_libraries(tmp_path: Path) -> None:
    module = DynamicModule()
    for kind in (jit_input_type.PTX, jit_input_type.CUBIN, jit_input_type.FATBINARY):
        with pytest.raises(ValueError, match=f"{kind.name} is NVIDIA's GPU code.*add_source"):
            module.add_data(b".version 8.0\n", kind)
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 8.0\n")
    with pytest.raises(ValueError, match="NVIDIA's GPU code"):
        module.add_file(ptx, jit_input_type.PTX)
    with pytest.raises(ValueError, match="cannot link"):
        module.add_stdlib("cudadevrt")
    with pytest.raises(ValueError, match="host backend takes none"):
        DynamicModule(link_options=[(jit_option.MAX_REGISTERS, 32)])
    with pytest.raises(LogicError, match="nothing was added"):
        DynamicModule().link()


@on_host
def test_host_refuses_device_side_launches_when_compiling() -> None:
    source = """
    __global__ void child(int* out) { out[threadIdx.x] = 1; }
    // a comment with <<< is no launch
    __global__ void parent(int* out) {
      child<<<1, 32>>>(out);
    }
    """
    with pytest.raises(CompileError, match="line 5: a kernel launched from device code") as excinfo:
        DynamicSourceModule(source)
    assert "child<<<1, 32>>>" in (excinfo.value.stderr or "")
    with pytest.raises(CompileError, match="dynamic parallelism"):
        SourceModule(source)


# ------------------------------------------------------------------------ finding libcudadevrt (no GPU needed)


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"!<arch>\n")
    return path


def test_cudadevrt_is_found_in_the_runtime_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONDA_PREFIX", "CUDA_PATH", "CUDA_HOME"):
        monkeypatch.delenv(variable, raising=False)
    cu13 = _touch(tmp_path / "site" / "nvidia" / "cu13" / "lib" / "libcudadevrt.a")
    cu12 = _touch(tmp_path / "site" / "nvidia" / "cuda_runtime" / "lib" / "libcudadevrt.a")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    assert cuda_linker.find_cuda_library("cudadevrt", driver_major=13) == str(cu13)
    # A CUDA 12 driver: the CUDA 12 wheel first, as its objects are ones that driver links.
    assert cuda_linker.find_cuda_library("cudadevrt", driver_major=12) == str(cu12)
    toolkit = _touch(tmp_path / "toolkit" / "lib64" / "libcudadevrt.a")
    assert cuda_linker.find_cuda_library("cudadevrt", cuda_libdir=str(toolkit.parent)) == str(toolkit)


def test_missing_cudadevrt_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.setattr(cuda_linker, "_DEFAULT_TOOLKIT", str(tmp_path / "no-default-toolkit"))
    with pytest.raises(FileNotFoundError, match="pip install nvidia-cuda-runtime.*no-toolkit"):
        cuda_linker.find_cuda_library("cudadevrt")
    with pytest.raises(FileNotFoundError, match="not in cuda_libdir"):
        cuda_linker.find_cuda_library("cudadevrt", cuda_libdir=str(tmp_path))


def test_link_options_the_logs_belong_to_pygpu() -> None:
    # Checked before the driver is touched: this runs without a GPU too.
    with pytest.raises(ValueError, match="manages the linker's logs"):
        cuda_linker.CudaLinker([(jit_option.ERROR_LOG_BUFFER, 0)], False)
    with pytest.raises(TypeError, match=r"\(jit_option, value\) pairs"):
        cuda_linker.CudaLinker([jit_option.MAX_REGISTERS], False)  # type: ignore[list-item]


def test_jit_input_type_has_pycudas_names_and_cudas_numbers() -> None:
    assert {t.name: int(t) for t in cuda.jit_input_type} == {
        "CUBIN": 0,
        "PTX": 1,
        "FATBINARY": 2,
        "OBJECT": 3,
        "LIBRARY": 4,
    }


# ------------------------------------------------------------------------ cuda: the driver's linker


@pytest.mark.gpu
@on_cuda
def test_ptx_from_compile_added_as_data_and_as_a_file(tmp_path: Path) -> None:
    ptx = compiler.compile(HELPERS, options=["-rdc=true"], target="ptx")
    assert b".target" in ptx
    from_data = DynamicModule().add_source(KERNEL).add_data(ptx, jit_input_type.PTX, "helpers.ptx").link()
    y, expected = _apply(from_data)
    np.testing.assert_array_equal(y, expected)
    (tmp_path / "helpers.ptx").write_bytes(ptx)
    from_file = DynamicModule(link_options=[(jit_option.OPTIMIZATION_LEVEL, 3)], log_verbose=True)
    from_file.add_source(KERNEL).add_file(tmp_path / "helpers.ptx", jit_input_type.PTX).link()
    y, expected = _apply(from_file)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.gpu
@on_cuda
def test_dynamic_parallelism_parent_launches_children() -> None:
    source = """
    __global__ void child(int* out, int base) {
      out[base + threadIdx.x] = base + 2 * threadIdx.x;
    }
    __global__ void parent(int* out, int width) {
      child<<<1, width>>>(out, threadIdx.x * width);
    }
    """
    module = DynamicSourceModule(source)
    children, width = 16, 64
    out = np.full(children * width, -1, np.int32)
    module.get_function("parent")(cuda.InOut(out), np.int32(width), block=(children, 1, 1))
    k = np.arange(children * width)
    np.testing.assert_array_equal(out, (k // width) * width + 2 * (k % width))


@pytest.mark.gpu
@on_cuda
def test_bad_ptx_is_refused_by_the_call_that_adds_it() -> None:
    with pytest.raises(CompileError, match="cuLinkAddData") as excinfo:
        DynamicModule().add_data(b".version 99.0\n.target sm_999\nnot ptx\n", jit_input_type.PTX, "bad.ptx")
    assert excinfo.value.stderr
