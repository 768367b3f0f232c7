"""Timing helpers shared by every benchmark script: many calls per sample, 7 samples,
the median; perf_counter_ns throughout.

A per-call figure times a statement compiled into timeit's loop, so the harness adds
only the loop's own cost (about 10 ns a call, measured and reported as `loop_ns`) and
the same for every library. Each script prints one JSON object on stdout:
``{"library": ..., "figures": {name: value}, "errors": {name: text}, "notes": {...}}``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
import timeit
import traceback
from collections.abc import Callable
from typing import Any

SAMPLES = 7
MIB = 1 << 20

# Figures every script may report, in table order: name -> (label, unit, better).
# better: "lower" (time per call) or "higher" (bandwidth).
FIGURES: dict[str, tuple[str, str, str]] = {
    "get_device": ("cudaGetDevice", "µs", "lower"),
    "event_record": ("event record", "µs", "lower"),
    "stream_sync_idle": ("idle stream synchronize", "µs", "lower"),
    "malloc_free_1mib": ("1 MiB malloc + free", "µs", "lower"),
    "memcpy_htod_8b": ("8 B memcpy H2D", "µs", "lower"),
    "memcpy_dtoh_8b": ("8 B memcpy D2H", "µs", "lower"),
    "to_gpu_8b": ("to_gpu 8 B", "µs", "lower"),
    "get_8b": ("get 8 B", "µs", "lower"),
    "launch_empty": ("launch, no arguments", "µs", "lower"),
    "launch_args": ("launch (ptr, int, double), call", "µs", "lower"),
    "launch_args_prepared": ("launch (ptr, int, double), prepared", "µs", "lower"),
    "graph_launch": ("graph launch (1 kernel)", "µs", "lower"),
    "htod_pageable_256mib": ("256 MiB H2D pageable", "GB/s", "higher"),
    "dtoh_pageable_256mib": ("256 MiB D2H pageable", "GB/s", "higher"),
    "htod_pinned_256mib": ("256 MiB H2D pinned", "GB/s", "higher"),
    "dtoh_pinned_256mib": ("256 MiB D2H pinned", "GB/s", "higher"),
    "dtod_256mib": ("256 MiB D2D (read+write)", "GB/s", "higher"),
}


class Config:
    """How long to measure: --quick shortens every sample (for CI and smoke runs)."""

    def __init__(self, quick: bool = False) -> None:
        self.quick = quick
        self.samples = 3 if quick else SAMPLES
        # Target duration of one sample of a per-call figure, in seconds.
        self.sample_s = 0.002 if quick else 0.03
        self.bandwidth_bytes = (1 * MIB) if quick else (256 * MIB)
        self.bandwidth_reps = 1 if quick else 3


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def _timer(stmt: str, setup: str, namespace: dict[str, Any]) -> timeit.Timer:
    return timeit.Timer(stmt, setup, timer=time.perf_counter_ns, globals=namespace)


def per_call_us(
    cfg: Config,
    stmt: str,
    namespace: dict[str, Any],
    setup: str = "pass",
    after: Callable[[], object] | None = None,
    max_calls: int = 1_000_000,
) -> float:
    """Median over samples of the time per execution of `stmt`, in µs.

    `after` (e.g. a stream synchronize) runs once at the end of each sample and is
    counted in it, so queued GPU work is paid for by the sample that queued it.
    """
    timer = _timer(stmt, setup, namespace)

    def sample(n: int) -> float:
        t0 = time.perf_counter_ns()
        timer.timeit(n)
        if after is not None:
            after()
        return (time.perf_counter_ns() - t0) / n

    # Warm up and calibrate: grow n until one sample lasts about cfg.sample_s.
    n = 1
    while True:
        t0 = time.perf_counter_ns()
        sample(n)
        elapsed = (time.perf_counter_ns() - t0) / 1e9
        if elapsed >= cfg.sample_s / 4 or n >= max_calls:
            break
        n *= 4
    if elapsed > 0:
        n = max(1, min(max_calls, int(n * cfg.sample_s / elapsed)))
    results = [sample(n) for _ in range(cfg.samples)]
    return median(results) / 1e3


def bandwidth_gbs(
    cfg: Config, copy: Callable[[], object], nbytes: int, finish: Callable[[], object] | None = None
) -> float:
    """Median GB/s (1e9 bytes/s) of `copy` moving `nbytes`; `finish` waits for async work."""
    copy()
    if finish is not None:
        finish()
    results = []
    for _ in range(cfg.samples):
        t0 = time.perf_counter_ns()
        for _ in range(cfg.bandwidth_reps):
            copy()
        if finish is not None:
            finish()
        t1 = time.perf_counter_ns()
        results.append(nbytes * cfg.bandwidth_reps / ((t1 - t0) / 1e9) / 1e9)
    return median(results)


def loop_ns(cfg: Config) -> float:
    """The harness's own cost per iteration (an empty statement), in ns."""
    return per_call_us(cfg, "pass", {}) * 1e3


class Results:
    """Collects figures; a figure that raises is recorded as an error, not fatal."""

    def __init__(self, library: str) -> None:
        self.library = library
        self.figures: dict[str, float] = {}
        self.errors: dict[str, str] = {}
        self.notes: dict[str, Any] = {}
        # Later rounds of bench/run.py repeat only the per-call figures.
        self.skip_bandwidth = False

    def measure(self, name: str, fn: Callable[[], float]) -> None:
        if self.skip_bandwidth and FIGURES.get(name, ("", "", ""))[1] == "GB/s":
            return
        try:
            value = float(fn())
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"non-positive or non-finite result {value!r}")
            self.figures[name] = value
        except Exception as e:  # noqa: BLE001 (any failure becomes a reported error)
            self.errors[name] = f"{type(e).__name__}: {e}".strip()[:500]
            if os.environ.get("BENCH_DEBUG"):
                traceback.print_exc()

    def missing(self, name: str, why: str) -> None:
        if self.skip_bandwidth and FIGURES.get(name, ("", "", ""))[1] == "GB/s":
            return
        self.errors[name] = f"not measured: {why}"

    def as_dict(self) -> dict[str, Any]:
        return {"library": self.library, "figures": self.figures, "errors": self.errors, "notes": self.notes}

    def emit(self) -> None:
        json.dump(self.as_dict(), sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()


def ptx_path() -> str:
    """The PTX of kernels/testing.cu shipped in the pygpu package (or the source tree)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "..", "python", "pygpu", "kernels", "testing.ptx")]
    try:
        import importlib.util

        spec = importlib.util.find_spec("pygpu")
        if spec is not None and spec.origin:
            candidates.insert(0, os.path.join(os.path.dirname(spec.origin), "kernels", "testing.ptx"))
    except Exception:  # noqa: BLE001
        pass
    for c in candidates:
        if os.path.isfile(c):
            return os.path.abspath(c)
    raise FileNotFoundError("testing.ptx not found: run kernels/build.sh cuda")
