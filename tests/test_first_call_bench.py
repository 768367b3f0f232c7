"""bench/first_call.py on the test backend: one operation in fresh processes gives finite,
positive figures and names the module it loaded (no timing assertions: CI machines are shared)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import first_call  # noqa: E402


def test_first_call_figures_for_one_operation() -> None:
    report = first_call.measure(1, ["a + b (float64)"])
    assert list(report) == ["a + b (float64)"]
    row = report["a + b (float64)"]
    assert row["module"] == "arith_f64"
    assert isinstance(row["module_bytes"], int) and 0 < row["module_bytes"] < 1 << 20
    for key in ("cold_warm_ms", "primed_warm_ms", "module_load_ms", "import_ms"):
        assert math.isfinite(row[key]) and row[key] > 0, key
    for key in ("cold_first_over_warm_ms", "primed_first_over_warm_ms"):
        assert math.isfinite(row[key]), key


def test_every_operation_names_an_existing_kernel_module() -> None:
    for name, (_setup, _statement, target) in first_call.OPS.items():
        assert first_call.module_bytes(*target), name
