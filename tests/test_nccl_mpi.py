"""pygpu.nccl across processes of an MPI job (mpiexec + mpi4py): every collective against numpy
with 2 and 3 ranks, ranks that make different calls, a rank that never joins (a timeout, not a
hang) and a rank that dies. On the host backend the collectives run over MPI; on cuda over NCCL,
one GPU per rank (NCCL refuses two ranks on one GPU), so the rank counts are capped by the GPUs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pygpu

RANKS_SCRIPT = Path(__file__).parent / "mpi" / "nccl_ranks.py"
N_DEVICES = pygpu.cudaGetDeviceCount()[0]


def _mpiexec() -> str | None:
    beside_python = Path(sys.executable).parent / "mpiexec"
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("mpiexec")


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(
    MPIEXEC is None or not _has_mpi4py(), reason="needs mpi4py and mpiexec (pip install mpi4py mpich)"
)


def _max_ranks(backend: str) -> int:
    return N_DEVICES if backend == "cuda" else 3


def run_ranks(n: int, case: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], float]:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    start = time.monotonic()
    assert MPIEXEC is not None
    result = subprocess.run(
        [MPIEXEC, "-n", str(n), sys.executable, str(RANKS_SCRIPT), case],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result, time.monotonic() - start


def _need(n: int, backend: str) -> None:
    if backend not in ("cuda", "host"):
        pytest.skip(f"the {backend} backend has no collectives")
    if n > _max_ranks(backend):
        pytest.skip(f"{n} ranks need {n} GPUs on cuda; this machine has {N_DEVICES}")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_collective_matches_numpy(n: int, backend: str) -> None:
    _need(n, backend)
    result, _ = run_ranks(n, "collectives")
    assert result.returncode == 0, result.stdout + result.stderr
    # (the ranks' lines can interleave in mpiexec's output)
    assert sorted(re.findall(r"ok collectives rank (\d+)", result.stdout)) == [str(r) for r in range(n)]


def test_ranks_that_make_different_calls_get_a_clear_error(backend: str) -> None:
    if backend != "host":
        pytest.skip("NCCL does not compare the ranks' calls; the host backend's MPI path does")
    result, _ = run_ranks(3, "mismatch")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok mismatch") == 3


def test_a_rank_that_never_joins_is_a_timeout_not_a_hang(backend: str) -> None:
    _need(2, backend)
    result, seconds = run_ranks(2, "absent_rank")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok absent_rank") == 2
    assert seconds < 60


def test_a_rank_that_dies_ends_the_job(backend: str) -> None:
    _need(2, backend)
    result, seconds = run_ranks(2, "dies", timeout=90)
    assert result.returncode != 0 and "ok dies" not in result.stdout
    assert seconds < 60
