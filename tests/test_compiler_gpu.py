"""SourceModule on a GPU: NVRTC (or hiprtc) compiles for the device's exact architecture,
and the same programs run with NVRTC from a pip wheel and from the CUDA toolkit. The
programs of test_compiler.py and test_compiled_kernels.py also run on the GPU backends."""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import pygpu
import pytest
from conftest import run_python
from pygpu import _pygpu, compiler
from pygpu._toolchain import rtc, source_module

pytestmark = pytest.mark.gpu

PROGRAM = """
import numpy as np, pygpu.driver as cuda
from pygpu.compiler import SourceModule
mod = SourceModule('''
__global__ void twice(float* b, const float* a, int n) {
  __shared__ float tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? a[i] : 0;
  __syncthreads();
  if (i < n) b[i] = 2 * tile[threadIdx.x];
}
''', cache_dir=False)
a = np.arange(1000, dtype=np.float32)
b = np.zeros_like(a)
mod.get_function("twice")(cuda.Out(b), cuda.In(a), np.int32(a.size), block=(128, 1, 1), grid=(8, 1))
assert (b == 2 * a).all()
from pygpu._toolchain import rtc
print("nvrtc", rtc.find_nvrtc())
"""


def _wheel_nvrtc() -> str | None:
    for entry in sys.path:
        for rel in ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"):
            path = Path(entry or ".") / rel
            if path.is_file():
                return str(path)
    return None


def _toolkit_nvrtc() -> str | None:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        found = sorted(glob.glob(f"{root}/lib64/libnvrtc.so*")) or sorted(glob.glob(f"{root}/lib/libnvrtc.so*"))
        if found:
            return found[0]
    return None


@pytest.mark.skipif(pygpu.backend() != "cuda", reason="NVRTC is the cuda backend's compiler")
def test_compiles_a_cubin_for_the_exact_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "_memo", {})
    major, minor = pygpu.cudaDeviceProp(0).compute_capability
    binary = compiler.compile("__global__ void k(int* x) { x[0] = 1; }", cache_dir=str(tmp_path))
    library = rtc.find_nvrtc()
    if major * 10 + minor in _pygpu.rtc_supported_archs(library):
        assert binary.startswith(b"\x7fELF"), "expected a cubin"
    else:
        assert b".target" in binary, "expected PTX for a GPU this NVRTC does not know"
    pygpu.Module(binary).get_function("k")


@pytest.mark.skipif(pygpu.backend() != "cuda", reason="NVRTC is the cuda backend's compiler")
@pytest.mark.parametrize("source", ["wheel", "toolkit"])
def test_nvrtc_from_wheel_and_toolkit(source: str) -> None:
    library = _wheel_nvrtc() if source == "wheel" else _toolkit_nvrtc()
    if library is None:
        pytest.skip(f"no NVRTC from the {source} on this machine")
    done = run_python(PROGRAM, env={"PYGPU_NVRTC": library, "PYGPU_BACKEND": "cuda"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"nvrtc {library}" in done.stdout


@pytest.mark.skipif(pygpu.backend() != "cuda", reason="NVRTC is the cuda backend's compiler")
def test_unknown_architecture_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "_memo", {})
    with pytest.raises(compiler.CompileError, match="sm_1"):
        compiler.compile("__global__ void k() {}", arch="sm_1", cache_dir=False)


HIT = """
import sys
from pygpu import compiler
from pygpu._toolchain import source_module
source_module.trace = []
f = compiler.SourceModule("__global__ void k(int* x) { x[0] = 1; }").get_function("k")
print([step for step, _ in source_module.trace])
with open("/proc/self/maps") as maps:
    print("nvrtc loaded" if "libnvrtc" in maps.read() else "nvrtc not loaded")
"""


@pytest.mark.skipif(pygpu.backend() != "cuda", reason="NVRTC is the cuda backend's compiler")
def test_a_new_process_cache_hit_does_not_load_nvrtc(tmp_path: Path) -> None:
    """The cache hit's budget (1 ms to a launchable function) has no room for loading NVRTC."""
    env = {"PYGPU_CACHE_DIR": str(tmp_path), "PYGPU_BACKEND": "cuda"}
    first = run_python(HIT, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "compiled and stored (miss)" in first.stdout
    hit = run_python(HIT, env=env, timeout=120)
    assert hit.returncode == 0, hit.stderr
    assert "compiled and stored (miss)" not in hit.stdout and "cache file read and verified" in hit.stdout
    assert "nvrtc not loaded" in hit.stdout, hit.stdout


@pytest.mark.skipif(pygpu.backend() not in ("cuda", "hip"), reason="the runtime compilers' missing C headers")
def test_sources_that_include_c_library_headers_compile() -> None:
    """nvcc programs include <stdio.h> or <cstdio> for printf (PyCUDA's test_large_smem and
    test_jit_link_module do): NVRTC has no C library headers, so pygpu's empty ones stand in;
    what device code uses is built in."""
    import numpy as np

    mod = compiler.SourceModule(
        """
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <math.h>
        #include <cstdio>
        #include <cstdlib>
        #include <cstring>
        #include <cmath>
        __global__ void k(float *x) { if (threadIdx.x == 0 && x[0] < -1) printf("never\\n"); x[threadIdx.x] = sqrtf(4.0f); }
        """,
        cache_dir=False,
    )
    x = pygpu.gpuarray.zeros(32, np.float32)
    mod.get_function("k")(x, block=(32, 1, 1), grid=(1, 1))
    assert (x.get() == 2).all()
