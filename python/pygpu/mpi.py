"""GPUArrays in mpi4py's calls, straight when the MPI can read device memory and staged through
page-locked host memory when it cannot::

    from mpi4py import MPI
    from pygpu import mpi

    with mpi.buffer(x) as buf:                       # MPI reads x
        MPI.COMM_WORLD.Send(buf, dest=1)
    with mpi.buffer(y, read=False, write=True) as buf:   # MPI writes y
        MPI.COMM_WORLD.Recv(buf, source=0)
    with mpi.buffer(z, write=True) as buf:           # both
        MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, buf)

``buffer`` gives mpi4py:

- on the host backend, a numpy view of the array's memory (device memory is host memory: no copy);
- on cuda with a CUDA-aware MPI (``cuda_aware()``), the GPUArray itself, which mpi4py reads
  through ``__cuda_array_interface__``;
- otherwise a page-locked host copy (from a pool, so repeated calls do not pin memory again):
  filled from the device on entry when ``read``, copied back to the device on exit when
  ``write`` (not when the block raised).

MPI knows nothing of streams: on entry the array's pending writes are waited for, and a staged
write-back is finished before the ``with`` block's end returns. ``PYGPU_MPI_CUDA_AWARE=0|1``
overrides what the MPI library says about itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from pygpu._pygpu import PageLockedMemoryPool, capabilities
from pygpu.gpuarray import GPUArray

__all__ = ["buffer", "cuda_aware"]

_staging_pool: list[PageLockedMemoryPool] = []


def cuda_aware() -> bool:
    """Whether the MPI that mpi4py loaded reads and writes CUDA device memory itself
    (``MPIX_Query_cuda_support()``, an extension of Open MPI and MPICH; False where the library
    lacks it). ``PYGPU_MPI_CUDA_AWARE=0|1`` overrides it."""
    forced = os.environ.get("PYGPU_MPI_CUDA_AWARE")
    if forced is not None:
        if forced not in ("0", "1"):
            raise ValueError(f"PYGPU_MPI_CUDA_AWARE is 0 or 1, not {forced!r}")
        return forced == "1"
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(f"pygpu.mpi needs mpi4py (pip install mpi4py, with an MPI): {e}") from None
    # The symbol is looked up through mpi4py's extension module, whose dependencies include the
    # MPI library (dlsym searches them), whether that library was loaded globally or not.
    try:
        query = ctypes.CDLL(MPI.__file__).MPIX_Query_cuda_support
    except (AttributeError, OSError):
        return False
    query.restype = ctypes.c_int
    query.argtypes = []
    return bool(query())


def _pool() -> PageLockedMemoryPool:
    if not _staging_pool:
        _staging_pool.append(PageLockedMemoryPool())
    return _staging_pool[0]


@contextlib.contextmanager
def buffer(array: GPUArray, *, read: bool = True, write: bool = False, staged: bool | None = None) -> Iterator[Any]:
    """What to pass to mpi4py for ``array`` (a contiguous GPUArray): see the module's text.
    ``read``: MPI reads the array (sends, reductions' inputs); ``write``: MPI writes it
    (receives, results). ``staged``: force (True) or forbid (False) the page-locked copy; None
    chooses: no copy where device memory is host memory or MPI is ``cuda_aware()``."""
    if not isinstance(array, GPUArray):
        raise TypeError(f"pygpu.mpi.buffer takes a GPUArray, not {type(array).__name__}")
    if not (read or write):
        raise ValueError("buffer(read=False, write=False): say whether MPI reads the array, writes it, or both")
    flags = array.flags
    if not (flags.c_contiguous or flags.f_contiguous):
        raise ValueError(f"MPI needs contiguous memory; this array has strides {array.strides}: pass array.copy()")
    host_memory = capabilities().host_memory
    if staged is None:
        staged = not host_memory and not cuda_aware()
    array._order.before(None)  # MPI acts now, outside any stream
    if not staged:
        yield np.asarray(array) if host_memory else array
        return
    order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    host = _pool().allocate(array.shape, array.dtype, order=order)
    if read:
        array.get(host)
    yield host
    if write:
        array.set(host)
