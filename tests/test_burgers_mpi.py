"""The distributed Burgers demo (demos/burger/burger_mpi.py and its modules domain.py, tsqr.py,
distributed_hdf5.py).

In one process: the decomposition, the ghost-exchange plan simulated with numpy against the
single-process scheme (bitwise), TSQR and the streaming SVD against numpy.linalg.svd with the
ranks as threads. Over MPI (mpiexec, a few short jobs): the final field bitwise equal to the
single-process run (burger.Solver in this process) for both schemes with 2 and 3 ranks, the
singular values to 1e-10, the HDF5 output, the seeds' case, the streaming SVD at full rank, and
the refusals. On cuda the ranks are NCCL ranks, one GPU each, so the rank counts are capped by
the GPUs (test_seeds_case_on_the_gpus takes as many ranks as there are GPUs)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import need_ranks, needs_mpi, run_mpi

import pygpu

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "demos" / "burger"
sys.path.insert(0, str(DEMO))

import burger  # noqa: E402
import burger_mpi  # noqa: E402
import domain  # noqa: E402
import tsqr  # noqa: E402

SEED_U10 = "u[10] = 0.0733873"
N_DEVICES = pygpu.cudaGetDeviceCount()[0]


# --- the decomposition and the exchange plan, in one process -----------------------------------


@pytest.mark.parametrize("nx, size", [(10, 1), (10, 3), (41, 2), (41, 3), (7, 7)])
def test_partition_tiles_the_interior(nx: int, size: int) -> None:
    slabs = domain.partition(nx, size)
    assert [s.rank for s in slabs] == list(range(size))
    assert [s.start for s in slabs] == list(np.cumsum([0] + [s.n for s in slabs[:-1]]))
    assert sum(s.n for s in slabs) == nx
    assert max(s.n for s in slabs) - min(s.n for s in slabs) <= 1


def test_partition_refuses_more_ranks_than_points() -> None:
    with pytest.raises(ValueError, match=r"3 ranks for NX = 2 interior points.*-n 2 or fewer"):
        domain.partition(2, 3)


@pytest.mark.parametrize("nx, size", [(41, 1), (41, 3), (256, 2), (5, 5)])
def test_local_initial_data_is_the_slice_of_u0(nx: int, size: int) -> None:
    u0 = burger.Problem(nx=nx).u0()
    for s in domain.partition(nx, size):
        assert np.array_equal(domain.local_u0(nx, s), u0[s.start : s.start + s.n + 2])


def interior_update(u: np.ndarray, c1: float, c2: float) -> np.ndarray:
    """kernels/burgers.cu's burgers_update on every interior point of u (ghosts as they are)."""
    left, centre, right = u[:-2], u[1:-1], u[2:]
    return centre + c1 * (right - 2.0 * centre + left) - centre * c2 * (right - left)


def single_process(problem: burger.Problem, steps: int) -> np.ndarray:
    """The single-process kernels' steps in numpy: burgers_step_lagged's ghosts are copied from
    the old interior, burgers_step_periodic's from the new one."""
    c1, c2 = problem.coefficients()
    u = problem.u0()
    for _ in range(steps):
        new = np.empty_like(u)
        new[1:-1] = interior_update(u, c1, c2)
        source = u if problem.scheme == "seed" else new
        new[0], new[-1] = source[-2], source[1]
        u = new
    return u


def simulated_ranks(problem: burger.Problem, size: int, steps: int) -> np.ndarray:
    """The ranks of burger_mpi.py in numpy: each step the messages of domain.halo_messages
    (delivered in order per pair of ranks, as NCCL and MPI do) and an interior-only update;
    at the end one exchange and the slabs put together."""
    c1, c2 = problem.coefficients()
    slabs = domain.partition(problem.nx, size)
    plans = [domain.halo_messages(s, problem.scheme) for s in slabs]
    current = [domain.local_u0(problem.nx, s) for s in slabs]
    previous = [u.copy() for u in current]

    def exchange() -> None:
        channels: dict[tuple[int, int], deque[float]] = defaultdict(deque)
        for s, (sends, _) in zip(slabs, plans):
            for m in sends:
                buffer = current if m.source == "current" else previous
                channels[(s.rank, m.peer)].append(buffer[s.rank][m.index])
        for s, (_, receives) in zip(slabs, plans):
            for m in receives:
                current[s.rank][m.index] = channels[(m.peer, s.rank)].popleft()
        assert not any(channels.values())

    for _ in range(steps):
        exchange()
        for s in slabs:
            new = previous[s.rank]  # burgers_step writes the interior of the other buffer
            new[1:-1] = interior_update(current[s.rank], c1, c2)
            previous[s.rank], current[s.rank] = current[s.rank], new
    exchange()
    field = np.empty(problem.nx + 2)
    for s, u in zip(slabs, current):
        field[s.start + 1 : s.start + s.n + 1] = u[1:-1]
    field[0], field[-1] = current[0][0], current[-1][-1]
    return field


