#!/usr/bin/env python3
"""The Burgers in-situ demo, Python driver: a GPU solver with zero-copy analysis.

1-D viscous Burgers u_t + u u_x = nu u_xx, periodic on [0, 2 pi), forward Euler with central
differences, NX interior points plus two ghosts (the seeds' burgerPy / ALCF OCCA demos). The
update kernel is pygpu's bundled kernels/burgers.cu, launched through pygpu; after every step the
solution is copied device-to-device into a snapshot matrix that stays on the device; at the end
analysis.py looks at that matrix in place (CuPy on CUDA, numpy on the host backend).

    python demos/burger/burger.py                       # the seeds' run: NX = 256, t < 2.0
    python demos/burger/burger.py --graph               # replay batches of steps as CUDA graphs
    python demos/burger/burger.py --device-loop         # the whole time loop, one graph launch
    python demos/burger/burger.py --nx 1048576 --dt 6e-11 --t-final 6e-8 --snapshot-every 10 --hdf5 run.h5

The scheme is explicit: it needs nu dt / h^2 <= 1/2 (h = 2 pi / NX), so dt shrinks with NX^2 (the
seeds' run has 0.0166); the drivers warn when a run would blow up.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import analysis  # noqa: E402

# --scheme: which kernel of kernels/burgers.cu takes a step.
KERNELS = {
    # The seeds' update: u_new's ghosts come from u's interior, so the boundary lags one step.
    # It reproduces the seeds' u[10] = 0.0733873.
    "seed": "burgers_step_lagged",
    # Exact periodic neighbours (u[10] = 0.0733934 for the seeds' run).
    "periodic": "burgers_step_periodic",
}
BLOCK = 256
DEFAULT_GRAPH_BATCH = 200
# Steps per turn of --device-loop's device-side loop, laid out as a graph batch (graph_layout).
DEVICE_LOOP_TURN = 200
# Device memory left over for the analysis (CuPy's SVD workspace) when checking that snapshots fit.
ANALYSIS_HEADROOM = 0.10


@dataclass(frozen=True)
class Problem:
    nx: int = 256
    nu: float = 0.01
    dt: float = 0.001
    t_final: float = 2.0
    scheme: str = "seed"

    @property
    def n_total(self) -> int:
        return self.nx + 2

    @property
    def h(self) -> float:
        return 2.0 * math.pi / self.nx

    @property
    def x(self) -> np.ndarray:
        """Interior coordinates x_i = 2 pi (i - 1) / NX, i = 1..NX."""
        return 2.0 * math.pi * np.arange(self.nx) / self.nx

    def u0(self) -> np.ndarray:
        """sin(x) with periodic ghosts: u[0] = u[NX], u[NX + 1] = u[1]."""
        u = np.empty(self.n_total)
        u[1:-1] = np.sin(self.x)
        u[0], u[-1] = u[-2], u[1]
        return u

    def stability_warning(self) -> str | None:
        """A warning when forward Euler's diffusion limit nu dt / h^2 <= 1/2 is broken."""
        number = self.nu * self.dt / self.h**2
        if number <= 0.5:
            return None
        return (
            f"warning: nu dt / h^2 = {number:.3g} > 1/2: this explicit scheme will blow up; "
            f"use --dt {0.5 * self.h**2 / self.nu:.3g} or less at NX = {self.nx}"
        )

    def coefficients(self) -> tuple[float, float]:
        """(nu dt / h^2, dt / (2 h)), the kernel's last two arguments."""
        return self.nu * self.dt / self.h**2, self.dt / (2.0 * self.h)

    def steps(self) -> tuple[int, float]:
        """The seeds' loop count: while t < t_final, t += dt, t accumulated in floating point
        (2001 steps, t = 2.001 for dt = 0.001 and t_final = 2.0). Returns (steps, final t).
        Beyond 10^7 steps the count is t_final / dt rounded up, without the accumulation."""
        if self.t_final / self.dt > 1e7:
            n = math.ceil(self.t_final / self.dt)
            return n, n * self.dt
        t, n = 0.0, 0
        while t < self.t_final:
            t += self.dt
            n += 1
        return n, t


