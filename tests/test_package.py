"""The package surface: PyCUDA's submodule names reachable as attributes of ``pygpu``."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "name", ["gpuarray", "driver", "cumath", "curandom", "compiler", "tools", "elementwise", "reduction", "scan", "vec"]
)
def test_submodule_is_an_attribute_after_import_pygpu(name: str) -> None:
    code = f"import pygpu, types; m = pygpu.{name}; assert isinstance(m, types.ModuleType), m; print(m.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"pygpu.{name}"


def test_import_pygpu_does_not_import_the_submodules() -> None:
    code = "import sys, pygpu; print(sorted(m for m in sys.modules if m.startswith('pygpu.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout
    for name in ("pygpu.gpuarray", "pygpu.cumath", "pygpu.curandom", "pygpu.compiler", "pygpu.driver", "numpy"):
        assert f"'{name}'" not in loaded


def test_unknown_attribute_still_raises() -> None:
    import pygpu

    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        pygpu.no_such_thing  # noqa: B018


@pytest.mark.parametrize("module", ["pygpu._driver.devices", "pygpu._driver.pinned", "pygpu.gpuarray"])
def test_all_holds_the_lazy_modules_names(module: str) -> None:
    import importlib

    import pygpu

    names = importlib.import_module(module).__all__
    assert set(names) <= set(pygpu.__all__)
    for name in names:
        assert getattr(pygpu, name) is getattr(importlib.import_module(module), name), name


def test_all_and_star_import_load_what_they_name() -> None:
    """At run time pygpu.__all__ is completed on first use (numpy stays unloaded until then)."""
    code = (
        "import sys, pygpu; assert 'numpy' not in sys.modules; d = pygpu.Device;"
        " assert 'numpy' not in sys.modules, 'a lazy name loads only the modules before its own';"
        " ns = {}; exec('from pygpu import *', ns); missing = set(pygpu.__all__) - set(ns);"
        " assert not missing, missing; assert 'numpy' in sys.modules;"
        " assert len(pygpu.__all__) == len(set(pygpu.__all__)); print(len(pygpu.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) > 100


def test_private_names_never_load_the_lazy_modules() -> None:
    code = "import sys, pygpu; print(hasattr(pygpu, '__wrapped__'), hasattr(pygpu, '_x'), 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_import_pygpu_as_gpuarray_reaches_every_gpuarray_name() -> None:
    import pygpu
    import pygpu.gpuarray

    for name in pygpu.gpuarray.__all__:
        assert getattr(pygpu, name) is getattr(pygpu.gpuarray, name), name
        assert name in pygpu.__all__
        assert name in dir(pygpu)
    assert len(pygpu.__all__) == len(set(pygpu.__all__))
