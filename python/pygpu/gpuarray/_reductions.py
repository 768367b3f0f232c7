"""Reductions of GPUArrays, as pycuda.gpuarray has them: ``sum``, ``dot``, ``vdot``, ``min``,
``max``, ``subset_dot``, ``subset_min``, ``subset_max``, ``any``, ``all``.

Each returns a 0-d GPUArray computed on the device by the bundled kernels/reduce.cu in one
launch (``_bundled.reduction_launch`` picks the grid): one block up to 2,048 terms; else many,
the last of which to finish folds the blocks' values, kept in a small buffer of the stream's
(two launches instead while the stream captures a graph), ordered on ``stream`` like pygpu's
copies. Non-contiguous operands are read in place through their strides. Result types follow
numpy: ``sum`` of bool and integers accumulates in (u)int64 (PyCUDA keeps the input type; pass
``dtype=`` for that), ``dot`` uses the operands' common type; ``min``/``max`` propagate NaN as
numpy's do, and raise on an empty array.
"""

from __future__ import annotations

import builtins
from typing import Any, Self, TypeVar

import numpy as np

import pygpu.gpuarray._bundled as _bundled
import pygpu.gpuarray._storage as _storage
from pygpu._driver.devices import current_device
from pygpu._pygpu import memset_d32
from pygpu.gpuarray._layout import extent, is_dense
from pygpu.gpuarray._ordering import is_capturing

from pygpu.gpuarray._storage import ArrayFields

# The reductions' arrays: a function given GPUArrays gives a GPUArray.
A = TypeVar("A", bound=ArrayFields)

__all__ = [
    "ReductionMixin",
    "all",
    "any",
    "dot",
    "max",
    "min",
    "subset_dot",
    "subset_max",
    "subset_min",
    "subset_sum",
    "sum",
    "vdot",
]


class ReductionMixin(ArrayFields):
    """GPUArray's reduction methods (0-d GPUArray results)."""

    __slots__ = ()

    def sum(self, dtype: Any = None, stream: Any = None, allocator: Any = None) -> Self:
        """The sum of all elements (``pygpu.gpuarray.sum``)."""
        return sum(self, dtype, stream, allocator)

    def max(self, stream: Any = None, allocator: Any = None) -> Self:
        """The largest element (``pygpu.gpuarray.max``)."""
        return max(self, stream, allocator)

    def min(self, stream: Any = None, allocator: Any = None) -> Self:
        """The smallest element (``pygpu.gpuarray.min``)."""
        return min(self, stream, allocator)

    def any(self, stream: Any = None, allocator: Any = None) -> Self:
        """Whether any element is non-zero, as a 0-d bool array."""
        return any(self, stream, allocator)

    def all(self, stream: Any = None, allocator: Any = None) -> Self:
        """Whether every element is non-zero, as a 0-d bool array."""
        return all(self, stream, allocator)


_SOURCE = "reduce"
# out, a, b, n, layout, subset, subset_kind, conj, partials, ticket
_SIGNATURE = "PPPqPPiiPP"
# A one-pass reduction's scratch: the ticket counter (an unsigned int, then padding), then room
# for the blocks' values, MAX_GRID of the widest accumulator (complex128).
_TICKET_BYTES = 16
_SCRATCH_WORDS = (_TICKET_BYTES + _bundled.MAX_GRID * 16) // 4
# device -> the scratch of its legacy default stream (which lives as long as the process).
_default_stream_scratch: dict[int, Any] = {}


def _scratch(stream: Any) -> int:
    """The device address of ``stream``'s one-pass scratch (made on first use, its ticket 0),
    or 0 while the stream captures: a graph may replay on any stream, beside this one's work.
    Launches of one stream are ordered (on the host backend too, from any thread), so they can
    share it; each stream has its own."""
    # Two threads may make a stream's first scratch at once: the first one stored is the one
    # both use (setdefault; the stream's slot keeps its first value), the other is dropped unused.
    if stream is None:
        device = current_device()
        scratch = _default_stream_scratch.get(device)
        if scratch is None:
            scratch = _default_stream_scratch.setdefault(device, _new_scratch(None))
        return scratch.ptr  # type: ignore[no-any-return]
    if is_capturing(stream):
        return 0
    scratch = getattr(stream, "_scratch", _NO_SCRATCH_SLOT)
    if scratch is _NO_SCRATCH_SLOT:  # a stream-like object of another kind: two launches
        return 0
    if scratch is None:
        # Kept by the stream, which waits for its work before letting the scratch go.
        stream._scratch = _new_scratch(stream)
        scratch = stream._scratch
    return scratch.ptr  # type: ignore[no-any-return]


