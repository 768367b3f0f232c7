"""bench/pygpu_bench.py's figures in --quick mode on the test backend: each returns a
positive, finite number (no timing assertions: CI machines are shared)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import pygpu_bench  # noqa: E402
from common import FIGURES, Config, per_call_us  # noqa: E402


@pytest.fixture(scope="module")
def context() -> pygpu_bench.Context:
    return pygpu_bench.Context(Config(quick=True))


def test_every_table_figure_has_a_function() -> None:
    assert set(pygpu_bench.FIGURES) == set(FIGURES)


@pytest.mark.parametrize("name", list(pygpu_bench.FIGURES))
def test_figure_is_positive_and_finite(name: str, context: pygpu_bench.Context) -> None:
    if not pygpu_bench.available(name):
        pytest.skip(f"pygpu.{pygpu_bench.NEEDS[name]} does not exist yet")
    value = pygpu_bench.FIGURES[name](Config(quick=True), context)
    assert isinstance(value, float) and math.isfinite(value) and value > 0


def test_breakdown_is_positive_and_finite(context: pygpu_bench.Context) -> None:
    values = pygpu_bench.breakdown(Config(quick=True), context)
    assert values and all(math.isfinite(v) and v > 0 for v in values.values())


def test_run_reports_every_figure() -> None:
    r = pygpu_bench.run(Config(quick=True), with_breakdown=False)
    assert set(r.figures) | set(r.errors) == set(FIGURES)
    assert not {k: v for k, v in r.errors.items() if "does not exist yet" not in v}


def test_per_call_counts_the_tail() -> None:
    # The `after` call runs once per sample and is counted in it.
    calls = []
    per_call_us(Config(quick=True), "pass", {}, after=lambda: calls.append(1))
    assert calls


def test_burgers_loop_figures_come_from_fresh_processes(tmp_path: Path) -> None:
    # bench/burgers.py at the seeds' size: every configuration's repetitions, each round in a
    # process of its own, and the same solution in every mode (the C++ baseline is the GPU
    # machine's benchmark run, not a test's).
    import json
    import os
    import subprocess

    out = tmp_path / "burgers.json"
    backend = os.environ.get("PYGPU_BACKEND", "host")
    cmd = [sys.executable, str(BENCH / "burgers.py"), "--quick", "--no-analysis", "--no-cpp", "--sizes", "256"]
    cmd += ["--rounds", "2", "--reps", "3", "--backend", backend, "--json", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    loops = json.loads(out.read_text())["loops"]
    assert [(r["snapshots"], r["mode"]) for r in loops] == [
        (True, "plain"),
        (True, "graph"),
        (True, "device"),
        (False, "plain"),
        (False, "graph"),
        (False, "device"),
    ]
    for r in loops:
        assert len(r["pygpu_seconds"]) == 4  # 2 rounds of ceil(3 / 2) repetitions
        assert all(s > 0 for s in r["pygpu_seconds"]) and math.isfinite(r["pygpu_u10"])
    # Every mode steps the same problem to the same solution.
    assert len({round(r["pygpu_u10"], 12) for r in loops}) == 1
