#!/usr/bin/env python3
"""The Burgers demo over several processes: the domain split over MPI ranks, ghost cells exchanged
with pygpu.nccl every step, and the SVD of the distributed snapshot matrix by TSQR.

    mpiexec -n 2 python demos/burger/burger_mpi.py                 # the seeds' run, u[10] = 0.0733873
    mpiexec -n 2 python demos/burger/burger_mpi.py --check         # ... and compare with one process
    mpiexec -n 4 python demos/burger/burger_mpi.py --nx 1048576 --dt 6e-11 --t-final 6e-8 \\
        --snapshot-every 10 --stream-modes 8 --stream-every 100 --hdf5 run.h5

Each rank owns a slab of the NX interior points (domain.py) on GPU `local rank % GPUs` (cuda,
NCCL: one GPU per rank) or on the host backend (pygpu.nccl over MPI). A step is a ghost exchange
with the two neighbours of the periodic ring (send/recv in one nccl.group()) and one launch of
kernels/burgers.cu's burgers_step, which updates the interior only; the exchange makes the result
bitwise that of the single-process kernels for both schemes (see domain.py). The snapshots stay on
each rank's device; the SVD (tsqr.py) moves only small R factors between the ranks: CuPy on the
device memory on cuda, numpy on the host backend. The options are burger.py's (less --graph),
plus --stream-modes/--stream-every (incremental SVD, no snapshot matrix kept) and --check.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import analysis  # noqa: E402
import burger  # noqa: E402
import domain  # noqa: E402
import distributed_hdf5  # noqa: E402
import mpi_ranks  # noqa: E402
import tsqr  # noqa: E402

#: The interior-only step; the ghost exchange supplies each scheme's neighbours.
KERNEL = "burgers_step"


# -- options ---------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None, quiet: bool = False) -> argparse.Namespace:
    """burger.py's options and this driver's. `quiet` (ranks other than 0): errors and --help
    print nothing, so that an MPI job shows them once."""
    p = burger.build_parser(
        prog="burger_mpi.py",
        description="The Burgers demo over MPI ranks: ghost cells by pygpu.nccl, the SVD by TSQR.",
    )
    p.add_argument(
        "--stream-modes",
        type=int,
        default=0,
        metavar="R",
        help="keep only the leading R modes, updated every --stream-every steps (incremental SVD); "
        "0: keep every snapshot and take their SVD at the end (default)",
    )
    p.add_argument("--stream-every", type=int, default=0, metavar="K", help="steps between streaming updates")
    p.add_argument("--check", action="store_true", help="rank 0 also runs one process and compares the fields bitwise")
    with contextlib.ExitStack() as muted:
        if quiet:
            muted.enter_context(contextlib.redirect_stdout(io.StringIO()))
            muted.enter_context(contextlib.redirect_stderr(io.StringIO()))
        args = burger.check_args(p, p.parse_args(argv))
        if args.graph:
            p.error("--graph: burger_mpi.py takes one launch per step (the exchange is between launches)")
        if (args.stream_modes > 0) != (args.stream_every > 0):
            p.error("--stream-modes R and --stream-every K go together (both at least 1)")
        if args.stream_modes < 0 or args.stream_every < 0:
            p.error("--stream-modes and --stream-every must be 0 or more")
        if args.stream_every and args.snapshot_every == 0:
            p.error("--stream-every needs snapshots: --snapshot-every 1 or more")
        if args.stream_every % max(1, args.snapshot_every):
            p.error(f"--stream-every must be a multiple of --snapshot-every ({args.snapshot_every})")
    return args


# -- the solver ------------------------------------------------------------------------------------


class DistributedSolver:
    """One rank's slab: two ping-pong GPUArrays of n + 2 values, each step an exchange of ghost
    cells (domain.halo_messages) and a launch of burgers_step on one stream; the snapshots (the
    interior only) go into a device matrix, all of them, or in streaming mode blocks of
    `stream_every` steps that update a StreamingSVD."""

    def __init__(self, problem: burger.Problem, slab: domain.Slab, comm: Any, args: argparse.Namespace, xp: Any):
        import pygpu
        from pygpu import gpuarray, nccl

        self.pygpu, self.nccl = pygpu, nccl
        self.problem, self.slab, self.comm = problem, slab, comm
        self.every = args.snapshot_every
        self.steps, self.t_end = problem.steps()
        self.kernel = pygpu.load_kernels("burgers").get_function(KERNEL).prepare("PPidd")
        self.grid, self.block = burger.launch_shape(slab.n, burger.resident_blocks(self.kernel))
        self.stream = pygpu.driver.Stream(1)  # non-blocking; pygpu.nccl synchronizes it on the host backend
        self.buffers = (gpuarray.empty(slab.n_total, np.float64), gpuarray.empty(slab.n_total, np.float64))
        sends, receives = domain.halo_messages(slab, problem.scheme)
        # The exchange's one-value views, for the state in buffers[p] (the previous one is the other).
        self.halo = [
            (
                [(m.peer, self._view(p if m.source == "current" else 1 - p, m.index)) for m in sends],
                [(m.peer, self._view(p, m.index)) for m in receives],
            )
            for p in (0, 1)
        ]
        self.row_bytes = slab.n * 8
        total_rows = burger.snapshot_rows(self.steps, self.every)
        self.rows = min(total_rows, args.stream_every // self.every) if args.stream_every else total_rows
        self.snapshots = pygpu.mem_alloc(self.rows * self.row_bytes) if self.rows else None
        self.xp = xp
        self.streaming: tsqr.StreamingSVD | None = None
        if args.stream_modes:
            self.streaming = tsqr.StreamingSVD(
                args.stream_modes, mpi_ranks.NcclTeam(comm, xp), mpi_ranks.row_counts(slab), xp
            )
        self.parity = 0
        self.rows_done = 0
        self.loop_seconds = 0.0
        self.svd_seconds = 0.0  # the streaming updates' share of loop_seconds

    def _view(self, p: int, index: int) -> Any:
        return self.buffers[p][index : index + 1]

    @property
    def state(self) -> Any:
        return self.buffers[self.parity]

    def exchange(self) -> None:
        """Fills the current state's ghosts from the neighbours (NCCL send/recv, one group)."""
        sends, receives = self.halo[self.parity]
        with self.nccl.group():
            # Each send beside its receive: with one rank, NCCL pairs them as self send/recv.
            for (to, sent), (source, received) in zip(sends, receives):
                self.comm.send(sent, to, self.stream)
                self.comm.recv(received, source, self.stream)

    def wait(self) -> None:
        """Waits for the solver's stream. NCCL's wait has a deadline (a rank that died makes it
        raise, not hang); the stream's own covers the host backend, where MPI waited already."""
        self.comm.synchronize(self.stream)
        self.stream.synchronize()

    def snapshot_matrix(self, rows: int) -> Any:
        """The first `rows` snapshot rows (rows x n, interior points) where they are: a zero-copy
        CuPy or numpy array."""
        assert self.snapshots is not None
        backend = self.pygpu.backend()
        return analysis.device_matrix(int(self.snapshots), rows, self.slab.n, backend, owner=self.snapshots)

    def _fold_block(self) -> None:
        """Streaming: the SVD takes the block of snapshots, whose rows are then free again."""
        assert self.streaming is not None
        if self.rows_done:
            start = time.perf_counter()
            self.wait()
            self.streaming.update(self.snapshot_matrix(self.rows_done).T)
            synchronize(self.xp)
            self.svd_seconds += time.perf_counter() - start
        self.rows_done = 0

    def run(self, progress: burger.Progress | None = None, start_together: Any = None) -> float:
        """Every step from u0; returns the mean wall time per step (seconds) of this rank. With
        ``start_together`` (an MPI communicator), the ranks start their clocks after its barrier,
        u0 in place on every device, so that the slowest rank's time is the loop's own (how HPC
        codes report a distributed loop)."""
        pygpu, slab = self.pygpu, self.slab
        u0 = domain.local_u0(self.problem.nx, slab)
        for buffer in self.buffers:  # the "previous" state of step 1 is u0 too (its lagged ghosts)
            buffer.set(u0)
        c1, c2 = self.problem.coefficients()
        call, copy = self.kernel.prepared_async_call, pygpu.memcpy_dtod
        grid, block, stream, n_total = self.grid, self.block, self.stream, slab.n_total
        base = int(self.snapshots) if self.snapshots is not None else 0
        self.parity, self.rows_done, self.svd_seconds = 0, 0, 0.0
        if start_together is not None:
            pygpu.cudaDeviceSynchronize()
            start_together.Barrier()
        t0 = time.perf_counter()
        for step in range(1, self.steps + 1):
            self.exchange()
            src, dst = self.buffers[self.parity], self.buffers[1 - self.parity]
            call(grid, block, stream, src.ptr, dst.ptr, n_total, c1, c2)
            self.parity ^= 1
            if self.every and step % self.every == 0:
                if self.rows_done == self.rows:
                    self._fold_block()
                copy(base + self.rows_done * self.row_bytes, dst.ptr + 8, self.row_bytes, stream)
                self.rows_done += 1
            if progress is not None and step % 256 == 0:
                progress.update(step)
        if self.streaming is not None:
            self._fold_block()
        self.exchange()  # the final state's ghosts, as the single-process run leaves them
        self.wait()
        self.loop_seconds = time.perf_counter() - t0
        if progress is not None:
            progress.update(self.steps)
            progress.close()
        return self.loop_seconds / max(1, self.steps)


