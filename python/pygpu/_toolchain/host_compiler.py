"""The host backend's runtime compiler: CUDA C source built by the system C++ compiler into
a kernels shared library (the ABI of kernels/README.md), which ``Module(bytes)`` loads.

The source is compiled with the portability header force-included (``host_header``) and
an export appended for every ``__global__`` function the preprocessed source declares
(``preprocessed_kernels``), plus an exported alias for every namespace-scope
``__device__``/``__constant__`` variable, so that ``get_function`` and ``get_global`` find
them by name as on a GPU: a kernel of C linkage under its name, one of C++ linkage under its
mangled name (and, outside namespaces and overloads, its plain name too). Templated kernels
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
from typing import TYPE_CHECKING

from pygpu.errors import HostStandardWarning

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "HostKernel",
    "compile_timeout",
    "compiler_identity",
    "device_launch_lines",
    "find_cxx",
    "header_identity",
    "host_build",
    "host_header",
    "host_link",
    "kernel_names",
    "preprocessed_kernels",
    "preprocessed_variables",
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
# the user's code): hidden symbols but the ABI's, no libstdc++ dependency, plain IEEE maths
# without errno and floating-point traps, which device code does not have either (loops of
# sqrt, floor or a comparison's choice then vectorise; results are the same).
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
    "-fno-math-errno",
    "-fno-trapping-math",
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
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pygpu/, above _toolchain/
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
    """PyCUDA/nvcc options for the C++ compiler: -I, -D, -U, -O, -std, -W pass (nvcc's
    ``-std c++14``, ``--std=c++14`` as ``-std=c++14``); GPU-only ones are dropped; anything
    else goes to the compiler, which rejects what it does not know."""
    out: list[str] = []
    skip_next = False
    it = iter(options)
    for option in it:
        if skip_next:
            skip_next = False
            continue
        if option in _GPU_ONLY_WITH_VALUE:
            skip_next = True
            continue
        if _GPU_ONLY.get().match(option):
            continue
        if option in ("-std", "--std"):
            value = next(it, None)
            if value is None:
                raise ValueError(f"option {option!r} needs a value such as c++14")
            option = f"-std={value}"
        elif option.startswith("--std="):
            option = option[1:]
        elif option == "--pre-include" or option.startswith("--pre-include="):
            # nvcc's spelling of -include (NVRTC's too).
            value = option.partition("=")[2] or next(it, None)
            if not value:
                raise ValueError(f"option {option!r} needs a header to include")
            out += ["-include", value]
            continue
        out.append(option)
    return out


# Standards older than C++11, which the host kernel header (variadic templates, lambdas,
# thread_local) cannot be written in.
_PRE_CXX11 = {"c++98": "c++11", "c++03": "c++11", "gnu++98": "gnu++11", "gnu++03": "gnu++11"}


def _raise_old_standard(options: list[str]) -> list[str]:
    """The translated options with a pre-C++11 ``-std`` (the last one is the one that counts)
    raised to C++11, with a :class:`HostStandardWarning`; C++11 and later are kept as asked,
    the user's code may depend on them (C++17 removed ``register`` and ``throw()``)."""
    stds = [i for i, o in enumerate(options) if o.startswith("-std=")]
    if not stds or options[stds[-1]][5:] not in _PRE_CXX11:
        return options
    import warnings

    asked = options[stds[-1]][5:]
    raised = _PRE_CXX11[asked]
    warnings.warn(
        f"-std={asked}: the host backend compiles this source as {raised}, the oldest standard "
        "pygpu's host kernel header (pygpu_kernel.h) is written in",
        HostStandardWarning,
        stacklevel=4,
    )
    return [f"-std={raised}" if i == stds[-1] else o for i, o in enumerate(options)]


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


