"""pygpu.compiler: SourceModule as PyCUDA programs use it, on the backend in use (host in CI:
the system C++ compiler; cuda: NVRTC), its errors, and NVRTC itself (compile only: no GPU
is needed to produce a cubin)."""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pygpu
import pygpu.driver as cuda
import pytest
from pygpu import _pygpu, compiler, gpuarray
from pygpu._toolchain import rtc
from pygpu.compiler import CompileError, SourceModule
from pygpu._toolchain import source_module

REPO = Path(__file__).resolve().parent.parent
TOOLCHAIN_NVRTC = REPO / "kernels" / ".toolchain" / "nvrtc-12.0.76" / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"

DOUBLE_ARRAY = """
__global__ void double_array_new(float *b, float *a, int *info)
{
  int datalen = info[0];

  for(int idx = threadIdx.x; idx < datalen; idx += blockDim.x)
  {
    b[idx] = a[idx]*2;
  }
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test compiles into its own cache folder with an empty in-process memo."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("PYGPU_CACHE_DIR", str(folder))
    monkeypatch.setattr(source_module, "_memo", {})
    yield folder


# --------------------------------------------------------------- the seed PyCUDA tutorial


def test_tutorial_initialise_and_context() -> None:
    cuda.init()
    current_dev = cuda.Device(0)
    ctx = current_dev.make_context()
    ctx.push()
    ctx.pop()
    ctx.pop()
    ctx.detach()


def test_tutorial_source_module_mem_alloc_and_copies() -> None:
    mod = SourceModule(DOUBLE_ARRAY)
    func = mod.get_function("double_array_new")
    n = 128
    a = np.array(range(n)).astype(np.float32)
    info = np.array([n]).astype(np.int32)
    b = np.zeros_like(a)
    a_gpu = cuda.mem_alloc(a.nbytes)
    cuda.memcpy_htod(a_gpu, a)
    b_gpu = cuda.mem_alloc(b.nbytes)
    cuda.memcpy_htod(b_gpu, b)
    info_gpu = cuda.mem_alloc(info.nbytes)
    cuda.memcpy_htod(info_gpu, info)
    func(b_gpu, a_gpu, info_gpu, block=(32, 1, 1), grid=(4, 1))
    a_doubled = np.empty_like(a)
    cuda.memcpy_dtoh(a_doubled, b_gpu)
    np.testing.assert_array_equal(a_doubled, 2 * a)
    a_gpu.free()
    b_gpu.free()
    info_gpu.free()


def test_pointer_plus_offset_as_a_kernel_argument() -> None:
    # PyCUDA's idiom for a kernel on part of an allocation: np.intp(alloc) + byte offset.
    mod = SourceModule(DOUBLE_ARRAY)
    func = mod.get_function("double_array_new")
    a = np.arange(16, dtype=np.float32)
    a_gpu = cuda.to_device(a)
    info_gpu = cuda.to_device(np.array([15], np.int32))
    b = np.zeros(15, np.float32)
    func(cuda.Out(b), np.intp(a_gpu) + a.itemsize, info_gpu, block=(16, 1, 1))
    np.testing.assert_array_equal(b, 2 * a[1:])


def test_tutorial_texture_reference_is_a_clear_error() -> None:
    with pytest.raises(CompileError, match="texture") as excinfo:
        SourceModule("texture<float, 2> MyTexture;\n__global__ void k(float* x) { x[0] = 1; }")
    assert "texture object" in str(excinfo.value)
    mod = SourceModule("__global__ void k(float* x) { x[0] = 1; }")
    with pytest.raises(NotImplementedError, match="cudaTextureObject_t"):
        mod.get_texref("MyTexture")


def test_tutorial_gpuarray_basics() -> None:
    x = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    x_gpu = gpuarray.to_gpu(x)
    np.testing.assert_array_equal(x_gpu.get(), x)
    assert len(x_gpu) == 5
    np.testing.assert_array_equal(x_gpu[0:3].get(), x[0:3])


def test_tutorial_gpuarray_passed_to_compiled_kernel() -> None:
    func = SourceModule(DOUBLE_ARRAY).get_function("double_array_new")
    x = np.random.default_rng(1).standard_normal(5).astype(np.float32)
    x_gpu = gpuarray.to_gpu(x)
    y_gpu = gpuarray.zeros(5, np.float32)
    info_gpu = gpuarray.to_gpu(np.array([5]).astype(np.int32))
    func(y_gpu.gpudata, x_gpu.gpudata, info_gpu.gpudata, block=(32, 1, 1), grid=(4, 1))
    np.testing.assert_array_equal(y_gpu.get(), 2 * x)
    # A GPUArray is also accepted directly, as PyCUDA does.
    z_gpu = gpuarray.zeros(5, np.float32)
    func(z_gpu, x_gpu, info_gpu, block=(32, 1, 1))
    np.testing.assert_array_equal(z_gpu.get(), 2 * x)


# --------------------------------------------------------------- compiled kernels are ordinary kernels

SAXPY = """
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* y)
{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}
"""


def test_prepared_call_and_argument_handlers() -> None:
    func = SourceModule(SAXPY).get_function("saxpy")
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    func(np.int32(100), np.float32(3), cuda.In(x), cuda.InOut(y), block=(64, 1, 1), grid=(2, 1))
    np.testing.assert_array_equal(y, 3 * x + 1)
    func.prepare("ifPP")
    x_gpu = gpuarray.to_gpu(x)
    y_gpu = gpuarray.to_gpu(np.zeros(100, np.float32))
    func.prepared_call((1, 1), (32, 1, 1), 100, 2.0, x_gpu.gpudata, y_gpu.gpudata)
    np.testing.assert_array_equal(y_gpu.get(), 2 * x)


def test_globals_device_and_constant() -> None:
    mod = SourceModule(
        """
        __constant__ float coeffs[4];
        __device__ int calls;
        __global__ void poly(float* y, const float* x, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i == 0) calls += 1;
          if (i < n) y[i] = coeffs[0] + x[i] * (coeffs[1] + x[i] * (coeffs[2] + x[i] * coeffs[3]));
        }
        """
    )
    address, size = mod.get_global("coeffs")
    assert size == 16
    coeffs = np.array([1, 2, 3, 4], dtype=np.float32)
    cuda.memcpy_htod(address, coeffs)
    x = np.linspace(-1, 1, 33).astype(np.float32)
    y = np.zeros_like(x)
    mod.get_function("poly")(cuda.Out(y), cuda.In(x), np.int32(33), block=(64, 1, 1))
    np.testing.assert_allclose(y, 1 + x * (2 + x * (3 + x * 4)), rtol=1e-6)
    calls_address, calls_size = mod.get_global("calls")
    calls = np.zeros(1, np.int32)
    cuda.memcpy_dtoh(calls, calls_address)
    assert calls_size == 4 and calls[0] == 1


def test_options_defines_and_include_dirs(tmp_path: Path) -> None:
    (tmp_path / "scale.h").write_text("#define SCALE 5\n")
    mod = SourceModule(
        '#include "scale.h"\n__global__ void k(int* x) { x[0] = SCALE * OFFSET; }',
        options=["-DOFFSET=7", "-O3", "-lineinfo", "--use_fast_math"],
        include_dirs=[str(tmp_path)],
    )
    out = np.zeros(1, np.int32)
    mod.get_function("k")(cuda.Out(out), block=(1, 1, 1))
    assert out[0] == 35


def test_no_extern_c_and_templates_helpers() -> None:
    source = """
    template <typename T> __device__ T twice(T v) { return v + v; }
    namespace detail { __global__ void not_exported_on_the_host(double* x) {} }
    extern "C" __global__ void k(double* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }
    """
    mod = SourceModule(source, no_extern_c=True)
    x = np.arange(8, dtype=np.float64)
    mod.get_function("k")(cuda.InOut(x), block=(8, 1, 1))
    np.testing.assert_array_equal(x, 2 * np.arange(8))


@pytest.mark.parametrize("no_extern_c", [False, True])
def test_glibc_integer_type_names_compile_as_with_nvcc(no_extern_c: bool) -> None:
    """nvcc's sources see glibc's uint, ushort and ulong (PyCUDA's matrixmul_tiled example uses uint)."""
    linkage = 'extern "C" ' if no_extern_c else ""
    source = f"""
    {linkage}__global__ void widths(uint* out) {{
        ushort s = 2; ulong l = 3; uint i = threadIdx.x;
        out[i] = i + s + (uint)l;
    }}
    """
    out = np.zeros(4, dtype=np.uint32)
    SourceModule(source, no_extern_c=no_extern_c).get_function("widths")(cuda.Out(out), block=(4, 1, 1))
    np.testing.assert_array_equal(out, np.arange(4) + 5)


@pytest.mark.parametrize("no_extern_c", [False, True])
def test_errors_name_the_line_of_the_users_source(no_extern_c: bool) -> None:
    with pytest.raises(CompileError) as excinfo:
        SourceModule("__global__ void k(float* x)\n{\n    x[0] = undefined_name;\n}\n", no_extern_c=no_extern_c)
    assert excinfo.value.stderr and re.search(r"kernel\.cu(\(3\)|:3:)", excinfo.value.stderr), excinfo.value.stderr


def test_compile_returns_a_loadable_binary() -> None:
    binary = compiler.compile(DOUBLE_ARRAY)
    assert isinstance(binary, bytes) and len(binary) > 0
    module = pygpu.Module(binary)
    module.get_function("double_array_new")


def test_default_flags_and_compile_error_names() -> None:
    assert isinstance(compiler.DEFAULT_NVCC_FLAGS, list)
    assert cuda.CompileError is CompileError
    assert issubclass(CompileError, cuda.Error)


# --------------------------------------------------------------- bad input


def test_syntax_error_carries_the_log() -> None:
    with pytest.raises(CompileError) as excinfo:
        SourceModule("__global__ void k(float* x) { x[0] = 1 }")
    error = excinfo.value
    assert error.stderr and "error" in error.stderr
    assert error.stderr.strip() in str(error)
    assert error.command_line


def test_unknown_kernel_name() -> None:
    mod = SourceModule(DOUBLE_ARRAY)
    with pytest.raises(pygpu.ModuleError, match="no_such_kernel"):
        mod.get_function("no_such_kernel")


def test_missing_include() -> None:
    with pytest.raises(CompileError, match="no_such_header.h"):
        SourceModule('#include "no_such_header.h"\n__global__ void k() {}')


def test_unknown_option(backend: str) -> None:
    with pytest.raises(CompileError, match="no-such-option"):
        SourceModule("__global__ void k() {}", options=["--no-such-option"])


def test_nvcc_only_option_is_rejected_with_a_reason() -> None:
    with pytest.raises(ValueError, match="does not link"):
        rtc.nvrtc_options(["-Xlinker", "-s"])


def test_host_compiler_and_entry_options_are_dropped_as_nvcc_cubin_does(backend: str) -> None:
    # Kernel Tuner passes `-Xcompiler=-Wall -e <kernel>` with every kernel, and scripts pass -ccbin
    # to pick nvcc's host compiler: a PyCUDA compile (nvcc --cubin) builds no host code, so none of
    # them changes the kernels, but the preprocessor's -D among the host compiler's options does.
    source = "__global__ void k(int* x) { x[0] = FROM_XCOMPILER; }"
    options = ["-Xcompiler=-Wall", "-e", "k", "-ccbin", "gcc", "--compiler-options", "-O2,-DFROM_XCOMPILER=7"]
    module = SourceModule(source, options=options)
    out = gpuarray.zeros(1, np.int32)
    module.get_function("k")(out, block=(1, 1, 1), grid=(1, 1))
    assert int(out.get()[0]) == 7
    with pytest.raises(ValueError, match="needs a value"):
        SourceModule(source, options=["-Xcompiler"])


def test_libraries_to_link_are_left_to_the_link() -> None:
    """PyCUDA's DynamicModule programs pass -lcudadevrt with each source (its test_jit_link_module
    does): a compile ignores libraries, as nvcc's to a cubin does; on the host the CUDA runtime
    libraries do not exist, and host libraries stay for the C++ compiler."""
    options, _ = rtc.nvrtc_options(
        ["-rdc=true", "-lcudadevrt", "-L/usr/local/cuda/lib64", "-lineinfo", "--library=m", "-l", "m", "-DX"]
    )
    assert options == ["-rdc=true", "-lineinfo", "-DX"]
    from pygpu._toolchain.host_compiler import translate_options

    assert translate_options(["-rdc=true", "-lcudadevrt", "-lcudart", "-lm", "-DX"]) == ["-lm", "-DX"]


def test_source_must_be_text() -> None:
    with pytest.raises(TypeError, match="str"):
        SourceModule(b"__global__ void k() {}")  # type: ignore[arg-type]


def _fake_compiler(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-cxx"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Temporary folders of this test only, so other processes' compiles don't show up."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))


