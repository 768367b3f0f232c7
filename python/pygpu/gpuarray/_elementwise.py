"""Launching the bundled elementwise kernels (kernels/arith.cu, cast.cu, cumath.cu).

Every elementwise kernel takes one ``pygpu_ew_args`` (kernels/pygpu_elementwise.h) by value:
operand addresses (outputs first), up to three scalar inputs as bytes, and the layout. This
module packs it, with a contiguous fast path that packs only the header, and merges the axes
of strided operands so that the kernel divides as little as possible.

Dtypes follow numpy: ``loop_dtypes`` asks numpy's own ufunc type resolution (with Python
scalars weak, NEP 50) which loop numpy would run; operands of another dtype are cast to it
first by a cast kernel. Measured on the host backend (``bench/array_bench.py --host``), a cast
plus a same-dtype kernel costs about as much as a dedicated mixed-dtype kernel would save, and
one kernel per dtype pair and operation would be 14 times the code in the wheel.

The kernels are prepared once with their one struct parameter ("416s"), so a launch packs
no more than those bytes. ``contiguous`` is the path of launch-bound calls on C-contiguous
operands (``a + b``, ``cumath.exp(a)`` on 1,000 elements): the result's allocation, one
pack of the header, one launch; anything else takes ``launch``'s general path.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

import pygpu.gpuarray._bundled as _bundled
from pygpu._driver.devices import check_devices, several_devices
from pygpu._pygpu import Function, capabilities, get_device, pool_alloc
import pygpu.gpuarray._storage as _storage
from pygpu.gpuarray._dtypes import DTYPES
from pygpu.gpuarray._layout import Flags, c_flags, c_strides
from pygpu.gpuarray._ordering import StreamOrder
from pygpu.gpuarray._storage import ArrayFields, device_of, make

__all__ = ["MAX_DIMS", "contiguous", "kernel", "launch", "loop_dtypes", "scalar_bytes", "weak_type"]

MAX_DIMS = 8
MAX_OPERANDS = 4
# pygpu_ew_args: ptr[4], scalar[3][2], n, ndim, contiguous, then shape[8] and strides[4][8].
_HEADER = struct.Struct("<4Q48sqii")
_LAYOUT = struct.Struct(f"<{MAX_DIMS}q{MAX_OPERANDS * MAX_DIMS}q")
_ZERO_LAYOUT = bytes(_LAYOUT.size)
_ZERO_SCALAR = bytes(16)
_SCALAR_SLOTS = 3
_ZERO_SLOTS = _ZERO_SCALAR * _SCALAR_SLOTS
# The kernels' one parameter, a pygpu_ew_args struct by value (prepare checks its size
# against the kernel's where the backend knows it).
ARGS_FORMAT = f"{_HEADER.size + _LAYOUT.size}s"

_loops: dict[tuple[Any, ...], tuple[np.dtype[Any], ...]] = {}


def kernel(source: str, name: str) -> Function:
    """The bundled kernel ``name`` of kernels/<source>.cu on the current device, prepared for
    its struct argument (``pygpu.gpuarray._bundled`` loads and caches the module per device)."""
    return _bundled.function(source, name, ARGS_FORMAT)


def weak_type(x: Any) -> Any:
    """What numpy's type resolution takes for an operand: a dtype, or a Python scalar type
    (weak under NEP 50, so ``float32_array * 2.0`` stays float32)."""
    if isinstance(x, ArrayFields):
        return x.dtype
    if isinstance(x, np.generic):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, (int, float, complex)):
        return type(x)
    if isinstance(x, np.ndarray):
        return x.dtype
    raise TypeError(f"unsupported operand type {type(x).__name__}: a GPUArray, a number or a numpy scalar")


def loop_dtypes(ufunc: np.ufunc, *operands: Any) -> tuple[np.dtype[Any], ...]:
    """(input dtypes..., output dtypes...) of the loop numpy's ``ufunc`` runs for these operands."""
    key = (ufunc, *(weak_type(x) for x in operands))
    loop = _loops.get(key)
    if loop is None:
        try:
            loop = ufunc.resolve_dtypes((*key[1:], *([None] * ufunc.nout)))
        except TypeError as e:
            names = ", ".join(str(getattr(k, "__name__", k)) for k in key[1:])
            raise TypeError(f"{ufunc.__name__} is not supported for operands of types ({names}), as in numpy") from e
        for dt in loop:
            if dt not in DTYPES:
                raise TypeError(f"{ufunc.__name__} would compute in {dt}, which GPUArray does not hold")
        _loops[key] = loop
    return loop


