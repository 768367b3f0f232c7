"""SourceModule and ``compile`` (behind ``pygpu.compiler``): one CUDA C source built into a
binary that :class:`pygpu.Module` loads, by NVRTC (cuda), hiprtc (hip) or the host C++ compiler
(host), with the disk cache and the in-process memo; docs/compiler.md says how each step
works. ``dynamic_module`` links several sources.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from pygpu._pygpu import capabilities
from pygpu._toolchain import compile_cache
from pygpu._toolchain import host_compiler
from pygpu._toolchain import kernel_declarations
from pygpu._toolchain import rtc
from pygpu._toolchain import toolkit_headers
from pygpu._toolchain.compiled_module import NO_TEXTURES, CompiledModule
from pygpu._driver.capability import device_capability
from pygpu._pygpu import Module, cudaDeviceProp, driver_get_version, get_device, rtc_compile
from pygpu.errors import BackendUnavailableError, CompileError, ComputedIncludeError

__all__ = ["DEFAULT_NVCC_FLAGS", "SourceModule", "compile", "driver_major", "source_text"]

#: Options used when ``options`` is None (PyCUDA's name); ``$PYGPU_DEFAULT_NVCC_FLAGS`` adds to it.
DEFAULT_NVCC_FLAGS: list[str] = os.environ.get("PYGPU_DEFAULT_NVCC_FLAGS", "").split()

_Stamp = tuple[tuple[str, int, int], ...]
# In-process memo: what was asked for -> (binary, the headers' (path, mtime, size) it was built from).
_memo: dict[tuple[Any, ...], tuple[bytes, _Stamp]] = {}
_device_memo: dict[int, tuple[tuple[int, int], str]] = {}
_header_identity: dict[str, str] = {}
_driver_major_memo: list[int | None] = []

#: Set to a list by bench/compile_bench.py: compile() and SourceModule then append
#: (step, time.perf_counter()) after each step, to show where a cache hit's time goes.
trace: list[tuple[str, float]] | None = None


def _mark(step: str) -> None:
    if trace is not None:
        trace.append((step, time.perf_counter()))


def _device() -> tuple[tuple[int, int], str]:
    """(compute capability, a label that tells the device apart) of the current device."""
    device = get_device()
    if device not in _device_memo:
        if capabilities().compiler == "nvrtc":
            # NVRTC's target is the compute capability alone: two attribute queries, no properties.
            _device_memo[device] = (device_capability(), f"cuda device {device}")
        else:
            props = cudaDeviceProp(device)
            _device_memo[device] = (props.compute_capability, props.name)
    return _device_memo[device]


def driver_major() -> int | None:
    """The CUDA major the driver supports (it cannot change while the process runs)."""
    if not _driver_major_memo:
        try:
            major: int | None = driver_get_version() // 1000
        except Exception:  # noqa: BLE001 - only a preference for NVRTC's search order
            major = None
        _driver_major_memo.append(major)
    return _driver_major_memo[0]


def _stamp(paths: list[Path]) -> _Stamp:
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(out)


def _still_valid(stamp: _Stamp) -> bool:
    try:
        return all((os.stat(p).st_mtime_ns, os.stat(p).st_size) == (m, s) for p, m, s in stamp)
    except OSError:
        return False


def _include_dirs(options: list[str], include_dirs: list[str]) -> list[Path]:
    """The folders the compiler searches for headers, as the options and ``include_dirs`` name
    them (``-I``, ``--include-path``, ``-isystem``, ``-iquote``, ``-idirafter``; joined or not)."""
    dirs = [Path(d) for d in include_dirs]
    folders = [flag for flag, is_folder in _PATH_OPTIONS.items() if is_folder]
    it = iter(options)
    for option in it:
        head, eq, value = option.partition("=")
        if option in folders:
            following = next(it, None)
            if following:
                dirs.append(Path(following))
        elif eq and head in folders:
            if value:
                dirs.append(Path(value))
        elif not eq or option.startswith("-I"):
            flag = next((f for f in ("-isystem", "-iquote", "-idirafter", "-I") if option.startswith(f)), None)
            if flag is not None and len(option) > len(flag):
                dirs.append(Path(option[len(flag) :]))
    return dirs


# Options naming an include folder, or a header to include first: (spelling, is it a folder).
# Their relative paths are made absolute at call time: the compiler runs in a temporary folder,
# and the in-process memo must not take `-Iinc` after a chdir for the folder it named before.
_PATH_OPTIONS = {
    "-I": True,
    "--include-path": True,
    "-isystem": True,
    "-iquote": True,
    "-idirafter": True,
    "-include": False,
    "--pre-include": False,
}


def _absolute(value: str, folder: bool) -> str:
    # A header to pre-include that is not there relative to here is searched for on the include path.
    if folder or os.path.exists(value):
        return os.path.abspath(value)
    return value


# nvcc options for the host compiler/preprocessor, which a PyCUDA compile (nvcc --cubin) runs only
# to preprocess the kernels; and nvcc's filter of the kernels to generate (-e), where compiling all
# of them serves the same names. Both are dropped, but for the preprocessor's -D/-U/-I among the
# host compiler's options (nvcc passes them as a comma-separated list).
_HOST_SIDE_OPTIONS = {"-Xcompiler", "--compiler-options", "-ccbin", "--compiler-bindir", "-e", "--entries"}


def _device_side(options: list[str]) -> list[str]:
    """``options`` without what only nvcc's host compiler or its kernel filter takes."""
    out: list[str] = []
    it = iter(options)
    for option in it:
        head, eq, value = option.partition("=")
        if head not in _HOST_SIDE_OPTIONS:
            out.append(option)
            continue
        if not eq:
            following = next(it, None)
            if following is None:
                raise ValueError(f"option {option!r} needs a value")
            value = following
        if head in ("-Xcompiler", "--compiler-options"):
            out += [item for item in value.split(",") if item.startswith(("-D", "-U", "-I")) and len(item) > 2]
    return out


