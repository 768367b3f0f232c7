"""``import pycuda.X`` as ``pygpu.X``, for libraries written for PyCUDA that you cannot edit.

Opt-in, never on by default::

    python -m pygpu.pycuda_alias install     # into this interpreter's site-packages (--target DIR)
    python -m pygpu.pycuda_alias status
    python -m pygpu.pycuda_alias remove      # or: pip uninstall pycuda

``install`` writes two things into site-packages: a ``.pth`` file that puts an import hook in
front of Python's finders at start-up, and a ``pycuda-<version>.dist-info`` folder, so that
``importlib.metadata.version("pycuda")`` (and ``pkg_resources``, and pip) answer with the PyCUDA
release pygpu follows. Under the hook ``pycuda``, ``pycuda.driver``, ``pycuda.gpuarray``, ... are
the very module objects ``pygpu``, ``pygpu.driver``, ``pygpu.gpuarray``, ...; a module pygpu does
not have raises ``ModuleNotFoundError`` naming it.

Both refuse when a real PyCUDA is importable: ``install`` says so, and an import of ``pycuda``
under an alias installed earlier raises ``ImportError`` naming where the real one is.

Within one process, ``enable()`` installs the hook without touching site-packages (a test's
``conftest.py``, a script that imports a PyCUDA-based library afterwards).

This module imports only the standard library at its top: the ``.pth`` file loads it by path at
every interpreter start-up, before (and without) importing pygpu.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from types import ModuleType

__all__ = ["PYCUDA_VERSION", "PycudaAliasFinder", "disable", "enable", "install", "main", "remove", "status"]

#: The PyCUDA release whose documented behaviour pygpu follows (and whose tests it runs).
PYCUDA_VERSION = "2026.1"

_PTH = "pygpu_pycuda_alias.pth"
_DIST_INFO = f"pycuda-{PYCUDA_VERSION}.dist-info"
_INSTALLER = "pygpu.pycuda_alias"


class PycudaAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The import hook: finds ``pycuda[.X]`` as the already imported (or imported now) ``pygpu[.X]``."""

    is_pygpu_pycuda_alias = True

    def __init__(self) -> None:
        self._own_specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for ``pycuda`` and ``pycuda.X`` (loaded as ``pygpu[.X]``), None for other
        names; raises ImportError if a real PyCUDA is installed too."""
        if fullname != "pycuda" and not fullname.startswith("pycuda."):
            return None
        if fullname == "pycuda":
            real = _real_pycuda_spec()
            if real is not None:
                raise ImportError(
                    f"a real PyCUDA is installed ({real.origin}), and so is pygpu's alias of it: "
                    "remove one of them (python -m pygpu.pycuda_alias remove, or pip uninstall pycuda)",
                    name="pycuda",
                )
        target_name = "pygpu" + fullname[len("pycuda") :]
        if fullname == "pycuda" and importlib.util.find_spec("pygpu") is None:
            raise ModuleNotFoundError(
                "No module named 'pycuda': pygpu's PyCUDA alias is installed, but pygpu itself is not importable "
                "here (reinstall pygpu, or remove the alias: python -m pygpu.pycuda_alias remove)",
                name=fullname,
            )
        if importlib.util.find_spec(target_name) is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: pygpu, standing in for PyCUDA, has no {target_name!r}",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The ``pygpu`` module the alias stands for, imported if needed: ``pycuda.X is pygpu.X``."""
        module = importlib.import_module("pygpu" + spec.name[len("pycuda") :])
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Runs nothing (the module is already imported); keeps its ``__spec__`` pygpu's."""
        # The import system has just set the module's __spec__ to the alias's: it stays pygpu's.
        own = self._own_specs.pop(module.__spec__.name if module.__spec__ else "", None)
        if own is not None:
            module.__spec__ = own


def _is_alias(finder: object) -> bool:
    return getattr(finder, "is_pygpu_pycuda_alias", False) is True


def _real_pycuda_spec() -> importlib.machinery.ModuleSpec | None:
    """A ``pycuda`` package that some finder other than the alias finds."""
    for finder in sys.meta_path:
        if _is_alias(finder) or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec("pycuda", None)
        if spec is not None:
            return spec
    return None


def enable() -> None:
    """Puts the hook in front of this process's finders (once; a no-op when it is there)."""
    if not any(_is_alias(f) for f in sys.meta_path):
        sys.meta_path.insert(0, PycudaAliasFinder())


