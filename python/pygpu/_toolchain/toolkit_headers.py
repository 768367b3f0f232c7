"""The CUDA toolkit's headers for ``pygpu.compiler``: nvcc searches the toolkit's include folder
by itself, and code written for it includes ``math_constants.h``, ``cuda_runtime.h``,
``thrust/complex.h``, ``cuda/std/complex`` or cub; NVRTC and the host's C++ compiler do not.

Two folders are looked for, each the first found: the runtime's headers (``cuda_runtime.h``,
``math_constants.h``) and CCCL's (thrust, cub, libcu++'s ``cuda/std``). The search order:
``$CUDA_PATH``, ``$CUDA_HOME``, ``/usr/local/cuda`` (``include``; CCCL in ``include/cccl`` from
CUDA 13 on, in ``include`` before), then the pip wheels on ``sys.path``: ``nvidia-cuda-runtime``
(``nvidia/cu13/include``), ``nvidia-cuda-cccl`` (``nvidia/cu13/include/cccl``),
``nvidia-cuda-runtime-cu12`` (``nvidia/cuda_runtime/include``) and ``nvidia-cuda-cccl-cu12``
(``nvidia/cuda_cccl/include``).

The cache key covers a header found there by the folder's identity (its path and a version
file's size and modification time, which an upgrade rewrites) and the header's own, not by
hashing what it includes: ``thrust/complex.h`` alone pulls in hundreds of files.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "ToolkitHeaders",
    "find_toolkit_headers",
    "folder_identity",
    "host_fallback_folder",
    "missing_header_hint",
    "provider",
]

# (folder with the runtime's headers, folder with CCCL's), relative to a site-packages folder.
_WHEELS = [
    (os.path.join("nvidia", "cu13", "include"), os.path.join("nvidia", "cu13", "include", "cccl")),
    (os.path.join("nvidia", "cuda_runtime", "include"), os.path.join("nvidia", "cuda_cccl", "include")),
]


class ToolkitHeaders:
    """The toolkit header folders found: ``runtime`` (``cuda_runtime.h``, ``math_constants.h``)
    and ``cccl`` (thrust, cub, ``cuda/std``), each a folder or None."""

    def __init__(self, runtime: Path | None, cccl: Path | None) -> None:
        self.runtime = runtime
        self.cccl = cccl

    def folders(self) -> list[Path]:
        """The folders to search, CCCL's first (nvcc 13's order)."""
        return [f for f in (self.cccl, self.runtime) if f is not None]

    def __repr__(self) -> str:
        return f"ToolkitHeaders(runtime={self.runtime}, cccl={self.cccl})"


def _is_runtime(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "cuda_runtime.h"))


def _is_cccl(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "cuda", "std", "version")) or os.path.isfile(
        os.path.join(folder, "thrust", "version.h")
    )


def _candidates(roots: list[str], site_folders: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(runtime folder, CCCL folders) in the search order; lazily (os.path, not pathlib), since
    the search runs in every new process's first SourceModule, cache hits included."""
    for root in roots:
        include = os.path.join(root, "include")
        yield include, [os.path.join(include, "cccl"), include]
    for entry in site_folders:
        for runtime_rel, cccl_rel in _WHEELS:
            yield os.path.join(entry or ".", runtime_rel), [os.path.join(entry or ".", cccl_rel)]


def search(roots: list[str], site_folders: list[str]) -> ToolkitHeaders:
    """The first runtime and the first CCCL folder under the toolkit ``roots``, then in the pip
    wheels under ``site_folders``."""
    runtime: str | None = None
    cccl: str | None = None
    for runtime_candidate, cccl_candidates in _candidates(roots, site_folders):
        if runtime is None and _is_runtime(runtime_candidate):
            runtime = runtime_candidate
        if cccl is None:
            cccl = next((c for c in cccl_candidates if _is_cccl(c)), None)
        if runtime is not None and cccl is not None:
            break
    return ToolkitHeaders(Path(runtime) if runtime else None, Path(cccl) if cccl else None)


