"""pygpu.capabilities(): one table per backend, owned by Rust, which the package reads instead of
comparing backend names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pygpu

PACKAGE = Path(pygpu.__file__).resolve().parent
FIELDS = (
    "backend",
    "compiler",
    "linker",
    "device_launch",
    "host_memory",
    "kernels_on_cpu",
    "warp_size",
    "collectives",
    "dlpack_device_type",
    "dlpack_host_types",
    "dlpack_default_stream",
    "cai_default_stream",
    "cuda_array_interface",
)


def test_the_active_backend_answers_with_its_row() -> None:
    caps = pygpu.capabilities()
    assert caps.backend == pygpu.backend()
    assert caps is pygpu.capabilities() is pygpu.capabilities(pygpu.backend())


@pytest.mark.parametrize(
    ("backend", "compiler", "linker", "host_memory", "warp_size", "collectives"),
    [
        ("cuda", "nvrtc", "cuda", False, 32, "nccl"),
        ("hip", "hiprtc", None, False, 64, None),
        ("host", "c++", "c++", True, 32, "mpi"),
    ],
)
def test_each_backend_row(
    backend: str, compiler: str, linker: str | None, host_memory: bool, warp_size: int, collectives: str | None
) -> None:
    caps = pygpu.capabilities(backend)
    assert (caps.backend, caps.compiler, caps.linker) == (backend, compiler, linker)
    assert (caps.host_memory, caps.kernels_on_cpu, caps.warp_size) == (host_memory, host_memory, warp_size)
    assert caps.collectives == collectives
    assert caps.device_launch == (backend == "cuda")
    # DLPack calls host memory kDLCPU (1); the CUDA Array Interface is for device memory only.
    assert (caps.dlpack_device_type == 1) == host_memory and caps.cuda_array_interface != host_memory
    assert isinstance(caps.dlpack_host_types, tuple)
    assert f"backend='{backend}'" in repr(caps) and all(f"{field}=" in repr(caps) for field in FIELDS)


def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown backend 'opencl'"):
        pygpu.capabilities("opencl")


def test_the_table_is_read_only() -> None:
    with pytest.raises(AttributeError):
        pygpu.capabilities().warp_size = 64  # type: ignore[misc]


def test_the_package_compares_no_backend_names() -> None:
    """What differs between backends is asked of capabilities(); the backend's name stays an
    identity (cache keys, messages, the bundled kernels' file names)."""
    name = r"""["'](cuda|hip|host)["']"""
    comparison = re.compile(rf"(==|!=|\bin)\s*\(?\s*{name}|{name}\s*(==|!=)")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if comparison.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not found, "backend names compared:\n" + "\n".join(found)