def snapshot_rows(steps: int, every: int) -> int:
    """Snapshots are taken after steps every, 2 every, ...; none when every is 0."""
    return steps // every if every > 0 else 0


def launch_shape(nx: int, max_blocks: int | None = None) -> tuple[int, int]:
    """(grid, block), 1-D: one thread per interior point, but no more blocks than `max_blocks` (the
    device's one full wave): beyond that the kernel's grid-stride loop gives each thread several
    points instead of launching blocks that wait for a free multiprocessor. Every interior point
    is updated either way; the ghosts are written by the threads of points 1 and NX."""
    blocks = max(1, -(-nx // BLOCK))
    if max_blocks:
        blocks = min(blocks, max(1, max_blocks))
    return blocks, BLOCK


def resident_blocks(kernel: Any) -> int | None:
    """Blocks of BLOCK threads of `kernel` that the device runs at once (occupancy API), or None."""
    try:
        min_grid, block = kernel.max_potential_block_size(0, BLOCK)
    except Exception:  # a backend without occupancy queries: no cap
        return None
    return max(1, int(min_grid) * int(block) // BLOCK)


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


class SnapshotsDoNotFit(Exception):
    """Raised before anything is allocated, with a message saying what would fit."""


def graph_layout(steps: int, every: int, batch: int) -> tuple[int, int]:
    """(snapshot rows per graph batch, steps per batch) for --graph. Each batch replays `per_batch`
    steps; the snapshot steps write straight into a staging block of `rows` rows, which one copy
    then moves into the snapshot matrix. At least 2 rows, so no step works in place."""
    if every <= 0:
        per_batch = max(2, batch + (batch & 1))  # even: the ping-pong ends where it started
        return 0, per_batch
    rows = max(2, batch // every)
    return rows, rows * every


def memory_plan(problem: Problem, every: int, graph: bool, batch: int) -> dict[str, int]:
    steps, _ = problem.steps()
    row_bytes = problem.n_total * 8
    rows = snapshot_rows(steps, every)
    stage_rows = graph_layout(steps, every, batch)[0] if graph else 0
    return {
        "steps": steps,
        "row_bytes": row_bytes,
        "rows": rows,
        "snapshot_bytes": rows * row_bytes,
        "solver_bytes": (2 + stage_rows) * row_bytes,
    }


def check_memory(problem: Problem, every: int, graph: bool, batch: int, free: int, total: int) -> None:
    """Refuses, before the run, snapshots that would not fit in device memory."""
    plan = memory_plan(problem, every, graph, batch)
    budget = free - int(ANALYSIS_HEADROOM * total) - plan["solver_bytes"]
    if plan["snapshot_bytes"] <= budget:
        return
    rows_that_fit = max(0, budget // plan["row_bytes"])
    hint = (
        f"--snapshot-every {math.ceil(plan['steps'] / rows_that_fit)} or more would fit"
        if rows_that_fit > 0
        else "not even one snapshot fits: use a smaller --nx"
    )
    raise SnapshotsDoNotFit(
        f"the snapshots do not fit in device memory: {plan['rows']} snapshots x {problem.n_total} values "
        f"x 8 bytes = {format_bytes(plan['snapshot_bytes'])}, plus {format_bytes(plan['solver_bytes'])} for the "
        f"solver, but the device has {format_bytes(free)} free of {format_bytes(total)} (keeping "
        f"{ANALYSIS_HEADROOM:.0%} for the analysis). Take fewer snapshots ({hint}), or use a smaller --nx or "
        f"--t-final. Nothing was allocated."
    )


class Progress:
    """A plain-text progress bar on stderr, shown once a run has taken longer than `after` seconds."""

    def __init__(self, total: int, enabled: bool = True, after: float = 1.0, width: int = 30):
        self.total, self.enabled, self.after, self.width = total, enabled, after, width
        self.start = time.perf_counter()
        self.shown = False
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        elapsed = now - self.start
        if elapsed < self.after or (now - self.last < (0.2 if self.tty else 5.0) and done < self.total):
            return
        self.last, self.shown = now, True
        fraction = done / max(1, self.total)
        bar = "#" * int(fraction * self.width)
        eta = elapsed / fraction - elapsed if fraction > 0 else 0.0
        line = f"[{bar:<{self.width}}] {fraction:6.1%} step {done}/{self.total}, {elapsed:.1f} s, ETA {eta:.1f} s"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown and self.tty:
            print(file=sys.stderr, flush=True)


class Solver:
    """The solver loop on pygpu: two ping-pong buffers, one kernel launch per step on one stream,
    and a device-to-device copy of each snapshot into the device-resident snapshot matrix."""

    def __init__(
        self,
        problem: Problem,
        snapshot_every: int = 1,
        graph: bool = False,
        graph_batch: int = DEFAULT_GRAPH_BATCH,
        device_loop: bool = False,
    ):
        import pygpu

        if problem.scheme not in KERNELS:
            raise ValueError(f"unknown scheme {problem.scheme!r}: choose one of {', '.join(KERNELS)}")
        self.pygpu = pygpu
        self.problem = problem
        self.every = snapshot_every
        self.graph = graph
        self.graph_batch = graph_batch
        self.device_loop = device_loop
        self.steps, self.t_end = problem.steps()
        self.n_total = problem.n_total
        self.row_bytes = self.n_total * 8
        self.rows = snapshot_rows(self.steps, snapshot_every)
        self.kernel_name = KERNELS[problem.scheme]

        self.module = pygpu.load_kernels("burgers")
        self.kernel = self.module.get_function(self.kernel_name).prepare("PPidd")
        self.grid, self.block = launch_shape(problem.nx, resident_blocks(self.kernel))
        self.stream = pygpu.cudaStream_t(1)  # non-blocking: never waits on the legacy stream
        self.a = pygpu.mem_alloc(self.row_bytes)
        self.b = pygpu.mem_alloc(self.row_bytes)
        self.snapshots = pygpu.mem_alloc(self.rows * self.row_bytes) if self.rows else None
        self.stage: Any = None
        self.state: Any = self.a
        self.rows_done = 0
        self.setup_seconds = 0.0
        self.loop_seconds = 0.0
        self._graph: tuple[Any, Any, int, int] | None = None
        self._device_graph: tuple[Any, Any, int] | None = None

    @property
    def snapshots_ptr(self) -> int:
        return int(self.snapshots) if self.snapshots is not None else 0

    # -- one plain segment -------------------------------------------------------------------------

    def _plain(self, src: Any, first: int, count: int) -> Any:
        """Steps first .. first + count - 1 (numbered from 1) from the buffer `src`, one launch each,
        plus the snapshot copies; returns the buffer that holds the result."""
        if count <= 0:
            return src
        call = self.kernel.prepared_async_call
        copy = self.pygpu.memcpy_dtod
        grid, block, stream = self.grid, self.block, self.stream
        n = self.n_total
        c1, c2 = self.problem.coefficients()
        pair = (self.b, self.a) if src is self.a else (self.a, self.b)
        every, row_bytes = self.every, self.row_bytes
        if every == 0:
            for j in range(count):
                dst = pair[j & 1]
                call(grid, block, stream, src, dst, n, c1, c2)
                src = dst
            return src
        row_ptr = self.snapshots_ptr + self.rows_done * row_bytes
        if every == 1:
            for j in range(count):
                dst = pair[j & 1]
                call(grid, block, stream, src, dst, n, c1, c2)
                copy(row_ptr, dst, row_bytes, stream)
                row_ptr += row_bytes
                src = dst
            self.rows_done += count
            return src
        for j in range(count):
            dst = pair[j & 1]
            call(grid, block, stream, src, dst, n, c1, c2)
            if (first + j) % every == 0:
                copy(row_ptr, dst, row_bytes, stream)
                row_ptr += row_bytes
                self.rows_done += 1
            src = dst
        return src

    # -- graph batches -----------------------------------------------------------------------------

    def _batch(self, stage_rows: int, per_batch: int) -> tuple[Any, list[tuple[Any, Any]]]:
        """The layout of one batch of `per_batch` steps (a --graph batch, a --device-loop turn):
        (start buffer, the steps' (src, dst) buffers). Without staging rows a batch starts from
        buffer a and alternates with b. With them (allocated here) the snapshot steps write
        straight into staging row k, the others alternate between a and b, and a batch starts
        from the last staged row, where the previous batch ended."""
        start: Any = self.a
        stage = 0
        if stage_rows:
            self.stage = self.pygpu.mem_alloc(stage_rows * self.row_bytes)
            stage = int(self.stage)
            start = stage + (stage_rows - 1) * self.row_bytes
        steps = []
        src = start
        for j in range(1, per_batch + 1):
            dst: Any
            if stage_rows and j % self.every == 0:
                dst = stage + (j // self.every - 1) * self.row_bytes
            else:
                dst = self.b if src is self.a else self.a
            steps.append((src, dst))
            src = dst
        return start, steps

    def _capture(self) -> tuple[Any, Any, int, int]:
        """Records one batch of steps into a CUDA graph. Returns (graph exec, start buffer, snapshot
        rows per batch, steps per batch)."""
        stage_rows, per_batch = graph_layout(self.steps, self.every, self.graph_batch)
        c1, c2 = self.problem.coefficients()
        args = (self.grid, self.block, self.stream)
        call = self.kernel.prepared_async_call
        start, steps = self._batch(stage_rows, per_batch)
        self.stream.begin_capture()
        for src, dst in steps:
            call(*args, src, dst, self.n_total, c1, c2)
        graph = self.stream.end_capture()
        return graph.instantiate(), start, stage_rows, per_batch

    # -- the device loop ---------------------------------------------------------------------------

    def _build_device_loop(self) -> tuple[Any, Any, int]:
        """The whole run as one graph: a device-side loop (pygpu.graphs.repeat) of turns of about
        DEVICE_LOOP_TURN steps, then the steps left over. Without snapshots a turn has an even
        number of steps, so each starts from buffer a. With them a turn is laid out as a graph
        batch is (graph_layout): its snapshot steps write straight into the staging rows, which
        the loop copies into row block k of the snapshot matrix after turn k, and the next turn
        starts from the last staged row. Returns (graph exec, the buffer that holds the result,
        the snapshot rows written)."""
        import pygpu.graphs

        pygpu = self.pygpu
        c1, c2 = self.problem.coefficients()
        n = np.int32(self.n_total)
        c1, c2 = np.float64(c1), np.float64(c2)
        shape = {"block": self.block, "grid": self.grid}
        every, row_bytes = self.every, self.row_bytes

        def step(graph: Any, src: Any, dst: Any, after: list[Any]) -> list[Any]:
            return [graph.add_kernel_node(self.kernel, src, dst, n, c1, c2, dependencies=after, **shape)]

        whole = pygpu.Graph()
        after: list[Any] = []
        src: Any = self.a
        stage_rows, per_turn = graph_layout(self.steps, every, DEVICE_LOOP_TURN)
        turns = self.steps // per_turn
        if turns:
            src, turn_steps = self._batch(stage_rows, per_turn)  # each turn starts and ends at src
            body = pygpu.Graph()
            turn_after: list[Any] = []
            for turn_src, turn_dst in turn_steps:
                turn_after = step(body, turn_src, turn_dst, turn_after)
            copies = []
            if stage_rows:
                after = [whole.add_memcpy_node(src, self.a, row_bytes)]
                copies = [(self.snapshots, self.stage, stage_rows * row_bytes)]
            after = [pygpu.graphs.repeat(whole, body, turns, dependencies=after, turn_copies=copies)]
        # The steps left over, numbered on from the turns' (as _plain numbers them).
        rows = turns * stage_rows
        pair = (self.b, self.a) if src is self.a else (self.a, self.b)
        for j, number in enumerate(range(turns * per_turn + 1, self.steps + 1)):
            dst = pair[j & 1]
            after = step(whole, src, dst, after)
            if every and number % every == 0:
                row = self.snapshots_ptr + rows * row_bytes
                after = [whole.add_memcpy_node(row, dst, row_bytes, dependencies=after)]
                rows += 1
            src = dst
        return whole.instantiate(), src, rows

    # -- the run -----------------------------------------------------------------------------------

    def run(self, progress: Progress | None = None) -> float:
        """Runs every step from u0 (again, if called again); returns the mean wall time per step
        in seconds, from the first launch to the end of the last step. Setup (graph capture)
        is timed apart, in setup_seconds."""
        pygpu = self.pygpu
        setup = time.perf_counter()
        batches = 0
        if self.device_loop and self._device_graph is None:
            self._device_graph = self._build_device_loop()
        if self.graph:
            per_batch = graph_layout(self.steps, self.every, self.graph_batch)[1]
            batches = self.steps // per_batch
            if batches and self._graph is None:
                self._graph = self._capture()
        self.setup_seconds = time.perf_counter() - setup
        pygpu.memcpy_htod(self.a, self.problem.u0())
        self.rows_done = 0
        done = 0

        t0 = time.perf_counter()
        state: Any = self.a
        if self._device_graph is not None:
            exec_, state, self.rows_done = self._device_graph
            exec_.launch(self.stream)
            done = self.steps
        if batches and self._graph is not None:
            exec_, start, stage_rows, per_batch = self._graph
            launch = exec_.launch
            stream = self.stream
            copy = pygpu.memcpy_dtod
            if start is not self.a:
                copy(start, self.a, self.row_bytes, stream)
            block_bytes = stage_rows * self.row_bytes
            dest = self.snapshots_ptr
            for _ in range(batches):
                launch(stream)
                if stage_rows:
                    copy(dest, self.stage, block_bytes, stream)
                    dest += block_bytes
                    self.rows_done += stage_rows
                done += per_batch
                if progress is not None:
                    progress.update(done)
            state = start
        chunk = 4096
        while done < self.steps:
            count = min(chunk, self.steps - done)
            state = self._plain(state, done + 1, count)
            done += count
            if progress is not None:
                progress.update(done)
        pygpu.cudaStreamSynchronize(self.stream).check()
        self.loop_seconds = time.perf_counter() - t0
        self.state = state
        if progress is not None:
            progress.close()
        return self.loop_seconds / max(1, self.steps)

    def final(self) -> np.ndarray:
        out = np.empty(self.n_total)
        self.pygpu.memcpy_dtoh(out, self.state)
        return out

    def snapshot_view(self) -> Any:
        """The snapshot matrix as a CuPy (GPU) or numpy (host) array on the same memory."""
        if self.snapshots is None:
            raise ValueError("no snapshots were taken (--snapshot-every 0)")
        return analysis.device_matrix(
            int(self.snapshots), self.rows, self.n_total, self.pygpu.backend(), owner=self.snapshots
        )


# -- command line ----------------------------------------------------------------------------------


def choose_backend(requested: str | None) -> tuple[str, str | None]:
    """Starts the requested backend, or with 'auto': cuda (or hip) if one starts, else host.
    Returns (backend, notice)."""
    import pygpu

    if requested and requested != "auto":
        pygpu.set_backend(requested)
        return pygpu.backend(), None
    if os.environ.get("PYGPU_BACKEND", "").strip():
        return pygpu.backend(), None
    try:
        name = pygpu.backend()
        count, status = pygpu.cudaGetDeviceCount()
        if int(status) == 0 and count > 0:
            return name, None
        why = f"{name} reports no device"
    except pygpu.CudaError as e:
        why = str(e).split(". To run on the CPU")[0]
    pygpu.set_backend("host")
    return (
        pygpu.backend(),
        f"No GPU could be started ({why}): running on the host backend (the same kernels on the CPU).",
    )


def device_description(backend: str) -> str:
    import pygpu

    try:
        props = pygpu.cudaDeviceProp(pygpu.cudaGetDevice()[0])
        return props.name
    except pygpu.CudaError:
        return backend


def build_parser(
    prog: str = "burger.py",
    description: str = "1-D viscous Burgers on the GPU with zero-copy in-situ analysis (the seeds' burgerPy demo on pygpu).",
) -> argparse.ArgumentParser:
    """The options of both drivers (burger_mpi.py adds its own to these)."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--nx", type=int, default=256, help="interior grid points (default 256; the arrays hold NX + 2)")
    p.add_argument(
        "--t-final", type=float, default=2.0, help="run while t < T, t accumulated in floating point (default 2.0)"
    )
    p.add_argument("--nu", type=float, default=0.01, help="viscosity (default 0.01)")
    p.add_argument("--dt", type=float, default=0.001, help="time step (default 0.001)")
    p.add_argument(
        "--snapshot-every",
        type=int,
        default=1,
        metavar="N",
        help="copy the solution into the snapshot matrix every N steps; 0: no snapshots, no analysis (default 1)",
    )
    p.add_argument(
        "--backend",
        choices=["auto", "cuda", "hip", "host"],
        default="auto",
        help="default: $PYGPU_BACKEND, else cuda if a GPU starts, else host",
    )
    p.add_argument("--graph", action="store_true", help="record batches of steps as a CUDA graph and replay them")
    p.add_argument(
        "--graph-batch",
        type=int,
        default=DEFAULT_GRAPH_BATCH,
        metavar="STEPS",
        help=f"steps per graph batch (default {DEFAULT_GRAPH_BATCH})",
    )
    p.add_argument(
        "--device-loop",
        action="store_true",
        help="run the whole time loop as one graph launch, counted on the device (snapshots included)",
    )
    p.add_argument(
        "--scheme",
        choices=list(KERNELS),
        default="seed",
        help="seed: the seeds' lagged ghosts (default, u[10] = 0.0733873); periodic: exact periodic neighbours",
    )
    p.add_argument(
        "--hdf5", metavar="FILE", help="also write the snapshots, singular values and modes to this HDF5 file (h5py)"
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=".",
        help="folder for the plots, summary.json and final.npy (default: the current folder)",
    )
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar (it appears on runs longer than a second)"
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="record the time loop with pygpu.profile(): print the per-kernel table, write profile.json "
        "(a trace for Perfetto) and profile.png (a timeline) in --out",
    )
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """Refuses, through `p.error`, values that the options' types let through."""
    if args.nx < 2:
        p.error("--nx must be at least 2")
    if args.dt <= 0 or not math.isfinite(args.dt) or not math.isfinite(args.t_final):
        p.error("--dt must be positive and --t-final finite")
    if args.snapshot_every < 0:
        p.error("--snapshot-every must be 0 or more")
    if args.graph_batch < 1:
        p.error("--graph-batch must be at least 1")
    if args.device_loop and args.graph:
        p.error("--device-loop replaces --graph: give one of them")
    if args.nx + 2 > 2**31 - 1:
        p.error("--nx is too large for the kernel's int argument")
    return args


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = build_parser()
    return check_args(p, p.parse_args(argv))


def start_profile() -> Any:
    """A running pygpu.profile() recording, or None (and why, on stderr) where the backend
    does not record."""
    import pygpu

    recording = pygpu.profile()
    try:
        return recording.__enter__()
    except pygpu.CudaError as e:
        print(f"burger.py: --profile: {e}; running without it", file=sys.stderr)
        return None


def report_profile(recording: Any, out: Path) -> None:
    """The time loop's per-kernel table on stdout; its trace and timeline in `out`."""
    print("Profile of the time loop (pygpu.profile()):")
    print(recording.table(limit=8))
    recording.export_chrome_trace(out / "profile.json")
    figure = recording.plot()
    figure.savefig(out / "profile.png", dpi=120, bbox_inches="tight")
    print(f"Wrote profile.json (open it in https://ui.perfetto.dev) and profile.png in {out}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    problem = Problem(nx=args.nx, nu=args.nu, dt=args.dt, t_final=args.t_final, scheme=args.scheme)
    steps, t_end = problem.steps()
    warning = problem.stability_warning()
    if warning:
        print(warning, file=sys.stderr)

    import pygpu

    try:
        backend, notice = choose_backend(args.backend)
    except pygpu.CudaError as e:
        print(f"burger.py: cannot start the {args.backend} backend: {e}", file=sys.stderr)
        return 2
    if notice:
        print(notice, flush=True)
    free, total = pygpu.mem_get_info()
    try:
        batch = DEVICE_LOOP_TURN if args.device_loop else args.graph_batch
        check_memory(problem, args.snapshot_every, args.graph or args.device_loop, batch, free, total)
    except SnapshotsDoNotFit as e:
        print(f"burger.py: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    solver = Solver(problem, args.snapshot_every, args.graph, args.graph_batch, args.device_loop)
    if args.device_loop:
        per_turn = graph_layout(steps, args.snapshot_every, DEVICE_LOOP_TURN)[1]
        mode = f"device-side (one graph launch, turns of {per_turn} steps)"
    elif args.graph:
        mode = f"graph (batches of {graph_layout(steps, args.snapshot_every, args.graph_batch)[1]} steps)"
    else:
        mode = "plain"
    print(
        f"Burgers: NX = {problem.nx} ({problem.n_total} values), nu = {problem.nu:g}, dt = {problem.dt:g}, "
        f"t < {problem.t_final:g}: {steps} steps, kernel {solver.kernel_name}"
    )
    print(f"Backend: {backend} ({device_description(backend)}), {mode} loop, {solver.grid} x {solver.block} threads")
    if solver.rows:
        print(
            f"Snapshots: {solver.rows} x {problem.n_total} doubles on the device "
            f"({format_bytes(solver.rows * solver.row_bytes)}), every {args.snapshot_every} step(s)"
        )
    print(f"time = {problem.dt:g}", flush=True)
    recording = start_profile() if args.profile else None
    try:
        seconds_per_step = solver.run(Progress(steps, enabled=not args.no_progress))
    finally:
        if recording is not None:
            recording.__exit__(None, None, None)
    print(f"time = {t_end:g}")
    print(f"Mean Wall-Time: {seconds_per_step * 1e3:.6g} ms per step ({solver.loop_seconds:.4g} s for {steps} steps)")
    final = solver.final()
    print(f"u[10] = {final[10]:.6g}", flush=True)
    if recording is not None:
        report_profile(recording, out)

    meta = {
        "driver": "python",
        "backend": backend,
        "device": device_description(backend),
        "nx": problem.nx,
        "nu": problem.nu,
        "dt": problem.dt,
        "t_final": problem.t_final,
        "t_end": t_end,
        "steps": steps,
        "scheme": problem.scheme,
        "kernel": solver.kernel_name,
        "snapshot_every": args.snapshot_every,
        "graph": bool(args.graph or args.device_loop),
        "grid": solver.grid,
        "block": solver.block,
    }
    timing = {
        "mean_step_seconds": seconds_per_step,
        "loop_seconds": solver.loop_seconds,
        "setup_seconds": solver.setup_seconds,
    }
    if solver.rows == 0:
        analysis.write_summary(final, out, {**meta, **timing, "rows": 0, "collections": 0})
        print(f"No snapshots (--snapshot-every 0): no analysis. Wrote summary.json and final.npy in {out}")
        return 0

    collector = analysis.Collector(solver.snapshot_view(), problem.x, meta)
    collector.collect(solver.rows)
    collector.plot_field(out)
    print("Called python analyses function successfully")
    collector.svd(out)
    print("Called python analyses function successfully")
    if args.hdf5:
        print(f"Wrote {collector.write_hdf5(args.hdf5)}")
    collector.finish(final, out, timing)
    print(f"Wrote Field_evolution.png, SVD_Eigenvectors.png, summary.json and final.npy in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
