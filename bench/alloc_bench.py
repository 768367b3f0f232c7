#!/usr/bin/env python3
"""Allocators side by side (issues 15 and 16), on a GPU machine (not a test):

* alloc + free pairs of 8 B ... 256 MiB through GPUArray's pool (``pygpu.pool_alloc``),
  ``tools.DeviceMemoryPool``, plain ``mem_alloc`` (cuMemAlloc/cuMemFree), and CuPy's
  default memory pool when CuPy is importable;
* the headline figure: allocate + free of a held 1 MiB block from ``DeviceMemoryPool``,
  100 samples of 1,000 pairs (1e5 pairs), median (target <= 0.5 us, and <= CuPy's pool);
* a mixed workload shaped like the Burgers snapshot loop: per step two field-sized
  temporaries and an 8-byte reduction result, freed at the end of the step; every 10th step
  a field-sized snapshot kept until 4 newer ones exist. Reported as us per step.

    python3 bench/alloc_bench.py [--json out.json]          # on the GPU machine
    PYGPU_BACKEND=host python3 bench/alloc_bench.py --quick  # smoke run anywhere

Timing: perf_counter_ns around a loop of pairs, median of the samples; no device work is
queued, so nothing waits for the GPU except what an allocator does itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

import pygpu
from pygpu import tools

SIZES = [8 << (3 * k) for k in range(9)] + [256 << 20]  # 8 B, 64 B, ..., 128 MiB, 256 MiB
FIELD_BYTES = 8 * (1 << 20)  # the Burgers field: 1 Mi float64
SNAPSHOT_EVERY = 10
SNAPSHOTS_KEPT = 4

Allocate = Callable[[int], Any]
Release = Callable[[Any], None]


def _release(block: Any) -> None:
    block.free()


def per_pair_us(allocate: Allocate, release: Release, size: int, budget_s: float, samples: int) -> float:
    """Median us per allocate + release of `size` bytes; calibrated so a sample lasts ~budget_s.
    The pair is one statement in timeit's loop (no Python call around it), so the figure is the
    allocator's own cost plus ~10 ns of loop."""
    stmt = "allocate(size).free()" if release is _release else "allocate(size)"  # CuPy's frees on drop
    timer = timeit.Timer(stmt, globals={"allocate": allocate, "size": size}, timer=time.perf_counter_ns)
    timer.timeit(1)  # warm: the pools hold the block from here on
    n = 1
    while True:
        elapsed = timer.timeit(n) / 1e9
        if elapsed >= budget_s / 4 or n >= 1 << 16:
            break
        n *= 4
    n = max(1, int(n * budget_s / max(elapsed, 1e-9)))
    return float(statistics.median(timer.timeit(n) / n / 1e3 for _ in range(samples)))


def held_1mib_us(pool: tools.DeviceMemoryPool, samples: int = 100, pairs: int = 1000) -> float:
    """Median of `samples` samples of `pairs` allocate + free pairs of a held 1 MiB block."""
    allocate = pool.allocate
    allocate(1 << 20).free()
    results = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        for _ in range(pairs):
            allocate(1 << 20).free()
        results.append((time.perf_counter_ns() - t0) / pairs / 1e3)
    return float(statistics.median(results))


def snapshot_loop_us(allocate: Allocate, release: Release, steps: int, samples: int) -> float:
    """Median us per step of the Burgers-shaped allocation pattern."""

    def run() -> float:
        kept: list[Any] = []
        t0 = time.perf_counter_ns()
        for step in range(steps):
            a, b, r = allocate(FIELD_BYTES), allocate(FIELD_BYTES), allocate(8)
            if step % SNAPSHOT_EVERY == 0:
                kept.append(allocate(FIELD_BYTES))
                if len(kept) > SNAPSHOTS_KEPT:
                    release(kept.pop(0))
            release(r)
            release(b)
            release(a)
        elapsed = (time.perf_counter_ns() - t0) / steps / 1e3
        for block in kept:
            release(block)
        return elapsed

    run()
    return float(statistics.median(run() for _ in range(samples)))


def allocators() -> dict[str, tuple[Allocate, Release]]:
    pool = tools.DeviceMemoryPool()
    found: dict[str, tuple[Allocate, Release]] = {
        "gpuarray_pool": (pygpu.pool_alloc, _release),
        "DeviceMemoryPool": (pool.allocate, _release),
        "mem_alloc": (pygpu.mem_alloc, _release),
    }
    try:
        import cupy as cp  # type: ignore[import-not-found]

        cupy_pool = cp.get_default_memory_pool()
        found["cupy_pool"] = (cupy_pool.malloc, lambda block: None)  # freed when the last reference goes
    except ImportError:
        pass
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--quick", action="store_true", help="short samples, small sizes (smoke run)")
    args = parser.parse_args()
    samples, budget = (3, 0.002) if args.quick else (7, 0.03)
    sizes = [s for s in SIZES if s <= (1 << 20)] if args.quick else SIZES
    results: dict[str, Any] = {"backend": pygpu.backend(), "pairs_us": {}, "errors": {}}
    for name, (allocate, release) in allocators().items():
        per_size: dict[str, float] = {}
        for size in sizes:
            try:
                per_size[str(size)] = per_pair_us(allocate, release, size, budget, samples)
            except Exception as e:  # noqa: BLE001 - a failing size is reported, not fatal
                results["errors"][f"{name}/{size}"] = f"{type(e).__name__}: {e}"[:300]
        results["pairs_us"][name] = per_size
        try:
            results.setdefault("snapshot_loop_us_per_step", {})[name] = snapshot_loop_us(
                allocate, release, 50 if args.quick else 1000, samples
            )
        except Exception as e:  # noqa: BLE001
            results["errors"][f"{name}/snapshot_loop"] = f"{type(e).__name__}: {e}"[:300]
    results["DeviceMemoryPool_held_1MiB_us"] = held_1mib_us(tools.DeviceMemoryPool(), 10 if args.quick else 100)
    json.dump(results, sys.stdout, indent=1)
    sys.stdout.write("\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