# `extern __shared__ T name[];` as the host header spells it after preprocessing: __shared__ is
# thread_local, __align__(n) an __attribute__. No CUDA source writes `extern thread_local` itself
# (device code has no thread storage), so in the preprocessor's output this is dynamic shared
# memory however it was declared (`#define LOCAL_MEM_DYNAMIC extern __shared__`).
_ATTRIBUTE = r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)"
_PREPROCESSED_DYNAMIC_SHARED = _Pattern(
    rf"\bextern\s+thread_local\s+(?:{_ATTRIBUTE}\s*)*([A-Za-z_][\w:<>, ]*?[\s\*&]*?)\s*"
    rf"(?:{_ATTRIBUTE}\s*)*([A-Za-z_]\w*)\s*\[\s*\]\s*;"
)


def _shared_pointer(m: re.Match[str]) -> str:
    """A preprocessed dynamic shared declaration as PYGPU_DYNAMIC_SHARED defines it, on its lines."""
    t = m.group(1).strip()
    return (
        f"static thread_local pygpu_host::SharedPointer<{t}>& {m.group(2)} = "
        f"reinterpret_cast<pygpu_host::SharedPointer<{t}>&>(pygpu_host::dynamic_shared_memory);"
        + "\n"
        * m.group(0).count("\n")
    )


def _rewrite_preprocessed_dynamic_shared(preprocessed: str, own_folder: str) -> str:
    """The preprocessor's output with the user's dynamic shared declarations rewritten
    (``_PREPROCESSED_DYNAMIC_SHARED``); text from system headers and pygpu's own is left alone."""
    out: list[str] = []
    chunk: list[str] = []
    keep = True
    marker = _LINE_MARKER.get()
    pattern = _PREPROCESSED_DYNAMIC_SHARED.get()

    def flush() -> None:
        if chunk:
            text = "\n".join(chunk)
            out.append(pattern.sub(_shared_pointer, text) if keep else text)
            chunk.clear()

    for line in preprocessed.splitlines():
        m = marker.match(line) if line.startswith("#") else None
        if m:
            flush()
            out.append(line)
            keep = _is_user_file(m, own_folder)
        else:
            chunk.append(line)
    flush()
    return "\n".join(out) + "\n"


def rewrite_dynamic_shared(source: str) -> str:
    """``extern __shared__ T name[];`` as ``PYGPU_DYNAMIC_SHARED(T, name);``: a C++ declaration
    cannot name memory sized at launch, so the header gives it as a pointer (inside a function;
    a namespace-scope declaration is not supported on the host). Lines stay where they were."""
    return _DYNAMIC_SHARED.get().sub(lambda m: f"PYGPU_DYNAMIC_SHARED({m.group(1).strip()}, {m.group(2)});", source)


class HostKernel:
    """A ``__global__`` function found in a preprocessed source. (A plain class: ``typing``'s
    NamedTuple would cost every new process's cache hit the import of ``typing``.)"""

    __slots__ = ("c_linkage", "name", "params", "scope")

    def __init__(self, name: str, scope: tuple[tuple[str, bool], ...], c_linkage: bool, params: str) -> None:
        #: Its name as declared: an identifier, or a qualified one (``ns::k``) for a definition
        #: outside its namespace.
        self.name = name
        #: The namespaces it is declared in, outermost first: (name, "" for an anonymous one; inline).
        self.scope = scope
        #: Declared ``extern "C"``: its symbol is its name, else the mangled name.
        self.c_linkage = c_linkage
        #: Its parameter list as written (tokens joined by spaces), which tells overloads apart.
        self.params = params

    def _fields(self) -> tuple[object, ...]:
        return (self.name, self.scope, self.c_linkage, self.params)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostKernel) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"HostKernel{self._fields()!r}"


_TOKEN = _Pattern(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_]\w*|\d[\w.]*|::|\S')
_LINE_MARKER = _Pattern(r'^# \d+ "((?:\\.|[^"\\])*)"((?: \d+)*)$')
_NOT_A_NAME = {"__attribute__", "__declspec", "alignas", "decltype", "__launch_bounds__", "__align__"}