def _absolute_paths(options: list[str]) -> list[str]:
    """``options`` with the relative folder of each include-folder option (``-Idir``, ``-I dir``,
    ``--include-path=dir``, ``-isystem dir``...) and the relative file of each ``-include`` /
    ``--pre-include`` made absolute against the current folder, now."""
    out: list[str] = []
    it = iter(options)
    for option in it:
        head, eq, value = option.partition("=")
        if option in _PATH_OPTIONS:
            out.append(option)
            following = next(it, None)
            if following is not None:
                out.append(_absolute(following, _PATH_OPTIONS[option]))
        elif eq and head in _PATH_OPTIONS and value:
            out.append(f"{head}={_absolute(value, _PATH_OPTIONS[head])}")
        elif option.startswith(("-I", "-isystem", "-iquote", "-idirafter")) and not eq:
            flag = next(f for f in ("-isystem", "-iquote", "-idirafter", "-I") if option.startswith(f))
            out.append(f"{flag}{_absolute(option[len(flag) :], True)}")
        else:
            out.append(option)
    return out


def _pre_includes(options: list[str]) -> list[str]:
    """The headers ``-include``/``--pre-include`` name (after :func:`_absolute_paths`): the
    compiler reads them before the source, so they belong in the cache key as its headers do."""
    found: list[str] = []
    it = iter(options)
    for option in it:
        head, eq, value = option.partition("=")
        if option in ("-include", "--pre-include"):
            following = next(it, None)
            if following:
                found.append(following)
        elif eq and head in ("-include", "--pre-include") and value:
            found.append(value)
    return found


def _option_list(options: object, what: str = "options") -> list[str]:
    """``options`` as a list of str. One str is taken as the whole option string, split as a
    shell splits words (``"-DN=4 -I inc"``), so that it is never split into characters."""
    if options is None:
        return []
    if isinstance(options, str):
        import shlex

        try:
            return shlex.split(options)
        except ValueError as e:
            raise ValueError(f"{what}={options!r}: cannot split it into options ({e}); pass a list of str") from e
    if isinstance(options, (bytes, bytearray)) or not hasattr(options, "__iter__"):
        raise TypeError(f"{what} must be a list of str (or one str of options), not {type(options).__name__}")
    items = list(options)
    bad = [o for o in items if not isinstance(o, str)]
    if bad:
        raise TypeError(f"{what} must be a list of str, and holds {type(bad[0]).__name__} {bad[0]!r}")
    return items


# nvcc compiles the host's headers along with a kernel, so sources written for it may use glibc's
# <sys/types.h> names; NVRTC and hiprtc see no host headers.
_NVCC_HOST_TYPES = "typedef unsigned int uint; typedef unsigned short ushort; typedef unsigned long ulong;\n"


