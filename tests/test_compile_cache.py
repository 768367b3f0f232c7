"""The kernel cache of pygpu.compiler: hits and misses, what invalidates an entry, concurrent
writers, corrupt entries, the size bound, and cache_dir=False."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pygpu
import pygpu.driver as cuda
import pytest
from pygpu import compiler, errors
from pygpu._toolchain import compile_cache
from pygpu._toolchain import host_compiler
from pygpu.compiler import SourceModule
from pygpu._toolchain import source_module

pytestmark = pytest.mark.skipif(
    pygpu.backend() != "host", reason="counts compiler runs through a wrapper around the host C++ compiler"
)

KERNEL = "__global__ void fill(int* x) { x[threadIdx.x] = VALUE; }"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache folder, an empty memo, and a C++ compiler that logs each compile to runs.log
    (a build is one compile; the preprocessor run that finds its kernels, -E, is not counted)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("PYGPU_CACHE_DIR", str(folder))
    monkeypatch.delenv("PYGPU_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(source_module, "_memo", {})
    real = host_compiler.find_cxx()
    wrapper = tmp_path / "cxx-wrapper"
    wrapper.write_text(
        f'#!/bin/sh\ncase " $* " in *" -E "*) ;; *) echo run >> "{tmp_path}/runs.log" ;; esac\nexec "{real}" "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CXX", str(wrapper))
    yield folder


def runs(cache: Path) -> int:
    log = cache.parent / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "v1").glob("*.bin")) if (cache / "v1").exists() else []


def value_of(mod: SourceModule) -> int:
    out = np.zeros(1, np.int32)
    mod.get_function("fill")(cuda.Out(out), block=(1, 1, 1))
    return int(out[0])


def test_miss_then_hit_in_process_and_on_disk(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=3"])) == 3
    assert runs(cache) == 1 and len(entries(cache)) == 1
    # In process: the memo answers without reading any file.
    with monkeypatch.context() as m:
        m.setattr(compile_cache, "load", lambda *a: pytest.fail("the memo should have answered"))
        assert value_of(SourceModule(KERNEL, options=["-DVALUE=3"])) == 3
    # A new process: read from disk, no compiler run.
    code = f"""
        import numpy as np, pygpu.driver as cuda
        from pygpu.compiler import SourceModule
        out = np.zeros(1, np.int32)
        SourceModule({KERNEL!r}, options=["-DVALUE=3"]).get_function("fill")(cuda.Out(out), block=(1, 1, 1))
        assert out[0] == 3, out
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert runs(cache) == 1
    # Other options, another entry.
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=4"])) == 4
    assert runs(cache) == 2 and len(entries(cache)) == 2


def test_header_change_invalidates(cache: Path, tmp_path: Path) -> None:
    include = tmp_path / "inc"
    (include / "sub").mkdir(parents=True)
    (include / "value.h").write_text('#include "sub/inner.h"\n')
    inner = include / "sub" / "inner.h"
    inner.write_text("#define VALUE 1\n")
    source = '#include "value.h"\n' + KERNEL
    assert value_of(SourceModule(source, include_dirs=[str(include)])) == 1
    # Same size, other contents: a nested header's change is seen, in process and on disk.
    inner.write_text("#define VALUE 2\n")
    assert value_of(SourceModule(source, include_dirs=[str(include)])) == 2
    source_module._memo.clear()
    assert value_of(SourceModule(source, include_dirs=[str(include)])) == 2
    assert runs(cache) == 2
    inner.write_text("#define VALUE 1\n")
    source_module._memo.clear()
    assert value_of(SourceModule(source, include_dirs=[str(include)])) == 1
    assert runs(cache) == 2  # the first entry is still valid


def test_concurrent_writers(cache: Path) -> None:
    code = f"""
        import numpy as np, pygpu.driver as cuda
        from pygpu.compiler import SourceModule
        out = np.zeros(1, np.int32)
        SourceModule({KERNEL!r}, options=["-DVALUE=9"]).get_function("fill")(cuda.Out(out), block=(1, 1, 1))
        assert out[0] == 9, out
    """
    procs = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert len(entries(cache)) == 1
    assert not [p for p in (cache / "v1").iterdir() if p.suffix != ".bin"], "temporary files left behind"
    key = entries(cache)[0].stem
    assert compile_cache.load(cache, key) is not None


def test_corrupt_entry_is_recompiled(cache: Path) -> None:
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=5"])) == 5
    (entry,) = entries(cache)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    source_module._memo.clear()
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=5"])) == 5
    assert runs(cache) == 2
    assert compile_cache.load(cache, entry.stem) is not None, "the entry was rewritten whole"
    entry.write_bytes(b"short")
    source_module._memo.clear()
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=5"])) == 5
    assert runs(cache) == 3