@pytest.mark.parametrize("scheme", ["seed", "periodic"])
@pytest.mark.parametrize("nx, size", [(41, 1), (41, 2), (41, 3), (40, 5), (6, 6)])
def test_exchange_plan_reproduces_the_single_process_run(scheme: str, nx: int, size: int) -> None:
    problem = burger.Problem(nx=nx, scheme=scheme)
    expected = single_process(problem, 40)
    assert np.array_equal(simulated_ranks(problem, size, 40), expected)


def test_the_two_schemes_give_different_fields() -> None:
    # So that the test above tells the lag apart: the schemes do not give the same field.
    seed, periodic = (single_process(burger.Problem(nx=41, scheme=s), 40) for s in ("seed", "periodic"))
    assert not np.array_equal(seed, periodic)


def test_halo_messages_refuse_an_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="unknown scheme 'x'"):
        domain.halo_messages(domain.partition(4, 2)[0], "x")


# --- TSQR and the streaming SVD, the ranks as threads -----------------------------------------


class ThreadTeam:
    """tsqr.Team for `size` threads of this process: all_gather through shared slots."""

    def __init__(self, rank: int, slots: list[Any], barrier: threading.Barrier):
        self.rank, self.size, self.slots, self.barrier = rank, len(slots), slots, barrier

    def all_gather(self, block: np.ndarray) -> np.ndarray:
        self.slots[self.rank] = block
        self.barrier.wait()
        stacked = np.concatenate(self.slots)
        self.barrier.wait()  # no rank overwrites its slot before every rank has read it
        return stacked


def on_threads(size: int, work: Callable[[ThreadTeam], Any]) -> list[Any]:
    """work(team) on `size` threads, one per rank; their results in rank order."""
    slots: list[Any] = [None] * size
    barrier = threading.Barrier(size, timeout=60)
    results: list[Any] = [None] * size
    errors: list[BaseException] = []

    def one(rank: int) -> None:
        try:
            results[rank] = work(ThreadTeam(rank, slots, barrier))
        except BaseException as e:  # the test thread re-raises it
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=one, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def row_blocks(x: np.ndarray, size: int) -> list[np.ndarray]:
    return [x[s.start : s.start + s.n] for s in domain.partition(x.shape[0], size)]


def assert_same_svd(u: np.ndarray, s: np.ndarray, vt: np.ndarray | None, x: np.ndarray) -> None:
    """(u, s, vt) is a thin SVD of x: s as numpy's to 1e-10 relative where s is above rounding,
    orthonormal columns, the columns of u and rows of vt numpy's up to sign."""
    u_ref, s_ref, vt_ref = np.linalg.svd(x, full_matrices=False)
    assert s.shape == s_ref.shape
    assert np.all(np.abs(s - s_ref) <= 1e-10 * s_ref + 1e-13 * s_ref[0])
    assert np.allclose(u.T @ u, np.eye(s.size), atol=1e-10)
    distinct = np.flatnonzero(s_ref > 1e-6 * s_ref[0])[:5]  # well-separated, well-defined vectors
    assert np.allclose(np.abs(np.sum(u[:, distinct] * u_ref[:, distinct], axis=0)), 1.0, atol=1e-8)
    if vt is not None:
        assert np.allclose((u * s) @ vt, x, atol=1e-12 * s_ref[0])
        assert np.allclose(np.abs(np.sum(vt[distinct] * vt_ref[distinct], axis=1)), 1.0, atol=1e-8)


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("rows, cols", [(203, 12), (30, 50), (41, 41)])
def test_tsqr_svd_matches_numpy(size: int, rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows * cols + size)
    x = rng.standard_normal((rows, cols)) * np.logspace(0, -8, cols)  # a decaying spectrum
    blocks = row_blocks(x, size)
    counts = [b.shape[0] for b in blocks]
    results = on_threads(size, lambda team: tsqr.tsqr_svd(blocks[team.rank], team, counts, np))
    u = np.concatenate([r[0] for r in results])
    for _, s, vt in results[1:]:  # s and vt are the same on every rank
        assert np.array_equal(s, results[0][1]) and np.array_equal(vt, results[0][2])
    assert_same_svd(u, results[0][1], results[0][2], x)


def test_tsqr_refuses_row_counts_that_are_not_the_blocks() -> None:
    with pytest.raises(ValueError, match=r"rank 0 holds 5 rows, but row_counts says \[4\]"):
        on_threads(1, lambda team: tsqr.tsqr_svd(np.ones((5, 2)), team, [4], np))