def _user_text(preprocessed: str, own_folder: str) -> str:
    """The preprocessor's output less what came from system headers (line marker flag 3) and
    from pygpu's own headers: neither declares a user's kernel, and scanning them would cost
    more than the compile's preprocessing did."""
    keep = True
    out: list[str] = []
    marker = _LINE_MARKER.get()
    for line in preprocessed.splitlines():
        if line.startswith("#"):
            m = marker.match(line)
            if m:
                keep = _is_user_file(m, own_folder)
            continue  # markers and surviving #pragma lines
        if keep:
            out.append(line)
    return "\n".join(out)


def _is_user_file(marker: re.Match[str], own_folder: str) -> bool:
    """Whether a line marker starts text of the user's: not a system header (flag 3), not pygpu's."""
    return " 3" not in marker.group(2) and not os.path.abspath(marker.group(1)).startswith(own_folder + os.sep)


def preprocessed_variables(preprocessed: str, own_folder: str = "") -> list[str]:
    """The namespace-scope ``__device__``/``__constant__`` variables declared in the
    preprocessor's output (``__device__`` and ``__constant__`` kept as tokens), as
    ``kernel_names`` finds them in a raw source, however they were spelled (``#define
    CONSTANT_MEM __constant__``). Text from system headers and ``own_folder`` is not scanned."""
    return kernel_names(_user_text(preprocessed, os.path.abspath(own_folder) if own_folder else "\0"))[1]


def _skip_group(tokens: list[str], i: int, opening: str, closing: str) -> int:
    """The index after the group that opens at tokens[i]."""
    depth = 0
    while i < len(tokens):
        if tokens[i] == opening:
            depth += 1
        elif tokens[i] == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _kernel_in(statement: list[str], scope: list[tuple[str, bool]], in_c_block: bool) -> HostKernel | None:
    """The kernel a declaration or definition (its tokens up to ``;`` or ``{``) declares, if any."""
    if "__global__" not in statement or "template" in statement:
        # A template (or an explicit instantiation or specialisation) has no single symbol.
        return None
    i = statement.index("__global__") + 1
    while i < len(statement):
        token = statement[i]
        if token == "(":
            before = statement[i - 1]
            if (before[0].isalpha() or before[0] == "_") and before not in _NOT_A_NAME:
                start = i - 1
                while start >= 2 and statement[start - 1] == "::" and statement[start - 2][0] in _IDENT_START:
                    start -= 2
                end = _skip_group(statement, i, "(", ")")
                c_linkage = in_c_block or any(a == "extern" and b == '"C"' for a, b in zip(statement, statement[1:]))
                return HostKernel(
                    "".join(statement[start:i]), tuple(scope), c_linkage, " ".join(statement[i + 1 : end - 1])
                )
            i = _skip_group(statement, i, "(", ")")
            continue
        i += 1
    return None


_IDENT_START = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def preprocessed_kernels(preprocessed: str, own_folder: str = "") -> list[HostKernel]:
    """The ``__global__`` functions declared in the preprocessor's output (with line markers;
    ``__global__`` kept as a token), in source order, each once: at namespace scope, in
    namespaces and ``extern "C"`` blocks, however they were spelled (``#define KERNEL extern
    "C" __global__``). Templates are left out. Text from system headers and from ``own_folder``
    (pygpu's headers) is not scanned."""
    tokens = _TOKEN.get().findall(_user_text(preprocessed, os.path.abspath(own_folder) if own_folder else "\0"))
    found: list[HostKernel] = []
    scope: list[tuple[str, bool]] = []
    # Per open brace at namespace level: how many namespaces it opened, or a linkage block
    # (_C_BLOCK for extern "C", _CXX_BLOCK for extern "C++").
    opened: list[int] = []
    statement: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "{" and statement in (["extern", '"C"'], ["extern", '"C++"']):
            opened.append(_C_BLOCK if statement[1] == '"C"' else _CXX_BLOCK)
            statement = []
        elif token == "{" and (statement[:1] == ["namespace"] or statement[:2] == ["inline", "namespace"]):
            names = _namespace_names(statement)
            scope.extend(names)
            opened.append(len(names))
            statement = []
        elif token in ("{", ";"):
            linkage = [b for b in opened if b < 0]
            kernel = _kernel_in(statement, scope, bool(linkage) and linkage[-1] == _C_BLOCK)
            if kernel is not None and kernel not in found:
                found.append(kernel)
            statement = []
            if token == "{":
                # A body, class, enum or initialiser: nothing in it is at namespace scope.
                i = _skip_group(tokens, i, "{", "}")
                continue
        elif token == "}":
            count = opened.pop() if opened else 0
            if count > 0:
                del scope[-count:]
            statement = []
        else:
            statement.append(token)
        i += 1
    # `__global__ void ns::k(...) { }` defines a kernel declared in its namespace: one kernel.
    declared = {(tuple(n for n, _ in k.scope) + (k.name,), _parameter_types(k.params)) for k in found}
    return [
        k
        for k in found
        if "::" not in k.name
        or (tuple(n for n, _ in k.scope) + tuple(k.name.split("::")), _parameter_types(k.params)) not in declared
        or k.c_linkage
    ]


