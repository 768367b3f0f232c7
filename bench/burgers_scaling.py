#!/usr/bin/env python3
"""Scaling of the distributed Burgers demo (issue 17), run under MPI: the demo's own solver
(demos/burger/burger_mpi.py's DistributedSolver, its ghost exchange and its TSQR) timed at the
issue's sizes, with 1 rank and with all the job's ranks (N). Not a test.

    mpiexec -n 2 python3 bench/burgers_scaling.py --json scaling.json          # 2 GPUs (cuda)
    mpiexec -n 2 python3 bench/burgers_scaling.py --quick --backend host       # a smoke test anywhere

Figures (rank 0 prints a table and writes --json):
- step time: the demo's `DistributedSolver.run()` (per step: the ghost exchange by pygpu.nccl,
  one launch of burgers_step; no snapshots), its own clock (first step to the end of the last),
  the ranks' clocks started after a barrier, on the slowest rank (see over_ranks; HPC's
  convention; before 2026-11-28 the rank that started last), median over --reps after a warm-up;
- weak scaling, --weak-nx points per rank, 1 -> N ranks: efficiency t1 / tN (issue: >= 90 %);
- strong scaling, --strong-nx points in all, 1 and N ranks: speed-up t1 / tN, efficiency
  speed-up / N; the final fields of both runs must be bitwise identical (they are compared);
- halo exchange per step: `DistributedSolver.exchange()` alone, --halo-iters times, then one
  wait; against bench/cpp/halo_nccl.cu, the same NCCL group in C++ on the same GPUs (cuda only);
- distributed SVD: the demo's TSQR (`distributed_svd`) of --svd-snapshots snapshots of
  --svd-nx points against gathering the snapshot matrix to rank 0 (pygpu.nccl send/recv) and one
  SVD there (the single-process demo's call); both times and the singular values' difference.

Rank 0 rewrites --json after each part, so that a part that fails later leaves the earlier ones.

The 1-rank figures are taken in the same job: its ranks split into N groups of one, each running
its own copy concurrently on its own GPU (group 0's is the figure; every copy's is in the JSON),
so that every rank takes part in every communicator, as pygpu.nccl on the host backend requires.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos" / "burger"))

import burger  # noqa: E402
import burger_mpi  # noqa: E402
import domain  # noqa: E402
import halo_cpp  # noqa: E402
import mpi_ranks  # noqa: E402
from burgers import problem_for  # noqa: E402

#: name: (full size, --quick size, help)
SIZES: dict[str, tuple[int, int, str]] = {
    "weak_nx": (2**26, 4096, "interior points per rank of the weak scaling runs"),
    "strong_nx": (2**27, 8192, "interior points in all of the strong scaling runs"),
    "steps": (2000, 40, "steps per timed run"),
    "reps": (7, 3, "timed repetitions (after one warm-up) of every figure"),
    "halo_iters": (2000, 100, "ghost exchanges per timed halo loop"),
    # 2^23 points x 100 snapshots: cuSOLVER's gesvd refuses the gathered matrix (INVALID_VALUE, H100).
    "svd_nx": (2**20, 4096, "interior points in all of the SVD's snapshots"),
    "svd_snapshots": (100, 16, "snapshots (one per step) of the SVD"),
}
TARGET_WEAK_EFFICIENCY = 0.90  # issue 17


def parse_args(argv: Sequence[str] | None, ranks: int, quiet: bool) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--backend", choices=["auto", "cuda", "host"], default="auto", help="default: as burger_mpi.py")
    p.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test of this script, seconds on a CPU)")
    for name, (full, quick, text) in SIZES.items():
        p.add_argument("--" + name.replace("_", "-"), type=int, help=f"{text} (default {full}; --quick {quick})")
    p.add_argument("--json", metavar="FILE", help="write the results here (rank 0)")
    p.add_argument("--nvcc", help="nvcc for the C++ halo loop (default: $NVCC, PATH, /usr/local/cuda/bin/nvcc)")
    p.add_argument("--cpp", metavar="BINARY", help="a halo_nccl binary built already (no nvcc needed)")
    p.add_argument("--build-dir", help="where to build the C++ halo loop (default: a temporary folder)")
    with contextlib.ExitStack() as muted:
        if quiet:
            muted.enter_context(contextlib.redirect_stdout(io.StringIO()))
            muted.enter_context(contextlib.redirect_stderr(io.StringIO()))
        args = p.parse_args(argv)
        for name, (full, quick, _) in SIZES.items():
            if getattr(args, name) is None:
                setattr(args, name, quick if args.quick else full)
            if getattr(args, name) < 1:
                p.error(f"--{name.replace('_', '-')} must be at least 1")
        for name in ("strong_nx", "svd_nx"):
            if getattr(args, name) < ranks:
                p.error(f"--{name.replace('_', '-')} {getattr(args, name)} is fewer points than the {ranks} ranks")
        if max(args.weak_nx * ranks, args.strong_nx, args.svd_nx) + 2 > 2**31 - 1:
            p.error("a problem of more than 2^31 - 3 points is too large for the kernel's int argument")
    return args


def demo_args(nx: int, steps: int, snapshot_every: int, backend: str) -> argparse.Namespace:
    """burger_mpi.py's options for NX points and exactly `steps` steps (dt stable, as
    bench/burgers.py chooses it)."""
    problem = problem_for(nx, steps)
    argv = ["--nx", str(nx), "--dt", repr(problem.dt), "--t-final", repr(problem.t_final)]
    argv += ["--snapshot-every", str(snapshot_every), "--backend", backend, "--no-progress"]
    return burger_mpi.parse_args(argv, quiet=True)


def solver_for(group: Any, args: argparse.Namespace, xp: Any) -> burger_mpi.DistributedSolver:
    """The demo's solver for this rank of `group`, with a pygpu.nccl communicator of the group."""
    problem = burger.Problem(nx=args.nx, nu=args.nu, dt=args.dt, t_final=args.t_final, scheme=args.scheme)
    slab = domain.partition(problem.nx, group.Get_size())[group.Get_rank()]
    return burger_mpi.DistributedSolver(problem, slab, mpi_ranks.communicator(group), args, xp)


