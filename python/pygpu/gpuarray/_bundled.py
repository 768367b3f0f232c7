"""Launching pygpu's bundled kernels (kernels/*.cu) on GPUArray operands: the one place that
loads the bundled modules and looks their functions up, launch sizes, stream ordering, and
keeping temporaries alive until the device is done.

Used by the reductions, curandom, the non-elementwise gpuarray functions and the elementwise
launcher (gpuarray/_elementwise.py, which packs its own argument struct); nothing here is public.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any

import numpy as np

from pygpu._toolchain import kernel_parts
from pygpu._toolchain.bundled_kernels import load_kernels
from pygpu._driver.devices import check_devices, current_device
from pygpu._pygpu import (
    Function,
    Module,
    capabilities,
    cudaDeviceProp,
    cudaEvent_t,
    event_query,
    event_record,
    mem_alloc,
    memcpy_dtoh,
    memcpy_htod,
    pool_alloc,
)
from pygpu.gpuarray._storage import ArrayFields


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

# (event, objects, device): temporaries and operands of launches that may still be running.
_in_flight: collections.deque[tuple[cudaEvent_t, tuple[Any, ...], int]] = collections.deque()
# Events of finished holds, per device, for the next holds to record again (at most this many).
_spare_events: dict[int, list[cudaEvent_t]] = {}
_SPARE_EVENTS = 64
# Every launching thread shares the two above: one at a time (between a thread's look at the
# oldest hold and its pop, another could pop it, and the pop take a hold still running).
_holds_lock = threading.Lock()

# index dtype -> the kernels' index_kind code
INDEX_KINDS = {np.dtype(np.int32): 0, np.dtype(np.uint32): 1, np.dtype(np.int64): 2, np.dtype(np.uint64): 3}


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NONE_BAD = np.iinfo(np.uint64).max


def check_indices(indices: ArrayFields, lo: int, hi: int, stream: Any, what: str, size: int, offset: int = 0) -> None:
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
        module_name = kernel_parts.module_name(source, name)
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
    device = current_device()
    released = []  # dropped after the lock: their finalizers run outside it
    with _holds_lock:
        while _in_flight and event_query(_in_flight[0][0]):
            done, kept, its_device = _in_flight.popleft()
            released.append(kept)
            finished = _spare_events.setdefault(its_device, [])
            if len(finished) < _SPARE_EVENTS:
                finished.append(done)
        spare = _spare_events.get(device)
        # An event of the device's context, reused once done: creating one costs a driver call.
        event = spare.pop() if spare else cudaEvent_t(2)
        event_record(event, stream)
        _in_flight.append((event, objects, device))


def read_on(stream: Any, *arrays: ArrayFields) -> None:
    """Orders work about to be issued on ``stream`` after the pending writes of ``arrays``
    (which must be on the current device)."""
    check_devices(arrays)
    for a in arrays:
        a._order.before(stream)


def written_on(stream: Any, *arrays: ArrayFields) -> None:
    """Records that ``arrays`` were last written by work on ``stream``."""
    for a in arrays:
        a._order.wrote(stream)


def element_strides(a: ArrayFields) -> tuple[int, ...] | None:
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


# Up to this many terms one block folds a reduction alone (on a GPU its threads striding over
# several terms each), as PyCUDA's reductions do up to 2,048: no blocks' values to fold after.
_ONE_BLOCK_TERMS = 2048
# Terms per block of a reduction on the host: below this, handing blocks to another core costs
# more than it saves (measured in bench/array_bench.py --host).
_HOST_BLOCK_TERMS = 1 << 16
# Blocks per multiprocessor of a reduction past one block on a GPU: four of BLOCK threads keep
# enough loads in flight for full bandwidth, and fewer blocks mean fewer values for the last one
# to fold (bench/reduce_grid.py, H200: at 2^24 and 2^26 elements, float32 and float64 sum and
# max 2-7 % faster than at 1,024 blocks; three per multiprocessor within 1 %, six slower).
_REDUCTION_BLOCKS_PER_MULTIPROCESSOR = 4
# device -> (threads per block, most blocks) of its reductions past one block: (1, a few per
# core) on the host, (BLOCK, a few per multiprocessor) on a GPU; asked once per device.
_reduction_shape: dict[int, tuple[int, int]] = {}


def host_launch_shape() -> tuple[int, int]:
    """(1, most blocks) of the host backend's launches of bundled kernels: blocks of one thread
    (a block's threads would run one after another on one core), a few blocks per core of the
    host backend's pool (a thread per core, at most 8: src/runtime/host/module.rs) for balance."""
    return 1, 4 * min(len(os.sched_getaffinity(0)), 8)


def reduction_launch(n: int) -> tuple[int, int]:
    """(grid, block) of a reduction over ``n`` terms on the current device (kernels/reduce.cu;
    one block up to _ONE_BLOCK_TERMS on every backend, as PyCUDA's). On a GPU, blocks of BLOCK
    threads (the tree in shared memory needs a power of two up to PYGPU_REDUCE_BLOCK), at most
    _REDUCTION_BLOCKS_PER_MULTIPROCESSOR per multiprocessor and MAX_GRID in all (the one-pass
    scratch's room). On the host, ``host_launch_shape``'s blocks, each folding one contiguous run."""
    device = current_device()
    shape = _reduction_shape.get(device)
    if shape is None:
        if capabilities().kernels_on_cpu:
            shape = host_launch_shape()
        else:
            multiprocessors = cudaDeviceProp(device).multiProcessorCount
            shape = BLOCK, max(1, min(MAX_GRID, _REDUCTION_BLOCKS_PER_MULTIPROCESSOR * multiprocessors))
        shape = _reduction_shape.setdefault(device, shape)
    block, most = shape
    if n <= _ONE_BLOCK_TERMS:
        return 1, block
    if block == BLOCK:
        return min(most, grid_for(n)), BLOCK
    return max(2, min(most, n // _HOST_BLOCK_TERMS)), block