def test_size_bound_evicts_oldest(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    SourceModule(KERNEL, options=["-DVALUE=1"])
    (first,) = entries(cache)
    size = first.stat().st_size
    monkeypatch.setenv("PYGPU_CACHE_MAX_BYTES", str(int(size * 2.5)))
    os.utime(first, ns=(1, 1))  # make the oldest unambiguous
    SourceModule(KERNEL, options=["-DVALUE=2"])
    SourceModule(KERNEL, options=["-DVALUE=3"])
    remaining = entries(cache)
    assert len(remaining) == 2 and first not in remaining
    assert sum(p.stat().st_size for p in remaining) <= size * 2.5


def test_cache_dir_false_writes_nothing(cache: Path) -> None:
    SourceModule(KERNEL, options=["-DVALUE=1"], cache_dir=False)
    SourceModule(KERNEL, options=["-DVALUE=1"], cache_dir=False)
    assert runs(cache) == 2 and not cache.exists()


def test_disable_cache_variable_overrides_cache_dir(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYGPU_DISABLE_CACHE", "1")
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=2"], cache_dir=str(tmp_path / "explicit"))) == 2
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=2"])) == 2
    assert runs(cache) == 2 and not cache.exists() and not (tmp_path / "explicit").exists()


def test_explicit_cache_dir(cache: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    SourceModule(KERNEL, options=["-DVALUE=1"], cache_dir=str(other))
    assert len(list((other / "v1").glob("*.bin"))) == 1 and not cache.exists()


def test_unwritable_cache_folder(cache: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(errors.CacheUnwritableError, match="cache_dir=False"):
        SourceModule(KERNEL, options=["-DVALUE=1"], cache_dir=str(blocker / "cache"))
    assert isinstance(errors.CacheUnwritableError("x"), OSError)


def test_failed_compile_is_not_cached(cache: Path) -> None:
    with pytest.raises(compiler.CompileError):
        SourceModule("__global__ void fill(int* x) { x[0] = ; }")
    assert entries(cache) == []


def test_resolve_includes(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "one.h").write_text('#include "two.h"\n#include <three.h>\n#include <vector>\n')
    (a / "two.h").write_text('#include "one.h"\n')  # a cycle
    (b / "three.h").write_text("int three;\n")
    found = compile_cache.resolve_includes('#include <one.h>\n  #  include "missing.h"\n', [a, b])
    assert sorted(name for name, _path, _digest in found) == ["one.h", "three.h", "two.h"]
    key1 = compile_cache.make_key(["x", *[d for _n, _p, d in found]])
    (b / "three.h").write_text("int four;\n")
    found2 = compile_cache.resolve_includes("#include <one.h>\n", [a, b])
    assert compile_cache.make_key(["x", *[d for _n, _p, d in found2]]) != key1


def test_a_hit_refreshes_an_old_entry_only(cache: Path) -> None:
    """Eviction is oldest first; a hit refreshes the entry's time, but writes nothing for an
    entry used within the last minute (a new process's hit stays read-only)."""
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=6"])) == 6
    (entry,) = entries(cache)
    os.utime(entry, ns=(10**9, 10**9))
    assert compile_cache.load(cache, entry.stem) is not None
    refreshed = entry.stat().st_mtime_ns
    assert refreshed > 10**18, "an old entry is refreshed by a hit"
    assert compile_cache.load(cache, entry.stem) is not None
    assert entry.stat().st_mtime_ns == refreshed, "a fresh entry is not written again"


def test_host_header_change_invalidates(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pygpu's kernel header is part of the key, by each file's size and modification time."""
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=7"])) == 7
    header = host_compiler.host_header()
    identity = host_compiler.header_identity()
    st = header.stat()
    try:
        os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        assert host_compiler.header_identity() != identity
        monkeypatch.setattr(source_module, "_header_identity", {})
        source_module._memo.clear()
        assert value_of(SourceModule(KERNEL, options=["-DVALUE=7"])) == 7
        assert runs(cache) == 2
    finally:
        os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_new_process_hit_runs_no_compiler_step(cache: Path) -> None:
    """source_module.trace (what bench/compile_bench.py's breakdown reads) names each step of a
    cache hit in a new process; no step compiles, and nothing is imported only for compiling."""
    assert value_of(SourceModule(KERNEL, options=["-DVALUE=8"])) == 8
    code = f"""
        import sys
        from pygpu import compiler
        from pygpu._toolchain import source_module
        source_module.trace = []
        compiler.SourceModule({KERNEL!r}, options=["-DVALUE=8"]).get_function("fill")
        print([step for step, _ in source_module.trace])
        print(sorted(m for m in ("subprocess", "tempfile") if m in sys.modules))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    steps, imported = done.stdout.strip().splitlines()[-2:]
    assert steps == str(
        [
            "start",
            "device query, memo",
            "compiler and header identity",
            "includes resolved",
            "key hashed",
            "cache file read and verified",
            "module loaded",
        ]
    )
    assert runs(cache) == 1
    assert imported == "[]", imported
