"""PyCUDA's ``DynamicModule`` and ``DynamicSourceModule`` (``pygpu.compiler``): several sources,
binaries and libraries linked into one module, so that code in one calls ``extern`` device
functions of another, and (on cuda, with ``libcudadevrt``) kernels launch kernels.

- cuda: each source is compiled by NVRTC with relocatable device code (a cubin for the device,
  or PTX where NVRTC does not know it) and given to the driver's JIT linker
  (``pygpu._toolchain.cuda_linker``), with what ``add_data``/``add_file``/``add_stdlib`` bring; the
  linked cubin is loaded as a :class:`pygpu.Module`.
- host: each source is compiled to a relocatable object by the C++ compiler, and ``link()``
  links them (and host objects or archives added as ``OBJECT``/``LIBRARY``) into one kernels
  library. PTX, cubins and fatbins are NVIDIA's formats and are refused, as is a kernel launch
  in device code (no device runtime runs kernels on the CPU).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from pygpu._pygpu import capabilities
from pygpu._toolchain import kernel_declarations, source_module
from pygpu._toolchain.compiled_module import CompiledModule
from pygpu.errors import LogicError
from pygpu._driver.enums import jit_input_type
from pygpu._pygpu import Module
from pygpu.errors import CompileError

__all__ = ["DynamicModule", "DynamicSourceModule"]

_RDC = ("-rdc", "--relocatable-device-code", "-dc", "--device-c")


def _input_type(input_type: Any) -> jit_input_type:
    try:
        return jit_input_type(input_type)
    except ValueError:
        names = ", ".join(t.name for t in jit_input_type)
        raise ValueError(f"unknown input type {input_type!r}: use pygpu.driver.jit_input_type ({names})") from None


class DynamicModule(CompiledModule):
    """A module linked from parts: ``add_source``, ``add_data``, ``add_file``, ``add_stdlib``
    (each returns the module, so that calls chain), then ``link()``; after it, ``get_function``
    and ``get_global`` work as on a ``SourceModule``, and ``module`` is the :class:`pygpu.Module`.

    The compilation arguments (``keep``, ``no_extern_c``, ``arch``, ``code``, ``cache_dir``,
    ``include_dirs``) apply to every ``add_source``, as ``SourceModule``'s do. ``link_options``
    are (``jit_option``, int) pairs for the CUDA linker; ``message_handler(success, info_log,
    error_log)`` is called when the link is done; ``cuda_libdir`` is where ``add_stdlib`` looks
    (by default the CUDA runtime wheels and toolkit, see ``pygpu._toolchain.cuda_linker``)."""

    def __init__(
        self,
        nvcc: str = "nvcc",
        link_options: Sequence[tuple[Any, Any]] | None = None,
        keep: bool = False,
        no_extern_c: bool = False,
        arch: str | None = None,
        code: str | None = None,
        cache_dir: str | os.PathLike[str] | bool | None = None,
        include_dirs: list[str] = [],  # noqa: B006 - PyCUDA's signature; never mutated
        message_handler: Callable[[bool, str, str], Any] | None = None,
        log_verbose: bool = False,
        cuda_libdir: str | None = None,
    ) -> None:
        caps = capabilities()
        self.backend = caps.backend
        # How the parts are linked is the capability table's answer ('cuda', 'c++' or None); all
        # below follows it.
        self.linker = caps.linker
        self._device_launch = caps.device_launch
        if self.linker is None:
            raise NotImplementedError(
                f"DynamicModule: linking is not supported on the {self.backend} backend; use SourceModule"
            )
        self.nvcc = nvcc
        self.keep = keep
        self.no_extern_c = no_extern_c
        self.arch = arch
        self.code = code
        self.cache_dir = cache_dir
        self.include_dirs = list(include_dirs)
        self.message_handler = message_handler
        self.cuda_libdir = cuda_libdir
        self.module: Module | None = None
        self._link_called = False
        self._sources: list[str] = []
        if self.linker == "c++":
            if link_options:
                raise ValueError("link_options tune the CUDA linker: the host backend takes none")
            self._host_inputs: list[tuple[str, bytes | str]] = []
        else:
            from pygpu._toolchain.cuda_linker import CudaLinker

            self._linker = CudaLinker(link_options, log_verbose)

    def loaded(self) -> Module:
        """The linked Module that ``get_function`` and ``get_global`` read; raises LogicError
        before ``link()``."""
        if self.module is None:
            raise LogicError("DynamicModule: call link() before looking up kernels or globals")
        return self.module

    def _not_linked(self, call: str) -> None:
        if self._link_called:
            raise LogicError(
                f"DynamicModule.{call}: link() was already called on this module; make a new DynamicModule"
            )

    def add_source(self, source: str, nvcc_options: list[str] | None = None, name: str = "kernel.ptx") -> DynamicModule:
        """Compiles CUDA C with this module's arguments and ``nvcc_options`` (relocatable device
        code is added where the options do not choose it), and adds it to the link."""
        self._not_linked("add_source")
        options = list(source_module.DEFAULT_NVCC_FLAGS if nvcc_options is None else nvcc_options)
        if self.linker == "c++":
            target = "object"
        else:
            target = "cubin"  # or PTX, where NVRTC does not know the device
            if not any(isinstance(o, str) and o.split("=", 1)[0] in _RDC for o in options):
                options.append("--relocatable-device-code=true")
        binary = source_module.compile(
            source,
            self.nvcc,
            options,
            self.keep,
            self.no_extern_c,
            self.arch,
            self.code,
            self.cache_dir,
            self.include_dirs,
            target=target,
        )
        # Kernels of all the sources are looked up in the one linked module.
        self._sources.append(source_module.source_text(source))
        if self.linker == "c++":
            self._host_inputs.append((f"{name}.o", binary))
        else:
            kind = jit_input_type.CUBIN if binary.startswith(b"\x7fELF") else jit_input_type.PTX
            self._linker.add_data(binary, kind, name)
        return self

    def add_data(self, data: bytes | str, input_type: Any, name: str = "unknown") -> DynamicModule:
        """Adds a binary (or PTX text) held in memory; ``input_type`` is a ``jit_input_type``."""
        self._not_linked("add_data")
        kind = _input_type(input_type)
        if isinstance(data, str):
            data = data.encode()
        try:
            image = bytes(memoryview(data).cast("B"))
        except TypeError as e:
            raise TypeError(f"add_data expects bytes or another buffer, not {type(data).__name__}") from e
        if self.linker == "c++":
            self._host_input(kind, name, image)
        else:
            self._linker.add_data(image, kind, name)
        return self

    def add_file(self, filename: str | os.PathLike[str], input_type: Any) -> DynamicModule:
        """Adds a file: a cubin, PTX, fatbin, object or library (``input_type``)."""
        self._not_linked("add_file")
        kind = _input_type(input_type)
        path = os.fspath(filename)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"add_file: no such file {path!r}")
        if self.linker == "c++":
            self._host_input(kind, os.path.basename(path), path)
        else:
            self._linker.add_file(path, kind)
        return self

    def add_stdlib(self, libname: str) -> DynamicModule:
        """Adds CUDA's static library ``lib<libname>.a`` (``"cudadevrt"``: the device runtime,
        which kernels that launch kernels need), found as ``pygpu._toolchain.cuda_linker`` says."""
        self._not_linked("add_stdlib")
        if self.linker == "c++":
            raise ValueError(
                f"add_stdlib({libname!r}): CUDA's libraries hold GPU code, which the host backend cannot link "
                "(it has no device runtime: a kernel launch in device code is refused when compiling)"
            )
        from pygpu._toolchain.cuda_linker import find_cuda_library

        path = find_cuda_library(libname, self.cuda_libdir, source_module.driver_major())
        self._linker.add_file(path, jit_input_type.LIBRARY)
        return self

    def _host_input(self, kind: jit_input_type, name: str, data: bytes | str) -> None:
        if kind not in (jit_input_type.OBJECT, jit_input_type.LIBRARY):
            raise ValueError(
                f"{kind.name} is NVIDIA's GPU code, which the host backend cannot link: add CUDA C with "
                "add_source, or host objects and archives (jit_input_type.OBJECT, LIBRARY)"
            )
        self._host_inputs.append((name, data))

    def link(self) -> DynamicModule:
        """Links everything added into one module and loads it."""
        self._not_linked("link")
        if self.linker == "c++" and not self._host_inputs:
            raise LogicError("DynamicModule.link: nothing was added to link")
        self._link_called = True
        if self.linker == "c++":
            binary = self._host_link()
        else:
            try:
                binary = self._linker.complete()
            except CompileError:
                self._report(False, *self._linker.logs())
                raise
            self._report(True, *self._linker.logs())
        self.module = Module(binary)
        self.source_text = "\n".join(self._sources)
        self.module._set_declarations(kernel_declarations.lookup(self.source_text))
        return self

    def _host_link(self) -> bytes:
        from pygpu._toolchain import host_compiler

        binary, command, log = host_compiler.host_link(self._host_inputs, self.keep)
        self._report(binary is not None, "" if binary is None else log, log if binary is None else "")
        if binary is None:
            raise CompileError(
                "linking the module's inputs failed (the linker's log names each symbol no input defines, "
                "or that two define)",
                command,
                stderr=log,
            )
        return binary

    def _report(self, success: bool, info_log: str, error_log: str) -> None:
        if self.message_handler is not None:
            self.message_handler(success, info_log, error_log)


class DynamicSourceModule(DynamicModule):
    """CUDA C compiled with relocatable device code and linked with the device runtime
    (``libcudadevrt``), so that its kernels can launch kernels (dynamic parallelism); otherwise
    a ``SourceModule``. On the host backend the source is compiled and linked alone (a kernel
    launch in device code is refused there)."""

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
        cuda_libdir: str | None = None,
    ) -> None:
        super().__init__(
            nvcc,
            keep=keep,
            no_extern_c=no_extern_c,
            arch=arch,
            code=code,
            cache_dir=cache_dir,
            include_dirs=include_dirs,
            cuda_libdir=cuda_libdir,
        )
        self.add_source(source, nvcc_options=options)  # relocatable device code is added there
        if self._device_launch:
            self.add_stdlib("cudadevrt")
        self.link()
