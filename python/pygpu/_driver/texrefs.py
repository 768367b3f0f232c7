"""PyCUDA's texture and surface *reference* API, which CUDA 12 removed (``cuTexRef*``,
``cuModuleGetTexRef``, ``cuSurfRef*``): each name is present so that old programs fail with
an error that says what to use instead, rather than with an AttributeError."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = [
    "Array",
    "ArrayDescriptor",
    "ArrayDescriptor3D",
    "SurfaceReference",
    "TextureReference",
    "bind_array_to_texref",
    "gpuarray_to_array",
    "make_multichannel_2d_array",
    "matrix_to_array",
    "matrix_to_texref",
    "memcpy_atoa",
    "memcpy_atod",
    "memcpy_atoh",
    "memcpy_dtoa",
    "memcpy_htoa",
    "np_to_array",
    "texref_removed",
]

_REPLACEMENT = (
    "texture and surface references were removed in CUDA 12 (cuTexRef*, cuModuleGetTexRef and "
    "cuSurfRef* no longer exist). Read the data with plain global-memory loads instead (pass a "
    "device pointer; __ldg() or const __restrict__ for the read-only cache), or create texture "
    "objects (cudaTextureObject_t, cudaCreateTextureObject) in your own C++ code"
)


def texref_removed(what: str = "texture references") -> NoReturn:
    """Raises the error that explains the removal; ``what`` names the call that was made."""
    raise NotImplementedError(f"{what}: {_REPLACEMENT}")


class TextureReference:
    """Removed in CUDA 12: constructing one raises NotImplementedError naming the replacement."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        texref_removed("TextureReference")


class SurfaceReference:
    """Removed in CUDA 12: constructing one raises NotImplementedError naming the replacement."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        texref_removed("SurfaceReference")


def matrix_to_texref(*args: Any, **kwargs: Any) -> NoReturn:
    """Removed in CUDA 12 (texture references): raises NotImplementedError naming the replacement."""
    texref_removed("matrix_to_texref")


def bind_array_to_texref(*args: Any, **kwargs: Any) -> NoReturn:
    """Removed in CUDA 12 (texture references): raises NotImplementedError naming the replacement."""
    texref_removed("bind_array_to_texref")


_NO_ARRAYS = (
    "CUDA arrays (pycuda.driver.Array), which feed textures, are not supported by pygpu: keep the data in "
    "linear device memory (mem_alloc, mem_alloc_pitch, gpuarray.to_gpu) and read it with global-memory loads"
)


def matrix_to_array(*args: Any, **kwargs: Any) -> NoReturn:
    """CUDA arrays are not supported: raises NotImplementedError saying what to use instead."""
    raise NotImplementedError(f"matrix_to_array: {_NO_ARRAYS}")


def np_to_array(*args: Any, **kwargs: Any) -> NoReturn:
    """CUDA arrays are not supported: raises NotImplementedError saying what to use instead."""
    raise NotImplementedError(f"np_to_array: {_NO_ARRAYS}")


def gpuarray_to_array(*args: Any, **kwargs: Any) -> NoReturn:
    """CUDA arrays are not supported: raises NotImplementedError saying what to use instead."""
    raise NotImplementedError(f"gpuarray_to_array: {_NO_ARRAYS}")


def make_multichannel_2d_array(*args: Any, **kwargs: Any) -> NoReturn:
    """CUDA arrays are not supported: raises NotImplementedError saying what to use instead."""
    raise NotImplementedError(f"make_multichannel_2d_array: {_NO_ARRAYS}")


class Array:
    """A CUDA array (PyCUDA's ``driver.Array``): not supported; see ``_NO_ARRAYS``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"Array: {_NO_ARRAYS}")


class ArrayDescriptor:
    """Describes a CUDA array: not supported, as the arrays themselves."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"ArrayDescriptor: {_NO_ARRAYS}")


class ArrayDescriptor3D:
    """Describes a 3D CUDA array: not supported, as the arrays themselves."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"ArrayDescriptor3D: {_NO_ARRAYS}")


def memcpy_atoa(*args: Any, **kwargs: Any) -> NoReturn:
    """Copies between CUDA arrays: not supported (raises NotImplementedError saying what to use instead)."""
    raise NotImplementedError(f"memcpy_atoa: {_NO_ARRAYS}")


def memcpy_atod(*args: Any, **kwargs: Any) -> NoReturn:
    """Copies from a CUDA array: not supported (raises NotImplementedError saying what to use instead)."""
    raise NotImplementedError(f"memcpy_atod: {_NO_ARRAYS}")


def memcpy_atoh(*args: Any, **kwargs: Any) -> NoReturn:
    """Copies from a CUDA array: not supported (raises NotImplementedError saying what to use instead)."""
    raise NotImplementedError(f"memcpy_atoh: {_NO_ARRAYS}")


def memcpy_dtoa(*args: Any, **kwargs: Any) -> NoReturn:
    """Copies into a CUDA array: not supported (raises NotImplementedError saying what to use instead)."""
    raise NotImplementedError(f"memcpy_dtoa: {_NO_ARRAYS}")


def memcpy_htoa(*args: Any, **kwargs: Any) -> NoReturn:
    """Copies into a CUDA array: not supported (raises NotImplementedError saying what to use instead)."""
    raise NotImplementedError(f"memcpy_htoa: {_NO_ARRAYS}")
