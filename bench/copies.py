#!/usr/bin/env python3
"""Host <-> device copy bandwidth from 4 KiB to 1 GiB (issue 16), on a GPU machine:

* pygpu, pageable numpy memory, H2D and D2H, with the staged path (src/runtime/cuda/copy.rs)
  at its defaults and with it off (``PYGPU_STAGED_COPY=0``: one driver call, as before);
* cuda.bindings ``cuMemcpyHtoD``/``cuMemcpyDtoH`` of the same kind of pageable buffer: what
  C++'s pageable ``cudaMemcpy`` does;
* pygpu from page-locked memory (``pagelocked_empty``), the link's reference.

With ``--sweep`` it also times the staged path over chunk sizes, buffer counts and threads
(``PYGPU_STAGED_COPY_*`` in child processes, no rebuild) and prints the constants to put in
src/runtime/cuda/copy.rs: the best setting for >= 64 MiB, and the smallest size from which
staging is never slower than one driver call.

    python3 bench/copies.py [--json out.json] [--plot copies.png] [--sweep]   # GPU machine
    PYGPU_BACKEND=host python3 bench/copies.py --quick                      # smoke run

Each figure: GB/s (1e9 B/s), median of 5 samples, each sample at least ~20 ms of copies
(one copy for the large sizes); the host buffers are touched before timing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

KiB, MiB = 1 << 10, 1 << 20
SIZES = [4 * KiB << (2 * k) for k in range(10)]  # 4 KiB, 16 KiB, ..., 1 GiB
SAMPLES = 5
SAMPLE_S = 0.02


def gbs(copy: Callable[[], None], nbytes: int, finish: Callable[[], None], quick: bool) -> float:
    copy()
    finish()
    t0 = time.perf_counter_ns()
    copy()
    finish()
    once = max((time.perf_counter_ns() - t0) / 1e9, 1e-7)
    reps = 1 if quick else max(1, int(SAMPLE_S / once))
    results = []
    for _ in range(3 if quick else SAMPLES):
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            copy()
        finish()
        results.append(nbytes * reps / ((time.perf_counter_ns() - t0) / 1e9) / 1e9)
    return float(statistics.median(results))


def pygpu_worker(sizes: list[int], pinned: bool, quick: bool) -> dict[str, dict[str, float]]:
    import pygpu
    from pygpu import driver

    out: dict[str, dict[str, float]] = {}
    for size in sizes:
        host = driver.pagelocked_empty(size, np.uint8) if pinned else np.empty(size, np.uint8)
        host.fill(1)
        back = driver.pagelocked_empty(size, np.uint8) if pinned else np.empty(size, np.uint8)
        back.fill(2)
        device = pygpu.mem_alloc(size)
        sync = pygpu.cudaDeviceSynchronize
        out[str(size)] = {
            "htod": gbs(lambda: pygpu.memcpy_htod(device, host), size, sync, quick),
            "dtoh": gbs(lambda: pygpu.memcpy_dtoh(back, device), size, sync, quick),
        }
        assert back[0] == 1 and back[-1] == 1
        device.free()
    return out


def bindings_worker(sizes: list[int], quick: bool) -> dict[str, dict[str, float]]:
    from cuda.bindings import driver as cu  # type: ignore[import-not-found]

    def check(result: Any) -> Any:
        err = result[0] if isinstance(result, tuple) else result
        if int(err) != 0:
            raise RuntimeError(f"cuda.bindings: {err}")
        return result[1] if isinstance(result, tuple) and len(result) == 2 else result

    check(cu.cuInit(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(check(cu.cuDeviceGet(0))))
    check(cu.cuCtxSetCurrent(ctx))
    out: dict[str, dict[str, float]] = {}
    for size in sizes:
        host = np.ones(size, np.uint8)
        back = np.full(size, 2, np.uint8)
        device = check(cu.cuMemAlloc(size))

        def finish() -> None:
            check(cu.cuCtxSynchronize())

        out[str(size)] = {
            "htod": gbs(lambda: check(cu.cuMemcpyHtoD(device, host.ctypes.data, size)), size, finish, quick),
            "dtoh": gbs(lambda: check(cu.cuMemcpyDtoH(back.ctypes.data, device, size)), size, finish, quick),
        }
        check(cu.cuMemFree(device))
    return out


def run_worker(kind: str, sizes: list[int], quick: bool, env: dict[str, str] | None = None) -> Any:
    """Runs one worker in a fresh process (the staged path reads its settings once)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--sizes", ",".join(map(str, sizes))]
    if quick:
        cmd.append("--quick")
    done = subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-800:]}
    return json.loads(done.stdout)


