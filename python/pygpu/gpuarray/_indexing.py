"""Basic indexing of a strided layout: ints, slices, ``...`` and ``None`` (numpy's rules)
give the byte offset, shape and strides of the view that ``GPUArray.__getitem__`` makes."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

__all__ = ["basic_index"]


def basic_index(
    base_offset: int, base_shape: tuple[int, ...], base_strides: tuple[int, ...], key: Any
) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """The (offset, shape, strides) of ``key`` applied to the layout; IndexError for keys
    numpy would reject or that ask for advanced (array) indexing."""
    if not isinstance(key, tuple):
        key = (key,)
    ndim = len(base_shape)
    n_ellipsis = 0
    n_real = 0
    for k in key:
        if k is Ellipsis:
            n_ellipsis += 1
        elif k is not None:
            n_real += 1
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed")
    offset = base_offset
    shape: list[int] = []
    strides: list[int] = []
    axis = 0
    fill = ndim - n_real
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
        elif k is Ellipsis:
            shape.extend(base_shape[axis : axis + fill])
            strides.extend(base_strides[axis : axis + fill])
            axis += fill
        elif isinstance(k, slice):
            n, s = base_shape[axis], base_strides[axis]
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            if length:
                offset += start * s
            shape.append(length)
            strides.append(s * step)
            axis += 1
        else:
            if isinstance(k, (bool, np.bool_)) or not hasattr(k, "__index__"):
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`) and numpy.newaxis (`None`) are valid "
                    f"GPUArray indices, not {type(k).__name__}: advanced (array) indexing is not supported"
                )
            try:
                i = operator.index(k)
            except TypeError as e:
                raise IndexError(f"invalid index {k!r}: an integer array index needs a 0-d integer array") from e
            n = base_shape[axis]
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            if i < 0:
                i += n
            offset += i * base_strides[axis]
            axis += 1
    if axis < ndim:
        shape.extend(base_shape[axis:])
        strides.extend(base_strides[axis:])
    return offset, tuple(shape), tuple(strides)