def _leftover_workdirs() -> set[str]:
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("pygpu-compile-")}


@pytest.mark.skipif(pygpu.backend() != "host", reason="the host backend's compiler is a subprocess")
@pytest.mark.usefixtures("private_tmp")
def test_killed_compiler_is_a_compile_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _leftover_workdirs()
    monkeypatch.setenv("CXX", _fake_compiler(tmp_path, "kill -9 $$"))
    with pytest.raises(CompileError, match="killed by signal 9"):
        SourceModule("__global__ void k() {}")
    assert _leftover_workdirs() == before


@pytest.mark.skipif(pygpu.backend() != "host", reason="the host backend's compiler is a subprocess")
@pytest.mark.usefixtures("private_tmp")
def test_hung_compiler_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _leftover_workdirs()
    monkeypatch.setenv("CXX", _fake_compiler(tmp_path, "exec sleep 30"))
    monkeypatch.setenv("PYGPU_COMPILE_TIMEOUT", "0.5")
    with pytest.raises(CompileError, match="PYGPU_COMPILE_TIMEOUT"):
        SourceModule("__global__ void k() {}")
    assert _leftover_workdirs() == before
    assert not any(Path(os.environ["PYGPU_CACHE_DIR"]).rglob("*.bin")), "a failed compile must not be cached"


