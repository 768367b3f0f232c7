"""The package's floors (docs/architecture.md), read from the source without importing it, so
that they hold where import-linter (scripts/lint.sh) does not run: a module imports only from
its floor and the floors below (pyproject.toml's `floors` contract lists them), no submodule
imports the package `pygpu` itself, and the imports that run when a module is imported (its
module-level ones) form no circle."""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "pygpu"
COMPILED = "pygpu._pygpu"  # the extension module: the floor below every other, importing nothing


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()
KNOWN = set(MODULES) | {COMPILED}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.Module, import_time_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement; with ``import_time_only``, those that run when the module is imported:
    not inside functions, not under ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if import_time_only:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                stack.extend(node.orelse)
                continue
        stack.extend(ast.iter_child_nodes(node))


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of the package an import statement loads, as import-linter counts them: the
    named module itself (``from pygpu.x import y`` is an import of pygpu.x.y when that is a module,
    else of pygpu.x)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "pygpu"]
    if node.level:
        base = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    if source.split(".")[0] != "pygpu":
        return []
    out = []
    for alias in node.names:
        child = f"{source}.{alias.name}"
        out.append(child if child in KNOWN else source)
    return out


def _edges(import_time_only: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges[module] = {
            target
            for node in _import_nodes(tree, import_time_only)
            for target in _targets(module, node)
            if target != module
        }
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges)))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return circles


def _floors() -> list[list[str]]:
    """pyproject.toml's floors, bottom first, each a list of module names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "floors"]
    (container,) = contract["containers"]
    layers = [[f"{container}.{name.strip()}" for name in layer.split(":")] for layer in reversed(contract["layers"])]
    return [[COMPILED], *layers, [container]]


def _floor_of(module: str, floors: list[list[str]]) -> int:
    """The floor of a module: that of the longest floor name it is or lies under (the package
    itself, the top floor, holds only its __init__)."""
    best = (-1, -1)
    for level, names in enumerate(floors):
        for name in names:
            inside = module.startswith(name + ".") and level < len(floors) - 1
            if (module == name or inside) and len(name) > best[1]:
                best = (level, len(name))
    assert best[0] >= 0, f"{module} is on no floor: add it to pyproject.toml's floors contract"
    return best[0]


def test_the_floors_cover_every_module() -> None:
    floors = _floors()
    for module in MODULES:
        _floor_of(module, floors)
    with pytest.raises(AssertionError, match="on no floor"):
        _floor_of("pygpu.not_a_module_yet", floors)
    assert {"pygpu._driver", "pygpu._toolchain", "pygpu.gpuarray", "pygpu._kernelgen"} <= {
        name for names in floors for name in names
    }


def test_no_module_imports_a_floor_above_its_own() -> None:
    """Inside functions and under TYPE_CHECKING too: a lazy import upwards is still a dependency."""
    floors = _floors()
    upward = [
        f"{module} -> {target}"
        for module, targets in _edges(import_time_only=False).items()
        for target in sorted(targets)
        if _floor_of(target, floors) > _floor_of(module, floors)
    ]
    assert not upward, "imports from a higher floor (docs/architecture.md):\n" + "\n".join(upward)


def test_no_submodule_imports_the_package() -> None:
    """``import pygpu`` inside the package reaches the top floor (``pygpu.backend()`` is
    ``pygpu._pygpu.backend``): submodules import the module that defines what they use."""
    offenders = [
        module for module, targets in _edges(import_time_only=False).items() if module != "pygpu" and "pygpu" in targets
    ]
    assert not offenders, f"modules importing the package pygpu itself: {offenders}"


def _circles_at_import_time() -> list[list[str]]:
    return _circles(_edges(import_time_only=True))


def test_no_import_circle_outside_gpuarray() -> None:
    circles = [c for c in _circles_at_import_time() if any(not m.startswith("pygpu.gpuarray") for m in c)]
    assert not circles, f"module-level imports in a circle: {circles}"


def test_no_import_circle_inside_gpuarray() -> None:
    circles = [c for c in _circles_at_import_time() if all(m.startswith("pygpu.gpuarray") for m in c)]
    assert not circles, f"module-level imports in a circle: {circles}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import pygpu\n", {"pygpu"}),
        ("from pygpu import _pygpu, driver\n", {"pygpu._pygpu", "pygpu.driver"}),
        ("from pygpu import backend\n", {"pygpu"}),
        ("from pygpu.gpuarray._core import GPUArray\n", {"pygpu.gpuarray._core"}),
        ("from . import devices\n", {"pygpu._driver.devices"}),
        ("def f():\n    from pygpu import tools\n", set()),
        ("if TYPE_CHECKING:\n    from pygpu import tools\n", set()),
        ("try:\n    from pygpu import tools\nexcept ImportError:\n    pass\n", {"pygpu.tools"}),
    ],
)
def test_the_reader_counts_what_runs_at_import_time(source: str, expected: set[str]) -> None:
    """The checks above see what a module imports (else they would pass on anything)."""
    tree = ast.parse(source)
    found = {t for node in _import_nodes(tree, import_time_only=True) for t in _targets("pygpu._driver.c_types", node)}
    assert found == expected


def test_the_circle_finder_finds_circles() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