def stream(x: np.ndarray, size: int, modes: int, every: int) -> tuple[np.ndarray, np.ndarray, int]:
    """StreamingSVD over the columns of x, `every` at a time; (u, s, columns seen)."""
    blocks = row_blocks(x, size)
    counts = [b.shape[0] for b in blocks]

    def work(team: ThreadTeam) -> tuple[np.ndarray, np.ndarray, int]:
        svd = tsqr.StreamingSVD(modes, team, counts, np)
        mine = blocks[team.rank]
        for first in range(0, mine.shape[1], every):
            svd.update(mine[:, first : first + every])
        return svd.u, svd.s, svd.columns

    results = on_threads(size, work)
    return np.concatenate([r[0] for r in results]), results[0][1], results[0][2]


@pytest.mark.parametrize("size", [1, 3])
def test_streaming_svd_at_full_rank_is_the_batch_svd(size: int) -> None:
    x = single_snapshots(burger.Problem(nx=41, t_final=0.06)).T  # grid x snapshots, as burger_mpi's
    u, s, columns = stream(x, size, modes=min(x.shape), every=7)  # 60 columns: 9 blocks, the last short
    assert columns == x.shape[1]
    assert_same_svd(u, s, None, x)


def test_streaming_svd_keeps_a_low_rank_matrix_exactly() -> None:
    # Truncating to R modes drops nothing when the matrix has rank R.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((60, 4)) @ np.diag([10.0, 5.0, 2.0, 1.0]) @ rng.standard_normal((4, 45))
    u, s, _ = stream(x, 2, modes=4, every=6)
    s_ref = np.linalg.svd(x, compute_uv=False)
    assert np.allclose(s, s_ref[:4], rtol=1e-10)
    assert np.allclose(u @ (u.T @ x), x, atol=1e-10 * s_ref[0])  # u spans x's columns


def test_streaming_svd_needs_a_mode() -> None:
    with pytest.raises(ValueError, match="at least one mode"):
        tsqr.StreamingSVD(0, ThreadTeam(0, [None], threading.Barrier(1)), [4], np)


# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--graph"], "--graph: burger_mpi.py takes one launch per step"),
        (["--stream-modes", "4"], "--stream-modes R and --stream-every K go together"),
        (["--stream-modes", "4", "--stream-every", "10", "--snapshot-every", "0"], "needs snapshots"),
        (["--stream-modes", "4", "--stream-every", "10", "--snapshot-every", "3"], "multiple of --snapshot-every"),
        (["--nx", "1"], "--nx"),
    ],
)
def test_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        burger_mpi.parse_args(args)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        burger_mpi.parse_args(args, quiet=True)  # the other ranks: the same refusal, silently
    assert capsys.readouterr() == ("", "")


# --- over MPI ---------------------------------------------------------------------------------