_C_BLOCK, _CXX_BLOCK = -1, -2


def _namespace_names(statement: list[str]) -> list[tuple[str, bool]]:
    """The namespaces a ``[inline] namespace a::inline b [[attributes]]`` opens, with whether each
    is inline; an anonymous one is ("", False)."""
    inline = statement[0] == "inline"
    i = statement.index("namespace") + 1
    names: list[tuple[str, bool]] = []
    while i < len(statement) and statement[i][0] in _IDENT_START and statement[i] != "__attribute__":
        if statement[i] == "inline":
            inline = True
        else:
            names.append((statement[i], inline))
            inline = False
            if statement[i + 1 : i + 2] != ["::"]:
                break
            i += 1
        i += 1
    return names or [("", False)]


def _export_lines(kernels: list[HostKernel]) -> list[str]:
    """The export macros for the kernels, each inside the namespaces it was declared in (so that
    its name and the types of its parameters mean there what they meant at its declaration)."""
    lines: list[str] = []
    c_names = {k.name for k in kernels if k.c_linkage}
    cxx: dict[tuple[tuple[tuple[str, bool], ...], str], list[HostKernel]] = {}
    for k in kernels:
        if not k.c_linkage:
            cxx.setdefault((k.scope, k.name), []).append(k)

    def wrap(scope: tuple[tuple[str, bool], ...], line: str) -> str:
        opening = "".join(f"{'inline ' if inline else ''}namespace {name} {{ " for name, inline in scope)
        return f"{opening}{line}{' }' * len(scope)}"

    exported_plain: set[str] = set()
    for n, k in enumerate(kernels):
        if any(not name for name, _ in k.scope):
            continue  # in an anonymous namespace: internal linkage, which nvcc and NVRTC export none of
        last = k.name.rsplit("::", 1)[-1]
        if k.c_linkage:
            if last not in exported_plain:
                exported_plain.add(last)
                lines.append(wrap(k.scope, f"PYGPU_EXPORT_AS({last}, {k.name})"))
            continue
        same = cxx[(k.scope, k.name)]
        distinct = {_parameter_types(o.params) for o in same}
        if same[0] is not k and len(distinct) == 1:
            continue  # a declaration, then its definition: one function
        if len(distinct) == 1:
            lines.append(wrap(k.scope, f"PYGPU_EXPORT_MANGLED({n}, decltype(&{k.name}), {k.name})"))
            # pygpu's host backend exported a kernel of C++ linkage under its plain name before it
            # knew mangled ones; kept where the name is unambiguous.
            if not k.scope and "::" not in k.name and k.name not in c_names and k.name not in exported_plain:
                exported_plain.add(k.name)
                lines.append(f"PYGPU_EXPORT({k.name})")
        elif _parameter_types(k.params) not in {_parameter_types(o.params) for o in same[: same.index(k)]}:
            lines.append(wrap(k.scope, f"PYGPU_EXPORT_MANGLED({n}, void (*)({k.params}), {k.name})"))
    return lines