@pytest.mark.skipif(pygpu.backend() != "host", reason="the host backend's compiler is a subprocess")
def test_missing_compiler_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    with pytest.raises(FileNotFoundError, match="CXX"):
        SourceModule("__global__ void k() {}")


@pytest.mark.skipif(pygpu.backend() != "host", reason="kernel discovery is the host build's")
def test_host_kernel_discovery() -> None:
    from pygpu._toolchain.host_compiler import kernel_names

    source = """
    // __global__ void commented_out(int* x) {}
    const char* s = "__global__ void in_a_string()";
    __global__ void __launch_bounds__(256) bounded(int* x) {}
    extern "C" __global__ void plain(int* x);
    extern "C" __global__ void plain(int* x) { x[0] = 0; }
    template <typename T> __global__ void templated(T* x) {}
    static __device__ float hidden;
    __device__ __constant__ int both[3] = {1, 2, 3};
    __device__ float helper(float v) { return v; }
    namespace ns { __global__ void inside_a_namespace(int* x) {} }
    extern "C" { __global__ void in_a_block(int* x) {} }
    """
    kernels, variables = kernel_names(source)
    assert kernels == ["bounded", "plain", "in_a_block"]
    assert variables == ["both"]


# --------------------------------------------------------------- NVRTC (compile only; no GPU needed)