_NO_SCRATCH_SLOT = object()


def _new_scratch(stream: Any) -> Any:
    """A zeroed scratch for reductions on ``stream`` (None: the legacy default stream)."""
    scratch = _storage.new_c((_SCRATCH_WORDS,), np.dtype(np.uint32))
    memset_d32(scratch.ptr, 0, _SCRATCH_WORDS, stream)  # on the stream: before its first use
    return scratch


_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FLOATS = ("float32", "float64")
_COMPLEX = ("complex64", "complex128")
# (input, result) pairs of reduce_sum_* kernels.
_SUM_KERNELS = frozenset(
    [("bool", "int64")]
    + [(t, "int64") for t in _INTS if t.startswith("int")]
    + [(t, "uint64") for t in _INTS if t.startswith("uint")]
    + [(t, t) for t in _INTS + _FLOATS + _COMPLEX]
    + [("float16", "float32"), ("float32", "float64"), ("complex64", "complex128")]
)
_DOT_TYPES = frozenset(_INTS + _FLOATS + _COMPLEX)
_MINMAX_TYPES = frozenset(_INTS + _FLOATS + ("float16",))
# any/all: element type -> the kernel type of its size ("non-zero" of an integer is its bits).
_TRUTH_TYPES = {
    "bool": "bool",
    "int8": "uint8",
    "uint8": "uint8",
    "int16": "uint16",
    "uint16": "uint16",
    "int32": "uint32",
    "uint32": "uint32",
    "int64": "uint64",
    "uint64": "uint64",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
}


# numpy computes dtype.name in Python (microseconds a call, several per reduction: as long as
# a small reduction's launch); the reductions look names up here instead.
_names: dict[np.dtype, str] = {}


def _name(dtype: np.dtype) -> str:
    name = _names.get(dtype)
    if name is None:
        name = _names[dtype] = dtype.name
    return name


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's accumulator of ``np.sum`` for ``dtype``."""
    if dtype.kind in "bi":
        return np.dtype(np.int64)
    if dtype.kind == "u":
        return np.dtype(np.uint64)
    return dtype


def _check_array(a: A, what: str) -> A:
    if not isinstance(a, ArrayFields):
        raise TypeError(f"{what} must be a GPUArray, not {type(a).__name__}")
    return a


def _check_same_device(*arrays: A) -> None:
    devices = {a.device for a in arrays}
    if len(devices) > 1:
        raise ValueError(f"the operands are on different devices {sorted(devices)}: copy them to one device first")


def _contiguous(a: A) -> A:
    """a itself when a kernel can walk it through its strides, else a C-ordered copy (only
    for views whose strides are not whole elements)."""
    if _bundled.element_strides(a) is None:
        return a.copy()
    return a


