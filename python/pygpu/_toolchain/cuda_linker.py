"""The CUDA driver's JIT linker for ``DynamicModule``, called through ctypes: ``cuLinkCreate``,
``cuLinkAddData``/``cuLinkAddFile``, ``cuLinkComplete`` (cuda.h; the first three are the
``_v2`` entry points cuda.h maps them to). It runs in libcuda.so.1, the library pygpu's core
already loaded, in the context pygpu made current; the linked cubin is then loaded as any
other module.

Also where CUDA's static libraries are found (``add_stdlib``, ``libcudadevrt.a`` for kernels
that launch kernels): ``cuda_libdir`` when given, else the pip wheels ``nvidia-cuda-runtime``
(CUDA 13: ``nvidia/cu13/lib``) and ``nvidia-cuda-runtime-cu12`` (``nvidia/cuda_runtime/lib``)
on ``sys.path``, ``$CONDA_PREFIX/lib``, then ``$CUDA_PATH``/``$CUDA_HOME``/``/usr/local/cuda``
(``lib64``, ``lib``). A wheel newer than the driver's CUDA major comes last.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from typing import Any

from pygpu._driver.enums import jit_input_type, jit_option
from pygpu._pygpu import mem_get_info
from pygpu.errors import CompileError

__all__ = ["CudaLinker", "find_cuda_library"]

_LOG_BYTES = 1 << 16
# Options pygpu sets itself (the logs), or whose value is an output (the wall time).
_MANAGED_OPTIONS = {
    jit_option.WALL_TIME,
    jit_option.INFO_LOG_BUFFER,
    jit_option.INFO_LOG_BUFFER_SIZE_BYTES,
    jit_option.ERROR_LOG_BUFFER,
    jit_option.ERROR_LOG_BUFFER_SIZE_BYTES,
}

_IntArray = ctypes.POINTER(ctypes.c_int)
_PointerArray = ctypes.POINTER(ctypes.c_void_p)
_driver: list[ctypes.CDLL] = []


def _libcuda() -> ctypes.CDLL:
    """libcuda.so.1 with the linker's signatures (cuda.h); the copy pygpu's core loaded."""
    if _driver:
        return _driver[0]
    try:
        # RTLD_NOLOAD: the library pygpu's core already loaded, so that its context is current here.
        lib = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
    except OSError:
        lib = ctypes.CDLL("libcuda.so.1")
    c_int, c_uint, c_size_t, c_void_p, c_char_p = (
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_size_t,
        ctypes.c_void_p,
        ctypes.c_char_p,
    )
    signatures: dict[str, list[Any]] = {
        # CUresult cuLinkCreate(unsigned int numOptions, CUjit_option*, void** optionValues, CUlinkState*)
        "cuLinkCreate_v2": [c_uint, _IntArray, _PointerArray, ctypes.POINTER(c_void_p)],
        # CUresult cuLinkAddData(CUlinkState, CUjitInputType, void* data, size_t size, const char* name,
        #                        unsigned int numOptions, CUjit_option*, void** optionValues)
        "cuLinkAddData_v2": [c_void_p, c_int, c_void_p, c_size_t, c_char_p, c_uint, _IntArray, _PointerArray],
        # CUresult cuLinkAddFile(CUlinkState, CUjitInputType, const char* path,
        #                        unsigned int numOptions, CUjit_option*, void** optionValues)
        "cuLinkAddFile_v2": [c_void_p, c_int, c_char_p, c_uint, _IntArray, _PointerArray],
        # CUresult cuLinkComplete(CUlinkState, void** cubinOut, size_t* sizeOut)
        "cuLinkComplete": [c_void_p, ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t)],
        # CUresult cuLinkDestroy(CUlinkState)
        "cuLinkDestroy": [c_void_p],
        # CUresult cuGetErrorName(CUresult, const char** pStr)
        "cuGetErrorName": [c_int, ctypes.POINTER(c_char_p)],
        # CUresult cuCtxGetCurrent(CUcontext* pctx)
        "cuCtxGetCurrent": [ctypes.POINTER(c_void_p)],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = c_int
    _driver.append(lib)
    return lib


def _error_name(lib: ctypes.CDLL, code: int) -> str:
    name = ctypes.c_char_p()
    if lib.cuGetErrorName(code, ctypes.byref(name)) != 0 or not name.value:
        return f"CUresult {code}"
    return name.value.decode()


class CudaLinker:
    """One pending link (a ``CUlinkState``): inputs are added as they come, so that a bad one
    is reported by the call that added it; ``complete()`` gives the linked cubin."""

    def __init__(self, link_options: Sequence[tuple[Any, Any]] | None, log_verbose: bool) -> None:
        options: list[tuple[int, int]] = []
        for option in link_options or ():
            if not (isinstance(option, tuple) and len(option) == 2):
                raise TypeError(f"link_options are (jit_option, value) pairs, got {option!r}")
            key = jit_option(option[0])
            if key in _MANAGED_OPTIONS:
                raise ValueError(f"link option {key.name}: pygpu manages the linker's logs (see message_handler)")
            if not isinstance(option[1], int):
                raise TypeError(f"link option {key.name} takes an int, got {option[1]!r}")
            options.append((int(key), int(option[1])))
        self._lib = _libcuda()
        self._info = ctypes.create_string_buffer(_LOG_BYTES)
        self._error = ctypes.create_string_buffer(_LOG_BYTES)
        # The driver keeps these pointers for the whole link and writes the logs' lengths back
        # into the size slots: they live as long as the state.
        keys: list[int] = [
            jit_option.INFO_LOG_BUFFER,
            jit_option.INFO_LOG_BUFFER_SIZE_BYTES,
            jit_option.ERROR_LOG_BUFFER,
            jit_option.ERROR_LOG_BUFFER_SIZE_BYTES,
            jit_option.LOG_VERBOSE,
        ]
        values: list[int | None] = [
            ctypes.addressof(self._info),
            _LOG_BYTES,
            ctypes.addressof(self._error),
            _LOG_BYTES,
            int(log_verbose),
        ]
        keys += [k for k, _ in options]
        values += [v for _, v in options]
        self._keys = (ctypes.c_int * len(keys))(*keys)
        self._values = (ctypes.c_void_p * len(values))(*values)
        self._state = ctypes.c_void_p()
        _make_context_current(self._lib)
        self._check(
            self._lib.cuLinkCreate_v2(len(keys), self._keys, self._values, ctypes.byref(self._state)),
            "cuLinkCreate",
            "starting the link",
        )

    def logs(self) -> tuple[str, str]:
        """(info log, error log) so far."""
        return (self._info.value.decode(errors="replace"), self._error.value.decode(errors="replace"))

    def _check(self, code: int, call: str, what: str) -> None:
        if code == 0:
            return
        info, error = self.logs()
        log = "\n".join(part for part in (error.strip(), info.strip()) if part)
        raise CompileError(
            f"the CUDA linker failed {what} ({call}: {_error_name(self._lib, code)})",
            [call],
            stderr=log or "the linker's log is empty",
        )

    def add_data(self, data: bytes, input_type: jit_input_type, name: str) -> None:
        if input_type == jit_input_type.PTX and not data.endswith(b"\0"):
            data += b"\0"  # cuLinkAddData reads PTX as a NUL-terminated string
        buffer = ctypes.create_string_buffer(data, len(data))
        code = self._lib.cuLinkAddData_v2(self._state, int(input_type), buffer, len(data), name.encode(), 0, None, None)
        self._check(code, "cuLinkAddData", f"on {input_type.name} input {name!r}")

    def add_file(self, path: str, input_type: jit_input_type) -> None:
        code = self._lib.cuLinkAddFile_v2(self._state, int(input_type), os.fsencode(path), 0, None, None)
        self._check(code, "cuLinkAddFile", f"on {input_type.name} file {path!r}")

    def complete(self) -> bytes:
        """The linked cubin; the state is destroyed either way."""
        try:
            cubin = ctypes.c_void_p()
            size = ctypes.c_size_t()
            self._check(
                self._lib.cuLinkComplete(self._state, ctypes.byref(cubin), ctypes.byref(size)),
                "cuLinkComplete",
                "to link the inputs",
            )
            # The image belongs to the state: copied before it is destroyed.
            return ctypes.string_at(cubin.value or 0, size.value)
        finally:
            self.destroy()

    def destroy(self) -> None:
        if self._state.value:
            self._lib.cuLinkDestroy(self._state)
            self._state = ctypes.c_void_p()

    def __del__(self) -> None:
        if getattr(self, "_state", None) is not None:
            self.destroy()


def _make_context_current(lib: ctypes.CDLL) -> None:
    """The linker works in the current context: where this thread has none yet, pygpu makes the
    current device's primary context current, as its own first call on the thread would."""
    context = ctypes.c_void_p()
    if lib.cuCtxGetCurrent(ctypes.byref(context)) != 0 or not context.value:
        mem_get_info()  # any call of pygpu's core makes the context current; this one is cheap