needs_toolchain_nvrtc = pytest.mark.skipif(
    not TOOLCHAIN_NVRTC.is_file(), reason="kernels/build.sh cuda installs NVRTC 12.0 into kernels/.toolchain"
)


@needs_toolchain_nvrtc
def test_nvrtc_compiles_a_cubin_for_an_exact_architecture() -> None:
    library = str(TOOLCHAIN_NVRTC)
    assert _pygpu.rtc_version("nvrtc", library) == (12, 0)
    assert 90 in _pygpu.rtc_supported_archs(library)
    options, arch = rtc.nvrtc_options(["-arch", "sm_80", "-O3", "-I/tmp", "-DN=3", "-lineinfo"])
    assert arch == "sm_80" and options == ["-I/tmp", "-DN=3", "-lineinfo"]
    output, gpu_arch = rtc.nvrtc_target(library, (9, 0), None)
    assert (output, gpu_arch) == ("cubin", "sm_90")
    source = 'extern "C" {\n' + DOUBLE_ARRAY + "\n}"
    binary, log = _pygpu.rtc_compile(
        "nvrtc", library, source, "k.cu", [*options, f"--gpu-architecture={gpu_arch}"], output
    )
    assert binary is not None and binary.startswith(b"\x7fELF"), log


@needs_toolchain_nvrtc
def test_nvrtc_falls_back_to_ptx_for_an_unknown_gpu() -> None:
    library = str(TOOLCHAIN_NVRTC)
    # NVRTC 12.0 does not know sm_100: PTX for the newest architecture it knows.
    assert rtc.nvrtc_target(library, (10, 0), None) == ("ptx", "compute_90")
    binary, log = _pygpu.rtc_compile("nvrtc", library, DOUBLE_ARRAY, "k.cu", ["--gpu-architecture=compute_90"], "ptx")
    assert binary is not None and b".target sm_90" in binary, log
    with pytest.raises(ValueError, match="knows no architecture"):
        rtc.nvrtc_target(library, (1, 0), None)