class _Plan:
    """One compilation worked out: which compiler, which options, the cache key's parts."""

    def __init__(
        self,
        source: str,
        options: list[str],
        no_extern_c: bool,
        arch: str | None,
        code: str | None,
        include_dirs: list[str],
        target: str,
    ) -> None:
        caps = capabilities()
        options = _device_side(options)
        self.backend = caps.backend
        # Which compiler builds this source is the capability table's answer; all below follows it.
        self.compiler = caps.compiler
        self.source = source
        self.no_extern_c = no_extern_c
        self.include_dirs = _include_dirs(options, include_dirs)
        # Absolute include folders: the host compiler runs in a temporary folder.
        all_options = _absolute_paths(options) + [f"-I{os.path.abspath(d)}" for d in include_dirs]
        # The CUDA toolkit's header folders: searched last, kept out of the key's options (a header
        # found there is keyed by its folder's identity: `opaque`), added to the compiler's.
        self.toolkit_options: list[str] = []
        self.opaque: dict[Path, str] = {}
        self.library = ""
        self.output = "so"
        self.capability = (0, 0)
        self.arch: str | None = None
        if self.compiler == "c++":
            if target not in ("cubin", "ptx", "object"):
                raise ValueError(f"target={target!r}: the host backend compiles to a library or an 'object'")
            self.output = "object" if target == "object" else "so"
            cxx = host_compiler.find_cxx()
            header = str(host_compiler.host_header())
            if header not in _header_identity:
                _header_identity[header] = host_compiler.header_identity()
            self.options = all_options
            self._add_host_toolkit(options)
            self.target = f"host-{os.uname().machine}" + (":object" if target == "object" else "")
            # The translation of the source (kernel exports, dynamic shared memory) is pygpu's
            # own code: its file's identity stands for its version.
            self.identity = [
                host_compiler.compiler_identity(cxx),
                _header_identity[header],
                host_compiler.compiler_identity(host_compiler.__file__),
            ]
            _mark("compiler and header identity")
            return
        if target not in ("cubin", "ptx"):
            raise ValueError(f"target={target!r}: pygpu compiles to 'cubin' (the default) or 'ptx' on {self.backend}")
        if code is not None and arch is None:
            arch = code
        # pygpu's headers (pygpu-complex.hpp, PyCUDA's pycuda-complex.hpp) after the user's
        # folders, as nvcc has PyCUDA's; the key then covers what the source includes of them.
        package_include = host_compiler.host_header().parent
        # Then empty <stdio.h> and friends: the runtime compilers have no C library headers,
        # and what device code uses of them is built in (printf, malloc, memcpy, math).
        libc = package_include / "rtc_libc"
        self.include_dirs += [package_include, libc]
        rtc_options, asked = rtc.nvrtc_options([*all_options, f"-I{package_include}", f"-I{libc}"])
        if self.compiler == "nvrtc":
            # nvcc searches the toolkit's include folder by itself; NVRTC does not.
            toolkit = toolkit_headers.find_toolkit_headers()
            if toolkit.cccl is not None:
                # NVRTC refuses CCCL's thrust/complex.h (host functions): pygpu's, over libcu++, comes first.
                self.include_dirs.append(package_include / "rtc_toolkit")
                self.toolkit_options.append(f"-I{package_include / 'rtc_toolkit'}")
            self._add_toolkit_folders(toolkit.folders(), "-I")
        arch = arch or asked
        capability, device_name = _device()
        if self.compiler == "hiprtc":
            self.library = rtc.find_hiprtc()
            self.output = "code"
            if arch is not None:
                rtc_options.append(f"--offload-arch={arch}")
            # hiprtc compiles for the current device when no --offload-arch is given.
            self.target = arch or f"hip:{device_name}:{capability[0]}.{capability[1]}"
        else:
            # Nothing here loads NVRTC: a cache hit never needs it. Whether NVRTC knows the
            # GPU (cubin, else PTX) follows from the library and the device, both in the key.
            self.library = rtc.find_nvrtc(driver_major())
            _mark("find NVRTC")
            if target == "ptx" and arch is None:
                arch = f"compute_{capability[0]}{capability[1]}"
            self.capability = capability
            self.arch = arch
            self.target = f"sm_{capability[0]}{capability[1]}:{arch or 'native'}"
        self.options = rtc_options
        self.identity = [rtc.library_identity(self.library)]
        _mark("compiler identity")

    def _add_toolkit_folders(self, folders: list[Path], flag: str) -> None:
        for folder in folders:
            self.include_dirs.append(folder)
            self.opaque[folder] = toolkit_headers.folder_identity(folder)
            self.toolkit_options.append(f"{flag}{folder}")

    def _add_host_toolkit(self, options: list[str]) -> None:
        """CCCL's headers (header-only; thrust on its C++ device system, since the host has no
        CUDA) and pygpu's math_constants.h/cuda_runtime.h. The runtime's own headers are not
        added: they are nvcc's, and CCCL would take them for a CUDA toolkit to build against."""
        cccl = toolkit_headers.find_toolkit_headers().cccl
        # -isystem: after the user's -I folders, and CCCL's warnings are not the user's.
        self._add_toolkit_folders([cccl] if cccl is not None else [], "-isystem")
        fallback = toolkit_headers.host_fallback_folder()
        self.include_dirs.append(fallback)
        self.toolkit_options.append(f"-isystem{fallback}")
        if not re.search(r"(^|\s)-D\s*THRUST_DEVICE_SYSTEM\b", " ".join(options)):
            self.toolkit_options.append("-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_CPP")

    def wrapped_source(self) -> str:
        # `#line 1` keeps the compiler's line numbers those of the user's source.
        opening, closing = ("", "") if self.no_extern_c else ('extern "C" {\n', "\n}\n")
        return f"{_NVCC_HOST_TYPES}{opening}#line 1\n{self.source}{closing}"

    def key(self, headers: list[tuple[str, Path, bytes]]) -> str:
        parts: list[str | bytes] = [self.backend, self.target, *self.identity]
        parts += ["options", "\0".join(self.options), "extern-c", str(not self.no_extern_c), "source", self.source]
        for name, _path, digest in sorted(headers):
            parts += [name, digest]
        return compile_cache.make_key(parts)

    def build(self, keep: bool) -> bytes:
        if self.compiler == "c++":
            launches = host_compiler.device_launch_lines(self.source)
            if launches:
                raise CompileError(
                    f"line {launches[0]}: {_NO_HOST_DEVICE_LAUNCH}",
                    [],  # the compiler was not run
                    stderr=self.source.splitlines()[launches[0] - 1],
                )
            binary, command, log = host_compiler.host_build(
                self.source, [*self.options, *self.toolkit_options], self.no_extern_c, keep, output=self.output
            )
        else:
            kind = self.compiler
            options = [*self.options, *self.toolkit_options]
            if kind == "nvrtc":
                self.output, gpu_arch = rtc.nvrtc_target(self.library, self.capability, self.arch)
                options = [*options, f"--gpu-architecture={gpu_arch}"]
            command = [kind, self.library, *options]
            try:
                binary, log = rtc_compile(kind, self.library, self.wrapped_source(), "kernel.cu", options, self.output)
            except BackendUnavailableError as e:
                raise rtc.load_failure(kind, self.library, e) from e
            if keep:
                print(f"*** {kind} options: {' '.join(self.options)}")
        if binary is None:
            message = f"{self.backend} compilation of the kernel source failed"
            if _TEXTURE_REFERENCE.search(self.source):
                message += f" ({NO_TEXTURES})"
            if self.compiler == "c++" and _INLINE_ASSEMBLY.search(self.source):
                message += " (inline PTX assembly, asm(...), runs on the cuda backend only: the host compiles C++)"
            hint = toolkit_headers.missing_header_hint(log, self.compiler, self.source)
            if hint is not None:
                message += f": {hint}"
            raise CompileError(message, command, stderr=log)
        return binary


