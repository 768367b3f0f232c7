"""Every public name has a docstring: each callable and class in the ``__all__`` of pygpu and of its
PyCUDA-compatible modules (what ``help()`` and the docs' API reference show), and the package
itself opens ``help(pygpu)`` with an overview and an example."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pygpu

#: Public modules beyond pygpu's lazily imported ones (pygpu._SUBMODULES, read below, so that a
#: module added there is checked too).
EXTRA_MODULES = ("pygpu.pycuda_alias",)
#: Modules whose import makes a context current (PyCUDA's autoinit): read, not imported, so
#: that this test leaves the process as it found it. They define no callables.
SIDE_EFFECT_MODULES = ("pygpu.autoinit", "pygpu.autoprimaryctx")


def _public_modules() -> list[ModuleType]:
    names = ["pygpu", *sorted(f"pygpu.{name}" for name in pygpu._SUBMODULES), *EXTRA_MODULES]
    return [importlib.import_module(name) for name in names]


def _own_doc(obj: object) -> str:
    doc = getattr(obj, "__doc__", None)
    # A class without a docstring of its own can inherit its base's through __doc__ on some
    # types (enum members, exceptions); only text the class itself defines counts.
    if inspect.isclass(obj) and doc is not None and doc in {base.__doc__ for base in obj.__mro__[1:]}:
        return ""
    return (doc or "").strip()


def _undocumented() -> list[str]:
    missing = []
    seen: set[int] = set()
    for module in _public_modules():
        if not (module.__doc__ or "").strip():
            missing.append(f"{module.__name__} (the module)")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (callable(obj) or inspect.isclass(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            if not _own_doc(obj):
                missing.append(f"{module.__name__}.{name}")
    return missing


def test_every_public_callable_and_class_has_a_docstring() -> None:
    missing = _undocumented()
    assert not missing, (
        f"{len(missing)} public names have no docstring (Python: a docstring; a Rust #[pyclass] or "
        f"#[pyfunction]: a /// doc comment): {', '.join(missing)}"
    )


def test_the_walk_sees_the_whole_surface() -> None:
    # The check above is only as good as the names it walks: the top level, the driver and
    # gpuarray must all be in it (a failed import would otherwise shrink it silently).
    names = {f"{m.__name__}.{n}" for m in _public_modules() for n in getattr(m, "__all__", ())}
    for expected in (
        "pygpu.cudaGetDevice",
        "pygpu.DeviceArray_float64",
        "pygpu.driver.mem_alloc",
        "pygpu.gpuarray.GPUArray",
        "pygpu.compiler.SourceModule",
        "pygpu.vec.make_float4",
    ):
        assert expected in names
    assert len(names) > 400


def test_modules_imported_for_their_side_effect_have_docstrings() -> None:
    for name in SIDE_EFFECT_MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        tree = ast.parse(Path(spec.origin).read_text())
        assert (ast.get_docstring(tree) or "").strip(), f"{name} has no module docstring"
        public = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name[0] != "_"]
        assert not public, f"{name} defines public callables this test does not check: {public}"


def test_help_opens_with_an_overview_and_an_example() -> None:
    doc = pygpu.__doc__ or ""
    first = doc.strip().splitlines()[0]
    assert "pygpu" in first and "GPU" in first
    assert "PYGPU_BACKEND=host" in doc, "the overview says how to run without a GPU"
    assert ">>> " in doc, "the package docstring has an example"