def _reduce(
    op: str,
    kernel_type: str,
    result: A,
    acc: np.dtype,
    a: A,
    b: A | None,
    subset: A | None,
    stream: Any,
    allocator: Any,
    conj: bool = False,
) -> A:
    """Reduction `op` into 0-d `result`: one launch (two while `stream` captures a graph)."""
    operands = [a] if b is None else [a, b]
    if b is not None or subset is not None:
        _check_same_device(*operands, *([subset] if subset is not None else []))
    # Temporaries to hold until the launches are done (the caller holds the operands).
    keep: list[Any] = []
    n = a.size if subset is None else subset.size
    itemsize = a.dtype.itemsize
    # A flat walk when the layouts are C order, or when the term order does not matter: a dense
    # operand (any axis order, even negative steps) is read from its lowest address. (C order
    # first: it is the common case, and the cheaper test for a launch-bound reduction.)
    if builtins.all(x.flags.c_contiguous for x in operands):
        a_ptr = a.ptr
        b_ptr = a_ptr if b is None else b.ptr
        layout = None
    elif subset is None and b is None and is_dense(a.shape, a.strides, itemsize):
        a_ptr = a.ptr + (extent(a.shape, a.strides, itemsize)[0] if n else 0)
        b_ptr = a_ptr
        layout = None
    else:
        operands = [_contiguous(x) for x in operands]
        a = operands[0]
        b = operands[1] if b is not None else None
        keep += operands
        strides = [_bundled.element_strides(x) or () for x in operands]
        layout = _bundled.layout_buffer(a.shape, strides[0], strides[-1])
        keep.append(layout)
        a_ptr = a.ptr
        b_ptr = a_ptr if b is None else b.ptr
    if subset is not None:
        subset_kind = _bundled.INDEX_KINDS.get(subset.dtype)
        if subset_kind is None:
            raise TypeError(f"subset indices must be int32, uint32, int64 or uint64, not {subset.dtype}")
        if not subset.flags.c_contiguous:
            subset = subset.copy()
            keep.append(subset)
        # Checked on the device before the reduction follows any index (the kernels trust them).
        _bundled.check_indices(subset, 0, a.size, stream, f"subset_{op}", a.size)
        subset_ptr = subset.ptr
        operands.append(subset)
    else:
        subset_kind, subset_ptr = 0, 0
    _bundled.read_on(stream, *operands)
    if op == "sum":
        name = f"reduce_sum_{kernel_type}_{_name(acc)}"
    elif op == "dot":
        name = f"reduce_dot_{kernel_type}"
    else:
        name = f"reduce_{op}_{kernel_type}"
    stage1 = _bundled.function(_SOURCE, name, _SIGNATURE)
    grid, block = _bundled.reduction_launch(n)
    args = (n, layout if layout is not None else 0, subset_ptr, subset_kind, int(conj))
    scratch = _scratch(stream) if grid > 1 else 0
    # One hold after the launches (same stream): one event per reduction at most.
    try:
        if grid == 1 or scratch:
            ticket, partials = scratch, scratch + _TICKET_BYTES if scratch else 0
            _bundled.launch(stage1, grid, block, stream, result.ptr, a_ptr, b_ptr, *args, partials, ticket)
        else:
            target = _storage.new_c((grid,), acc, allocator if allocator is not None else a.allocator)
            keep.append(target)
            _bundled.launch(stage1, grid, block, stream, target.ptr, a_ptr, b_ptr, *args, 0, 0)
            if op in ("sum", "dot"):
                second = f"reduce_sum_{_name(acc)}_{_name(acc)}"
            elif op in ("any", "all"):
                second = f"reduce_{op}_bool"
            else:
                second = f"reduce_{op}_{_name(acc)}"
            stage2 = _bundled.function(_SOURCE, second, _SIGNATURE)
            _bundled.launch(stage2, 1, block, stream, result.ptr, target.ptr, target.ptr, grid, 0, 0, 0, 0, 0, 0)
    finally:
        _bundled.hold(stream, tuple(keep))
    _bundled.written_on(stream, result)
    return result


def _result(dtype: np.dtype, allocator: Any, a: A) -> A:
    """A new plain 0-d array for a reduction's result (a GPUArray, as ``a`` is for the typing)."""
    return _storage.new_c((), dtype, allocator if allocator is not None else a.allocator)  # type: ignore[return-value]


def _narrowed(value: A, dtype: np.dtype) -> A:
    """A 0-d integer result as a narrower integer type: numpy's wrap-around cast is the low
    bytes (little-endian), so this is a view, not a copy."""
    return _storage.plain_view(value, value._offset, (), (), dtype)  # type: ignore[return-value]