def synchronize(xp: Any) -> None:
    """Waits for the array module's queued work (CuPy's stream; numpy is synchronous)."""
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


def distributed_svd(solver: DistributedSolver) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:
    """(singular values, this rank's spatial modes (modes x n), the temporal modes (rows x
    modes; None when streaming), seconds) of the snapshot matrix: by TSQR of its transpose, whose
    rows (the grid points) are split over the ranks as the field is; or the streaming SVD's."""
    start = time.perf_counter()
    xp = solver.xp
    if solver.streaming is not None:
        s, u, vt = solver.streaming.s, solver.streaming.u, None
    else:
        solver.wait()
        local = solver.snapshot_matrix(solver.rows).T
        u, s, vt = tsqr.tsqr_svd(local, mpi_ranks.NcclTeam(solver.comm, xp), mpi_ranks.row_counts(solver.slab), xp)
    synchronize(xp)
    seconds = solver.svd_seconds + time.perf_counter() - start
    k = analysis.N_MODES
    temporal = analysis.to_numpy(vt[:k].T) if vt is not None else None
    return analysis.to_numpy(s), analysis.to_numpy(u[:, :k].T), temporal, seconds


# -- the run ---------------------------------------------------------------------------------------


def prepare(args: argparse.Namespace, world: Any) -> tuple[burger.Problem, domain.Slab, str, int, Any]:
    """The checks before anything is allocated, made by every rank together (a refusal is every
    rank's): (problem, this rank's slab, backend, device, the SVD's array module)."""
    import pygpu

    rank, size = world.Get_rank(), world.Get_size()
    problem = burger.Problem(nx=args.nx, nu=args.nu, dt=args.dt, t_final=args.t_final, scheme=args.scheme)
    try:
        slab = domain.partition(problem.nx, size)[rank]
    except ValueError as e:
        raise mpi_ranks.Refused(str(e)) from None
    warning = problem.stability_warning()
    if warning and rank == 0:
        print(warning, file=sys.stderr)
    backend, device = mpi_ranks.start_device(world, args.backend)
    if not args.stream_every:
        free, total = pygpu.mem_get_info()
        # The snapshots of this rank's slab: burger.py's check, at NX = the slab's points.
        local = burger.Problem(nx=slab.n, nu=args.nu, dt=args.dt, t_final=args.t_final, scheme=args.scheme)
        try:
            burger.check_memory(local, args.snapshot_every, False, 1, free, total)
            error = None
        except burger.SnapshotsDoNotFit as e:
            error = f"rank {rank}: {e}"
        mpi_ranks.agree(world, error)
    xp = mpi_ranks.analysis_module(world, backend, device) if args.snapshot_every else np
    return problem, slab, backend, device, xp


