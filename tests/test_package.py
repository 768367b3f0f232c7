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


@pytest.mark.parametrize("module", ["pygpu._pinned", "pygpu.gpuarray"])
def test_lazy_table_is_the_submodules_all(module: str) -> None:
    import importlib

    import pygpu

    assert sorted(pygpu._LAZY_MODULES[module]) == sorted(importlib.import_module(module).__all__)


def test_import_pygpu_as_gpuarray_reaches_every_gpuarray_name() -> None:
    import pygpu
    import pygpu.gpuarray

    for name in pygpu.gpuarray.__all__:
        assert getattr(pygpu, name) is getattr(pygpu.gpuarray, name), name
        assert name in pygpu.__all__
        assert name in dir(pygpu)
    assert len(pygpu.__all__) == len(set(pygpu.__all__))
