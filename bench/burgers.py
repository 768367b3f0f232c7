#!/usr/bin/env python3
"""Benchmarks of the Burgers demo on a GPU machine (not a test): pygpu's Python solver loop
(demos/burger/burger.py) against the same loop in C++ (bench/cpp/burgers_loop.cu, the same kernel
source compiled here with nvcc), in one run, and the in-situ analysis: CuPy's SVD on the
device-resident snapshots, zero-copy, against copying them to the host for numpy.

    python3 bench/burgers.py --json burgers.json            # on the GPU machine
    python3 bench/burgers.py --quick --backend host         # a smoke test of this script anywhere

Step time = wall time from the first launch to the end of the last step (host clock around a
stream synchronisation, as the demo measures it), divided by the steps; median of --reps
repetitions after one warm-up, pygpu's and C++'s alternating in --rounds rounds, each round a
fresh process for both (the ratio is the median of the rounds' ratios, so that a host whose speed
drifts, or a process that lands on a slow core, affects both alike). Sizes: NX = 256 (the seeds' 258 values), 2^16, 2^20, 2^24, 2^26;
modes plain (one launch per step, plus a device-to-device snapshot copy per step where the
snapshot matrix fits), graph (batches of steps replayed as CUDA graphs) and device (the whole run
as one graph launch with a device-side loop, `--device-loop`), measured against C++'s graph loop.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "demos" / "burger"))

import burger  # noqa: E402

# (NX, steps, with snapshots?) -- snapshots every step only where steps x (NX + 2) doubles fit.
Config = tuple[int, int, tuple[bool, ...]]
FULL: list[Config] = [
    (256, 2001, (True, False)),
    (2**16, 2001, (True, False)),
    (2**20, 1000, (True, False)),
    (2**24, 200, (False,)),
    (2**26, 100, (False,)),
]
QUICK: list[Config] = [(256, 2001, (True, False)), (2**12, 200, (True, False))]
GRAPH_BATCH = 200


def problem_for(nx: int, steps: int) -> burger.Problem:
    """The seeds' problem at NX points, stable: dt shrinks with h^2 so that nu dt / h^2 stays the
    seeds' 0.0166 (dt = 0.001 at NX = 256); t_final is chosen so that the seeds-style loop (t
    accumulated while t < t_final) takes exactly `steps`."""
    dt = 0.001 * (256 / nx) ** 2
    p = burger.Problem(nx=nx, dt=dt, t_final=(steps - 0.5) * dt)
    assert p.steps()[0] == steps
    return p


def find_nvcc(explicit: str | None) -> str | None:
    for candidate in (explicit, os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def build_cpp(nvcc: str, out_dir: Path) -> Path:
    binary = out_dir / "burgers_loop"
    cmd = [
        nvcc,
        "-O3",
        "-std=c++17",
        "-arch=native",
        "-I",
        str(REPO / "kernels"),
        "-I",
        str(REPO / "python/pygpu/include"),  # pygpu_kernel.h, which the kernel sources include
        "-o",
        str(binary),
        str(REPO / "bench/cpp/burgers_loop.cu"),
    ]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return binary


def demo_grid(nx: int) -> int:
    """The demo's launch shape at NX (burger.launch_shape with the occupancy cap), so that the C++
    loop launches the kernel exactly as pygpu does."""
    import pygpu

    kernel = pygpu.load_kernels("burgers").get_function(burger.KERNELS["seed"])
    return burger.launch_shape(nx, burger.resident_blocks(kernel))[0]


def run_cpp(
    binary: Path, nx: int, steps: int, reps: int, mode: str, snapshots: bool, grid: int | None = None
) -> dict[str, Any]:
    problem = problem_for(nx, steps)
    cmd = [str(binary), str(nx), str(steps), str(reps), mode, "1" if snapshots else "0", str(GRAPH_BATCH)]
    cmd += [repr(problem.dt), repr(problem.nu), "lagged" if problem.scheme == "seed" else "periodic"]
    cmd += [str(grid if grid is not None else demo_grid(nx))]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def run_pygpu(nx: int, steps: int, reps: int, mode: str, snapshots: bool, backend: str) -> dict[str, Any]:
    """pygpu's loop: `reps` timed repetitions after a warm-up (and graph capture), in the calling
    process (`pygpu_round` runs it in a fresh one)."""
    import pygpu

    pygpu.set_backend(backend)
    solver = burger.Solver(
        problem_for(nx, steps),
        1 if snapshots else 0,
        graph=mode == "graph",
        graph_batch=GRAPH_BATCH,
        device_loop=mode == "device",
    )
    solver.run()
    seconds = []
    for _ in range(reps):
        solver.run()
        seconds.append(solver.loop_seconds)
    return {"seconds": seconds, "u10": float(solver.final()[10]), "grid": solver.grid}


def pygpu_round(nx: int, steps: int, reps: int, mode: str, snapshots: bool, backend: str) -> dict[str, Any]:
    """run_pygpu in a process of its own, as each C++ round is: on these (virtual) hosts about one
    process in six runs its Python at half speed throughout, which would otherwise tilt every
    round of a configuration the same way."""
    # An executor rather than a Pool: a worker that dies (a crash) raises BrokenProcessPool here
    # instead of leaving the call waiting for ever.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(run_pygpu, nx, steps, reps, mode, snapshots, backend).result()


def loops(configs: list[Config], reps: int, rounds: int, cpp: Path | None, backend: str) -> list[dict[str, Any]]:
    """Each configuration in `rounds` rounds, each round pygpu's repetitions then C++'s, each in a
    process of its own with its own warm-up, so that both see the same state of the host; the ratio
    is the median over rounds of the two rounds' medians."""
    rows = []
    per_round = max(1, -(-reps // rounds))
    for nx, steps, snaps in configs:
        for snapshots in snaps:
            for mode in ("plain", "graph", "device"):
                py_seconds: list[float] = []
                cpp_seconds: list[float] = []
                ratios = []
                cpp_u10 = None
                for _ in range(rounds):
                    mine = pygpu_round(nx, steps, per_round, mode, snapshots, backend)
                    py_seconds += mine["seconds"]
                    if cpp is not None:
                        # The device loop's baseline is C++'s best: its graph loop.
                        c = run_cpp(cpp, nx, steps, per_round, "graph" if mode == "device" else mode, snapshots)
                        cpp_seconds += c["seconds"]
                        cpp_u10 = c["u10"]
                        ratios.append(statistics.median(mine["seconds"]) / statistics.median(c["seconds"]))
                py_u10 = mine["u10"]
                entry: dict[str, Any] = {
                    "nx": nx,
                    "n_total": nx + 2,
                    "steps": steps,
                    "snapshots": snapshots,
                    "mode": mode,
                    "pygpu_median_step_us": statistics.median(py_seconds) / steps * 1e6,
                    "pygpu_seconds": py_seconds,
                    "pygpu_u10": py_u10,
                    "grid": mine["grid"],
                    "block": burger.BLOCK,
                }
                if cpp_u10 is not None:
                    entry.update(
                        cpp_median_step_us=statistics.median(cpp_seconds) / steps * 1e6,
                        cpp_seconds=cpp_seconds,
                        cpp_u10=cpp_u10,
                        ratio=statistics.median(ratios),
                        round_ratios=ratios,
                        u10_abs_diff=abs(cpp_u10 - py_u10),
                    )
                # Bytes the kernel moves per step (each value read once and written once), plus the snapshot copy.
                moved = 2 * (nx + 2) * 8 * (2 if snapshots else 1)
                entry["pygpu_TBps"] = moved / (entry["pygpu_median_step_us"] * 1e-6) / 1e12
                if "cpp_median_step_us" in entry:
                    entry["cpp_TBps"] = moved / (entry["cpp_median_step_us"] * 1e-6) / 1e12
                rows.append(entry)
                cpp_txt = (
                    f"  C++ {entry['cpp_median_step_us']:9.3f} us  ratio {entry['ratio']:.3f}"
                    f" (rounds {' '.join(f'{r:.2f}' for r in ratios)})"
                    if "ratio" in entry
                    else ""
                )
                print(
                    f"NX={nx:>9} steps={steps:>5} {'snap' if snapshots else 'nosnap':6} {mode:6}: "
                    f"pygpu {entry['pygpu_median_step_us']:9.3f} us/step{cpp_txt}",
                    flush=True,
                )
    return rows


def cpp_experiments(cpp: Path, reps: int, quick: bool) -> dict[str, Any]:
    """C++ only, to explain the loop numbers: (1) the step time against the launch shape (blocks of
    256 threads, from one per 256 points down to the demo's one full wave and multiples of it);
    (2) the snapshot copy as a copy kernel instead of cudaMemcpyAsync (not what the demo does)."""
    out: dict[str, Any] = {"launch_shape": [], "kernel_copy": []}
    sizes = [(2**12, 200)] if quick else [(2**20, 1000), (2**26, 100)]
    for nx, steps in sizes:
        wave = demo_grid(2**40)  # the cap itself
        grids = sorted({max(1, -(-nx // burger.BLOCK)), wave, 2 * wave, 4 * wave, 8 * wave, max(1, wave // 2)})
        for grid in grids:
            c = run_cpp(cpp, nx, steps, reps, "plain", False, grid)
            moved = 2 * (nx + 2) * 8
            out["launch_shape"].append(
                {
                    "nx": nx,
                    "grid": grid,
                    "wave": wave,
                    "median_step_us": c["median_step_us"],
                    "TBps": moved / (c["median_step_us"] * 1e-6) / 1e12,
                }
            )
            print(f"C++ launch shape NX={nx} grid={grid} (wave {wave}): {c['median_step_us']:.3f} us/step", flush=True)
    for nx, steps in [(256, 2001), (2**16, 2001)]:
        c = run_cpp(cpp, nx, steps, reps, "kcopy", True)
        out["kernel_copy"].append({"nx": nx, "median_step_us": c["median_step_us"]})
        print(f"C++ plain with a copy kernel for the snapshot, NX={nx}: {c['median_step_us']:.3f} us/step", flush=True)
    return out


def timed(fn: Any, reps: int, sync: Any = None) -> tuple[float, Any]:
    """(median seconds, last result) of fn() over reps calls after one warm-up."""
    result = fn()
    if sync:
        sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def insitu(nx: int, steps: int, reps: int) -> dict[str, Any]:
    """SVD of the interior snapshots: zero-copy on the device (CuPy) against a copy to the host and
    numpy; the snapshots come from a real run of the demo's solver."""
    import pygpu

    problem = problem_for(nx, steps)
    solver = burger.Solver(problem, 1)
    solver.run()
    rows, cols = solver.rows, solver.n_total
    backend = pygpu.backend()
    entry: dict[str, Any] = {"nx": nx, "snapshots": rows, "matrix": [rows, nx], "bytes": rows * cols * 8}

    snapshots = solver.snapshots
    assert snapshots is not None

    def to_host() -> np.ndarray:
        host = np.empty((rows, cols))
        pygpu.memcpy_dtoh(host, snapshots)
        return host

    copy_s, host = timed(to_host, reps)
    numpy_s, (s_np) = timed(lambda: np.linalg.svd(host[:, 1:-1], full_matrices=False)[1], reps)
    entry.update(host_copy_ms=copy_s * 1e3, host_numpy_svd_ms=numpy_s * 1e3, host_total_ms=(copy_s + numpy_s) * 1e3)
    entry["singular_values"] = s_np[:5].tolist()
    if backend != "host":
        import cupy

        sync = cupy.cuda.Device().synchronize

        def gpu_svd() -> Any:
            view = solver.snapshot_view()  # zero-copy: __cuda_array_interface__ on the snapshots
            return cupy.linalg.svd(view[:, 1:-1], full_matrices=False)[1]

        gpu_s, s_gpu = timed(gpu_svd, reps, sync)
        s_gpu = cupy.asnumpy(s_gpu)
        entry.update(gpu_zero_copy_svd_ms=gpu_s * 1e3, speedup_vs_host=(copy_s + numpy_s) / gpu_s)
        # Relative to the largest: the trailing values of a nearly rank-1 matrix are round-off.
        entry["max_diff_singular_values_rel_s1"] = float(np.max(np.abs(s_gpu[:10] - s_np[:10])) / s_np[0])

        # The same singular values from a QR of the tall snapshot matrix (A^T = QR, svd(R)):
        # cuSOLVER's gesvd is slow on very wide matrices; this is what one would use at scale.
        def gpu_qr_svd() -> Any:
            view = solver.snapshot_view()
            r = cupy.linalg.qr(view[:, 1:-1].T, mode="r")
            return cupy.linalg.svd(r, compute_uv=False)

        try:
            qr_s, s_qr = timed(gpu_qr_svd, reps, sync)
            entry["gpu_zero_copy_qr_svd_ms"] = qr_s * 1e3
            entry["qr_max_diff_singular_values_rel_s1"] = float(
                np.max(np.abs(cupy.asnumpy(s_qr)[:10] - s_np[:10])) / s_np[0]
            )
        except Exception as e:  # informational only
            entry["gpu_zero_copy_qr_svd_error"] = repr(e)
    print(
        f"in-situ SVD NX={nx} x {rows} snapshots: host copy {entry['host_copy_ms']:.2f} ms + numpy {entry['host_numpy_svd_ms']:.1f} ms"
        + (f"; GPU zero-copy {entry['gpu_zero_copy_svd_ms']:.1f} ms" if "gpu_zero_copy_svd_ms" in entry else "")
        + (f"; GPU QR+SVD {entry['gpu_zero_copy_qr_svd_ms']:.1f} ms" if "gpu_zero_copy_qr_svd_ms" in entry else ""),
        flush=True,
    )
    return entry


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="FILE", help="write the results here")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument(
        "--rounds", type=int, default=3, help="rounds of alternating pygpu and C++ (the reps split over them)"
    )
    p.add_argument("--sizes", help="comma-separated NX values of the loop figures to run (default: all)")
    p.add_argument("--quick", action="store_true", help="small sizes only (a smoke test)")
    p.add_argument("--backend", default=None, help="pygpu backend (default: $PYGPU_BACKEND, else cuda)")
    p.add_argument("--nvcc", help="nvcc for the C++ baseline (default: $NVCC, PATH, /usr/local/cuda/bin/nvcc)")
    p.add_argument("--cpp", help="a burgers_loop binary built already")
    p.add_argument("--no-cpp", action="store_true", help="pygpu's figures only (no C++ baseline)")
    p.add_argument("--build-dir", help="where to build the C++ baseline (default: a temporary folder)")
    p.add_argument("--no-analysis", action="store_true")
    args = p.parse_args()

    import pygpu

    if args.backend:
        pygpu.set_backend(args.backend)
    backend = pygpu.backend()
    device = burger.device_description(backend)
    cpp: Path | None = Path(args.cpp) if args.cpp else None
    notes = []
    if args.no_cpp:
        cpp = None
        notes.append("--no-cpp: the C++ baseline was not run")
    elif cpp is None and backend == "cuda":
        nvcc = find_nvcc(args.nvcc)
        if nvcc:
            build_dir = Path(args.build_dir or tempfile.mkdtemp(prefix="burgers-bench-"))
            build_dir.mkdir(parents=True, exist_ok=True)
            cpp = build_cpp(nvcc, build_dir)
        else:
            notes.append("no nvcc: the C++ baseline was not built")
    elif backend != "cuda":
        notes.append(f"{backend} backend: no C++ CUDA baseline")
    print(f"device: {device} ({backend}); C++ baseline: {cpp or 'none'}", flush=True)

    results: dict[str, Any] = {
        "device": device,
        "backend": backend,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "reps": args.reps,
        "graph_batch": GRAPH_BATCH,
        "notes": notes,
    }
    try:
        import cupy

        results["cupy"] = cupy.__version__
    except ImportError:
        results["cupy"] = None
    configs = QUICK if args.quick else FULL
    if args.sizes:
        wanted = {int(v) for v in args.sizes.split(",")}
        configs = [c for c in configs if c[0] in wanted]
    results["rounds"] = args.rounds
    results["loops"] = loops(configs, args.reps, max(1, args.rounds), cpp, backend)
    if cpp is not None:
        results["cpp_experiments"] = cpp_experiments(cpp, args.reps, args.quick)
    if not args.no_analysis:
        sizes = [(256, 2001, 5)] + ([(2**12, 100, 3)] if args.quick else [(2**20, 100, 3)])
        results["analysis"] = [insitu(nx, steps, min(reps, args.reps)) for nx, steps, reps in sizes]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