def disable() -> None:
    """Takes the hook out of this process (modules already imported as ``pycuda.X`` stay)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not _is_alias(f)]


def _site(target: str | None) -> str:
    return target or sysconfig.get_path("purelib")


def _ours(dist_info: str) -> bool:
    try:
        with open(os.path.join(dist_info, "INSTALLER"), encoding="utf-8") as f:
            return f.read().strip() == _INSTALLER
    except OSError:
        return False


def status(target: str | None = None) -> str:
    """Says whether the alias is installed in ``target`` (default: this interpreter's
    site-packages) and whether a real PyCUDA is importable."""
    site = _site(target)
    installed = os.path.exists(os.path.join(site, _PTH))
    real = None if installed else _real_pycuda_spec()
    lines = [f"pygpu's PyCUDA alias: {'installed' if installed else 'not installed'} in {site}"]
    if real is not None:
        lines.append(f"a real PyCUDA is importable: {real.origin}")
    return "\n".join(lines)


def install(target: str | None = None) -> str:
    """Installs the alias into ``target`` (default: this interpreter's site-packages); returns
    what it did. Refused (``RuntimeError``) when a real PyCUDA is importable."""
    site = _site(target)
    real = _real_pycuda_spec()
    if real is not None and not os.path.exists(os.path.join(site, _PTH)):
        raise RuntimeError(
            f"a real PyCUDA is installed ({real.origin}): the alias would hide it. "
            "Uninstall PyCUDA first (pip uninstall pycuda) if you want pygpu to stand in for it."
        )
    for entry in os.listdir(site) if os.path.isdir(site) else ():
        if entry.startswith("pycuda-") and entry.endswith(".dist-info") and not _ours(os.path.join(site, entry)):
            raise RuntimeError(f"{os.path.join(site, entry)} belongs to a real PyCUDA: uninstall it first")
    os.makedirs(site, exist_ok=True)
    here = os.path.abspath(__file__)
    # A .pth line that starts with "import" runs at start-up; it loads this file by path so that
    # starting Python does not import pygpu (and numpy), and does nothing once pygpu is gone.
    pth_line = (
        "import os, importlib.util as u; p = " + repr(here) + "; s = os.path.exists(p) and "
        "u.spec_from_file_location('_pygpu_pycuda_alias', p); m = s and u.module_from_spec(s); "
        "s and s.loader.exec_module(m); s and m.enable()\n"
    )
    files = {
        _PTH: pth_line,
        f"{_DIST_INFO}/METADATA": (
            "Metadata-Version: 2.1\n"
            "Name: pycuda\n"
            f"Version: {PYCUDA_VERSION}\n"
            "Summary: pygpu standing in for PyCUDA (python -m pygpu.pycuda_alias remove takes it away)\n"
            "Requires-Dist: pygpu\n"
        ),
        f"{_DIST_INFO}/INSTALLER": _INSTALLER + "\n",
        f"{_DIST_INFO}/top_level.txt": "pycuda\n",
    }
    os.makedirs(os.path.join(site, _DIST_INFO), exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(site, name), "w", encoding="utf-8") as f:
            f.write(text)
    # RECORD lists every file, so that `pip uninstall pycuda` removes the alias too.
    record = [f"{name},," for name in files] + [f"{_DIST_INFO}/RECORD,,"]
    with open(os.path.join(site, _DIST_INFO, "RECORD"), "w", encoding="utf-8") as f:
        f.write("\n".join(record) + "\n")
    return f"installed pygpu's PyCUDA alias (as pycuda {PYCUDA_VERSION}) in {site}"


def remove(target: str | None = None) -> str:
    """Removes the alias from ``target`` (default: this interpreter's site-packages); returns
    what it did."""
    site = _site(target)
    dist_info = os.path.join(site, _DIST_INFO)
    removed = False
    if os.path.exists(os.path.join(site, _PTH)):
        os.remove(os.path.join(site, _PTH))
        removed = True
    if _ours(dist_info):
        for name in os.listdir(dist_info):
            os.remove(os.path.join(dist_info, name))
        os.rmdir(dist_info)
        removed = True
    return f"{'removed' if removed else 'found no'} pygpu's PyCUDA alias in {site}"


def main(argv: list[str] | None = None) -> int:
    """The command line: ``python -m pygpu.pycuda_alias install|remove|status [--target DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m pygpu.pycuda_alias", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["install", "remove", "status"])
    parser.add_argument("--target", help="the site-packages folder (default: this interpreter's)")
    args = parser.parse_args(argv)
    try:
        print({"install": install, "remove": remove, "status": status}[args.action](args.target))
    except (RuntimeError, OSError) as e:
        print(f"pygpu.pycuda_alias: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
