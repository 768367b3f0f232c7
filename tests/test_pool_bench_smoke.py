"""bench/alloc_bench.py and bench/copies.py in --quick mode on the test backend: they run and
report positive, finite figures for every allocator and size (no timing assertions: CI
machines are shared)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run(script: str, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _positive(value: float) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


def test_alloc_bench_reports_every_allocator_and_size() -> None:
    result = _run("alloc_bench.py")
    assert result["errors"] == {}
    assert {"gpuarray_pool", "DeviceMemoryPool", "mem_alloc"} <= set(result["pairs_us"])
    for per_size in result["pairs_us"].values():
        assert per_size and all(_positive(v) for v in per_size.values())
    assert all(_positive(v) for v in result["snapshot_loop_us_per_step"].values())
    assert _positive(result["DeviceMemoryPool_held_1MiB_us"])


def test_copies_bench_reports_both_directions() -> None:
    result = _run("copies.py")
    series = result["series"]
    assert {"pygpu pageable (staged)", "pygpu pageable (one call)", "pygpu pinned"} <= set(series)
    for figures in series.values():
        assert "error" not in figures, figures
        assert all(_positive(v["htod"]) and _positive(v["dtoh"]) for v in figures.values())
