"""The opt-in PyCUDA alias: `import pycuda.X` is `pygpu.X` in-process (enable) and, once installed
into a site folder, at every start-up, with the pycuda distribution's metadata; refused where a
real PyCUDA is importable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pygpu import pycuda_alias


def _python(code: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter that has each of `paths` as a site folder (its .pth
    files processed, as site-packages' are)."""
    prelude = "import site\n" + "".join(f"site.addsitedir({str(p)!r})\n" for p in paths)
    return subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYGPU_BACKEND="host"),
    )


def test_enable_maps_every_module_to_pygpus_own() -> None:
    code = """
import pygpu.pycuda_alias as a
a.enable(); a.enable()
import sys
assert sum(getattr(f, "is_pygpu_pycuda_alias", False) for f in sys.meta_path) == 1
import pycuda, pycuda.driver as drv, pycuda.gpuarray as ga
from pycuda.compiler import SourceModule
import pygpu, pygpu.driver, pygpu.gpuarray, pygpu.compiler
assert pycuda is pygpu and drv is pygpu.driver and ga is pygpu.gpuarray
assert SourceModule is pygpu.compiler.SourceModule
assert pygpu.driver.__spec__.name == "pygpu.driver"
try:
    import pycuda.gl_nonexistent
except ModuleNotFoundError as e:
    assert "pygpu" in str(e) and e.name == "pycuda.gl_nonexistent", e
else:
    raise AssertionError("no error")
a.disable()
assert not any(getattr(f, "is_pygpu_pycuda_alias", False) for f in sys.meta_path)
print("ok")
"""
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_install_status_and_remove(tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert "not installed" in pycuda_alias.status(str(site))
    assert "installed" in pycuda_alias.install(str(site))
    assert "installed in" in pycuda_alias.status(str(site)) and "not" not in pycuda_alias.status(str(site))
    dist_info = site / f"pycuda-{pycuda_alias.PYCUDA_VERSION}.dist-info"
    assert (site / "pygpu_pycuda_alias.pth").exists() and (dist_info / "METADATA").exists()
    # RECORD lists every file, so that pip uninstall removes them all.
    recorded = {line.split(",")[0] for line in (dist_info / "RECORD").read_text().splitlines()}
    assert recorded == {str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()}
    code = """
import importlib.metadata as m, sys
print(m.version("pycuda"))
import pycuda.driver, pygpu.driver
print(pycuda.driver is pygpu.driver, "pygpu" in sys.modules)
"""
    result = _python(code, site)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [pycuda_alias.PYCUDA_VERSION, "True", "True"]
    # Starting Python with the alias installed imports nothing of pygpu's until pycuda is imported.
    result = _python("import sys; print('pygpu' in sys.modules, 'numpy' in sys.modules)", site)
    assert result.stdout.split() == ["False", "False"], result.stderr
    assert "removed" in pycuda_alias.remove(str(site))
    assert not any(site.iterdir())
    assert "found no" in pycuda_alias.remove(str(site))
    result = _python("import pycuda", site)
    assert result.returncode != 0 and "No module named 'pycuda'" in result.stderr


def test_refused_where_a_real_pycuda_is_importable(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "pycuda").mkdir(parents=True)
    (real / "pycuda" / "__init__.py").write_text("REAL = True\n")
    site = tmp_path / "site"
    pycuda_alias.install(str(site))
    # A real PyCUDA installed after the alias: importing pycuda says which one is there.
    result = _python("import pycuda", site, real)
    assert result.returncode != 0
    assert "a real PyCUDA is installed" in result.stderr and str(real) in result.stderr
    pycuda_alias.remove(str(site))
    # Installing the alias beside a real PyCUDA is refused, naming it.
    code = f"""
import sys; sys.path.insert(0, {str(real)!r})
import pygpu.pycuda_alias as a
try:
    a.install({str(site)!r})
except RuntimeError as e:
    print("refused:", e)
"""
    result = _python(code)
    assert "refused: a real PyCUDA is installed" in result.stdout, result.stderr
    assert not (site / "pygpu_pycuda_alias.pth").exists()


def test_a_real_pycudas_dist_info_is_never_overwritten(tmp_path: Path) -> None:
    site = tmp_path / "site"
    theirs = site / "pycuda-2025.1.dist-info"
    theirs.mkdir(parents=True)
    (theirs / "INSTALLER").write_text("pip\n")
    with pytest.raises(RuntimeError, match="belongs to a real PyCUDA"):
        pycuda_alias.install(str(site))
    assert sorted(p.name for p in site.iterdir()) == ["pycuda-2025.1.dist-info"]


def test_command_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    run = [sys.executable, "-m", "pygpu.pycuda_alias"]
    ok = subprocess.run([*run, "install", "--target", str(site)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "installed" in ok.stdout, ok.stderr
    status = subprocess.run([*run, "status", "--target", str(site)], capture_output=True, text=True, timeout=60)
    assert "installed in" in status.stdout
    bad = subprocess.run([*run, "frobnicate"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    gone = subprocess.run([*run, "remove", "--target", str(site)], capture_output=True, text=True, timeout=60)
    assert gone.returncode == 0 and "removed" in gone.stdout


def test_an_alias_left_behind_without_pygpu_says_so(tmp_path: Path) -> None:
    site = tmp_path / "site"
    pycuda_alias.install(str(site))
    # -S and no PYTHONPATH: an interpreter where pygpu cannot be imported, the alias's site folder added.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = f"import site; site.addsitedir({str(site)!r}); import pycuda"
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode != 0
    assert "pygpu itself is not importable" in result.stderr and "pycuda_alias remove" in result.stderr
