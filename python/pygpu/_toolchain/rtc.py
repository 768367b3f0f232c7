"""The GPU runtime compilers for ``pygpu.compiler``: where NVRTC and hiprtc are found, and
how PyCUDA's nvcc options map onto theirs. Loading and compiling happen in Rust
(``pygpu._pygpu.rtc_compile``).

NVRTC is searched, first found wins, in: ``$PYGPU_NVRTC`` (a file), the pip wheels
``nvidia-cuda-nvrtc`` (CUDA 13: ``nvidia/cu13/lib/libnvrtc.so.13``) and
``nvidia-cuda-nvrtc-cu12`` (``nvidia/cuda_nvrtc/lib/libnvrtc.so.12``) on ``sys.path``,
``$CONDA_PREFIX/lib``, ``$CUDA_PATH``/``$CUDA_HOME``/``/usr/local/cuda`` (``lib64``, ``lib``), then the
system's library path (``libnvrtc.so.13``, ``.so.12``, ``.so``). When the driver's CUDA
major is known, NVRTCs newer than the driver come last: their cubins may not load.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator

from pygpu._pygpu import rtc_supported_archs, rtc_version
from pygpu.errors import BackendUnavailableError, NvrtcMissingError

__all__ = [
    "find_hiprtc",
    "find_nvrtc",
    "library_identity",
    "nvrtc_options",
    "nvrtc_target",
]

_NVRTC_WHEELS = [
    (13, os.path.join("nvidia", "cu13", "lib", "libnvrtc.so.13")),
    (12, os.path.join("nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")),
]


def _nvrtc_candidates() -> Iterator[tuple[int | None, str]]:
    """(CUDA major if known, path or bare name), in the search order; lazily, so that the
    search stops at the first library found (it runs in every new process's first SourceModule)."""
    env = os.environ.get("PYGPU_NVRTC")
    if env:
        yield None, env
        return
    for entry in sys.path:
        for wheel_major, rel in _NVRTC_WHEELS:
            path = os.path.join(entry or ".", rel)
            if os.path.isfile(path):
                yield wheel_major, path
    roots = [os.environ.get("CONDA_PREFIX")]
    roots += [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for i, root in enumerate(roots):
        if not root:
            continue
        for sub in ("lib",) if i == 0 else ("lib64", "lib"):
            for major in (13, 12, None):
                path = os.path.join(root, sub, f"libnvrtc.so.{major}" if major else "libnvrtc.so")
                if os.path.isfile(path):
                    yield major, path
    # Bare names: dlopen searches LD_LIBRARY_PATH, the ld.so cache and the system folders.
    yield from ((13, "libnvrtc.so.13"), (12, "libnvrtc.so.12"), (None, "libnvrtc.so"))


def _library_folders() -> list[str]:
    """The folders the dynamic loader searches for a bare name, in its order:
    ``LD_LIBRARY_PATH``, the folders of ``/etc/ld.so.conf`` (what the ld.so cache is built
    from), then the default ones."""
    folders = [f for f in os.environ.get("LD_LIBRARY_PATH", "").split(":") if f]
    pending = ["/etc/ld.so.conf"]
    while pending:
        try:
            with open(pending.pop(0)) as conf:
                lines = conf.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include"):
                import glob  # only on machines whose NVRTC is a system library

                pattern = line[len("include") :].strip()
                pending += sorted(glob.glob(pattern if pattern.startswith("/") else f"/etc/{pattern}"))
            elif line:
                folders.append(line)
    folders += ["/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"]
    return folders


_folders_memo: dict[str, list[str]] = {}


def _in_library_path(name: str) -> str | None:
    """The file dlopen(name) would most likely load, found without loading it; None if none is."""
    env = os.environ.get("LD_LIBRARY_PATH", "")
    if env not in _folders_memo:
        _folders_memo[env] = _library_folders()
    for folder in _folders_memo[env]:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


_nvrtc_memo: dict[tuple[str | None, int | None], str] = {}


def find_nvrtc(driver_major: int | None = None) -> str:
    """The NVRTC library to use (a path, or a bare name dlopen found): the first one in the
    search order, except that one newer than the driver's CUDA major (whose cubins might not
    load) is taken only when there is no other."""
    memo_key = (os.environ.get("PYGPU_NVRTC"), driver_major)
    if memo_key in _nvrtc_memo:
        return _nvrtc_memo[memo_key]
    tried: list[str] = []
    too_new: str | None = None
    for major, candidate in _nvrtc_candidates():
        usable = _usable_nvrtc(candidate, tried)
        if usable is None:
            continue
        if driver_major is not None and major is not None and major > driver_major:
            too_new = too_new or usable
            continue
        _nvrtc_memo[memo_key] = usable
        return usable
    if too_new is not None:
        _nvrtc_memo[memo_key] = too_new
        return too_new
    extra = "nvrtc-cu12" if driver_major == 12 else "nvrtc"
    raise NvrtcMissingError(
        "SourceModule on the cuda backend needs NVRTC, the CUDA runtime compiler, and none was found: "
        f"pip install pygpu[{extra}] (pygpu[nvrtc] for a CUDA 13 driver, pygpu[nvrtc-cu12] for CUDA 12), "
        "or set PYGPU_NVRTC to a libnvrtc.so. Everything else in pygpu works without it.\n"
        + "\n".join(f"  tried: {t}" for t in tried[:8])
    )


def _usable_nvrtc(candidate: str, tried: list[str]) -> str | None:
    """The candidate as the library to load, or None (then why goes to ``tried``)."""
    if "/" in candidate:
        # A file found is taken without loading it (a cache hit never needs NVRTC);
        # compiling with it reports a library that does not load.
        if os.path.isfile(candidate):
            return candidate
        named = " (named by $PYGPU_NVRTC)" if os.environ.get("PYGPU_NVRTC") == candidate else ""
        tried.append(f"{candidate}{named}: no such file")
        return None
    # A bare name found as a file in the loader's folders is named by its path: loading
    # NVRTC takes milliseconds, and a cache hit needs only the library's identity.
    path = _in_library_path(candidate)
    if path is not None:
        return path
    try:
        rtc_version("nvrtc", candidate)
    except BackendUnavailableError as e:
        tried.append(str(e))
        return None
    return candidate


def find_hiprtc() -> str:
    """The hiprtc library: ``$PYGPU_HIPRTC``, ``$ROCM_PATH``/``$HIP_PATH``, /opt/rocm, then dlopen's path."""
    env = os.environ.get("PYGPU_HIPRTC")
    candidates = [env] if env else []
    for root in (os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"), "/opt/rocm"):
        if root:
            candidates += [os.path.join(root, "lib", n) for n in ("libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5")]
    candidates += ["libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5"]
    tried = []
    for candidate in candidates:
        if "/" in candidate and not os.path.isfile(candidate):
            continue
        try:
            rtc_version("hiprtc", candidate)
        except BackendUnavailableError as e:
            tried.append(str(e))
            continue
        return candidate
    raise NvrtcMissingError(
        "SourceModule on the hip backend needs hiprtc, and none was found: install ROCm's hiprtc "
        "(e.g. apt-get install libhiprtc-dev or the rocm package), or set PYGPU_HIPRTC to a libhiprtc.so.\n"
        + "\n".join(f"  tried: {t}" for t in tried[:8])
    )


def load_failure(kind: str, library: str, error: BaseException) -> BackendUnavailableError:
    """``error`` (the loader's "dlopen failed: ...") as an error that also says where the
    library came from and what to install instead."""
    variable = "PYGPU_HIPRTC" if kind == "hiprtc" else "PYGPU_NVRTC"
    origin = f" (named by ${variable})" if os.environ.get(variable) and os.environ.get(variable) == library else ""
    if kind == "hiprtc":
        fix = (
            "install ROCm's hiprtc (e.g. apt-get install libhiprtc-dev, or the rocm package) or point "
            f"{variable} at a working libhiprtc.so"
        )
    else:
        fix = (
            "pip install nvidia-cuda-nvrtc (CUDA 13 driver) or nvidia-cuda-nvrtc-cu12 (CUDA 12), or point "
            f"{variable} at a working libnvrtc.so (unset it to let pygpu search)"
        )
    return BackendUnavailableError(f"{kind} library {library}{origin} cannot be loaded: {error}. To fix: {fix}")


def library_identity(library: str) -> str:
    """Stands for the library's version in cache keys without loading it: the path, and
    the file's (through symbolic links) device, inode, size and modification time; a bare
    name is loaded to learn its version."""
    if "/" in library:
        st = os.stat(library)
        return f"{library}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    kind = "hiprtc" if "hiprtc" in library else "nvrtc"
    try:
        return f"{library}:{rtc_version(kind, library)}"
    except BackendUnavailableError as e:
        raise load_failure(kind, library, e) from e


# nvcc options with no NVRTC counterpart, and why; an option here is an error, so that a
# program does not silently compile differently from what it asked for.
_NVCC_ONLY = {
    "-Xlinker": "NVRTC does not link",
    "--linker-options": "NVRTC does not link",
    "-c": "pygpu chooses the output (a cubin for your GPU)",
    "-cubin": "pygpu chooses the output (a cubin for your GPU)",
    "-ptx": "pygpu chooses the output (a cubin for your GPU)",
    "-fatbin": "pygpu chooses the output (a cubin for your GPU)",
    "-o": "pygpu chooses the output file",
    "-keep": "pass keep=True to SourceModule instead",
    "--keep": "pass keep=True to SourceModule instead",
    "-shared": "NVRTC does not link",
}
# Options that nvcc takes and NVRTC either does by default or has no use for.
_DROPPED = {"-m64", "--machine=64", "-O0", "-O1", "-O2", "-O3", "-Xcompiler=-fPIC"}
# Libraries to link (-lcudadevrt, -L<dir>, --library=...): a compile to a cubin, which is what
# nvcc does for PyCUDA, ignores them, and so does pygpu (DynamicModule links with add_stdlib).
_LINK_STAGE = re.compile(r"^(-l(?!ineinfo$)\S+|-L\S+|--library(-path)?=\S+)$")
_LINK_STAGE_WITH_VALUE = {"-l", "-L", "--library", "--library-path"}


def nvrtc_options(options: list[str]) -> tuple[list[str], str | None]:
    """PyCUDA's (nvcc) options as NVRTC's; returns (options, architecture asked for with
    -arch/--gpu-architecture, if any). -I, -D, -U, -G, -lineinfo, --use_fast_math,
    -std, --maxrregcount, -Xptxas and the other options both compilers share pass through;
    -O levels and -m64 are dropped (NVRTC always optimises device code, always 64-bit), and so
    are libraries to link (-l, -L: a compile ignores them, as nvcc's to a cubin does);
    host-compiler and output options raise ValueError."""
    out: list[str] = []
    arch: str | None = None
    it = iter(options)
    for option in it:
        head = option.split("=", 1)[0]
        if head in _NVCC_ONLY:
            raise ValueError(f"option {option!r} has no NVRTC equivalent ({_NVCC_ONLY[head]}): remove it")
        if option in _DROPPED or _LINK_STAGE.match(option):
            continue
        if option in _LINK_STAGE_WITH_VALUE:
            next(it, None)
            continue
        if head in ("-arch", "--gpu-architecture", "-code", "--gpu-code"):
            value = option.split("=", 1)[1] if "=" in option else next(it, None)
            if value is None:
                raise ValueError(f"option {option!r} needs a value such as sm_90")
            if head in ("-arch", "--gpu-architecture"):
                arch = value
            continue  # pygpu passes the architecture itself
        if option == "-use_fast_math":
            option = "--use_fast_math"
        if option in ("-I", "-D", "-U", "-include", "-Xptxas", "-std", "--std"):
            value = next(it, None)
            if value is None:
                raise ValueError(f"option {option!r} needs a value")
            # nvcc takes `-std c++14`; NVRTC only `-std=c++14`.
            joined = {
                "-Xptxas": "--ptxas-options=",
                "-include": "--pre-include=",
                "-std": "-std=",
                "--std": "-std=",
            }.get(option, option)
            option = f"{joined}{value}"
        out.append(option)
    return out, arch


def nvrtc_target(library: str, capability: tuple[int, int], arch: str | None) -> tuple[str, str]:
    """(output, --gpu-architecture value): a cubin for the device's exact sm_XY when this
    NVRTC knows it, else PTX for the newest compute_XY it knows below the device (the
    driver JIT-compiles that PTX; it accepts PTX from an NVRTC no newer than itself)."""
    if arch is not None:
        if arch.startswith("sm_"):
            return "cubin", arch
        if arch.startswith("compute_"):
            return "ptx", arch
        raise ValueError(f"architecture {arch!r} is not sm_XY or compute_XY")
    wanted = capability[0] * 10 + capability[1]
    known = rtc_supported_archs(library)
    if wanted in known:
        return "cubin", f"sm_{wanted}"
    older = [a for a in known if a <= wanted]
    if not older:
        raise ValueError(
            f"this NVRTC ({library}) knows no architecture at or below the device's sm_{wanted} "
            f"(it knows {', '.join(f'sm_{a}' for a in known)}): install an NVRTC that supports your GPU"
        )
    return "ptx", f"compute_{max(older)}"
