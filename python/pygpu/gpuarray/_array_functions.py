"""pycuda.gpuarray's functions that are not elementwise: ``arange`` (filled on the device),
``concatenate``, ``stack``, ``hstack``, ``vstack``, ``take``, ``multi_take``, ``multi_put``,
``multi_take_put``, ``transpose``, ``reshape``; and the strided device copy that non-contiguous
copies use. Kernels: kernels/array_functions.cu.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import pygpu.gpuarray._bundled as _bundled
from pygpu.gpuarray._core import GPUArray
from pygpu.gpuarray._creation import empty, to_gpu
from pygpu.gpuarray._dtypes import check_dtype
from pygpu.gpuarray._transfer import copy_into

__all__ = [
    "arange",
    "concatenate",
    "hstack",
    "multi_put",
    "multi_take",
    "multi_take_put",
    "reshape",
    "stack",
    "take",
    "transpose",
    "vstack",
]

_SOURCE = "array_functions"
_ARANGE_TYPES = frozenset(
    ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
)
_COPY_SIZES = (1, 2, 4, 8, 16)


# ----------------------------------------------------------------------------- arange


def arange(*args: Any, **kwargs: Any) -> GPUArray:
    """arange([start,] stop[, step], dtype=None, allocator=None): numpy's values, computed on
    the device (numpy's length and first two values; then ``first + i * (second - first)``)."""
    allocator = kwargs.pop("allocator", None)
    dtype = kwargs.pop("dtype", None)
    positional = list(args)
    if len(positional) == 4 and dtype is None:
        dtype = positional.pop()
    for name in ("start", "stop", "step")[len(positional) :]:
        if name in kwargs:
            positional.append(kwargs.pop(name))
    if kwargs:
        raise TypeError(f"arange() got unexpected keyword arguments: {', '.join(kwargs)}")
    if not 1 <= len(positional) <= 3:
        raise TypeError(f"arange() takes 1 to 3 positional arguments (start, stop, step), not {len(positional)}")
    if len(positional) == 1:
        if positional[0] is None:
            raise TypeError("arange() needs a stop value, not None")
        start, stop, step = 0, positional[0], 1
    else:
        start, stop = positional[0], positional[1]
        step = positional[2] if len(positional) == 3 else 1
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    # numpy's own rules for the type and length: ask it for a short range with the same start
    # and step (its length formula and casts are then exactly numpy's).
    dt = np.result_type(np.asarray(start), np.asarray(stop), np.asarray(step)) if dtype is None else np.dtype(dtype)
    dt = check_dtype(dt)
    length = _arange_length(start, stop, step)
    if dt.name not in _ARANGE_TYPES:
        # bool, float16 and complex ranges are rare and short: numpy's values, copied up.
        return to_gpu(np.arange(start, stop, step, dtype=dt), allocator)
    head = np.arange(start, start + 2 * step, step, dtype=dt) if length >= 2 else None
    result = empty((length,), dt, allocator=allocator)
    if length == 0:
        return result
    first = dt.type(start) if head is None else head[0]
    second = first if head is None else head[1]
    code = dt.char
    f = _bundled.function(_SOURCE, f"arange_{dt.name}", f"Pq{code}{code}".replace("l", "q").replace("L", "Q"))
    _bundled.launch(f, _bundled.grid_for(length), _bundled.BLOCK, None, result.ptr, length, first, second)
    _bundled.written_on(None, result)
    return result


def _arange_length(start: Any, stop: Any, step: Any) -> int:
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        return len(range(int(start), int(stop), int(step)))
    # numpy: ceil((stop - start) / step), at least 0 (in double precision, as numpy computes it).
    length = math.ceil((complex(stop).real - complex(start).real) / complex(step).real)
    return max(0, length)


def _assign(dst: GPUArray, src: GPUArray, stream: Any) -> None:
    copy_into(dst, src, stream)


# ----------------------------------------------------------------------------- joining


def _check_arrays(arrays: Sequence[Any], what: str) -> list[GPUArray]:
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{what}: need at least one array")
    for a in arrays:
        if not isinstance(a, GPUArray):
            raise TypeError(f"{what}: every array must be a GPUArray, not {type(a).__name__}")
    return arrays


def _normalise_axis(axis: Any, ndim: int) -> int:
    index = operator.index(axis)
    if not -ndim <= index < ndim:
        raise np.exceptions.AxisError(index, ndim)
    return index % ndim


def concatenate(arrays: Sequence[GPUArray], axis: int = 0, allocator: Any = None) -> GPUArray:
    """Joins arrays along an existing axis (numpy.concatenate), on the device."""
    arrays = _check_arrays(arrays, "concatenate")
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = _normalise_axis(axis, first.ndim)
    dtype = np.result_type(*(a.dtype for a in arrays))
    for a in arrays:
        if a.ndim != first.ndim:
            raise ValueError(
                f"all the input arrays must have same number of dimensions, but the array at index 0 has "
                f"{first.ndim} dimension(s) and an array has {a.ndim}"
            )
        if a.shape[:axis] != first.shape[:axis] or a.shape[axis + 1 :] != first.shape[axis + 1 :]:
            raise ValueError(
                f"all the input array dimensions except for the concatenation axis must match exactly: "
                f"{first.shape} and {a.shape} along axis {axis}"
            )
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    result = empty(tuple(shape), dtype, allocator=allocator if allocator is not None else first.allocator)
    start = 0
    for a in arrays:
        stop = start + a.shape[axis]
        if a.size:
            index = (slice(None),) * axis + (slice(start, stop),)
            part = a if a.dtype == dtype else a.astype(dtype)
            _assign(result[index], part, None)
        start = stop
    return result


def stack(arrays: Sequence[GPUArray], axis: int = 0, allocator: Any = None) -> GPUArray:
    """Joins same-shaped arrays along a new axis (numpy.stack)."""
    arrays = _check_arrays(arrays, "stack")
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        raise ValueError(f"all input arrays must have the same shape: {[a.shape for a in arrays]}")
    axis = _normalise_axis(axis, len(shape) + 1)
    # A length-1 axis inserted as a view (not reshape, which re-reads Fortran arrays in C order).
    expanded = [
        a._view(a._offset, shape[:axis] + (1,) + shape[axis:], a.strides[:axis] + (0,) + a.strides[axis:])
        for a in arrays
    ]
    return concatenate(expanded, axis, allocator)


def hstack(arrays: Sequence[GPUArray], allocator: Any = None) -> GPUArray:
    """Joins along the second axis (the first for 1-D arrays), as numpy.hstack."""
    arrays = _check_arrays(arrays, "hstack")
    return concatenate(arrays, 0 if arrays[0].ndim == 1 else 1, allocator)


def vstack(arrays: Sequence[GPUArray], allocator: Any = None) -> GPUArray:
    """Joins along the first axis, 1-D arrays as rows (numpy.vstack)."""
    arrays = _check_arrays(arrays, "vstack")
    rows = [a._view(a._offset, (1,) + a.shape, (0,) + a.strides) if a.ndim == 1 else a for a in arrays]
    return concatenate(rows, 0, allocator)


# ----------------------------------------------------------------------------- take / put


def _index_kind(indices: GPUArray, what: str) -> int:
    if not isinstance(indices, GPUArray):
        raise TypeError(f"{what} must be a GPUArray of integers, not {type(indices).__name__}")
    kind = _bundled.INDEX_KINDS.get(indices.dtype)
    if kind is None:
        raise TypeError(f"{what} must be int32, uint32, int64 or uint64, not {indices.dtype}")
    return kind


def _flat(a: GPUArray) -> GPUArray:
    """``a``'s elements in C order, contiguous (``ravel()``: a Fortran array is reordered, as
    numpy's take reads ``a.ravel()``)."""
    return a if a.flags.c_contiguous else a.ravel()


def _take_put(
    out: GPUArray,
    src: GPUArray,
    dest_indices: GPUArray | None,
    src_indices: GPUArray | None,
    n: int,
    src_offset: int,
    stream: Any,
    what: str,
) -> None:
    size = src.dtype.itemsize
    if out._readonly:
        raise ValueError(f"{what}: the output is read-only (assignment destination is read-only)")
    if out.dtype != src.dtype:  # the kernel copies bytes: another dtype would reinterpret them
        raise TypeError(f"out has dtype {out.dtype}, the source {src.dtype}: they must match")
    if n == 0:
        return
    if size not in _COPY_SIZES:
        raise TypeError(f"take/put of {src.dtype} is not supported")
    kinds = {_index_kind(i, "indices") for i in (dest_indices, src_indices) if i is not None}
    if len(kinds) > 1:
        raise TypeError("src_indices and dest_indices must have the same dtype")
    kind = kinds.pop() if kinds else 0
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not -(1 << 62) <= src_offset < 1 << 62:
        raise IndexError(f"{what}: source offset {src_offset} is out of bounds for an array of size {src.size}")
    given = (src, dest_indices, src_indices)
    src = _flat(src)
    dest_indices = _flat(dest_indices) if dest_indices is not None else None
    src_indices = _flat(src_indices) if src_indices is not None else None
    # Every index checked on the device before any is followed (numpy's mode="raise": nothing
    # is written when one is out of bounds); negative ones count from the end, as numpy's.
    if dest_indices is not None:
        _bundled.check_indices(dest_indices, -out.size, out.size, stream, f"{what}: destination", out.size)
    if src_indices is not None:
        _bundled.check_indices(src_indices, -src.size, src.size, stream, f"{what}: source", src.size, offset=src_offset)
    elif n > src.size:
        raise IndexError(f"{what}: {n} elements to copy from a source of {src.size}")
    if dest_indices is None and n > out.size:
        raise IndexError(f"{what}: {n} elements to write into an output of {out.size}")
    operands = [x for x in (src, dest_indices, src_indices) if x is not None]
    copies = tuple(x for x, g in zip((src, dest_indices, src_indices), given) if x is not g)
    _bundled.read_on(stream, *operands, out)
    f = _bundled.function(_SOURCE, f"take_put_{size}", "PPPPiqqqq")
    _bundled.launch(
        f,
        _bundled.grid_for(n),
        _bundled.BLOCK,
        stream,
        out.ptr,
        src.ptr,
        dest_indices.ptr if dest_indices is not None else 0,
        src_indices.ptr if src_indices is not None else 0,
        kind,
        n,
        src_offset,
        out.size,
        src.size,
        keep=copies,
    )
    _bundled.written_on(stream, out)


def take(a: GPUArray, indices: GPUArray, out: GPUArray | None = None, stream: Any = None) -> GPUArray:
    """``out[i] = a.ravel()[indices[i]]``, shaped like ``indices``. As numpy's ``take``, a
    negative index counts from the end, and an index outside ``-a.size .. a.size - 1`` raises
    IndexError (checked on the device before anything is read; the check waits for ``stream``)."""
    _index_kind(indices, "take's indices")
    if out is None:
        out = empty(indices.shape, a.dtype, allocator=a.allocator)
    elif out.size != indices.size:
        raise ValueError(f"out has {out.size} elements, indices {indices.size}")
    _take_put(out, a, None, indices, indices.size, 0, stream, "take")
    return out


def _common_dtype(arrays: list[GPUArray], what: str) -> np.dtype:
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1:
        raise TypeError(f"{what}: all arrays must have one dtype, not {sorted(map(str, dtypes))}")
    return dtypes.pop()


def _outputs(arrays: list[GPUArray], out: Any, shape: Any, dtype: np.dtype, what: str) -> list[GPUArray]:
    if out is None:
        return [empty(shape, dtype, allocator=arrays[0].allocator) for _ in arrays]
    outs: list[GPUArray] = list(out)
    if len(outs) != len(arrays):
        raise ValueError(f"{what}: out and arrays must have the same length")
    if any(o.dtype != dtype for o in outs):
        raise TypeError(f"{what}: arrays and out must have the same dtype")
    return outs


def multi_take(arrays: Sequence[GPUArray], indices: GPUArray, out: Any = None, stream: Any = None) -> list[GPUArray]:
    """``take`` of every array with the same indices."""
    arrays = list(arrays)
    if not arrays:
        return []
    dtype = _common_dtype(arrays, "multi_take")
    _index_kind(indices, "multi_take's indices")
    outs = _outputs(arrays, out, indices.shape, dtype, "multi_take")
    for a, o in zip(arrays, outs):
        take(a, indices, o, stream)
    return outs


def multi_put(
    arrays: Sequence[GPUArray], dest_indices: GPUArray, dest_shape: Any = None, out: Any = None, stream: Any = None
) -> list[GPUArray]:
    """``out[j][dest_indices[i]] = arrays[j][i]``; new outputs of ``dest_shape`` are not
    initialised elsewhere (as PyCUDA's). Indices as numpy's ``put``: negative ones count from
    the end, one out of bounds raises IndexError before anything is written."""
    arrays = list(arrays)
    if not arrays:
        return []
    dtype = _common_dtype(arrays, "multi_put")
    _index_kind(dest_indices, "multi_put's dest_indices")
    if dest_indices.ndim != 1:
        raise ValueError("dest_indices must be 1-D")
    outs = _outputs(arrays, out, dest_shape, dtype, "multi_put")
    for a, o in zip(arrays, outs):
        if a.size < dest_indices.size:
            raise ValueError(f"multi_put: an array has {a.size} elements, fewer than the {dest_indices.size} indices")
        _take_put(o, a, dest_indices, None, dest_indices.size, 0, stream, "multi_put")
    return outs


def multi_take_put(
    arrays: Sequence[GPUArray],
    dest_indices: GPUArray,
    src_indices: GPUArray,
    dest_shape: Any = None,
    out: Any = None,
    stream: Any = None,
    src_offsets: Any = None,
) -> list[GPUArray]:
    """``out[j][dest_indices[i]] = arrays[j][src_indices[i] + src_offsets[j]]``. A negative
    position (after the offset) counts from the end, as numpy's; one out of bounds raises
    IndexError before anything of that array is written."""
    arrays = list(arrays)
    if not arrays:
        return []
    dtype = _common_dtype(arrays, "multi_take_put")
    if _index_kind(src_indices, "src_indices") != _index_kind(dest_indices, "dest_indices"):
        raise TypeError("src_indices and dest_indices must have the same dtype")
    if src_indices.ndim != 1:
        raise ValueError("src_indices must be 1-D")
    if src_indices.shape != dest_indices.shape:
        raise ValueError("src_indices and dest_indices must have the same shape")
    offsets = [0] * len(arrays) if src_offsets is None else [operator.index(o) for o in src_offsets]
    if len(offsets) != len(arrays):
        raise ValueError("src_offsets and arrays must have the same length")
    outs = _outputs(arrays, out, dest_shape, dtype, "multi_take_put")
    for a, o, offset in zip(arrays, outs, offsets):
        _take_put(o, a, dest_indices, src_indices, src_indices.size, offset, stream, "multi_take_put")
    return outs


# ----------------------------------------------------------------------------- shapes


def transpose(a: GPUArray, axes: Any = None) -> GPUArray:
    """A view with the axes permuted (reversed by default)."""
    return _array_arg(a, "transpose").transpose(axes)


def reshape(a: GPUArray, shape: Any, order: str = "C") -> GPUArray:
    """``a.reshape(shape, order=order)``."""
    return _array_arg(a, "reshape").reshape(shape, order=order)


def _array_arg(a: Any, what: str) -> GPUArray:
    """``a`` if it is a GPUArray, else a TypeError naming the function."""
    if not isinstance(a, GPUArray):
        raise TypeError(f"{what} takes a GPUArray, not {type(a).__name__} (numpy's takes host arrays)")
    return a