def sum(a: A, dtype: Any = None, stream: Any = None, allocator: Any = None) -> A:
    """The sum of all elements, as a 0-d GPUArray (numpy's accumulator type unless ``dtype``)."""
    a = _check_array(a, "sum's argument")
    want = _sum_dtype(a.dtype) if dtype is None else np.dtype(dtype)
    src = a.dtype
    if src == np.float16 and want.kind == "f":
        # Half sums accumulate in float32 (as numpy's pairwise half sum does), then round once.
        acc = np.dtype(np.float32)
        total = _reduce("sum", _name(src), _result(acc, allocator, a), acc, a, None, None, stream, allocator)
        return total if want == acc else total.astype(want, stream=stream)
    if (_name(src), _name(want)) in _SUM_KERNELS:
        return _reduce("sum", _name(src), _result(want, allocator, a), want, a, None, None, stream, allocator)
    if want.kind in "iu" and src.kind in "biu":
        # Integer sums wrap alike in any integer width: sum in (u)int64, keep the low bytes.
        acc = _sum_dtype(src)
        total = _reduce("sum", _name(src), _result(acc, allocator, a), acc, a, None, None, stream, allocator)
        return _narrowed(total, want)
    if want.kind == "b":
        raise TypeError("sum(dtype=bool) is not supported: use any()")
    # Another result type (e.g. a float sum of integers): convert the operand first.
    return sum(a.astype(want, stream=stream), want, stream, allocator)


def subset_sum(subset: A, a: A, dtype: Any = None, stream: Any = None, allocator: Any = None) -> A:
    """``sum`` over the elements ``subset`` names (flat C-order indices into a). An index
    outside ``0 .. a.size - 1`` raises IndexError (checked on the device first, which waits
    for ``stream``; negative indices are not taken from the end)."""
    subset = _check_array(subset, "subset_sum's subset")
    a = _check_array(a, "subset_sum's argument")
    _check_indices(subset, a)
    want = _sum_dtype(a.dtype) if dtype is None else np.dtype(dtype)
    if (_name(a.dtype), _name(want)) not in _SUM_KERNELS:
        if want.kind in "iu" and a.dtype.kind in "biu":
            acc = _sum_dtype(a.dtype)
            total = _reduce("sum", _name(a.dtype), _result(acc, allocator, a), acc, a, None, subset, stream, allocator)
            return _narrowed(total, want)
        a = a.astype(want if want != np.float16 else np.float32, stream=stream)
        if want == np.float16:
            total = subset_sum(subset, a, np.float32, stream, allocator)
            return total.astype(np.float16, stream=stream)
    return _reduce("sum", _name(a.dtype), _result(want, allocator, a), want, a, None, subset, stream, allocator)


def _dot_operands(a: A, b: A, dtype: Any, stream: Any, what: str) -> tuple[A, A, np.dtype, np.dtype]:
    """(a, b) as the kernel takes them, the type it computes in, and the result's type (numpy's:
    float16 operands give float16, computed in float32)."""
    a = _check_array(a, f"{what}'s first argument")
    b = _check_array(b, f"{what}'s second argument")
    if a.size != b.size or (a.shape != b.shape and a.ndim > 1 and b.ndim > 1):
        raise ValueError(f"{what}: the operands have shapes {a.shape} and {b.shape}; they need the same size")
    want = np.result_type(a.dtype, b.dtype) if dtype is None else np.dtype(dtype)
    result_dtype = want
    if _name(want) not in _DOT_TYPES:
        if want == np.float16:
            want = np.dtype(np.float32)
        else:
            raise TypeError(f"{what} of {want} is not supported (integer, float or complex types are)")
    if a.shape != b.shape:  # same size, one of them 1-D: walk both as 1-D
        a = _flat(a)
        b = _flat(b)
    if a.dtype != want:
        a = a.astype(want, stream=stream)
    if b.dtype != want:
        b = b.astype(want, stream=stream)
    return a, b, want, result_dtype


def _flat(a: A) -> A:
    """``a``'s elements as a plain 1-d array (a view where ``a`` is C-contiguous)."""
    if not a.flags.c_contiguous:
        a = a.copy()
    return _storage.plain_view(a, a._offset, (a.size,), (a.dtype.itemsize,))  # type: ignore[return-value]


def dot(a: A, b: A, dtype: Any = None, stream: Any = None, allocator: Any = None) -> A:
    """The sum of a * b over all elements, as a 0-d GPUArray of the operands' common type."""
    a, b, want, result_dtype = _dot_operands(a, b, dtype, stream, "dot")
    result = _reduce("dot", _name(want), _result(want, allocator, a), want, a, b, None, stream, allocator)
    return result if result_dtype == want else result.astype(result_dtype, stream=stream)