@needs_toolchain_nvrtc
def test_nvrtc_compile_errors_are_returned_with_the_log() -> None:
    library = str(TOOLCHAIN_NVRTC)
    binary, log = _pygpu.rtc_compile("nvrtc", library, "__global__ void k( {", "bad.cu", [], "ptx")
    assert binary is None and "NVRTC_ERROR_COMPILATION" in log and "bad.cu" in log
    binary, log = _pygpu.rtc_compile("nvrtc", library, "", "x.cu", ["--no-such-option"], "ptx")
    assert binary is None and "no-such-option" in log


@needs_toolchain_nvrtc
def test_nvrtc_found_in_a_pip_wheel_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel_lib = tmp_path / "nvidia" / "cuda_nvrtc" / "lib"
    wheel_lib.mkdir(parents=True)
    (wheel_lib / "libnvrtc.so.12").symlink_to(TOOLCHAIN_NVRTC)
    monkeypatch.delenv("PYGPU_NVRTC", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(rtc, "_nvrtc_memo", {})
    assert rtc.find_nvrtc() == str(wheel_lib / "libnvrtc.so.12")


def test_a_system_nvrtc_is_found_by_path_without_loading_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare name found in the loader's folders is named by its path: its identity is then a
    stat, not a dlopen of NVRTC (milliseconds) in every new process's cache hit."""
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "libnvrtc.so.12").write_bytes(b"not loaded")
    (folder / "libnvrtc.so.13").write_bytes(b"not loaded either")
    monkeypatch.delenv("PYGPU_NVRTC", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "no-wheels")])
    monkeypatch.setenv("LD_LIBRARY_PATH", str(folder))
    monkeypatch.setattr(rtc, "_nvrtc_memo", {})
    monkeypatch.setattr(rtc, "rtc_version", lambda *a: pytest.fail("NVRTC was loaded"))
    if Path("/usr/local/cuda/lib64/libnvrtc.so.13").exists() or Path("/usr/local/cuda/lib64/libnvrtc.so.12").exists():
        pytest.skip("a toolkit NVRTC comes first in the search order")
    assert rtc.find_nvrtc(13) == str(folder / "libnvrtc.so.13")
    found = rtc.find_nvrtc(12)
    assert found == str(folder / "libnvrtc.so.12"), "NVRTC 13 is newer than a CUDA 12 driver"
    identity = rtc.library_identity(found)
    (folder / "libnvrtc.so.12").write_bytes(b"another version")
    assert rtc.library_identity(found) != identity, "a replaced library changes the cache key"