def run_demo(n: int, out: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_mpi(n, DEMO / "burger_mpi.py", "--no-progress", "--out", str(out), *args, timeout=timeout)


def single_snapshots(problem: burger.Problem) -> np.ndarray:
    """The interior snapshots (every step) of the single-process run on this backend."""
    solver = burger.Solver(problem, snapshot_every=1)
    solver.run()
    return np.array(burger.analysis.to_numpy(solver.snapshot_view()))[:, 1:-1]


def single_final(problem: burger.Problem) -> np.ndarray:
    solver = burger.Solver(problem, snapshot_every=0)
    solver.run()
    return solver.final()


def assert_singular_values(s: np.ndarray, snapshots: np.ndarray) -> None:
    """The leading singular values (above 1e-6 of the first: those that rounding leaves to more
    than ten digits) to 1e-10 relative, and the rest within rounding of the largest."""
    s_ref = np.linalg.svd(snapshots, compute_uv=False)
    assert s.shape == s_ref.shape
    leading = s_ref > 1e-6 * s_ref[0]
    assert np.all(np.abs(s - s_ref)[leading] <= 1e-10 * s_ref[leading])
    assert np.all(np.abs(s - s_ref) <= 1e-12 * s_ref[0])


@needs_mpi
@pytest.mark.parametrize("scheme", ["seed", "periodic"])
@pytest.mark.parametrize("n", [2, 3])
def test_distributed_run_is_the_single_process_run(n: int, scheme: str, backend: str, tmp_path: Path) -> None:
    need_ranks(n, backend)
    problem = burger.Problem(nx=41, t_final=0.03, scheme=scheme)  # 30 steps; 41 points: uneven slabs
    h5 = tmp_path / "run.h5"
    done = run_demo(n, tmp_path, "--nx", "41", "--t-final", "0.03", "--scheme", scheme, "--hdf5", str(h5))
    assert done.returncode == 0, done.stdout + done.stderr
    final = np.load(tmp_path / "final.npy")
    assert np.array_equal(final, single_final(problem))  # bitwise, ghosts included
    assert f"u[10] = {final[10]:.6g}" in done.stdout
    snapshots = single_snapshots(problem)

    import h5py

    assert sorted(p.name for p in tmp_path.glob("run*.h5")) == ["run.h5"] + [f"run.rank{r}.h5" for r in range(n)]
    with h5py.File(h5, "r") as f:  # the virtual datasets join the ranks' files
        assert f.attrs["ranks"] == n and f.attrs["scheme"] == scheme
        assert np.array_equal(f["snapshots"][()], snapshots)
        assert np.array_equal(f["final"][()], final[1:-1])
        assert np.array_equal(f["x"][()], problem.x)
        assert_singular_values(f["singular_values"][()], snapshots)
        _, _, vt = np.linalg.svd(snapshots, full_matrices=False)
        modes, temporal = f["modes"][()], f["temporal_modes"][()]
        assert modes.shape == (3, 41) and temporal.shape == (snapshots.shape[0], 3)
        assert np.allclose(np.abs(np.sum(modes * vt[:3], axis=1)), 1.0, atol=1e-8)  # numpy's, up to sign
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["ranks"] == n and summary["rows"] == 30 and summary["driver"] == "python-mpi"


def assert_seeds_run(done: subprocess.CompletedProcess[str], out: Path) -> tuple[burger.Problem, dict[str, Any]]:
    """The seeds' run with --check: its u[10], its own bitwise verdict and its final field equal
    to the single-process run's; returns the problem and the summary."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert SEED_U10 in done.stdout.splitlines()
    assert "Bitwise identical to the single-process run: yes" in done.stdout
    problem = burger.Problem()
    assert np.array_equal(np.load(out / "final.npy"), single_final(problem))
    return problem, json.loads((out / "summary.json").read_text())


@needs_mpi
def test_seeds_case(backend: str, tmp_path: Path) -> None:
    need_ranks(2, backend)
    problem, summary = assert_seeds_run(run_demo(2, tmp_path, "--check"), tmp_path)
    s_ref = np.linalg.svd(single_snapshots(problem), compute_uv=False)
    assert np.allclose(summary["singular_values"], s_ref[:5], rtol=1e-10, atol=0)
    assert summary["rows"] == 2001 and summary["steps"] == 2001


@needs_mpi
def test_streaming_run_at_full_rank_matches_the_batch_svd(backend: str, tmp_path: Path) -> None:
    n = 3 if backend == "host" else min(3, N_DEVICES)  # on cuda: CuPy's streaming SVD on every GPU
    need_ranks(n, backend)
    h5 = tmp_path / "run.h5"
    # 30 snapshots of 41 points: rank 30 <= 41 modes; blocks of 7 steps, the last one short.
    args = ("--nx", "41", "--t-final", "0.03", "--stream-modes", "41", "--stream-every", "7", "--hdf5", str(h5))
    done = run_demo(n, tmp_path, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Streaming SVD: 41 modes, updated every 7 steps" in done.stdout

    import h5py

    snapshots = single_snapshots(burger.Problem(nx=41, t_final=0.03))
    with h5py.File(h5, "r") as f:
        assert "snapshots" not in f and "temporal_modes" not in f  # nothing kept but the modes
        assert_singular_values(f["singular_values"][()], snapshots)
        _, _, vt = np.linalg.svd(snapshots, full_matrices=False)
        assert np.allclose(np.abs(np.sum(f["modes"][()] * vt[:3], axis=1)), 1.0, atol=1e-8)


@needs_mpi
def test_more_ranks_than_points_is_refused(backend: str, tmp_path: Path) -> None:
    need_ranks(1, backend)  # refused before any device is taken: 3 ranks on any machine
    done = run_demo(3, tmp_path, "--nx", "2", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    message = "burger_mpi.py: 3 ranks for NX = 2 interior points: every rank needs at least one point"
    assert done.stderr.count(message) == 1  # said once, by rank 0
    assert not (tmp_path / "summary.json").exists()


@needs_mpi
@pytest.mark.gpu
def test_seeds_case_on_the_gpus(backend: str, tmp_path: Path) -> None:
    """As many NCCL ranks as GPUs (NCCL refuses two ranks on one GPU): the seeds' run bitwise
    equal to the single-GPU run, the singular values to 1e-10, CuPy's TSQR on the devices."""
    pytest.importorskip("cupy")
    from pygpu import nccl

    try:
        nccl.get_version()
    except nccl.NcclUnavailableError as e:
        pytest.skip(str(e))
    h5 = tmp_path / "run.h5"
    done = run_demo(N_DEVICES, tmp_path, "--check", "--hdf5", str(h5), timeout=300)
    problem, summary = assert_seeds_run(done, tmp_path)
    assert summary["svd_library"] == "cupy" and summary["ranks"] == N_DEVICES

    import h5py

    with h5py.File(h5, "r") as f:
        assert_singular_values(f["singular_values"][()], single_snapshots(problem))