def vdot(a: A, b: A, dtype: Any = None, stream: Any = None, allocator: Any = None) -> A:
    """As ``dot``, with ``a`` conjugated (numpy.vdot)."""
    a, b, want, result_dtype = _dot_operands(a, b, dtype, stream, "vdot")
    result = _reduce(
        "dot", _name(want), _result(want, allocator, a), want, a, b, None, stream, allocator, conj=want.kind == "c"
    )
    return result if result_dtype == want else result.astype(result_dtype, stream=stream)


def subset_dot(subset: A, a: A, b: A, dtype: Any = None, stream: Any = None, allocator: Any = None) -> A:
    """``dot`` over the elements ``subset`` names (flat C-order indices into a and b); indices
    checked as :func:`subset_sum`'s."""
    subset = _check_array(subset, "subset_dot's subset")
    a, b, want, result_dtype = _dot_operands(a, b, dtype, stream, "subset_dot")
    _check_indices(subset, a)
    result = _reduce("dot", _name(want), _result(want, allocator, a), want, a, b, subset, stream, allocator)
    return result if result_dtype == want else result.astype(result_dtype, stream=stream)


def _check_indices(subset: A, a: A) -> None:
    if subset.dtype not in _bundled.INDEX_KINDS:
        raise TypeError(f"subset indices must be int32, uint32, int64 or uint64, not {subset.dtype}")


def _minmax(op: str, a: A, subset: A | None, stream: Any, allocator: Any) -> A:
    a = _check_array(a, f"{op}'s argument")
    n = a.size if subset is None else subset.size
    if n == 0:
        raise ValueError(
            f"zero-size array to reduction operation {'minimum' if op == 'min' else 'maximum'} which has no identity"
        )
    dt = a.dtype
    if dt.kind == "c":
        raise TypeError(f"{op} of complex arrays is not supported (they have no order)")
    if subset is not None:
        _check_indices(subset, a)
    if dt.kind == "b":
        # bool orders as 0 < 1: the uint8 min/max, seen as bool again.
        u8 = _storage.plain_view(a, a._offset, a.shape, a.strides, np.dtype(np.uint8))
        return _minmax(op, u8, subset, stream, allocator).view(np.bool_)  # type: ignore[return-value]
    return _reduce(op, _name(dt), _result(dt, allocator, a), dt, a, None, subset, stream, allocator)


def min(a: A, stream: Any = None, allocator: Any = None) -> A:
    """The smallest element (NaN if any is NaN), as a 0-d GPUArray."""
    return _minmax("min", a, None, stream, allocator)


def max(a: A, stream: Any = None, allocator: Any = None) -> A:
    """The largest element (NaN if any is NaN), as a 0-d GPUArray."""
    return _minmax("max", a, None, stream, allocator)


def subset_min(subset: A, a: A, stream: Any = None, allocator: Any = None) -> A:
    """The smallest of the elements ``subset`` names (flat C-order indices into a); indices
    checked as :func:`subset_sum`'s."""
    return _minmax("min", a, _check_array(subset, "subset_min's subset"), stream, allocator)


def subset_max(subset: A, a: A, stream: Any = None, allocator: Any = None) -> A:
    """The largest of the elements ``subset`` names (flat C-order indices into a); indices
    checked as :func:`subset_sum`'s."""
    return _minmax("max", a, _check_array(subset, "subset_max's subset"), stream, allocator)


def _truth(op: str, a: A, stream: Any, allocator: Any) -> A:
    a = _check_array(a, f"{op}'s argument")
    dt = a.dtype
    kernel_type = _TRUTH_TYPES[_name(dt)]
    if kernel_type != _name(dt):
        a = _storage.plain_view(a, a._offset, a.shape, a.strides, np.dtype(kernel_type))  # type: ignore[assignment]
    acc = np.dtype(np.bool_)
    return _reduce(op, kernel_type, _result(acc, allocator, a), acc, a, None, None, stream, allocator)


def any(a: A, stream: Any = None, allocator: Any = None) -> A:
    """Whether any element is non-zero, as a 0-d bool GPUArray."""
    return _truth("any", a, stream, allocator)


def all(a: A, stream: Any = None, allocator: Any = None) -> A:
    """Whether every element is non-zero, as a 0-d bool GPUArray."""
    return _truth("all", a, stream, allocator)