# dtype -> the struct that packs a Python int or float into a scalar slot as numpy converts
# it (round to nearest; a value out of range raises, and numpy's conversion then decides).
_SLOT_STRUCTS = {
    np.dtype(t): struct.Struct(f"<{c}{16 - np.dtype(t).itemsize}x")
    for t, c in (
        (np.int8, "b"),
        (np.uint8, "B"),
        (np.int16, "h"),
        (np.uint16, "H"),
        (np.int32, "i"),
        (np.uint32, "I"),
        (np.int64, "q"),
        (np.uint64, "Q"),
        (np.float32, "f"),
        (np.float64, "d"),
    )
}
_INTEGER_SLOTS = frozenset(dt for dt in _SLOT_STRUCTS if dt.kind in "iu")


def scalar_bytes(value: Any, dtype: np.dtype[Any]) -> bytes:
    """``value`` converted to ``dtype`` as numpy converts it (OverflowError when it does not
    fit an integer dtype), as the 16 bytes of a scalar slot."""
    packer = _SLOT_STRUCTS.get(dtype)
    kind = value.__class__
    # struct converts exactly as numpy for these; numpy decides every other case.
    if packer is not None and (kind is float or kind is int) and (kind is int or dtype not in _INTEGER_SLOTS):
        try:
            return packer.pack(value)
        except (struct.error, OverflowError):
            pass
    return np.asarray(value, dtype=dtype).tobytes().ljust(16, b"\0")


