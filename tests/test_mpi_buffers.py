"""pygpu.mpi.buffer: GPUArrays handed to mpi4py, directly or staged through page-locked memory,
checked in MPI jobs of 2 and 3 ranks (both paths on the host backend; on cuda the staged path,
and the direct one where the MPI is CUDA-aware), plus the argument checks."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_mpi, run_mpi

import pygpu
from pygpu import mpi

SCRIPT = Path(__file__).parent / "mpi" / "buffer_ranks.py"


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("path", ["auto", "staged", "direct"])
def test_gpuarrays_cross_mpi_calls(n: int, path: str, backend: str) -> None:
    if backend not in ("host", "cuda"):
        pytest.skip(f"no {backend} path")
    if path == "direct" and backend == "cuda" and not mpi.cuda_aware():
        pytest.skip("this MPI is not CUDA-aware: device pointers cannot go to it directly")
    # (MPI alone, without NCCL, lets several ranks share one GPU)
    done = run_mpi(n, SCRIPT, path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(re.findall(r"ok rank (\d+)", done.stdout)) == [str(r) for r in range(n)]


@needs_mpi
def test_cuda_awareness_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPU_MPI_CUDA_AWARE", "1")
    assert mpi.cuda_aware() is True
    monkeypatch.setenv("PYGPU_MPI_CUDA_AWARE", "0")
    assert mpi.cuda_aware() is False
    monkeypatch.setenv("PYGPU_MPI_CUDA_AWARE", "yes")
    with pytest.raises(ValueError, match="0 or 1"):
        mpi.cuda_aware()


def test_buffers_are_checked() -> None:
    with pytest.raises(TypeError, match="takes a GPUArray"):
        with mpi.buffer(np.zeros(3)):  # type: ignore[arg-type]
            pass
    with pytest.raises(ValueError, match="contiguous"):
        with mpi.buffer(pygpu.zeros((4, 4))[:, ::2]):
            pass
    with pytest.raises(ValueError, match="reads the array, writes it, or both"):
        with mpi.buffer(pygpu.zeros(3), read=False):
            pass


def test_host_memory_goes_to_mpi_in_place_or_through_a_staged_copy(backend: str) -> None:
    if backend != "host":
        pytest.skip("device memory is host memory only on the host backend")
    x = pygpu.to_gpu(np.arange(5.0))
    with mpi.buffer(x, write=True) as direct:
        assert isinstance(direct, np.ndarray)
        direct[0] = 9.0  # the array's own memory
    assert x.get()[0] == 9.0
    with mpi.buffer(x, write=True, staged=True) as copy:
        assert isinstance(copy, np.ndarray) and not np.shares_memory(copy, np.asarray(x))
        np.testing.assert_array_equal(copy, [9.0, 1, 2, 3, 4])
        copy[1] = 8.0
        assert x.get()[1] == 1.0  # not yet: written back at the end
    assert x.get()[1] == 8.0
