"""PyCUDA's ``pycuda.compyte.array``: stride arithmetic and layout flags shared by array code
(``f_contiguous_strides``, ``is_c_contiguous_strides``, ``ArrayFlags``, ``as_strided``, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

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
    strides = []
    step = itemsize
    for extent in shape:
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(strides)


def c_contiguous_strides(itemsize: int, shape: Sequence[int]) -> tuple[int, ...]:
    """The byte strides of a C-ordered (last index fastest) array of ``shape``."""
    return tuple(reversed(f_contiguous_strides(itemsize, tuple(reversed(tuple(shape))))))


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


def is_f_contiguous_strides(strides: Sequence[int], itemsize: int, shape: Sequence[int]) -> bool:
    """Whether ``strides`` lay an array of ``shape`` out contiguously in Fortran order."""
    return equal_strides(strides, f_contiguous_strides(itemsize, shape), shape)


def is_c_contiguous_strides(strides: Sequence[int], itemsize: int, shape: Sequence[int]) -> bool:
    """Whether ``strides`` lay an array of ``shape`` out contiguously in C order."""
    return equal_strides(strides, c_contiguous_strides(itemsize, shape), shape)


class ArrayFlags:
    """The layout flags of an array (anything with ``strides``, ``dtype`` and ``shape``):
    ``c_contiguous``, ``f_contiguous`` and ``forc`` (either)."""

    def __init__(self, ary: Any) -> None:
        itemsize = np.dtype(ary.dtype).itemsize
        self.f_contiguous = is_f_contiguous_strides(ary.strides, itemsize, ary.shape)
        self.c_contiguous = is_c_contiguous_strides(ary.strides, itemsize, ary.shape)
        self.forc = self.f_contiguous or self.c_contiguous

    def __repr__(self) -> str:
        return f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}"


def get_common_dtype(obj1: Any, obj2: Any, allow_double: bool) -> np.dtype:
    """The dtype of an operation between ``obj1`` (an array) and ``obj2`` (an array or a Python or
    numpy scalar), as numpy types it (a Python scalar does not widen an array's type); without
    ``allow_double`` (a device without fp64) float64 becomes float32 and complex128 complex64."""
    first = np.dtype(obj1.dtype)
    second = getattr(obj2, "dtype", None)
    result = np.result_type(first, np.dtype(second) if second is not None else obj2)
    if not allow_double:
        if result == np.float64:
            result = np.dtype(np.float32)
        elif result == np.complex128:
            result = np.dtype(np.complex64)
    return result


def bound(a: Any) -> tuple[int, int]:
    """The byte range ``(low, high)`` an array's elements occupy, relative to its first element
    (``low`` is negative when some strides are): ``high - low`` bytes hold all of them."""
    low = high = 0
    itemsize = np.dtype(a.dtype).itemsize
    if any(int(extent) == 0 for extent in a.shape):
        return 0, 0
    for extent, stride in zip(a.shape, a.strides):
        span = (int(extent) - 1) * int(stride)
        if span < 0:
            low += span
        else:
            high += span
    return low, high + itemsize


def as_strided(x: np.ndarray, shape: Sequence[int] | None = None, strides: Sequence[int] | None = None) -> np.ndarray:
    """A numpy view of ``x``'s memory with another ``shape``/``strides`` (numpy's
    ``stride_tricks.as_strided``; nothing is checked: the view may reach past ``x``)."""
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)