def _merge_axes(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> tuple[list[int], list[list[int]]]:
    """Drops unit axes and merges neighbours that every operand steps through as one."""
    dims: list[int] = []
    steps: list[list[int]] = [[] for _ in strides]
    for axis, extent in enumerate(shape):
        if extent == 1:
            continue
        if dims and all(s[-1] == st[axis] * extent for s, st in zip(steps, strides)):
            dims[-1] *= extent
            for s, st in zip(steps, strides):
                s[-1] = st[axis]
            continue
        dims.append(extent)
        for s, st in zip(steps, strides):
            s.append(st[axis])
    return dims, steps


# (block, most blocks) of a launch, chosen once per process (the backend is fixed by then).
_launch_shape: list[tuple[int, int]] = []
# Elements per block on the host (below this, handing blocks to another core costs more than it
# saves: bench/array_bench.py --host).
_HOST_BLOCK_ELEMENTS = 1 << 15
_ONE = (1, 1, 1)


def _grid_block(n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) of a launch over ``n`` elements."""
    if not _launch_shape:
        # The host runs a block's threads in turn on one core: blocks of one thread, each taking
        # one contiguous run of elements (pygpu_elementwise.h), spread over the host backend's
        # cores once there are enough elements to pay for handing them over.
        _launch_shape.append(_bundled.host_launch_shape() if capabilities().kernels_on_cpu else (256, 8192))
    block, most = _launch_shape[0]
    if block == 1:
        return (max(1, min(n // _HOST_BLOCK_ELEMENTS, most)), 1, 1), _ONE
    return (max(1, min((n + block - 1) // block, most)), 1, 1), (block, 1, 1)


# (shape, itemsize) -> C strides and flags, for the results of launch-bound calls.
_layouts: dict[tuple[tuple[int, ...], int], tuple[tuple[int, ...], Flags]] = {}


def contiguous(
    fn: Function, result_dtype: np.dtype[Any], shaping: ArrayFields, inputs: tuple[Any, ...], stream: Any
) -> ArrayFields | None:
    """A new C-ordered array of ``result_dtype`` and ``shaping``'s shape, written by ``fn``
    (from ``kernel``) over ``inputs``: GPUArrays of that shape and of the kernel's dtype, or
    scalar bytes for their slot; or None, doing nothing, unless every array is C-contiguous,
    aligned, non-empty and on the current device, as ``fn`` is (then ``launch`` does the work)."""
    n = shaping.size
    shape = shaping.shape
    if not n or (several_devices() and not _all_on_current_device(fn, inputs)):
        return None
    ptrs = [0, 0, 0, 0]
    slots = None
    k = 1
    for x in inputs:
        if x.__class__ is bytes:
            if slots is None:
                slots = [_ZERO_SCALAR] * _SCALAR_SLOTS
            slots[k - 1] = x
        else:
            if x.shape != shape or not (x._flags or x.flags).c_contiguous:
                return None
            ptrs[k] = ptr = int(x._alloc) + x._offset
            itemsize = x.dtype.itemsize
            if ptr % (itemsize if itemsize < 8 else 8):
                return None
            order = x._order
            if order.pending is not False and order.pending is not stream:
                order.before(stream)
        k += 1
    itemsize = result_dtype.itemsize
    layout = _layouts.get((shape, itemsize))
    if layout is None:
        layout = _layouts[shape, itemsize] = (c_strides(shape, itemsize), c_flags(shape))
    strides, flags = layout
    allocator = shaping.allocator
    alloc = (allocator or pool_alloc)(n * itemsize)
    result = make(
        _storage.array_class,
        alloc,
        0,
        shape,
        result_dtype,
        strides,
        n,
        None,
        allocator,
        StreamOrder(stream),
        False,
        flags,
    )
    ptrs[0] = int(alloc)
    grid, block = _grid_block(n)
    packed = _HEADER.pack(*ptrs, _ZERO_SLOTS if slots is None else b"".join(slots), n, 0, 1) + _ZERO_LAYOUT
    fn.prepared_async_call(grid, block, stream, packed)
    return result


def _all_on_current_device(fn: Function, inputs: tuple[Any, ...]) -> bool:
    """Whether ``fn`` (from ``kernel``) and the arrays among ``inputs`` belong to the current device:
    with several devices, the fast path's check (``launch`` explains a mismatch)."""
    current = get_device()
    if _bundled.function_device(fn) != current:
        return False
    return all(x.__class__ is bytes or device_of(x._alloc) == current for x in inputs)


def _misaligned(a: ArrayFields, ptr: int) -> ValueError:
    align = min(8, a.dtype.itemsize)
    return ValueError(
        f"a {a.dtype} operand at address {ptr:#x} with strides {a.strides} is not aligned to {align} "
        "bytes, which the kernels' loads need: make an aligned copy first (GPUArray(shape, dtype) and set())"
    )


def launch(
    source: str,
    name: str,
    outputs: list[ArrayFields],
    inputs: list[Any],
    stream: Any = None,
    slots: tuple[bytes, ...] = (),
) -> None:
    """Runs kernel ``name`` over ``outputs[0].shape``. ``inputs`` are GPUArrays of that shape
    (any strides), scalar bytes (``scalar_bytes``) that go into the input's scalar slot, or
    None (address 0, slot left as it is); ``slots`` sets the scalar slots first (kernels with
    scalar parameters of their own, such as axpbyz)."""
    # Launch-bound calls (1,000 elements) spend most of their time here: one pass over the
    # operands reads each address once and checks alignment and contiguity together.
    out0 = outputs[0]
    n = out0.size
    if n == 0:
        return
    fn = kernel(source, name)
    arrays: list[ArrayFields] = []
    addresses: list[int] = []  # of arrays
    ptrs = [0] * MAX_OPERANDS
    slot_bytes = [*slots, *[_ZERO_SCALAR] * (_SCALAR_SLOTS - len(slots))]
    contiguous = True
    k = 0
    for o in outputs:
        if o._readonly:
            raise ValueError("assignment destination is read-only")
        ptrs[k] = ptr = o.ptr
        contiguous = contiguous and (o._flags or o.flags).c_contiguous
        arrays.append(o)
        addresses.append(ptr)
        k += 1
    for slot, x in enumerate(inputs):
        if x is None:
            pass
        elif x.__class__ is bytes:
            slot_bytes[slot] = x
        else:
            ptrs[k] = ptr = x.ptr
            contiguous = contiguous and (x._flags or x.flags).c_contiguous
            arrays.append(x)
            addresses.append(ptr)
        k += 1
    for a, ptr in zip(arrays, addresses):
        align = min(a.dtype.itemsize, 8)
        if ptr % align or (not contiguous and any(st % align for st in a.strides)):
            raise _misaligned(a, ptr)
    check_devices(arrays)
    for a in arrays:
        a._order.before(stream)
    header_ptrs = ptrs
    if contiguous:
        packed = _HEADER.pack(*header_ptrs, b"".join(slot_bytes), n, 0, 1) + _ZERO_LAYOUT
    else:
        operands = [*outputs, *inputs]
        strides = [(x.strides if isinstance(x, ArrayFields) else (0,) * len(out0.shape)) for x in operands]
        dims, steps = _merge_axes(out0.shape, strides)
        if len(dims) > MAX_DIMS:
            raise ValueError(
                f"operands of {len(dims)} non-mergeable axes: the elementwise kernels take at most {MAX_DIMS}; "
                "copy an operand to C order first"
            )
        shape_field = dims + [0] * (MAX_DIMS - len(dims))
        stride_field: list[int] = []
        for s in steps:
            stride_field += s + [0] * (MAX_DIMS - len(s))
        stride_field += [0] * (MAX_OPERANDS * MAX_DIMS - len(stride_field))
        packed = _HEADER.pack(*header_ptrs, b"".join(slot_bytes), n, len(dims), 0) + _LAYOUT.pack(
            *shape_field, *stride_field
        )
    grid, block = _grid_block(n)
    fn.prepared_async_call(grid, block, stream, packed)
    for o in outputs:
        o._order.wrote(stream)