# Set by pygpu.driver.set_debugging() (pycuda.debug): every compile from then on is a debug one.
debugging = False


def compile(
    source: str,
    nvcc: str = "nvcc",
    options: list[str] | None = None,
    keep: bool = False,
    no_extern_c: bool = False,
    arch: str | None = None,
    code: str | None = None,
    cache_dir: str | os.PathLike[str] | bool | None = None,
    include_dirs: list[str] = [],  # noqa: B006 - PyCUDA's signature; never mutated
    target: str = "cubin",
) -> bytes:
    """Compiles ``source`` for the current device and returns the binary that
    :class:`pygpu.Module` loads: a cubin (or PTX) on cuda, a code object on hip, a kernels
    shared library on host (``target="object"`` there: a relocatable object, which
    :class:`DynamicModule` links). Raises :class:`CompileError` with the compiler's log."""
    del nvcc  # the backend's compiler is used
    _mark("start")
    source = source_text(source)
    options = list(DEFAULT_NVCC_FLAGS) if options is None else _option_list(options)
    if debugging:
        # pygpu.driver.set_debugging(), as PyCUDA's: device debug information, the files kept,
        # no cache (-G is NVRTC's as nvcc's; the host backend's compiler drops it).
        options.append("-G")
        keep, cache_dir = True, False
    # One folder given as a str (not a list) is that folder, not its characters.
    given_dirs: object = include_dirs
    include_dirs = [os.fspath(given_dirs)] if isinstance(given_dirs, (str, os.PathLike)) else list(include_dirs)
    # PYGPU_DISABLE_CACHE (PyCUDA's PYCUDA_DISABLE_CACHE), set to anything, overrides cache_dir.
    # cache_dir="" is no folder: no cache, as PyCUDA takes it (never the current folder).
    caching = cache_dir is not False and cache_dir != "" and not keep and "PYGPU_DISABLE_CACHE" not in os.environ
    caps = capabilities()
    memo_key = (
        caps.backend,
        # What the C++ compiler builds runs on any device of the host backend.
        "" if caps.compiler == "c++" else _device()[1],
        source,
        tuple(_absolute_paths(options)),
        no_extern_c,
        arch,
        code,
        tuple(os.path.abspath(d) for d in include_dirs),
        target,
        os.environ.get("CXX"),
        os.environ.get("PYGPU_NVRTC"),
    )
    if caching:
        memo = _memo.get(memo_key)
        if memo is not None and _still_valid(memo[1]):
            _mark("in-process memo hit")
            return memo[0]
    _mark("device query, memo")

    plan = _Plan(source, options, no_extern_c, arch, code, list(include_dirs), target)
    if not caching:
        return plan.build(keep)
    # Headers given by -include are read before the source: scanned as if it included them first.
    first = "".join(f'#include "{h}"\n' for h in _pre_includes(plan.options))
    try:
        headers = compile_cache.resolve_includes(first + source, plan.include_dirs, plan.opaque)
    except ComputedIncludeError:
        # Which header a macro names is the preprocessor's to say: no key from the text covers it,
        # so such a source is compiled every time (neither the disk cache nor the memo serves it).
        return plan.build(keep)
    stamp = _stamp([path for _name, path, _digest in headers])
    _mark("includes resolved")
    key = plan.key(headers)
    _mark("key hashed")
    root = compile_cache.cache_root(None if cache_dir is True else cache_dir)  # type: ignore[arg-type]
    binary = compile_cache.load(root, key)
    _mark("cache file read and verified")
    if binary is None:
        binary = plan.build(keep)
        compile_cache.store(root, key, binary)
        _mark("compiled and stored (miss)")
    _memo[memo_key] = (binary, stamp)
    return binary


