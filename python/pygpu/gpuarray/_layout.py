"""Shapes, strides and contiguity: pure arithmetic on layouts, no device calls."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

__all__ = [
    "FLAGS",
    "FLAGS_C",
    "FLAGS_CF",
    "FLAGS_F",
    "FLAGS_NONE",
    "Flags",
    "c_flags",
    "c_strides",
    "contiguity",
    "extent",
    "f_strides",
    "is_dense",
    "nocopy_strides",
    "offsets",
    "shape_tuple",
    "trailing_block",
]


class Flags:
    """numpy-like contiguity flags; ``forc`` is PyCUDA's 'either C or Fortran'."""

    __slots__ = ("c_contiguous", "f_contiguous")

    def __init__(self, c: bool, f: bool) -> None:
        self.c_contiguous = c
        self.f_contiguous = f

    @property
    def forc(self) -> bool:
        return self.c_contiguous or self.f_contiguous

    def __getitem__(self, key: str) -> bool:
        key = key.upper()
        if key in ("C", "C_CONTIGUOUS", "CONTIGUOUS"):
            return self.c_contiguous
        if key in ("F", "F_CONTIGUOUS", "FORTRAN"):
            return self.f_contiguous
        if key == "FORC":
            return self.forc
        raise KeyError(key)

    def __repr__(self) -> str:
        return f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}"


FLAGS = {(c, f): Flags(c, f) for c in (False, True) for f in (False, True)}
FLAGS_C, FLAGS_F, FLAGS_CF, FLAGS_NONE = (
    FLAGS[True, False],
    FLAGS[False, True],
    FLAGS[True, True],
    FLAGS[False, False],
)


def shape_tuple(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, np.ndarray) and shape.ndim == 0:
        shape = shape[()]  # PyCUDA takes a 0-d integer array as a length
    if isinstance(shape, (int, np.integer)):
        dims: tuple[int, ...] = (operator.index(shape),)
    else:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError as e:
            raise TypeError(f"a shape is an int or a sequence of ints, not {shape!r}") from e
    for d in dims:
        if d < 0:
            raise ValueError(f"negative dimensions are not allowed: {dims}")
    return dims


def c_flags(shape: tuple[int, ...]) -> Flags:
    """The flags of a new C-ordered array: Fortran-contiguous too where at most one axis is
    longer than 1, or the array is empty (numpy's rule; PyCUDA's tests check it)."""
    return FLAGS_CF if 0 in shape or sum(d != 1 for d in shape) <= 1 else FLAGS_C


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    acc = itemsize
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def f_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    acc = itemsize
    for d in shape:
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(strides)


def contiguity(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> Flags:
    if 0 in shape:
        return FLAGS_CF
    c = True
    acc = itemsize
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1:
            if s != acc:
                c = False
                break
            acc *= d
    f = True
    acc = itemsize
    for d, s in zip(shape, strides):
        if d != 1:
            if s != acc:
                f = False
                break
            acc *= d
    return FLAGS[c, f]


def extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """Byte range [lo, hi) covered by the elements, relative to element 0 (size > 0)."""
    lo = hi = 0
    for d, s in zip(shape, strides):
        if s < 0:
            lo += (d - 1) * s
        else:
            hi += (d - 1) * s
    return lo, hi + itemsize


def is_dense(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    """Whether the elements exactly tile their byte span (a permuted/flipped contiguous array)."""
    acc = itemsize
    for s, d in sorted((abs(s), d) for d, s in zip(shape, strides) if d != 1):
        if s != acc:
            return False
        acc *= d
    return True


def trailing_block(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> int:
    """The first axis k such that axes k: form one C-contiguous block."""
    k = len(shape)
    acc = itemsize
    while k > 0:
        d, s = shape[k - 1], strides[k - 1]
        if d != 1:
            if s != acc:
                break
            acc *= d
        k -= 1
    return k


def offsets(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    offsets = [0]
    for d, s in zip(shape, strides):
        offsets = [o + i * s for o in offsets for i in range(d)]
    return offsets


def nocopy_strides(
    old_shape: tuple[int, ...], old_strides: tuple[int, ...], new_shape: tuple[int, ...], itemsize: int, fortran: bool
) -> list[int] | None:
    """numpy's _attempt_nocopy_reshape: strides for viewing as new_shape, or None."""
    olddims = [d for d in old_shape if d != 1]
    oldstr = [s for d, s in zip(old_shape, old_strides) if d != 1]
    newstrides = [0] * len(new_shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    nnew = len(new_shape)
    while ni < nnew and oi < len(olddims):
        np_ = new_shape[ni]
        op = olddims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= olddims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if fortran:
                if oldstr[ok + 1] != olddims[ok] * oldstr[ok]:
                    return None
            elif oldstr[ok] != olddims[ok + 1] * oldstr[ok + 1]:
                return None
        if fortran:
            newstrides[ni] = oldstr[oi]
            for nk in range(ni + 1, nj):
                newstrides[nk] = newstrides[nk - 1] * new_shape[nk - 1]
        else:
            newstrides[nj - 1] = oldstr[oj - 1]
            for nk in range(nj - 1, ni, -1):
                newstrides[nk - 1] = newstrides[nk] * new_shape[nk]
        ni = nj
        nj += 1
        oi = oj
        oj += 1
    last = newstrides[ni - 1] if ni >= 1 else itemsize
    if fortran and ni >= 1:
        last *= new_shape[ni - 1]
    for nk in range(ni, nnew):
        newstrides[nk] = last
    return newstrides