_memo: dict[tuple[str | None, ...], ToolkitHeaders] = {}


def find_toolkit_headers() -> ToolkitHeaders:
    """The toolkit's header folders, searched once per process (per ``$CUDA_PATH``/``$CUDA_HOME``)."""
    env = (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"))
    found = _memo.get(env)
    if found is None:
        roots = [r for r in (*env, "/usr/local/cuda") if r]
        found = _memo[env] = search(roots, sys.path)
    return found


_identity_memo: dict[Path, str] = {}


def folder_identity(folder: Path) -> str:
    """Stands for the folder's headers in cache keys: its path and the size and modification
    time of its version file (CCCL's ``cuda/std/version`` or the runtime's
    ``cuda_runtime_api.h``), memoized for the process."""
    identity = _identity_memo.get(folder)
    if identity is None:
        parts = [str(folder)]
        for name in ("cuda/std/version", "thrust/version.h", "cuda_runtime_api.h"):
            try:
                st = os.stat(folder / name)
            except OSError:
                continue
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        identity = _identity_memo[folder] = "|".join(parts)
    return identity


def host_fallback_folder() -> Path:
    """pygpu's own ``math_constants.h`` and ``cuda_runtime.h`` for the host backend, searched
    after the toolkit's: the runtime's headers are nvcc's and are not put on the host's path."""
    return Path(__file__).resolve().parent.parent / "include" / "pygpu_host" / "toolkit"


_CCCL_PREFIXES = ("thrust/", "cub/", "cuda/", "nv/")
# The headers of the runtime wheel (nvidia-cuda-runtime) that sources include by name.
_RUNTIME_HEADERS = frozenset(
    """builtin_types.h channel_descriptor.h common_functions.h cooperative_groups.h cuComplex.h
    cuda.h cuda_awbarrier.h cuda_awbarrier_primitives.h cuda_bf16.h cuda_bf16.hpp
    cuda_device_runtime_api.h cuda_fp16.h cuda_fp16.hpp cuda_fp4.h cuda_fp6.h cuda_fp8.h
    cuda_fp8.hpp cuda_occupancy.h cuda_pipeline.h cuda_pipeline_primitives.h cuda_runtime.h
    cuda_runtime_api.h cuda_texture_types.h cuda_surface_types.h device_atomic_functions.h
    device_double_functions.h device_functions.h device_launch_parameters.h device_types.h
    driver_functions.h driver_types.h host_config.h host_defines.h library_types.h
    math_constants.h math_functions.h mma.h sm_20_atomic_functions.h sm_20_intrinsics.h
    sm_30_intrinsics.h sm_32_atomic_functions.h sm_32_intrinsics.h sm_35_atomic_functions.h
    sm_35_intrinsics.h sm_60_atomic_functions.h sm_61_intrinsics.h surface_functions.h
    surface_indirect_functions.h surface_types.h texture_fetch_functions.h
    texture_indirect_functions.h texture_types.h vector_functions.h vector_functions.hpp
    vector_types.h""".split()
)
# CUDA libraries' device headers: (prefix, wheel's name without the -cu12 suffix).
_LIBRARY_HEADERS = [
    ("curand", "nvidia-curand"),
    ("cufft", "nvidia-cufft"),
    ("cublas", "nvidia-cublas"),
    ("cusparse", "nvidia-cusparse"),
    ("cusolver", "nvidia-cusolver"),
    ("nvshmem", "nvidia-nvshmem"),
    ("crt/", "nvidia-cuda-crt"),
]


def provider(header: str) -> str | None:
    """The pip package (CUDA 13's name) that provides a toolkit header, or None for a header
    that is not the toolkit's."""
    name = header.strip().lstrip("./")
    if name.startswith(_CCCL_PREFIXES):
        return "nvidia-cuda-cccl"
    if name in _RUNTIME_HEADERS or name.startswith("cooperative_groups/"):
        return "nvidia-cuda-runtime"
    for prefix, package in _LIBRARY_HEADERS:
        if name.startswith(prefix):
            return package
    return None


# NVRTC: `cannot open source file "x.h"`; g++/clang++: `x.h: No such file or directory`, `'x.h' file not found`.
_MISSING = re.compile(
    r'cannot open source file "([^"]+)"|fatal error: ([^\s:]+): No such file or directory|'
    r"fatal error: '([^']+)' file not found"
)


def missing_header_hint(log: str, compiler: str, source: str) -> str | None:
    """What to tell the user about a failed compile whose log or source shows a toolkit header
    problem: a missing header and the package that provides it, a C++ header inside
    ``extern "C"``, or a header that cannot work with ``compiler`` (``pygpu.capabilities().compiler``:
    'nvrtc', 'hiprtc' or 'c++'); None otherwise."""
    for m in _MISSING.finditer(log):
        header = next(g for g in m.groups() if g)
        package = provider(header)
        if package is None:
            continue
        found = find_toolkit_headers()
        searched = ", ".join(str(f) for f in found.folders()) or "none found"
        if package == "nvidia-cuda-runtime" and compiler == "c++":
            return (
                f"{header!r} is a CUDA runtime header that the host backend does not provide "
                "(pygpu gives math_constants.h and cuda_runtime.h there; its kernel header already "
                "defines what device code uses of the runtime): remove the #include"
            )
        if compiler == "c++" and package != "nvidia-cuda-cccl":
            # The host build adds CCCL's folder only: a library's device code is nvcc's.
            return (
                f"{header!r} is device code of a CUDA library ({package}), which the host backend does "
                "not compile: run this kernel on the cuda backend"
                + (
                    "; pygpu.curandom fills arrays with random numbers on every backend"
                    if package == "nvidia-curand"
                    else ""
                )
            )
        where = "$CUDA_PATH, $CUDA_HOME, /usr/local/cuda, the nvidia-* pip wheels"
        return (
            f"{header!r} is a CUDA toolkit header, provided by the pip package {package} "
            f"(CUDA 12: {package}-cu12) or a CUDA toolkit: pip install {package}, or set CUDA_PATH "
            f"to your toolkit (searched: {where}; toolkit header folders: {searched})"
        )
    includes = set(re.findall(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', source, re.MULTILINE))
    uses_thrust = any(i.startswith("thrust/") for i in includes)
    uses_cub = any(i.startswith("cub/") for i in includes)
    # g++: `template with C linkage`; NVRTC: `this declaration may not have extern "C" linkage`.
    if "template with C linkage" in log or 'may not have extern "C" linkage' in log:
        if any(provider(i) == "nvidia-cuda-cccl" for i in includes):
            return (
                'CCCL\'s headers (thrust, cub, cuda/std) are C++ and cannot be included inside the extern "C" '
                "block SourceModule wraps the source in: pass no_extern_c=True (as with nvcc) and declare the "
                'kernels extern "C"'
            )
    if compiler == "nvrtc" and uses_thrust and ("JIT mode" in log or "basic_ostream" in log or '"complex"' in log):
        return (
            "Thrust's headers do not compile with NVRTC (they declare host functions, which NVRTC refuses); "
            "pygpu gives <thrust/complex.h> there as libcu++'s cuda::std::complex. In kernels compiled at run "
            "time use libcu++ (<cuda/std/...>) or pygpu's <pycuda-complex.hpp>; Thrust works on the host backend"
        )
    if compiler == "nvrtc" and uses_cub and "JIT mode" in log:
        return (
            "cub/cub.cuh and CUB's device-wide algorithms (cub/device/...) launch kernels from the host, which "
            "NVRTC refuses: include the block- and warp-level headers the kernel uses (cub/block/block_reduce.cuh, "
            "cub/warp/warp_reduce.cuh, ...)"
        )
    if compiler == "c++" and uses_cub:
        return (
            "CUB's headers are device code (PTX, warp and block primitives over CUDA's intrinsics) and do not "
            "compile on the host backend: run this kernel on the cuda backend, or write the reduction or scan "
            "with pygpu's ReductionKernel/InclusiveScanKernel"
        )
    return None
