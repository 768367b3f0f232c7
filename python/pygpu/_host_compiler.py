"""The host backend's runtime compiler: CUDA C source built by the system C++ compiler into
a kernels shared library (the ABI of kernels/README.md), which ``Module(bytes)`` loads.

The source is compiled with the portability header force-included (``host_header``) and
a ``PYGPU_EXPORT(name)`` appended for every ``__global__`` function found in it, plus an
exported alias for every namespace-scope ``__device__``/``__constant__`` variable, so
that ``get_function`` and ``get_global`` find them by name as on a GPU. Templated kernels
are not exported (a template has no single symbol to export; wrap an instantiation in a
plain ``__global__`` function). For ``DynamicModule`` a source is compiled the same way to a
relocatable object, and ``host_link`` links objects and archives into one kernels library.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "compiler_identity",
    "device_launch_lines",
    "find_cxx",
    "header_identity",
    "host_build",
    "host_header",
    "host_link",
    "kernel_names",
    "rewrite_dynamic_shared",
    "translate_options",
]


class _Pattern:
    """A regular expression compiled on first use: only a cache miss needs these, and
    compiling them all at import costs every new process milliseconds."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled


# The flags kernels/build.sh builds the bundled host libraries with (less -Werror: this is
# the user's code): hidden symbols but the ABI's, no libstdc++ dependency, plain IEEE maths.
COMPILE_FLAGS = [
    "-x",
    "c++",
    "-std=c++17",
    "-O3",
    "-fPIC",
    "-fvisibility=hidden",
    "-fno-exceptions",
    "-fno-rtti",
    "-fno-gnu-unique",
    "-ffp-contract=off",
]
LINK_FLAGS = ["-shared", "-Wl,-Bsymbolic", "-Wl,--as-needed", "-Wl,-z,defs"]
HOST_FLAGS = COMPILE_FLAGS + LINK_FLAGS

# nvcc/NVRTC options that mean nothing for a CPU build: dropped (code generation for a GPU,
# GPU maths modes; -use_fast_math is not -ffast-math, which would change the whole process's
# floating-point state when the library loads).
# (The CUDA runtime libraries, -lcudadevrt and -lcudart, link device code: nothing on the host.)
_GPU_ONLY = _Pattern(
    r"^(-lineinfo|--generate-line-info|-G|--device-debug|-use_fast_math|--use_fast_math|-m64|--restrict|"
    r"-rdc=.*|--relocatable-device-code=.*|-dc|-dw|--expt-.*|--extended-lambda|-default-device|"
    r"-maxrregcount=.*|--maxrregcount=.*|-ftz=.*|--ftz=.*|-prec-div=.*|--prec-div=.*|-prec-sqrt=.*|"
    r"--prec-sqrt=.*|-fmad=.*|--fmad=.*|-Xptxas.*|--ptxas-options.*|-arch.*|--gpu-architecture.*|-code.*|"
    r"--gpu-code.*|-dlto|--dlink-time-opt|-dopt.*|--dopt.*|-lcudadevrt|-lcudart(_static)?)$"
)
_GPU_ONLY_WITH_VALUE = {
    "-arch",
    "--gpu-architecture",
    "-code",
    "--gpu-code",
    "-Xptxas",
    "--ptxas-options",
    "-maxrregcount",
}

_DEFAULT_TIMEOUT_S = 300.0