def same_as_single_process(problem: burger.Problem, field: np.ndarray) -> bool:
    """--check: runs the single-process solver (burger.py's) here and compares bitwise."""
    single = burger.Solver(problem, snapshot_every=0)
    single.run()
    expected = single.final()
    same = np.array_equal(expected, field)
    verdict = "yes" if same else f"NO (max |diff| = {float(np.max(np.abs(expected - field))):.3g})"
    print(f"Bitwise identical to the single-process run: {verdict}")
    return same


def run(args: argparse.Namespace, world: Any) -> int:
    from mpi4py import MPI

    rank, size = world.Get_rank(), world.Get_size()
    problem, slab, backend, device, xp = prepare(args, world)
    steps, t_end = problem.steps()
    say = print if rank == 0 else (lambda *a, **k: None)
    out = Path(args.out)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)

    setup = time.perf_counter()
    comm = mpi_ranks.communicator(world)
    solver = DistributedSolver(problem, slab, comm, args, xp)
    setup_seconds = time.perf_counter() - setup
    name = burger.device_description(backend)
    sizes = sorted({s.n for s in domain.partition(problem.nx, size)})
    say(
        f"Burgers: NX = {problem.nx} ({problem.n_total} values), nu = {problem.nu:g}, dt = {problem.dt:g}, "
        f"t < {problem.t_final:g}: {steps} steps, kernel {KERNEL} + ghost exchange ({problem.scheme} scheme)"
    )
    say(
        f"Ranks: {size}, slabs of {'-'.join(map(str, sizes))} points, ghost cells by pygpu.nccl send/recv "
        f"({'MPI' if backend == 'host' else 'NCCL'})"
    )
    say(f"Backend: {backend} ({name}; rank 0 on device {device}), {solver.grid} x {solver.block} threads per rank")
    if solver.streaming is not None:
        say(
            f"Streaming SVD: {args.stream_modes} modes, updated every {args.stream_every} steps "
            f"({solver.rows} snapshots of {slab.n} doubles per rank on the device)"
        )
    elif solver.rows:
        say(f"Snapshots: {solver.rows} x {slab.n} doubles per rank on the device, every {args.snapshot_every} step(s)")
    say(f"time = {problem.dt:g}", flush=True)
    solver.run(burger.Progress(steps, enabled=rank == 0 and not args.no_progress))
    loop_seconds = world.allreduce(solver.loop_seconds, op=MPI.MAX)  # the slowest rank's
    say(f"time = {t_end:g}")
    say(f"Mean Wall-Time: {loop_seconds / steps * 1e3:.6g} ms per step ({loop_seconds:.4g} s for {steps} steps)")
    field = mpi_ranks.gather_field(world, slab, solver.state.get())
    if field is not None:
        print(f"u[10] = {field[10]:.6g}", flush=True)

    meta: dict[str, Any] = {
        "driver": "python-mpi",
        "backend": backend,
        "device": name,
        "nx": problem.nx,
        "nu": problem.nu,
        "dt": problem.dt,
        "t_final": problem.t_final,
        "t_end": t_end,
        "steps": steps,
        "scheme": problem.scheme,
        "kernel": KERNEL,
        "snapshot_every": args.snapshot_every,
        "graph": False,
        "grid": solver.grid,
        "block": solver.block,
        "ranks": size,
        "stream_modes": args.stream_modes,
        "stream_every": args.stream_every,
    }
    summary: dict[str, Any] = {
        **meta,
        "mean_step_seconds": loop_seconds / steps,
        "loop_seconds": loop_seconds,
        "setup_seconds": setup_seconds,
        "rows": burger.snapshot_rows(steps, args.snapshot_every),
        "collections": 1 if solver.rows else 0,
    }
    svd = None
    if solver.rows:
        how = f"streaming, {args.stream_modes} modes" if solver.streaming is not None else f"TSQR over {size} ranks"
        say(f"Performing SVD ({how}, {xp.__name__})", flush=True)
        svd = distributed_svd(solver)
        result = analysis.svd_summary(svd[0], svd[3], xp.__name__)
        summary.update(result)
        say(analysis.svd_report(result))
    if args.hdf5:
        local = solver.snapshot_matrix(solver.rows) if solver.rows and solver.streaming is None else None
        paths = distributed_hdf5.write(args.hdf5, world, slab, solver.state.get(), local, svd, meta)
        summary["hdf5"] = paths[0]
        say(f"Wrote {paths[0]} (virtual datasets over {', '.join(Path(p).name for p in paths[1:])})")
    comm.close()
    status = 0
    if field is not None:
        analysis.write_summary(field, out, summary)
        say(f"Wrote summary.json and final.npy in {out}")
        if args.check and not same_as_single_process(problem, field):
            status = 1
    return int(world.bcast(status, root=0))


def main(argv: Sequence[str] | None = None) -> int:
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    try:
        args = parse_args(argv, quiet=rank != 0)
    except SystemExit as e:  # --help, or an option refused (the same on every rank)
        return int(e.code or 0)
    return mpi_ranks.run_or_abort("burger_mpi.py", world, lambda: run(args, world))


if __name__ == "__main__":
    sys.exit(main())
