"""Every public name has a docstring: each callable and class in the ``__all__`` of pygpu and of its
PyCUDA-compatible modules (what ``help()`` and the docs' API reference show), each public member
(method, property, getter, slot) of those classes, and the package itself opens ``help(pygpu)``
with an overview and an example."""

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
SIDE_EFFECT_MODULES = ("pygpu.autoinit", "pygpu.autoprimaryctx", "pygpu.debug")


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


def _is_api_member(value: object) -> bool:
    # Methods and descriptors (properties, Rust getters and fields, __slots__ attributes), not
    # constants or enum members: a plain value has its type's docstring, not one of its own.
    return (
        inspect.isroutine(value)
        or inspect.isdatadescriptor(value)
        or isinstance(value, (staticmethod, classmethod))
        or inspect.isclass(value)
    )


def _member_doc(owner: type, name: str, value: object) -> str:
    if inspect.isclass(value):
        return _own_doc(value)
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    doc = getattr(value, "__doc__", None)
    # A __slots__ attribute is documented by its value in a dict __slots__, which help(),
    # inspect.getdoc and the API reference read (its __doc__ stays None before Python 3.13).
    slots = vars(owner).get("__slots__")
    if not doc and inspect.ismemberdescriptor(value) and isinstance(slots, dict):
        doc = slots.get(name)
    return (doc or "").strip() if isinstance(doc, str) else ""


def _undocumented_members(cls: type, where: str) -> list[str]:
    return [
        f"{where}.{name}"
        for name, value in vars(cls).items()
        if not name.startswith("_") and _is_api_member(value) and not _member_doc(cls, name, value)
    ]


def _undocumented_class_members() -> list[str]:
    """The public members without a docstring of every public class: those it defines, and those
    it inherits from pygpu's private bases (mixins, shared implementations), which help() shows
    as its own. A base that is itself public is checked as such, and each class once."""
    public: dict[int, str] = {}
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isclass(obj):
                public.setdefault(id(obj), f"{module.__name__}.{name}")
    missing = []
    private_bases: dict[int, tuple[type, str]] = {}
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            cls = getattr(module, name)
            if not inspect.isclass(cls) or public.get(id(cls)) != f"{module.__name__}.{name}":
                continue
            missing += _undocumented_members(cls, f"{module.__name__}.{name}")
            for base in cls.__mro__[1:]:
                if id(base) not in public and base.__module__.split(".")[0] == "pygpu":
                    private_bases.setdefault(id(base), (base, f"{module.__name__}.{name}"))
    for base, user in private_bases.values():
        missing += _undocumented_members(base, f"{base.__module__}.{base.__qualname__} (a base of {user})")
    return missing


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


def test_every_public_member_of_a_public_class_has_a_docstring() -> None:
    missing = _undocumented_class_members()
    assert not missing, (
        f"{len(missing)} public methods, properties or attributes of public classes have no "
        f"docstring (Python: a docstring, a __slots__ attribute: its value in a dict __slots__; "
        f"Rust #[pymethods], #[getter] or #[pyo3(get)] field: a /// doc comment): {', '.join(missing)}"
    )


def test_the_member_walk_sees_methods_getters_and_slots() -> None:
    # Each kind of member the check above reads, so that a change in how one is found (a
    # descriptor type, a dict __slots__) cannot silently drop it from the check.
    from pygpu.gpuarray import GPUArray

    cases = [
        (pygpu.cudaStream_t, "is_capturing"),  # Rust #[getter]
        (pygpu.cudaDeviceProp, "uuid"),  # Rust #[pyo3(get)] field holding a Python object
        (pygpu.Module, "get_function"),  # Rust method
        (pygpu.driver.Device, "count"),  # staticmethod
        (GPUArray, "T"),  # property
        (GPUArray, "size"),  # __slots__ attribute
        (pygpu._pygpu.ArrayStorage, "shape"),  # a member of a type Rust registers (GPUArray's base)
        (GPUArray, "squeeze"),  # method
    ]
    for owner, name in cases:
        value = vars(owner)[name]
        assert _is_api_member(value), f"{owner.__name__}.{name} is not walked"
        assert _member_doc(owner, name, value), f"{owner.__name__}.{name} has no docstring"
    # Constants and enum members are values, not API members with docstrings of their own.
    assert not _is_api_member(vars(pygpu.driver.event_flags)["DEFAULT"])
    assert not _is_api_member(vars(pygpu.pycuda_alias.PycudaAliasFinder)["is_pygpu_pycuda_alias"])


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
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        assert (ast.get_docstring(tree) or "").strip(), f"{name} has no module docstring"
        public = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name[0] != "_"]
        assert not public, f"{name} defines public callables this test does not check: {public}"


def test_help_opens_with_an_overview_and_an_example() -> None:
    doc = pygpu.__doc__ or ""
    first = doc.strip().splitlines()[0]
    assert "pygpu" in first and "GPU" in first
    assert "PYGPU_BACKEND=host" in doc, "the overview says how to run without a GPU"
    assert ">>> " in doc, "the package docstring has an example"