def test_an_nvrtc_newer_than_the_driver_comes_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for major, rel in ((13, "nvidia/cu13/lib/libnvrtc.so.13"), (12, "nvidia/cuda_nvrtc/lib/libnvrtc.so.12")):
        path = tmp_path / rel
        path.parent.mkdir(parents=True)
        path.write_bytes(b"%d" % major)
    monkeypatch.delenv("PYGPU_NVRTC", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(rtc, "_nvrtc_memo", {})
    assert rtc.find_nvrtc(13).endswith("libnvrtc.so.13")
    assert rtc.find_nvrtc(12).endswith("libnvrtc.so.12")
    assert rtc.find_nvrtc(None).endswith("libnvrtc.so.13")


def test_no_nvrtc_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPU_NVRTC", str(tmp_path / "libnvrtc.so.12"))
    monkeypatch.setattr(rtc, "_nvrtc_memo", {})
    with pytest.raises(rtc.NvrtcMissingError, match=r"pip install pygpu\[nvrtc\]"):
        rtc.find_nvrtc(13)


def test_missing_library_is_an_exception_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(pygpu.BackendUnavailableError, match="cannot use nvrtc"):
        _pygpu.rtc_compile("nvrtc", str(tmp_path / "missing.so"), "", "k.cu", [], "ptx")
    with pytest.raises(ValueError, match="unknown runtime compiler"):
        _pygpu.rtc_version("nvcc", str(tmp_path / "missing.so"))


@pytest.fixture
def cuda_without_gpu(monkeypatch: pytest.MonkeyPatch) -> str:
    """compile() as on the cuda backend with an H200 (sm_90), NVRTC 12.0 from the toolchain:
    everything but loading the binary runs without a GPU."""
    if not TOOLCHAIN_NVRTC.is_file():
        pytest.skip("kernels/build.sh cuda installs NVRTC 12.0 into kernels/.toolchain")
    monkeypatch.setattr(source_module, "capabilities", lambda: _pygpu.capabilities("cuda"))
    monkeypatch.setattr(source_module, "_device", lambda: ((9, 0), "Fake H200"))
    monkeypatch.setenv("PYGPU_NVRTC", str(TOOLCHAIN_NVRTC))
    monkeypatch.setattr(rtc, "_nvrtc_memo", {})
    return str(TOOLCHAIN_NVRTC)


def test_cuda_compile_flow_without_a_gpu(cuda_without_gpu: str, private_cache: Path) -> None:
    cubin = compiler.compile(DOUBLE_ARRAY, options=["-O3", "--use_fast_math", "-DX=1"])
    assert cubin.startswith(b"\x7fELF")
    assert len(list(private_cache.rglob("*.bin"))) == 1
    assert compiler.compile(DOUBLE_ARRAY, options=["-O3", "--use_fast_math", "-DX=1"]) is cubin  # memo
    ptx = compiler.compile(DOUBLE_ARRAY, target="ptx")
    assert b".target sm_90" in ptx and b".entry double_array_new" in ptx  # extern "C": plain name
    with pytest.raises(CompileError, match="NVRTC_ERROR_COMPILATION") as excinfo:
        compiler.compile("__global__ void k() { undefined_name = 1; }")
    assert excinfo.value.stderr and "undefined_name" in excinfo.value.stderr
    with pytest.raises(CompileError, match="sm_1"):
        compiler.compile(DOUBLE_ARRAY, arch="sm_1")
    with pytest.raises(ValueError, match="no NVRTC equivalent"):
        compiler.compile(DOUBLE_ARRAY, options=["-Xlinker", "-s"])
    with pytest.raises(ValueError, match="fatbin"):
        compiler.compile(DOUBLE_ARRAY, target="fatbin")


def test_cuda_glibc_type_names_and_line_numbers_without_a_gpu(cuda_without_gpu: str) -> None:
    assert compiler.compile("__global__ void k(uint* x, ushort s, ulong l) { x[0] = s + l; }").startswith(b"\x7fELF")
    with pytest.raises(CompileError) as excinfo:
        compiler.compile("__global__ void k()\n{\n    undefined_name = 1;\n}\n")
    assert excinfo.value.stderr and "kernel.cu(3)" in excinfo.value.stderr, excinfo.value.stderr


def test_cuda_ptx_fallback_without_a_gpu(cuda_without_gpu: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "_device", lambda: ((12, 1), "Fake future GPU"))
    ptx = compiler.compile(DOUBLE_ARRAY)
    assert b".target sm_90" in ptx, "PTX for the newest architecture NVRTC 12.0 knows"


def test_python_m_debug_runs_a_script_with_kernels_compiled_for_debugging(tmp_path: Path, backend: str) -> None:
    # PyCUDA's `python -m pycuda.debug script.py ARGS` (for cuda-gdb): debugging on, the script
    # run as __main__ with its own arguments, every compile a debug one whose files are kept.
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\n"
        "import pygpu.driver as drv\n"
        "from pygpu.compiler import SourceModule\n"
        "SourceModule('__global__ void k(int* x) { x[0] = 1; }')\n"
        "print('debugging', drv.CUDA_DEBUGGING, sys.argv[1:], __name__)\n"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "pygpu.debug", str(script), "a", "--b"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "debugging True ['a', '--b'] __main__" in done.stdout
    # keep=True, as PyCUDA's debugging: the compile says where its files are, or its options.
    assert "*** " in done.stdout
    if backend != "host":
        assert "-G" in done.stdout  # device debug information (the host compiler has none)
    missing = subprocess.run([sys.executable, "-m", "pygpu.debug"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "usage" in missing.stderr


def test_inline_ptx_assembly_on_the_host_says_it_needs_the_cuda_backend(backend: str) -> None:
    if backend != "host":
        pytest.skip("NVRTC compiles inline PTX")
    source = '__global__ void k(int* x) { int v; asm("mov.s32 %0, 7;" : "=r"(v)); x[0] = v; }'
    with pytest.raises(CompileError, match=r"inline PTX assembly.*cuda backend only"):
        SourceModule(source)