_BUILTIN_TYPES = {"void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "size_t"}


def _parameter_types(params: str) -> str:
    """A parameter list less its parameter names: what tells an overload from a redeclaration."""
    out = []
    for param in params.split(" , "):
        words = param.split()
        if len(words) > 1 and words[-1][0] in _IDENT_START and words[-1] not in _BUILTIN_TYPES:
            words = words[:-1]
        out.append(" ".join(words))
    return ",".join(out)


def host_source(no_extern_c: bool, kernels: list[HostKernel], variables: list[str]) -> str:
    """The translation unit compiled for the host: includes the user's source (kernel.cu),
    then exports its kernels (``kernels``, from ``preprocessed_kernels``) and globals
    (``variables``, from ``preprocessed_variables``)."""
    # The source stays in its own file, so the compiler's messages quote its own lines.
    body = _scan_body(no_extern_c)
    exports = _export_lines(kernels)
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
# For finding kernels and globals: the header defines __global__, __device__ and __constant__ as
# nothing; a macro naming itself expands to itself, so that the preprocessor's output keeps the
# token wherever a kernel or a global is declared. (Redefined after the header, whose own uses
# expand as in the build; __shared__ keeps its meaning, thread_local, which the dynamic shared
# memory rewrite looks for.)
_SCAN_PRELUDE = _PRELUDE + "".join(
    f"#undef {t}\n#define {t} {t}\n" for t in ("__global__", "__device__", "__constant__")
)


def _scan_body(no_extern_c: bool) -> str:
    return '#include "kernel.cu"' if no_extern_c else 'extern "C" {\n#include "kernel.cu"\n}'


def host_build(
    source: str, options: list[str], no_extern_c: bool, keep: bool, timeout: float | None = None, output: str = "so"
) -> tuple[bytes | None, list[str], str]:
    """Compiles into a kernels library (``output="so"``) or, for DynamicModule to link, a
    relocatable object (``"object"``); returns (bytes or None on failure, command line, compiler output)."""
    if output not in ("so", "object"):
        raise ValueError(f"output={output!r}: the host compiler builds 'so' or 'object'")
    header = host_header()
    translated = _raise_old_standard(translate_options(options))
    with _workdir(keep) as folder:
        (folder / "pygpu_prelude.h").write_text(_PRELUDE)
        (folder / "pygpu_scan_prelude.h").write_text(_SCAN_PRELUDE)
        (folder / "kernel.cu").write_text(source)
        (folder / "pygpu_scan.cpp").write_text(_scan_body(no_extern_c) + "\n")
        # Kernels are found in the preprocessor's output, run with the build's own options:
        # it sees what the compiler will (macros such as `#define KERNEL extern "C"
        # __global__`, #if, included files), which the raw text does not. The built library's
        # symbols could not tell kernels from other functions: on the host both are plain.
        scan = [find_cxx(), *COMPILE_FLAGS, "-E", "-I", str(header.parent), "-include"]
        scan += [str(folder / "pygpu_scan_prelude.h"), *translated, "-o", "kernel.ii", "pygpu_scan.cpp"]
        preprocessed, scan_command, log = _run(scan, folder, "kernel.ii", timeout)
        if preprocessed is None:
            return None, scan_command, log
        text = preprocessed.decode(errors="replace")
        own = str(header.parent)
        kernels = preprocessed_kernels(text, own)
        variables = preprocessed_variables(text, own)
        (folder / "pygpu_build.cpp").write_text(host_source(no_extern_c, kernels, variables))
        result = "kernel.so" if output == "so" else "kernel.o"
        flags = HOST_FLAGS if output == "so" else [*COMPILE_FLAGS, "-c"]
        include = ["-I", own, "-include", str(folder / "pygpu_prelude.h")]
        link = ["-lm"] if output == "so" else []
        if not _PREPROCESSED_DYNAMIC_SHARED.get().search(_user_text(text, os.path.abspath(own))):
            return _run(
                [find_cxx(), *flags, *include, *translated, "-o", result, "pygpu_build.cpp", *link],
                folder,
                result,
                timeout,
            )
        # `extern __shared__ T name[];` names memory sized at launch, which a C++ declaration
        # cannot: it must become a pointer (PYGPU_DYNAMIC_SHARED). No header definition can do
        # that (`extern` comes before the macro, `[]` after), and a rewrite of the raw text misses
        # declarations spelled through macros (reikna's `#define LOCAL_MEM_DYNAMIC extern
        # __shared__`) or in included files; so the build unit is preprocessed, its declarations
        # rewritten where the preprocessor has spelled them all alike, and that output compiled.
        # Only sources with such a declaration pay the extra step; line markers keep the
        # compiler's messages on the user's own lines.
        expand = [find_cxx(), *COMPILE_FLAGS, "-E", *include, *translated, "-o", "pygpu_build.ii", "pygpu_build.cpp"]
        expanded, expand_command, log = _run(expand, folder, "pygpu_build.ii", timeout)
        if expanded is None:
            return None, expand_command, log
        rewritten = _rewrite_preprocessed_dynamic_shared(expanded.decode(errors="replace"), os.path.abspath(own))
        (folder / "pygpu_build.ii").write_text(rewritten)
        # The same flags, but the input is already preprocessed (-x c++-cpp-output).
        flags = [f if f != "c++" else "c++-cpp-output" for f in flags]
        return _run([find_cxx(), *flags, *translated, "-o", result, "pygpu_build.ii", *link], folder, result, timeout)


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
            try:
                shutil.rmtree(path, ignore_errors=True)
            except KeyboardInterrupt:
                # A second Ctrl-C while removing: finish removing, then honour it.
                shutil.rmtree(path, ignore_errors=True)
                raise


def compile_timeout() -> float:
    """The seconds one compiler run may take: ``$PYGPU_COMPILE_TIMEOUT``, else 300."""
    value = os.environ.get("PYGPU_COMPILE_TIMEOUT")
    if value is None or not value.strip():
        return _DEFAULT_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(
            f"PYGPU_COMPILE_TIMEOUT={value!r}: it must be a positive number of seconds (the limit on one "
            f"compiler run; unset it for the default {_DEFAULT_TIMEOUT_S:g})"
        )
    return seconds


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kills the compiler and every process it started (cc1plus, as, ld: one process group, its
    own), then reaps the compiler: nothing of it runs, or writes, after this returns."""
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already
    try:
        process.kill()  # in case the group could not be signalled
    except OSError:
        pass
    process.wait()


def _run(command: list[str], folder: Path, result: str, timeout: float | None) -> tuple[bytes | None, list[str], str]:
    """Runs the compiler or linker in ``folder``; (the result file's bytes or None, command, output).

    The compiler runs in a process group of its own, with its temporary files (``TMPDIR``) in
    ``folder``: when the run is interrupted (Ctrl-C's KeyboardInterrupt, any exception) or
    times out, the whole group is killed before this returns or re-raises, and ``_workdir``
    then removes the folder with whatever it held."""
    # Imported here: a cache hit never runs the compiler, and a new process should not pay for these.
    import signal
    import subprocess

    limit = timeout if timeout is not None else compile_timeout()
    env = {**os.environ, "TMPDIR": str(folder)}
    process = subprocess.Popen(
        command,
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    with process:
        try:
            out, err = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _stop(process)
            out, err = process.communicate()
            return (
                None,
                command,
                f"the compiler ran longer than {limit:g} s and was stopped (PYGPU_COMPILE_TIMEOUT)\n"
                + (err or b"").decode(errors="replace"),
            )
        except BaseException:
            _stop(process)
            raise
    log = (out + err).decode(errors="replace").strip()
    if process.returncode < 0:
        number = -process.returncode
        name = signal.Signals(number).name if number in signal.valid_signals() else "?"
        return None, command, f"the compiler was killed by signal {number} ({name})\n{log}"
    if process.returncode != 0:
        return None, command, log or f"the compiler exited with status {process.returncode}"
    try:
        return (folder / result).read_bytes(), command, log
    except FileNotFoundError:
        return (
            None,
            command,
            f"the compiler ({command[0]}) exited with status 0 but wrote no {result}: is $CXX a C++ compiler?"
            + (f"\n{log}" if log else ""),
        )
