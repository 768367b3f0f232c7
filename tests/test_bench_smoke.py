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
