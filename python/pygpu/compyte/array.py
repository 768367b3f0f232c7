"""PyCUDA's ``pycuda.compyte.array``: stride arithmetic and layout flags shared by array code
(``f_contiguous_strides``, ``is_c_contiguous_strides``, ``ArrayFlags``, ``as_strided``, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pygpu.gpuarray._layout import Flags, c_strides, contiguity, extent, f_strides
from pygpu.gpuarray._pycuda_private import get_common_dtype

__all__ = [
    "ArrayFlags",
    "as_strided",
    "bound",
    "c_contiguous_strides",
    "equal_strides",
    "f_contiguous_strides",
    "get_common_dtype",
    "is_c_contiguous_strides",
    "is_f_contiguous_strides",
]


def f_contiguous_strides(itemsize: int, shape: Sequence[int]) -> tuple[int, ...]:
    """The byte strides of a Fortran-ordered (first index fastest) array of ``shape``."""
    return f_strides(tuple(int(d) for d in shape), itemsize)


def c_contiguous_strides(itemsize: int, shape: Sequence[int]) -> tuple[int, ...]:
    """The byte strides of a C-ordered (last index fastest) array of ``shape``."""
    return c_strides(tuple(int(d) for d in shape), itemsize)


def equal_strides(strides1: Sequence[int], strides2: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether two stride tuples address the same elements of an array of ``shape``: strides of
    axes of extent 1 do not matter, nor does anything when the array is empty."""
    if tuple(strides1) == tuple(strides2):
        return True
    if len(strides1) != len(strides2) or len(strides1) != len(shape):
        return False
    if any(int(extent) == 0 for extent in shape):
        return True
    return all(s1 == s2 for s1, s2, extent in zip(strides1, strides2, shape) if int(extent) != 1)


def _flags(strides: Sequence[int], itemsize: int, shape: Sequence[int]) -> Flags:
    return contiguity(tuple(int(d) for d in shape), tuple(int(s) for s in strides), itemsize)


def is_f_contiguous_strides(strides: Sequence[int], itemsize: int, shape: Sequence[int]) -> bool:
    """Whether ``strides`` lay an array of ``shape`` out contiguously in Fortran order."""
    return _flags(strides, itemsize, shape).f_contiguous


def is_c_contiguous_strides(strides: Sequence[int], itemsize: int, shape: Sequence[int]) -> bool:
    """Whether ``strides`` lay an array of ``shape`` out contiguously in C order."""
    return _flags(strides, itemsize, shape).c_contiguous


class ArrayFlags:
    """The layout flags of an array (anything with ``strides``, ``dtype`` and ``shape``):
    ``c_contiguous``, ``f_contiguous`` and ``forc`` (either)."""

    def __init__(self, ary: Any) -> None:
        flags = _flags(ary.strides, np.dtype(ary.dtype).itemsize, ary.shape)
        self.f_contiguous = flags.f_contiguous
        self.c_contiguous = flags.c_contiguous
        self.forc = flags.forc

    def __repr__(self) -> str:
        return f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}"


def bound(a: Any) -> tuple[int, int]:
    """The byte range ``(low, high)`` an array's elements occupy, relative to its first element
    (``low`` is negative when some strides are): ``high - low`` bytes hold all of them."""
    shape = tuple(int(d) for d in a.shape)
    if 0 in shape:
        return 0, 0
    return extent(shape, tuple(int(s) for s in a.strides), np.dtype(a.dtype).itemsize)


def as_strided(x: np.ndarray, shape: Sequence[int] | None = None, strides: Sequence[int] | None = None) -> np.ndarray:
    """A numpy view of ``x``'s memory with another ``shape``/``strides`` (numpy's
    ``stride_tricks.as_strided``; nothing is checked: the view may reach past ``x``)."""
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)
