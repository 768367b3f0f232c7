"""Bundled kernels built from the sources embedded in the compiled module when the install has
no prebuilt binary (pip install from source): python/pygpu/_toolchain/bundled_sources.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_python

import pygpu
from pygpu._toolchain import bundled_sources

# Loads bundled "testing" as an install without prebuilt kernels would (an empty kernels folder),
# runs one of its kernels, then asks for a module that does not exist.
_WITHOUT_PREBUILT = """
import json, numpy as np, pygpu
from pygpu._toolchain import bundled_kernels
bundled_kernels.KERNELS_DIR = {empty!r}
x = pygpu.gpuarray.to_gpu(np.arange(5.0))
bundled_kernels.load_kernels("testing").get_function("add_scalar_f64")(
    x, np.int64(x.size), np.float64(1.0), block=(256, 1, 1), grid=(1, 1))
try:
    bundled_kernels.load_kernels("no_such_module")
    missing = ""
except FileNotFoundError as e:
    missing = str(e)
print(json.dumps({{"x": x.get().tolist(), "missing": missing}}))
"""


def test_every_prebuilt_module_has_its_source_embedded() -> None:
    from pygpu._toolchain.bundled_kernels import KERNELS_DIR

    kernels = Path(KERNELS_DIR)
    prebuilt = {p.name.removeprefix("lib").removesuffix(".so") for p in kernels.glob("lib*.so")}
    assert prebuilt <= set(bundled_sources.source_names())
    assert "testing" in bundled_sources.source_names()
    assert bundled_sources.has_source("burgers") and not bundled_sources.has_source("no_such_module")


@pytest.mark.skipif(pygpu.backend() != "host", reason="compiles with the host C++ compiler")
def test_missing_prebuilt_kernels_are_built_from_source_once_then_cached(tmp_path: Path) -> None:
    empty = tmp_path / "no-prebuilt"
    empty.mkdir()
    env = {"PYGPU_CACHE_DIR": str(tmp_path / "cache"), "PYGPU_BACKEND": "host"}
    first = run_python(_WITHOUT_PREBUILT.format(empty=str(empty)), env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert result["x"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert "no_such_module" in result["missing"] and "testing" in result["missing"]
    assert list((tmp_path / "cache" / "bundled-sources").iterdir()), "the sources were not written out"
    # The second process finds the library in the disk cache: no compilation, nothing said.
    second = run_python(_WITHOUT_PREBUILT.format(empty=str(empty)), env=env, timeout=60)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["x"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert "building the bundled" not in second.stderr


@pytest.mark.skipif(pygpu.backend() != "host", reason="compiles with the host C++ compiler")
def test_a_part_of_a_source_split_by_dtype_builds_from_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cast_b1 is the part of kernels/cast.cu with the casts to bool: only those kernels."""
    monkeypatch.setenv("PYGPU_CACHE_DIR", str(tmp_path))
    module = pygpu.Module(bundled_sources.build("cast_b1"))
    assert "cast_f64_b1" in repr(module.get_function("cast_f64_b1"))
    with pytest.raises(pygpu.CudaError):
        module.get_function("cast_b1_f64")  # a cast to float64: another part's


@pytest.mark.skipif(pygpu.backend() != "host", reason="compiles with the host C++ compiler")
def test_without_a_compiler_the_error_says_what_to_install(tmp_path: Path) -> None:
    empty = tmp_path / "no-prebuilt"
    empty.mkdir()
    env = {"PYGPU_CACHE_DIR": str(tmp_path / "cache"), "PYGPU_BACKEND": "host", "CXX": "no-such-compiler-xyz"}
    out = run_python(_WITHOUT_PREBUILT.format(empty=str(empty)), env=env)
    assert out.returncode != 0
    assert "no prebuilt 'testing' kernels" in out.stderr
    assert "install a C++ compiler" in out.stderr and "CXX" in out.stderr


@pytest.mark.gpu
@pytest.mark.skipif(pygpu.backend() != "cuda", reason="NVRTC is the cuda backend's compiler")
def test_missing_prebuilt_kernels_are_built_with_nvrtc_on_cuda(tmp_path: Path) -> None:
    from pygpu._toolchain import rtc

    try:
        rtc.find_nvrtc()
    except Exception as e:  # noqa: BLE001 - any reason NVRTC is not there: nothing to test
        pytest.skip(f"no NVRTC here: {e}")
    empty = tmp_path / "no-prebuilt"
    empty.mkdir()
    env = {"PYGPU_CACHE_DIR": str(tmp_path / "cache"), "PYGPU_BACKEND": "cuda"}
    out = run_python(_WITHOUT_PREBUILT.format(empty=str(empty)), env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["x"] == [1.0, 2.0, 3.0, 4.0, 5.0]
