"""What ``SourceModule`` and ``DynamicModule`` share once their code is loaded (PyCUDA's
``CudaModule``): looking kernels and globals up in the :class:`pygpu.Module` they hold."""

from __future__ import annotations

from typing import Any

from pygpu._toolchain.kernel_hints import missing_kernel_hint
from pygpu._pygpu import Function, Module
from pygpu.errors import ModuleError

__all__ = ["NO_TEXTURES", "CompiledModule"]

NO_TEXTURES = (
    "texture and surface references were removed in CUDA 12 and pygpu does not support them: "
    "pass the array as a plain pointer argument (read it with __ldg for the read-only cache), "
    "or create a texture object (cudaTextureObject_t) and pass it as a kernel argument"
)


class CompiledModule:
    """``get_function(name)`` gives a :class:`pygpu.Function`, ``get_global(name)`` a
    (device address, size) pair, from the module ``loaded()`` returns."""

    #: The CUDA C the module was compiled from ("" where unknown), and whether it was left
    #: without an ``extern "C"`` wrapping: what a failed look-up's explanation reads.
    source_text = ""
    no_extern_c = False

    def loaded(self) -> Module:
        """The loaded Module that ``get_function`` and ``get_global`` read (subclasses give it)."""
        raise NotImplementedError

    def get_function(self, name: str) -> Function:
        """The kernel ``name`` (its mangled name where it has C++ linkage); where there is none,
        the error says why (a template, a namespace, C++ linkage) when the source shows it."""
        try:
            return self.loaded().get_function(name)
        except ModuleError as e:
            hint = missing_kernel_hint(self.source_text, name, self.no_extern_c) if self.source_text else None
            if hint:
                e.add_note(hint)
            raise

    def get_global(self, name: str) -> tuple[int, int]:
        """(device address, size in bytes) of a ``__device__`` or ``__constant__`` variable."""
        return self.loaded().get_global(name)

    def get_texref(self, name: str) -> Any:
        """Texture references were removed in CUDA 12: raises NotImplementedError naming the replacement."""
        raise NotImplementedError(f"get_texref({name!r}): {NO_TEXTURES}")

    def get_surfref(self, name: str) -> Any:
        """Surface references were removed in CUDA 12: raises NotImplementedError naming the replacement."""
        raise NotImplementedError(f"get_surfref({name!r}): {NO_TEXTURES}")
