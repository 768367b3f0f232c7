"""bench/launch_bench.py runs on the test backend and reports a positive figure for every call
(no timing assertions: CI machines are shared)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import launch_bench  # noqa: E402


def test_launch_bench_reports_every_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "launch.json"
    monkeypatch.setattr(sys, "argv", ["launch_bench.py", "--calls", "3", "--rounds", "1", "--json", str(out)])
    assert launch_bench.main() == 0
    figures = json.loads(out.read_text())["us_per_call"]
    assert set(figures) == set(launch_bench.pygpu_calls())
    assert all(math.isfinite(row["pygpu"]) and row["pygpu"] > 0 for row in figures.values())