def header_identity() -> str:
    """Stands for the host runtime's version in cache keys: (name, size, modification time)
    of every header in the kernel header's folder. A new pygpu, or an edit in a checkout,
    rewrites the files; a stat per file is cheap enough for a new process's cache hit,
    where hashing the headers' contents was not."""
    folder = os.path.dirname(host_header())
    parts: list[str] = []
    pending = [folder]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir():
                    pending.append(entry.path)
                elif entry.name.endswith((".h", ".hpp")):
                    st = entry.stat()
                    parts.append(f"{entry.path[len(folder) :]}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(sorted(parts))


_header_memo: list[Path] = []


def host_header() -> Path:
    """The portability header user source is compiled over: shipped in the package
    (``pygpu/include``) or, in a development checkout, ``kernels/``."""
    if _header_memo:
        return _header_memo[0]
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (
        os.path.join(here, "include", "pygpu_kernel.h"),
        os.path.join(os.path.dirname(os.path.dirname(here)), "kernels", "pygpu_kernel.h"),
    ):
        if os.path.isfile(candidate):
            _header_memo.append(Path(candidate))
            return _header_memo[0]
    raise FileNotFoundError(f"the host kernel header pygpu_kernel.h is not in {here}/include: reinstall pygpu")


_cxx_memo: dict[str | None, str] = {}


def find_cxx() -> str:
    """The C++ compiler: ``$CXX``, else g++, clang++ or c++ on PATH."""
    env = os.environ.get("CXX") or None
    if env in _cxx_memo:
        return _cxx_memo[env]
    names = [env] if env else ["g++", "clang++", "c++"]
    for name in names:
        path = _which(name)
        if path:
            _cxx_memo[env] = path
            return path
    if env:
        raise FileNotFoundError(f"CXX={env!r} is not an executable on PATH: set CXX to your C++ compiler")
    raise FileNotFoundError(
        "the host backend compiles kernels with a C++ compiler and found none (g++, clang++, c++): "
        "install one (e.g. apt-get install g++) or set CXX"
    )


def _which(name: str) -> str | None:
    """shutil.which for one name on POSIX, at half its cost (a new process's cache hit asks)."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def compiler_identity(cxx: str) -> str:
    """Stands for the compiler's version in cache keys without running it: its path and
    the file's (through symbolic links) device, inode, size and modification time (an
    upgrade replaces the file)."""
    st = os.stat(cxx)
    return f"{cxx}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def translate_options(options: list[str]) -> list[str]:
    """PyCUDA/nvcc options for the C++ compiler: -I, -D, -U, -O, -std, -W pass; GPU-only
    ones are dropped; anything else goes to the compiler, which rejects what it does not know."""
    out: list[str] = []
    skip_next = False
    for option in options:
        if skip_next:
            skip_next = False
            continue
        if option in _GPU_ONLY_WITH_VALUE:
            skip_next = True
            continue
        if _GPU_ONLY.get().match(option):
            continue
        out.append(option)
    return out


_COMMENT_OR_STRING = _Pattern(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
_GLOBAL = _Pattern(r"\b__global__\b")
_PREPROCESSOR = _Pattern(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
_LAUNCH_BOUNDS = _Pattern(r"__launch_bounds__\s*\([^()]*\)")
_NAME_BEFORE_PAREN = _Pattern(r"([A-Za-z_]\w*)\s*\($")
_VARIABLE = _Pattern(
    r"(?:^|(?<=[;{}]))\s*((?:static\s+)?(?:__device__|__constant__)(?:\s+(?:__device__|__constant__))*)\s+"
    r"([A-Za-z_][\w:<>, ]*?[\s\*&]+)([A-Za-z_]\w*)\s*(\[[^\];]*\])*\s*(?:=[^;]*)?;"
)


def _blank(m: re.Match[str]) -> str:
    return "".join(c if c == "\n" else " " for c in m.group(0))


def _depth_zero_text(code: str) -> str:
    """The code with the insides of braces blanked: only namespace-scope text remains."""
    out = []
    depth = 0
    for c in code:
        if c == "{":
            depth += 1
            out.append(c)
        elif c == "}":
            depth = max(depth - 1, 0)
            out.append(c)
        else:
            out.append(c if depth == 0 or c == "\n" else " ")
    return "".join(out)


def kernel_names(source: str) -> tuple[list[str], list[str]]:
    """The namespace-scope ``__global__`` functions of the source in order (templates and
    kernels inside a ``namespace`` excepted) and its ``__device__``/``__constant__`` variables."""
    # extern "C" { ... } is namespace scope too: look inside it by dropping its braces; blank
    # everything inside other braces (function bodies, namespaces, classes).
    flat = _COMMENT_OR_STRING.get().sub(_blank, re.sub(r'extern\s+"C"\s*\{', lambda e: " " * len(e.group(0)), source))
    # Preprocessor lines (with their continuations) are no declarations, and a declaration
    # right after one (`#define N 17` then `__constant__ float k[N];`) starts a statement.
    flat = _PREPROCESSOR.get().sub(lambda m: ";" + _blank(m)[1:], flat)
    top = _depth_zero_text(flat)
    kernels: list[str] = []
    for m in _GLOBAL.get().finditer(top):
        start = max(top.rfind(";", 0, m.start()), top.rfind("}", 0, m.start()), top.rfind("{", 0, m.start()))
        if re.search(r"\btemplate\b", top[start + 1 : m.start()]):
            continue
        rest = _LAUNCH_BOUNDS.get().sub(lambda b: " " * len(b.group(0)), top[m.end() :])
        paren = rest.find("(")
        if paren < 0:
            continue
        name = _NAME_BEFORE_PAREN.get().search(rest[: paren + 1])
        if name and name.group(1) not in kernels:
            kernels.append(name.group(1))
    variables: list[str] = []
    for m in _VARIABLE.get().finditer(top):
        if "static" not in m.group(1) and m.group(3) not in variables:
            variables.append(m.group(3))
    return kernels, variables


def device_launch_lines(source: str) -> list[int]:
    """The lines (from 1) where the source launches a kernel from device code (``<<<``):
    dynamic parallelism, which the host backend does not run."""
    code = _COMMENT_OR_STRING.get().sub(_blank, source)
    return [code.count("\n", 0, m.start()) + 1 for m in re.finditer("<<<", code)]


# __align__(N), __align__(sizeof(T)): one level of nested parentheses.
_ALIGN = r"__align__\s*\((?:[^()]|\([^()]*\))*\)"
_DYNAMIC_SHARED = _Pattern(
    rf"\bextern\s+__shared__\s+(?:{_ALIGN}\s+)?([A-Za-z_][\w:<>, ]*?[\s\*&]*?)\s*"
    rf"(?:{_ALIGN}\s*)?([A-Za-z_]\w*)\s*\[\s*\]\s*;"
)


def rewrite_dynamic_shared(source: str) -> str:
    """``extern __shared__ T name[];`` as ``PYGPU_DYNAMIC_SHARED(T, name);``: a C++ declaration
    cannot name memory sized at launch, so the header gives it as a pointer (inside a function;
    a namespace-scope declaration is not supported on the host). Lines stay where they were."""
    return _DYNAMIC_SHARED.get().sub(lambda m: f"PYGPU_DYNAMIC_SHARED({m.group(1).strip()}, {m.group(2)});", source)


def host_source(source: str, no_extern_c: bool) -> str:
    """The translation unit compiled for the host: includes the user's source (kernel.cu),
    then exports its kernels and globals."""
    kernels, variables = kernel_names(source)
    # The source stays in its own file, so the compiler's messages quote its own lines.
    body = '#include "kernel.cu"' if no_extern_c else 'extern "C" {\n#include "kernel.cu"\n}'
    exports = [f"PYGPU_EXPORT({k})" for k in kernels]
    for v in variables:
        # The loader looks up pygpu_global_<name> (the variable's address) and its size.
        exports.append(
            f'extern "C" {{ PYGPU_VISIBLE extern decltype({v}) pygpu_global_{v} __attribute__((alias("{v}"))); }}\n'
            f"PYGPU_API const std::size_t pygpu_global_size_{v} = sizeof({v});"
        )
    return f"{body}\n// pygpu: host exports\n" + "\n".join(exports) + "\n"


# Defined only where the header does not define them (the host runtime may).
_PRELUDE = """#include "pygpu_kernel.h"
#ifndef __global__
#define __global__
#endif
#ifndef __constant__
#define __constant__
#endif
"""


def host_build(
    source: str, options: list[str], no_extern_c: bool, keep: bool, timeout: float | None = None, output: str = "so"
) -> tuple[bytes | None, list[str], str]:
    """Compiles into a kernels library (``output="so"``) or, for DynamicModule to link, a
    relocatable object (``"object"``); returns (bytes or None on failure, command line, compiler output)."""
    if output not in ("so", "object"):
        raise ValueError(f"output={output!r}: the host compiler builds 'so' or 'object'")
    header = host_header()
    with _workdir(keep) as folder:
        (folder / "pygpu_prelude.h").write_text(_PRELUDE)
        (folder / "kernel.cu").write_text(rewrite_dynamic_shared(source))
        (folder / "pygpu_build.cpp").write_text(host_source(source, no_extern_c))
        result = "kernel.so" if output == "so" else "kernel.o"
        flags = HOST_FLAGS if output == "so" else [*COMPILE_FLAGS, "-c"]
        command = [
            find_cxx(),
            *flags,
            "-I",
            str(header.parent),
            "-include",
            str(folder / "pygpu_prelude.h"),
            *translate_options(options),
            "-o",
            result,
            "pygpu_build.cpp",
            *(["-lm"] if output == "so" else []),
        ]
        return _run(command, folder, result, timeout)


_UNSAFE_IN_NAME = r"[^\w.-]"


def host_link(
    inputs: list[tuple[str, bytes | str]], keep: bool, timeout: float | None = None
) -> tuple[bytes | None, list[str], str]:
    """Links relocatable objects and archives, given as (name, bytes or a file's path), into one
    kernels library; returns (library bytes or None on failure, command line, linker output)."""
    with _workdir(keep) as folder:
        paths = []
        for i, (name, data) in enumerate(inputs):
            if isinstance(data, str):
                paths.append(os.path.abspath(data))
                continue
            # Named after the input, so that the linker's messages say which one they are about.
            path = folder / f"{i}-{re.sub(_UNSAFE_IN_NAME, '_', name)}"
            path.write_bytes(data)
            paths.append(str(path))
        # One group: archives and objects resolve each other whatever order they came in.
        command = [find_cxx(), *LINK_FLAGS, "-o", "kernel.so", "-Wl,--start-group", *paths, "-Wl,--end-group", "-lm"]
        return _run(command, folder, "kernel.so", timeout)


@contextlib.contextmanager
def _workdir(keep: bool) -> Iterator[Path]:
    """A temporary folder for one compiler run: removed afterwards, or kept and printed (keep=True)."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="pygpu-compile-")
    try:
        yield Path(path)
    finally:
        if keep:
            print(f"*** compiler output in {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


def _run(command: list[str], folder: Path, result: str, timeout: float | None) -> tuple[bytes | None, list[str], str]:
    """Runs the compiler or linker in ``folder``; (the result file's bytes or None, command, output)."""
    # Imported here: a cache hit never runs the compiler, and a new process should not pay for these.
    import signal
    import subprocess

    limit = timeout if timeout is not None else float(os.environ.get("PYGPU_COMPILE_TIMEOUT", _DEFAULT_TIMEOUT_S))
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired as e:
        output = (e.stderr or b"").decode(errors="replace")
        return (
            None,
            command,
            f"the compiler ran longer than {limit:g} s and was stopped (PYGPU_COMPILE_TIMEOUT)\n{output}",
        )
    log = (done.stdout + done.stderr).decode(errors="replace").strip()
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name if -done.returncode in signal.valid_signals() else "?"
        return None, command, f"the compiler was killed by signal {-done.returncode} ({name})\n{log}"
    if done.returncode != 0:
        return None, command, log or f"the compiler exited with status {done.returncode}"
    return (folder / result).read_bytes(), command, log
