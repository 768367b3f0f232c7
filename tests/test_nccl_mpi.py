"""pygpu.nccl across processes of an MPI job (mpiexec + mpi4py): every collective against numpy
with 2 and 3 ranks, ranks that make different calls, a rank that never joins (a timeout, not a
hang) and a rank that dies. On the host backend the collectives run over MPI; on cuda over NCCL,
one GPU per rank (NCCL refuses two ranks on one GPU), so the rank counts are capped by the GPUs."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from conftest import need_ranks, needs_mpi, run_mpi

RANKS_SCRIPT = Path(__file__).parent / "mpi" / "nccl_ranks.py"
pytestmark = needs_mpi


def run_ranks(n: int, case: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    result = run_mpi(n, RANKS_SCRIPT, case, timeout=timeout)
    return result, time.monotonic() - start


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_collective_matches_numpy(n: int, backend: str) -> None:
    need_ranks(n, backend)
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
    need_ranks(2, backend)
    result, seconds = run_ranks(2, "absent_rank")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok absent_rank") == 2
    assert seconds < 60


def test_a_rank_that_dies_ends_the_job(backend: str) -> None:
    need_ranks(2, backend)
    result, seconds = run_ranks(2, "dies", timeout=90)
    assert result.returncode != 0 and "ok dies" not in result.stdout
    assert seconds < 60