_DEFAULT_TOOLKIT = "/usr/local/cuda"
# (CUDA major, folder under a sys.path entry) of the runtime wheels that ship static libraries.
_RUNTIME_WHEELS = [(13, os.path.join("nvidia", "cu13", "lib")), (12, os.path.join("nvidia", "cuda_runtime", "lib"))]


def _library_folders(cuda_libdir: str | None, driver_major: int | None) -> list[str]:
    if cuda_libdir is not None:
        return [cuda_libdir]
    wheels = [(major, os.path.join(entry or ".", rel)) for entry in sys.path for major, rel in _RUNTIME_WHEELS]
    fitting = [folder for major, folder in wheels if driver_major is None or major <= driver_major]
    too_new = [folder for major, folder in wheels if driver_major is not None and major > driver_major]
    folders = fitting
    conda = os.environ.get("CONDA_PREFIX")
    if conda:
        folders.append(os.path.join(conda, "lib"))
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), _DEFAULT_TOOLKIT):
        if root:
            folders += [os.path.join(root, "lib64"), os.path.join(root, "lib")]
    return folders + too_new


def find_cuda_library(libname: str, cuda_libdir: str | None = None, driver_major: int | None = None) -> str:
    """The path of CUDA's static library ``lib<libname>.a`` (see the module's search order)."""
    filename = f"lib{libname}.a"
    folders = _library_folders(cuda_libdir, driver_major)
    for folder in folders:
        path = os.path.join(folder, filename)
        if os.path.isfile(path):
            return path
    if cuda_libdir is not None:
        raise FileNotFoundError(f"{filename} is not in cuda_libdir={cuda_libdir!r}: pass the folder that holds it")
    install = (
        "pip install nvidia-cuda-runtime (CUDA 13; nvidia-cuda-runtime-cu12 for a CUDA 12 driver), "
        if libname == "cudadevrt"
        else ""
    )
    raise FileNotFoundError(
        f"CUDA's static library {filename} was not found: {install}install the CUDA toolkit and set "
        f"CUDA_HOME, or pass cuda_libdir=<the folder that holds it>. Looked in: " + ", ".join(dict.fromkeys(folders))
    )