def median_us(seconds: list[float], per: int) -> float:
    return statistics.median(seconds) / per * 1e6


def over_ranks(group: Any, seconds: float) -> tuple[float, float]:
    """(fastest, slowest) rank's seconds. The timed loops start after a barrier, so the slowest
    rank's seconds are what a user waits for: the figure reported, as HPC reports do."""
    from mpi4py import MPI

    return float(group.allreduce(seconds, op=MPI.MIN)), float(group.allreduce(seconds, op=MPI.MAX))


def timed_runs(solver: burger_mpi.DistributedSolver, group: Any, reps: int) -> tuple[list[float], list[float]]:
    """(slowest, fastest rank's) seconds of each repetition of the demo's run(), whose clocks
    start after a barrier (over_ranks)."""
    solver.run()  # warm-up
    slowest, fastest = [], []
    for _ in range(reps):
        solver.run(start_together=group)
        fast, slow = over_ranks(group, solver.loop_seconds)
        slowest.append(slow)
        fastest.append(fast)
    return slowest, fastest


def halo_seconds(solver: burger_mpi.DistributedSolver, group: Any, iters: int, reps: int) -> list[float]:
    """Seconds of `iters` ghost exchanges and one wait on the slowest rank, per repetition."""
    for _ in range(iters // 10 + 1):
        solver.exchange()
    solver.wait()
    out = []
    for _ in range(reps):
        group.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            solver.exchange()
        solver.wait()
        out.append(over_ranks(group, time.perf_counter() - t0)[1])
    return out


def in_groups(world: Any, k: int) -> Any:
    """The world's ranks split into groups of k consecutive ranks (k divides the world's size)."""
    return world.Split(world.Get_rank() // k, world.Get_rank())


def measure_steps(world: Any, k: int, nx: int, opts: argparse.Namespace, backend: str, halo: bool) -> Any:
    """One configuration, run by every group of k ranks at once; on world rank 0 its record."""
    group = in_groups(world, k)
    args = demo_args(nx, opts.steps, 0, backend)
    solver = solver_for(group, args, np)
    loop, fast = timed_runs(solver, group, opts.reps)
    field = mpi_ranks.gather_field(group, solver.slab, solver.state.get())
    mine: dict[str, Any] = {}
    if field is not None:
        mine = {
            "step_us": median_us(loop, opts.steps),
            "seconds": loop,
            "seconds_fastest_rank": fast,
            "u10": float(field[10]),
            "field_sha256": hashlib.sha256(field.tobytes()).hexdigest(),
        }
    if halo:  # after the field: the exchanges rewrite the ghosts
        seconds = halo_seconds(solver, group, opts.halo_iters, opts.reps)
        mine.update(halo_us=median_us(seconds, opts.halo_iters), halo_seconds=seconds)
    solver.comm.close()
    grid, block = solver.grid, solver.block
    del solver
    copies = world.gather(mine if group.Get_rank() == 0 else None, root=0)
    group.Free()
    if world.Get_rank() != 0:
        return None
    copies = [c for c in copies if c is not None]
    record = {"ranks": k, "nx": nx, "nx_per_rank": -(-nx // k), "steps": opts.steps, "grid": grid, "block": block}
    record.update(copies[0])
    # Bytes the kernel moves per step, every rank together: each value read once and written once.
    record["TBps"] = 2 * (nx + 2) * 8 / (record["step_us"] * 1e-6) / 1e12
    if len(copies) > 1:
        record["concurrent_copies_step_us"] = [c["step_us"] for c in copies]
    return record


def measure_cpp(world: Any, k: int, cpp: dict[str, Any], n: int, opts: argparse.Namespace) -> Any:
    """The C++ halo loop with groups of k ranks; on world rank 0: (median us per exchange of
    group 0, None) or (None, error)."""
    import pygpu

    group = in_groups(world, k)
    results = halo_cpp.run_group(cpp, group, pygpu.cudaGetDevice()[0], n, opts.halo_iters, opts.reps)
    group.Free()
    if world.Get_rank() != 0:
        return None
    errors = [f"rank {r}: {res['error']}" for r, res in enumerate(results) if "error" in res]
    if errors:
        return None, "; ".join(errors)
    per_rep = [min(res["seconds"][i] for res in results) for i in range(opts.reps)]  # over_ranks' loop
    return median_us(per_rep, opts.halo_iters), None


def gather_and_svd(solver: burger_mpi.DistributedSolver, xp: Any) -> tuple[np.ndarray, float, float] | None:
    """The snapshot matrix gathered to rank 0 (pygpu.nccl send/recv, on the devices) and its
    SVD there, as the single-process demo takes it (analysis.Collector.svd); on rank 0:
    (singular values, gather seconds, SVD seconds)."""
    import pygpu
    from pygpu import gpuarray, nccl

    comm, rows = solver.comm, solver.rows
    slabs = domain.partition(solver.slab.nx, comm.nranks)
    solver.wait()
    t0 = time.perf_counter()
    with nccl.group():
        if comm.rank == 0:
            blocks = [gpuarray.empty((rows, s.n), np.float64) for s in slabs[1:]]
            for s, block in zip(slabs[1:], blocks):
                comm.recv(block, s.rank, solver.stream)
        else:
            mine = pygpu.GPUArray((rows, solver.slab.n), np.float64, gpudata=solver.snapshots)
            comm.send(mine, 0, solver.stream)
    solver.wait()
    if comm.rank != 0:
        return None
    full = xp.concatenate([solver.snapshot_matrix(rows)] + [xp.asarray(b) for b in blocks], axis=1)
    burger_mpi.synchronize(xp)
    t1 = time.perf_counter()
    _, s, _ = xp.linalg.svd(full, full_matrices=False)
    burger_mpi.synchronize(xp)
    t2 = time.perf_counter()
    return np.asarray(s.get() if hasattr(s, "get") else s), t1 - t0, t2 - t1


def measure_svd(world: Any, opts: argparse.Namespace, backend: str) -> Any:
    """TSQR against gather + one SVD on the same snapshots (a run of the demo); record on rank 0."""
    args = demo_args(opts.svd_nx, opts.svd_snapshots, 1, backend)
    _, _, _, _, xp = burger_mpi.prepare(args, world)
    solver = solver_for(world, args, xp)
    solver.run()
    tsqr, gather, one_svd = [], [], []
    s_tsqr = s_one = None
    for _ in range(opts.reps + 1):  # the first is a warm-up
        world.Barrier()
        s_tsqr, _, _, seconds = burger_mpi.distributed_svd(solver)
        tsqr.append(over_ranks(world, seconds)[1])  # the slowest rank's
    failed = None
    for _ in range(opts.reps + 1):
        world.Barrier()
        error = None
        try:
            gathered = gather_and_svd(solver, xp)
        except Exception as e:  # rank 0's one SVD, after the transfers: too large for one device, ...
            gathered, error = None, f"{type(e).__name__}: {e}"
        failed = next((e for e in world.allgather(error) if e), None)
        if failed:
            break
        if gathered is not None:
            s_one = gathered[0]
            gather.append(gathered[1])
            one_svd.append(gathered[2])
    solver.comm.close()
    if world.Get_rank() != 0:
        return None
    assert s_tsqr is not None
    record = {"ranks": world.Get_size(), "nx": opts.svd_nx, "snapshots": solver.rows, "library": xp.__name__}
    record.update(tsqr_ms=statistics.median(tsqr[1:]) * 1e3, tsqr_seconds=tsqr[1:])
    if failed or s_one is None:
        return record | {"error": failed}
    diff = np.abs(s_tsqr - s_one)
    above = s_one > 1e-6 * s_one[0]  # the values above rounding, as the demo compares them
    ms = {name: statistics.median(t[1:]) * 1e3 for name, t in (("tsqr", tsqr), ("gather", gather), ("svd", one_svd))}
    return record | {
        "gather_ms": ms["gather"],
        "one_svd_ms": ms["svd"],
        "gather_and_svd_ms": ms["gather"] + ms["svd"],
        "speedup_of_tsqr": (ms["gather"] + ms["svd"]) / ms["tsqr"],
        "gather_seconds": gather[1:],
        "one_svd_seconds": one_svd[1:],
        "singular_values": len(s_one),
        "compared_values": int(above.sum()),
        "max_rel_diff": float(np.max(diff[above] / s_one[above])),
        "max_abs_diff_rel_s1": float(np.max(diff) / s_one[0]),
        "leading_singular_values": s_one[:5].tolist(),
    }


def scaling(runs: list[dict[str, Any]], n: int, opts: argparse.Namespace) -> tuple[Any, Any]:
    """(weak, strong) records from the runs, None with one rank."""
    if n == 1:
        return None, None
    by = {(r["ranks"], r["nx"]): r for r in runs}
    w1, wn = by[(1, opts.weak_nx)], by[(n, n * opts.weak_nx)]
    s1, sn = by[(1, opts.strong_nx)], by[(n, opts.strong_nx)]
    weak = {
        "nx_per_rank": opts.weak_nx,
        "ranks": n,
        "t1_step_us": w1["step_us"],
        "tN_step_us": wn["step_us"],
        "efficiency": w1["step_us"] / wn["step_us"],
        "target": TARGET_WEAK_EFFICIENCY,
    }
    weak["meets_target"] = weak["efficiency"] >= TARGET_WEAK_EFFICIENCY
    speedup = s1["step_us"] / sn["step_us"]
    strong = {
        "nx": opts.strong_nx,
        "ranks": n,
        "t1_step_us": s1["step_us"],
        "tN_step_us": sn["step_us"],
        "speedup": speedup,
        "efficiency": speedup / n,
        "bitwise_identical": s1["field_sha256"] == sn["field_sha256"],
    }
    return weak, strong


def report(results: dict[str, Any]) -> None:
    """The table, on rank 0."""
    print(f"\nDistributed Burgers scaling: {results['backend']} ({results['device']}), {results['world_ranks']} ranks")
    print(f"{'ranks':>5} {'NX':>11} {'NX/rank':>11} {'steps':>6} {'us/step':>10} {'GB/s':>8} {'halo us':>9}")
    for r in results["runs"]:
        halo = f"{r['halo_us']:9.2f}" if "halo_us" in r else ""
        print(
            f"{r['ranks']:>5} {r['nx']:>11} {r['nx_per_rank']:>11} {r['steps']:>6} {r['step_us']:>10.2f} "
            f"{r['TBps'] * 1e3:>8.1f} {halo}"
        )
    weak, strong = results["weak"], results["strong"]
    if weak:
        verdict = "pass" if weak["meets_target"] else "MISS"
        print(
            f"weak scaling 1 -> {weak['ranks']} ranks at {weak['nx_per_rank']} points per rank: "
            f"efficiency {weak['efficiency']:.1%} (target >= {weak['target']:.0%}: {verdict})"
        )
    if strong:
        print(
            f"strong scaling at NX = {strong['nx']}, 1 -> {strong['ranks']} ranks: speed-up {strong['speedup']:.3f}, "
            f"efficiency {strong['efficiency']:.1%}; fields bitwise identical: {strong['bitwise_identical']}"
        )
    for h in results["halo"]:
        cpp = f"C++ NCCL {h['cpp_us']:.2f} us, ratio {h['ratio']:.2f}" if h["cpp_us"] else "C++: none"
        print(f"halo exchange, {h['ranks']} rank(s): pygpu {h['pygpu_us']:.2f} us per step; {cpp}")
    if results["halo_cpp"].get("skipped"):
        print(f"  (C++ halo loop skipped: {results['halo_cpp']['skipped']})")
    svd = results["svd"]
    where = f"SVD of {svd['snapshots']} snapshots x {svd['nx']} points on {svd['ranks']} rank(s)"
    if "error" in svd:
        print(f"{where}: TSQR {svd['tsqr_ms']:.2f} ms; gather + one SVD failed: {svd['error']}")
        return
    print(
        f"{where}: TSQR {svd['tsqr_ms']:.2f} ms; gather to rank 0 {svd['gather_ms']:.2f} ms + one SVD "
        f"{svd['one_svd_ms']:.2f} ms; singular values differ by {svd['max_rel_diff']:.2g} (relative, "
        f"{svd['compared_values']} above 1e-6 s1)"
    )


def environment(backend: str, opts: argparse.Namespace, ranks: int) -> dict[str, Any]:
    """What the figures were taken on and with (rank 0)."""
    from mpi4py import MPI

    import pygpu
    from pygpu import nccl

    try:
        nccl_version: int | None = nccl.get_version()
    except nccl.NcclUnavailableError:  # the host backend does not need libnccl
        nccl_version = None
    try:
        import cupy

        cupy_version = cupy.__version__
    except ImportError:
        cupy_version = None
    return {
        "benchmark": "burgers_scaling",
        "backend": backend,
        "device": burger.device_description(backend),
        "devices": pygpu.cudaGetDeviceCount()[0],
        "world_ranks": ranks,
        "quick": opts.quick,
        "parameters": {name: getattr(opts, name) for name in SIZES} | {"scheme": "seed", "kernel": burger_mpi.KERNEL},
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cupy": cupy_version,
        "mpi": MPI.Get_library_version().strip().splitlines()[0],
        "nccl_version": nccl_version,
        "timing": "median over reps (after a warm-up); steps, halo and SVD: the slowest rank's seconds, the ranks' "
        "clocks started after a barrier (seconds_fastest_rank: the fastest's); 1-rank figures: group 0's copy",
    }


def run(opts: argparse.Namespace, world: Any) -> dict[str, Any] | None:
    """Every part in turn; on rank 0 the results, written to --json after each part."""
    rank, n = world.Get_rank(), world.Get_size()
    say = print if rank == 0 else (lambda *a, **k: None)
    backend, _ = mpi_ranks.start_device(world, opts.backend)
    results = environment(backend, opts, n) if rank == 0 else {}

    def save(**parts: Any) -> None:
        results.update(parts)
        if rank == 0 and opts.json:
            Path(opts.json).write_text(json.dumps(results, indent=1) + "\n")

    counts = [1] if n == 1 else [1, n]
    configs: dict[tuple[int, int], bool] = {}  # (ranks, NX) -> with the halo loop (the weak runs)
    for k in counts:
        configs[(k, k * opts.weak_nx)] = True
        configs.setdefault((k, opts.strong_nx), False)
    runs: list[dict[str, Any]] = []
    for (k, nx), with_halo in configs.items():
        say(f"steps: {k} rank(s), NX = {nx}, {opts.steps} steps x {opts.reps} ...", flush=True)
        runs.append(measure_steps(world, k, nx, opts, backend, with_halo))
    if rank == 0:
        weak, strong = scaling(runs, n, opts)
        save(runs=runs, weak=weak, strong=strong)

    cpp = world.bcast(halo_cpp.prepare(backend, opts.cpp, opts.nvcc, opts.build_dir) if rank == 0 else None, root=0)
    halo: list[dict[str, Any]] = []
    for k in counts:
        entry: dict[str, Any] = {"ranks": k, "cpp_us": None}
        if "binary" in cpp:
            say(f"halo: C++ NCCL loop, {k} rank(s) ...", flush=True)
            figure = measure_cpp(world, k, cpp, opts.weak_nx, opts)
            if figure is not None:
                entry["cpp_us"], error = figure
                if error:
                    entry["cpp_error"] = error
        if rank == 0:
            entry["pygpu_us"] = next(r["halo_us"] for r in runs if r["ranks"] == k and "halo_us" in r)
            entry["ratio"] = entry["pygpu_us"] / entry["cpp_us"] if entry["cpp_us"] else None
        halo.append(entry)
    save(halo=halo, halo_cpp=cpp)

    say(f"SVD: {opts.svd_snapshots} snapshots x {opts.svd_nx} points ...", flush=True)
    save(svd=measure_svd(world, opts, backend))
    return results if rank == 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    try:
        opts = parse_args(argv, world.Get_size(), quiet=rank != 0)
    except SystemExit as e:  # --help, or an option refused (the same on every rank)
        return int(e.code or 0)

    def work() -> int:
        results = run(opts, world)
        if results is not None:
            report(results)
            if opts.json:
                print(f"wrote {opts.json}")
        return 0

    return mpi_ranks.run_or_abort("burgers_scaling.py", world, work)


if __name__ == "__main__":
    sys.exit(main())
