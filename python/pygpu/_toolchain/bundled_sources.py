"""Builds a bundled kernel module (kernels/<name>.cu) from its source on first use, for a package
that has no prebuilt binary of it for the active backend: installed with ``pip install .``, from a
git URL or the sdist, or built for a machine whose kernels were not prebuilt (kernels/README.md,
"Install paths", says why this mechanism).

The sources are embedded in the compiled module at build time (build.rs), so they always match
it. They are written once into the kernel cache folder, then compiled by ``pygpu.compiler`` (the
system C++ compiler on host, NVRTC on cuda, hiprtc on hip) into its disk cache: the build happens
once per machine and compiler, later processes load it from the cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from pygpu._toolchain import kernel_declarations
from pygpu._toolchain import kernel_parts
from pygpu._toolchain.kernel_declarations import Declaration

__all__ = ["build", "declaration", "has_source", "source_names"]

_sources: dict[str, str] | None = None


def _all_sources() -> dict[str, str]:
    global _sources
    if _sources is None:
        from pygpu._pygpu import bundled_kernel_sources

        _sources = dict(bundled_kernel_sources())
    return _sources


def source_names() -> list[str]:
    """The bundled kernel modules that can be built from source: kernels/<name>.cu, or for a
    source split by dtype its parts (``kernel_parts``)."""
    names = []
    for file_name in _all_sources():
        if file_name.endswith(".cu"):
            source = file_name.removesuffix(".cu")
            names += (
                [f"{source}_{part}" for part in kernel_parts.PARTS[source]]
                if source in kernel_parts.PARTS
                else [source]
            )
    return sorted(names)


def _module_source(folder: Path, name: str) -> str | None:
    """The source of module ``name``: a part's generated text, or kernels/<name>.cu."""
    part = kernel_parts.part_source(name)
    if part is not None:
        return part if (folder / f"{name.partition('_')[0]}.cu").is_file() else None
    path = folder / f"{name}.cu"
    return path.read_text() if path.is_file() else None


def has_source(name: str) -> bool:
    """Whether bundled module ``name`` can be built from its embedded source."""
    return name in source_names()


def declaration(module: str, kernel: str) -> tuple[Declaration, ...] | None:
    """The parameters of bundled kernel ``kernel`` of module ``module`` (``arith_f64`` is a part
    of kernels/arith.cu), as its source declares them (``PYGPU_KERNEL`` is pygpu_kernel.h's
    ``extern "C" __global__``)."""
    sources = _all_sources()
    text = sources.get(f"{module}.cu") or sources.get(f"{module.partition('_')[0]}.cu")
    if text is None:
        return None
    return kernel_declarations.declaration('#define PYGPU_KERNEL extern "C" __global__\n' + text, kernel)


def _sources_dir(root: Path) -> Path:
    """The embedded sources as files (the headers must be files for the compilers' -I), in a
    folder named by their digest: written once, completely (a temporary folder renamed)."""
    sources = _all_sources()
    digest = hashlib.sha256()
    for file_name, text in sorted(sources.items()):
        digest.update(file_name.encode() + b"\0" + text.encode() + b"\0")
    folder = root / "bundled-sources" / digest.hexdigest()[:24]
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    try:
        for file_name, text in sources.items():
            (temp / file_name).write_text(text)
        try:
            os.rename(temp, folder)
        except OSError:
            if not folder.is_dir():  # not another process having won the race
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return folder


def _options(compiler: str) -> list[str]:
    if compiler == "c++":
        return []  # the host compiler's flags are kernels/build.sh's (pygpu._toolchain.host_compiler)
    from pygpu._toolchain import host_compiler

    # NVRTC and hiprtc: the portability header's folder, C++17 as kernels/build.sh compiles.
    return ["--std=c++17", f"-I{host_compiler.host_header().parent}"]


def _what_to_do(compiler: str) -> str:
    if compiler == "c++":
        return "install a C++ compiler (e.g. `apt-get install g++`) or set CXX to one"
    if compiler == "nvrtc":
        return "install NVRTC with `pip install pygpu[nvrtc]` (CUDA 13 driver) or `pygpu[nvrtc-cu12]` (CUDA 12)"
    return "install ROCm's hiprtc (libhiprtc.so)"


def build(name: str) -> bytes:
    """The binary of bundled module ``name`` for the active backend and device, built from the
    embedded source (or read from the disk cache). Says on stderr when it compiles."""
    from pygpu._toolchain import compile_cache, source_module
    from pygpu._pygpu import capabilities
    from pygpu.errors import CacheUnwritableError

    caps = capabilities()
    kind = caps.backend
    root = compile_cache.cache_root(None)
    try:
        folder = _sources_dir(root)
    except OSError as e:
        raise CacheUnwritableError(
            f"pygpu builds its {name!r} kernels from source here and cannot write their sources into "
            f"{root}: {e}; set PYGPU_CACHE_DIR to a writable folder"
        ) from e
    source = _module_source(folder, name)
    if source is None:
        raise FileNotFoundError(f"pygpu has no bundled kernel source for module {name!r}")
    options = _options(caps.compiler)
    started = time.monotonic()
    # A cache hit takes milliseconds and says nothing; a real compilation takes seconds to a
    # minute (arith.cu), so it is announced once it has run for a moment.
    said = threading.Event()

    def say() -> None:
        said.set()
        print(
            f"pygpu: building the bundled {name!r} kernels for the {kind} backend from source (no prebuilt "
            f"binary in this install; up to a minute, once per machine: cached in {root}) ...",
            file=sys.stderr,
            flush=True,
        )

    announce = threading.Timer(0.5, say)
    announce.daemon = True
    announce.start()
    try:
        binary = source_module.compile(source, options=options, no_extern_c=True, include_dirs=[str(folder)])
    except Exception as e:
        e.add_note(
            f"pygpu: this install has no prebuilt {name!r} kernels for the {kind} backend and builds them "
            f"from source on first use: {_what_to_do(caps.compiler)}, or install a pygpu wheel (prebuilt kernels)"
        )
        raise
    finally:
        announce.cancel()
    if said.is_set():
        print(f"pygpu: built {name!r} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return binary