def source_text(source: object) -> str:
    """The source as text: a str, or (as PyCUDA, which formats it into the source) an object
    whose own ``__str__`` writes the code, such as a cgen ``Module`` from code generators."""
    if isinstance(source, str):
        return source
    if not isinstance(source, (bytes, bytearray, memoryview)) and type(source).__str__ is not object.__str__:
        text = str(source)
        if isinstance(text, str):
            return text
    raise TypeError(
        f"source must be a str of CUDA C (or an object whose str() is the code), not {type(source).__name__}"
    )


_NO_HOST_DEVICE_LAUNCH = (
    "a kernel launched from device code (<<<...>>>, dynamic parallelism) does not run on the host "
    "backend: launch the child kernel from Python after the parent (compile both in one SourceModule "
    "and call them in turn), or run on the cuda backend (DynamicSourceModule links the device runtime)"
)
_TEXTURE_REFERENCE = re.compile(r"\b(texture|surface)\s*<")
_INLINE_ASSEMBLY = re.compile(r"\basm\s*(volatile\s*)?\(")


class SourceModule(CompiledModule):
    """CUDA C compiled for the current device and loaded (PyCUDA's ``SourceModule``):
    ``get_function(name)`` gives a :class:`pygpu.Function`, ``get_global(name)`` a
    (device address, size) pair. ``module`` is the underlying :class:`pygpu.Module`.
    By default the source is wrapped in ``extern "C" { }``, so kernels keep their plain
    names; ``no_extern_c=True`` leaves it as is (then look kernels up by mangled name)."""

    def __init__(
        self,
        source: str,
        nvcc: str = "nvcc",
        options: list[str] | None = None,
        keep: bool = False,
        no_extern_c: bool = False,
        arch: str | None = None,
        code: str | None = None,
        cache_dir: str | os.PathLike[str] | bool | None = None,
        include_dirs: list[str] = [],  # noqa: B006 - PyCUDA's signature; never mutated
    ) -> None:
        binary = compile(source, nvcc, options, keep, no_extern_c, arch, code, cache_dir, include_dirs)
        self.source_text = source_text(source)
        self.no_extern_c = no_extern_c
        self.module = Module(binary)
        self.module._set_declarations(kernel_declarations.lookup(self.source_text))
        _mark("module loaded")

    def loaded(self) -> Module:
        """The compiled and loaded Module that ``get_function`` and ``get_global`` read."""
        return self.module
