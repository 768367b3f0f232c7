"""The Python examples of the documentation pages run, on the host backend (each block in a fresh
process, so that an example's imports and state are its own)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_python

ROOT = Path(__file__).resolve().parent.parent
#: Pages whose every ```python block is a complete program.
PAGES = ["docs/pycuda_libraries.md"]


def _examples() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for k, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            found.append((page, k, block))
    return found


@pytest.mark.parametrize("example", _examples(), ids=lambda e: f"{e[0]}:{e[1]}")
def test_docs_example_runs(example: tuple[str, int, str]) -> None:
    page, index, code = example
    result = run_python(code, env={"PYGPU_BACKEND": "host"})
    assert result.returncode == 0, f"{page}, example {index}:\n{result.stderr}"