def suggest(sweep: dict[str, Any], off: dict[str, Any], sizes: list[int]) -> dict[str, Any]:
    """The setting with the least page-locked memory (then the fewest threads) among those
    within 5 % of the best mean of H2D and D2H over sizes >= 64 MiB, and the smallest size from
    which it is never slower than one driver call."""
    large = [str(s) for s in sizes if s >= 64 * MiB] or [str(sizes[-1])]
    scored = []
    for key, figures in sweep.items():
        if "error" in figures:
            continue
        values = [figures[s][d] for s in large for d in ("htod", "dtoh") if s in figures]
        if values:
            scored.append((statistics.mean(values), key))
    if not scored or "error" in off:
        return {}
    top = max(scored)[0]

    def cost(key: str) -> tuple[int, int]:
        setting = dict(part.split("=") for part in key.split())
        return int(setting["chunk"].removesuffix("MiB")) * int(setting["buffers"]), int(setting["threads"])

    best = min((key for score, key in scored if score >= 0.95 * top), key=cost)
    figures = sweep[best]
    threshold = None
    for s in reversed(sizes):
        key = str(s)
        if key in figures and key in off and all(figures[key][d] >= off[key][d] for d in ("htod", "dtoh")):
            threshold = s
        else:
            break
    ranking = [f"{score:.1f} GB/s {key}" for score, key in sorted(scored, reverse=True)[:8]]
    return {"setting": best, "STAGED_COPY_MIN_BYTES": threshold, "ranking": ranking}


def plot(results: dict[str, Any], path: str) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, direction in zip(axes, ("htod", "dtoh"), strict=True):
        for name, figures in results["series"].items():
            if "error" in figures:
                continue
            xs = [int(s) for s in figures]
            ax.plot(xs, [figures[s][direction] for s in figures], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_title("H2D" if direction == "htod" else "D2H")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("GB/s")
    axes[1].legend(fontsize=8)
    fig.suptitle(f"pageable copies ({results.get('device', '')})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--plot", help="write a PNG of GB/s against size (needs matplotlib)")
    parser.add_argument("--sweep", action="store_true", help="also time chunk sizes, buffers and threads")
    parser.add_argument("--quick", action="store_true", help="sizes up to 4 MiB, short samples (smoke run)")
    parser.add_argument("--worker", choices=["pygpu", "pygpu-pinned", "bindings"], help=argparse.SUPPRESS)
    parser.add_argument("--sizes", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sizes = [int(s) for s in args.sizes.split(",")]
        if args.worker == "bindings":
            figures = bindings_worker(sizes, args.quick)
        else:
            figures = pygpu_worker(sizes, args.worker == "pygpu-pinned", args.quick)
        json.dump(figures, sys.stdout)
        return 0

    import pygpu

    sizes = [s for s in SIZES if s <= 4 * MiB] if args.quick else SIZES
    results: dict[str, Any] = {"backend": pygpu.backend(), "series": {}}
    if pygpu.backend() != "host":
        results["device"] = pygpu.cudaDeviceProp(0).name
    series = results["series"]
    series["pygpu pageable (staged)"] = run_worker("pygpu", sizes, args.quick)
    series["pygpu pageable (one call)"] = run_worker("pygpu", sizes, args.quick, {"PYGPU_STAGED_COPY": "0"})
    series["pygpu pinned"] = run_worker("pygpu-pinned", sizes, args.quick)
    if pygpu.backend() == "cuda":
        series["cuda.bindings pageable (C++ cudaMemcpy)"] = run_worker("bindings", sizes, args.quick)
    if args.sweep:
        big = [s for s in sizes if s >= MiB]
        sweep = {}
        grid = [(c, t + extra, t) for c, t, extra in itertools.product((2, 4, 8, 16), (4, 8, 12, 16), (0, 4))]
        for chunk, buffers, threads in grid:
            key = f"chunk={chunk}MiB buffers={buffers} threads={threads}"
            env = {
                "PYGPU_STAGED_COPY_MIN_BYTES": "1",
                "PYGPU_STAGED_COPY_CHUNK_BYTES": str(chunk * MiB),
                "PYGPU_STAGED_COPY_BUFFERS": str(buffers),
                "PYGPU_STAGED_COPY_THREADS": str(threads),
            }
            sweep[key] = run_worker("pygpu", big, args.quick, env)
        results["sweep"] = sweep
        results["suggested"] = suggest(sweep, series["pygpu pageable (one call)"], big)
    json.dump(results, sys.stdout, indent=1)
    sys.stdout.write("\n")
    for name, figures in series.items():
        if "error" in figures:
            print(f"{name}: {figures['error']}", file=sys.stderr)
            continue
        row = "  ".join(f"{int(s) // KiB}K:{v['htod']:.1f}/{v['dtoh']:.1f}" for s, v in figures.items())
        print(f"{name:42s} H2D/D2H GB/s  {row}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
