"""What PyCUDA programs use of a GPUArray to launch their own prepared kernels over it:
``_grid`` and ``_block`` (a launch covering ``size`` elements with a grid-stride loop) and
``bind_to_texref``/``bind_to_texref_ext``, which bind the GPU scalars of
``elementwise.get_linear_combination_kernel`` (texture references proper were removed in CUDA 12)."""

from __future__ import annotations

from typing import Any

from pygpu.gpuarray._elementwise import _grid_block
from pygpu.gpuarray._storage import ArrayFields

__all__ = ["LaunchHelpersMixin"]


class LaunchHelpersMixin(ArrayFields):
    __slots__ = ()

    @property
    def _grid(self) -> tuple[int, int, int]:
        return _grid_block(self.size)[0]

    @property
    def _block(self) -> tuple[int, int, int]:
        return _grid_block(self.size)[1]

    def bind_to_texref(self, texref: Any, allow_offset: bool = False) -> int:
        """Binds this array to a GPU-scalar slot of ``get_linear_combination_kernel``; returns
        the offset in elements (always 0). Any other texture reference raises the error that
        says what replaces them."""
        from pygpu._driver.texrefs import texref_removed

        # A slot (pygpu._kernelgen.linear_combination.GPUScalarSlot, a floor above the arrays)
        # is known by what it does: it binds an array.
        bind = getattr(texref, "bind_gpuarray", None)
        if bind is None:
            texref_removed("GPUArray.bind_to_texref")
        bind(self)
        return 0

    def bind_to_texref_ext(
        self,
        texref: Any,
        channels: int = 1,
        allow_double_hack: bool = False,
        allow_complex_hack: bool = False,
        allow_offset: bool = False,
    ) -> int:
        """As :meth:`bind_to_texref`; the hacks PyCUDA needed to fetch doubles and complex
        numbers through textures have nothing to do here (the kernel loads the value)."""
        if channels != 1:
            raise ValueError(f"channels={channels}: a GPU-scalar slot reads one element; bind with channels=1")
        return self.bind_to_texref(texref, allow_offset)
