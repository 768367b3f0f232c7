"""Launching pygpu's bundled kernels (kernels/*.cu) on GPUArray operands: the one place that
loads the bundled modules and looks their functions up, launch sizes, stream ordering, and
keeping temporaries alive until the device is done.

Used by the reductions, curandom, the non-elementwise gpuarray functions and the elementwise
launcher (gpuarray/_elementwise.py, which packs its own argument struct); nothing here is public.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

import numpy as np

from pygpu import _kernel_parts
from pygpu._kernels import load_kernels
from pygpu._multi_device import check_devices, current_device
from pygpu._pygpu import (
    Function,
    Module,
    cudaEvent_t,
    cudaEventQuery,
    cudaEventRecord,
    mem_alloc,
    memcpy_dtoh,
    memcpy_htod,
    pool_alloc,
)

if TYPE_CHECKING:
    from pygpu.gpuarray import GPUArray

__all__: list[str] = []

#: Threads per block of the 1-D launches (a power of two: the reduction tree needs one).
BLOCK = 256
#: Most blocks of a grid-stride launch: enough to fill any current GPU several times over.
MAX_GRID = 1024

# Keyed by device too: a module is loaded into one device's context.
_modules: dict[tuple[int, str], Module] = {}
_functions: dict[tuple[int, str], Function] = {}
# function -> its device, for callers that keep a function and must know where it runs.
_function_devices: dict[Function, int] = {}

# (event, objects): temporaries and operands of launches that may still be running.
_in_flight: collections.deque[tuple[cudaEvent_t, tuple[Any, ...]]] = collections.deque()

# index dtype -> the kernels' index_kind code
INDEX_KINDS = {np.dtype(np.int32): 0, np.dtype(np.uint32): 1, np.dtype(np.int64): 2, np.dtype(np.uint64): 3}


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NONE_BAD = np.iinfo(np.uint64).max


def check_indices(indices: GPUArray, lo: int, hi: int, stream: Any, what: str, size: int, offset: int = 0) -> None:
    """Raises IndexError, naming the first offending index and its position, unless every entry
    of the C-contiguous integer GPUArray ``indices`` plus ``offset`` lies in ``[lo, hi)``;
    ``size`` is the length of the array the indices address (for the message). The check runs
    on the device (kernels/array_functions.cu's check_indices, which reads only the indices) on
    ``stream``, then waits for it: no index is followed before it has been checked."""
    n = indices.size
    if n == 0:
        return
    kind = INDEX_KINDS[indices.dtype]
    # The kernel compares the raw index: move the bounds instead of adding the offset.
    low, high = max(lo - offset, _INT64_MIN), min(hi - offset, _INT64_MAX)
    if low >= high:
        low = high = 0  # an empty interval: every index is out of bounds
    flag = np.array([_NONE_BAD], np.uint64)
    buffer = pool_alloc(flag.nbytes)
    read_on(stream, indices)
    memcpy_htod(buffer, flag, stream)
    f = function("array_functions", "check_indices", "PiqqqP")
    launch(f, grid_for(n), BLOCK, stream, indices.ptr, kind, n, low, high, buffer)
    memcpy_dtoh(flag, buffer, stream)  # waits for the check
    if int(flag[0]) == _NONE_BAD:
        return
    position = int(flag[0])
    value = np.empty(1, indices.dtype)
    memcpy_dtoh(value, indices.ptr + position * indices.dtype.itemsize, stream)
    index = int(value[0])
    shown = f"index {index}" if not offset else f"index {index} + offset {offset} = {index + offset}"
    valid = f"the valid indices are {lo} to {hi - 1}" if lo < hi else "it has no valid index"
    raise IndexError(
        f"{what}: {shown} (at position {position} of the indices) is out of bounds for an array of size {size}; {valid}"
    )


def module(name: str) -> Module:
    """The bundled module ``name`` (kernels/<name>.cu, or a part <source>_<dtype> of a source split
    by dtype: ``_kernel_parts``) on the current device, loaded on first use and then kept for the
    process: one load per module and device, whoever asks first."""
    key = (current_device(), name)
    m = _modules.get(key)
    if m is None:
        m = _modules[key] = load_kernels(name)
    return m


def function(source: str, name: str, signature: str | None = None) -> Function:
    """Kernel ``name`` of bundled source ``source``, looked up once per process; prepared with
    struct characters ``signature`` when given (the elementwise kernels take one packed struct
    and are called unprepared). Only the module that holds it is loaded (arith's float64 kernels
    for ``add_f64``). TypeError when there is no such kernel: the bundled kernels are named by
    dtype, so a missing one means an unsupported dtype."""
    key = (current_device(), name)
    f = _functions.get(key)
    if f is None:
        unsupported = f"no bundled kernel {name!r} in {source}: this operation does not support these dtypes"
        module_name = _kernel_parts.module_name(source, name)
        if module_name is None:
            raise TypeError(unsupported)
        m = module(module_name)  # FileNotFoundError, saying so, when the kernels were not built
        try:
            f = m.get_function(name)
        except Exception as e:
            raise TypeError(unsupported) from e
        if signature is not None:
            f = f.prepare(signature)
        _functions[key] = f
        _function_devices[f] = key[0]
    return f


def function_device(f: Function) -> int | None:
    """The device a function from ``function`` was loaded on (None for any other function)."""
    return _function_devices.get(f)


def grid_for(n: int, block: int = BLOCK) -> int:
    """Blocks of a grid-stride launch over n items (at least one)."""
    return max(1, min(MAX_GRID, -(-n // block)))


def launch(f: Function, grid: int, block: int, stream: Any, *args: Any, keep: tuple[Any, ...] = ()) -> None:
    """Launches ``f`` on ``stream``; ``keep`` stays referenced until the launch has completed."""
    f.prepared_async_call((grid, 1), (block, 1, 1), stream, *args)
    if keep:
        _hold(stream, keep)


def hold(stream: Any, objects: tuple[Any, ...]) -> None:
    """Keeps ``objects`` (temporaries of work just issued on ``stream``) referenced until that
    work has completed."""
    if objects:
        _hold(stream, objects)


def _hold(stream: Any, objects: tuple[Any, ...]) -> None:
    # Frees of device memory are not ordered with streams: a temporary dropped while a kernel
    # still reads it could be reused under it. Hold it until an event after the launch is done.
    # Captured work runs at each replay of the graph: the graph keeps the temporaries instead.
    if stream is not None and stream.keep_while_captured(objects):
        return
    while _in_flight and cudaEventQuery(_in_flight[0][0]) == 0:
        _in_flight.popleft()
    event = cudaEvent_t(2)
    cudaEventRecord(event, stream).check()
    _in_flight.append((event, objects))


def read_on(stream: Any, *arrays: GPUArray) -> None:
    """Orders work about to be issued on ``stream`` after the pending writes of ``arrays``
    (which must be on the current device)."""
    check_devices(arrays)
    for a in arrays:
        a._order.before(stream)


def written_on(stream: Any, *arrays: GPUArray) -> None:
    """Records that ``arrays`` were last written by work on ``stream``."""
    for a in arrays:
        a._order.wrote(stream)


def element_strides(a: GPUArray) -> tuple[int, ...] | None:
    """a's strides in elements, or None when a byte stride is not a whole number of elements."""
    itemsize = a.dtype.itemsize
    if any(s % itemsize for s in a.strides):
        return None
    return tuple(s // itemsize for s in a.strides)


def layout_buffer(shape: tuple[int, ...], *strides: tuple[int, ...]) -> Any:
    """A device int64 array [ndim, shape..., strides of each operand...] (the kernels' `layout`)."""
    values = np.array([len(shape), *shape, *(s for st in strides for s in st)], np.int64)
    buffer = mem_alloc(values.nbytes)
    memcpy_htod(buffer, values)
    return buffer


def reduction_block() -> int:
    """Threads per block of a reduction launch (kernels/reduce.cu's tree assumes a power of two
    up to PYGPU_REDUCE_BLOCK): the same on every backend, the host running a block's threads as
    fibers with real barriers."""
    return BLOCK
