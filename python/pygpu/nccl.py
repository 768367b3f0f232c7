"""NCCL collectives on device arrays: a thin layer over libnccl loaded at run time
(``pygpu._collectives.nccl_library``: the nvidia-nccl-cu13/-cu12 wheels or the system's; a clear
``NcclUnavailableError`` when absent), and the same API over MPI on the host backend.

A communicator joins ``nranks`` ranks, each on one device, from a unique id that rank 0
makes with ``get_unique_id()`` and shares (through mpi4py's ``bcast``, a pipe, ...)::

    uid = comm_world.bcast(nccl.get_unique_id() if rank == 0 else None)
    with pygpu.Device(local_rank):
        comm = nccl.Communicator(nranks, uid, rank)
        comm.all_reduce(x, x)            # in place, sum

Buffers are GPUArrays, or anything with ``__cuda_array_interface__`` or ``__dlpack__`` (CuPy,
PyTorch, ...), contiguous, on the communicator's device. On cuda, calls are queued on ``stream``
(a pygpu stream of that device; None: the legacy default stream) and return at once, as NCCL's
do; pygpu's stream ordering of GPUArrays is kept. Several communicators driven from one
thread (one process, several devices) need their calls inside ``with nccl.group():``.
``Communicator.synchronize(stream, timeout)`` waits for a stream's collectives and aborts the
communicator instead of hanging when another rank never takes part.

On the host backend (``pygpu._collectives.nccl_mpi``) the processes are the ranks of an MPI job (mpi4py; every
process of ``MPI.COMM_WORLD`` creates its communicator at the same time), the calls complete
before they return (or at the end of their group), ranks that make different calls get a
``ValueError``, and a call that waits longer than the communicator's ``timeout`` raises
``NcclError``. ``init_all`` (one process driving several devices) is cuda only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from pygpu._pygpu import capabilities, get_device
from pygpu._collectives import nccl_cuda
from pygpu._collectives import nccl_mpi
from pygpu._driver.contexts import Device
from pygpu._driver.devices import current_device
from pygpu._pygpu import stream_synchronize
from pygpu._collectives.nccl_library import UNIQUE_ID_BYTES
from pygpu.errors import NcclError, NcclUnavailableError
from pygpu.gpuarray import GPUArray, from_dlpack

__all__ = [
    "Communicator",
    "NcclError",
    "NcclUnavailableError",
    "get_unique_id",
    "get_version",
    "group",
    "group_end",
    "group_start",
    "init_all",
]

_OPS = ("sum", "prod", "max", "min", "avg")


#: Seconds a communicator waits for the other ranks before giving up (``PYGPU_NCCL_TIMEOUT``).
def _timeout_from_environment() -> float:
    value = os.environ.get("PYGPU_NCCL_TIMEOUT", "").strip()
    if not value:
        return 600.0
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0:
        raise ValueError(f"PYGPU_NCCL_TIMEOUT={value!r}: it must be a positive number of seconds (unset it for 600)")
    return seconds


DEFAULT_TIMEOUT = _timeout_from_environment()
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


def _over_mpi() -> bool:
    """True where the collectives run over MPI (the host backend), False over NCCL (cuda); an
    error on the backends with neither."""
    caps = capabilities()
    if caps.collectives is None:
        raise NcclUnavailableError(
            f"pygpu.nccl runs on the cuda backend (NCCL) and the host backend (MPI), not {caps.backend}"
        )
    return caps.collectives == "mpi"


def get_version() -> int:
    """NCCL's version code, e.g. 22809 for 2.28.9 (needs libnccl, on any backend)."""
    return nccl_cuda.version()


def get_unique_id() -> bytes:
    """A new communicator id (128 bytes) for rank 0 to share with the other ranks."""
    return nccl_mpi.unique_id(UNIQUE_ID_BYTES) if _over_mpi() else nccl_cuda.unique_id()


def group_start() -> None:
    """Starts a group of collectives (ncclGroupStart): they are issued together at ``group_end()``;
    ``with nccl.group():`` pairs the two."""
    (nccl_mpi.group_start if _over_mpi() else nccl_cuda.group_start)()


def group_end() -> None:
    """Ends a group started by ``group_start()`` and issues its collectives (ncclGroupEnd)."""
    (nccl_mpi.group_end if _over_mpi() else nccl_cuda.group_end)()


@contextlib.contextmanager
def group() -> Iterator[None]:
    """``group_start()`` ... ``group_end()``: the calls inside are issued together (needed to
    drive several communicators from one thread, and for send/recv pairs)."""
    group_start()
    try:
        yield
    finally:
        group_end()


def init_all(devices: Sequence[int | Device]) -> list[Communicator]:
    """One communicator per device of this process, ranks in the order given (ncclCommInitAll;
    cuda only: on the host backend, ranks are MPI processes)."""
    if _over_mpi():
        raise NcclUnavailableError(
            "nccl.init_all drives several devices from one process, which needs the cuda backend's NCCL; "
            "on the host backend, start one MPI process per rank (mpiexec -n N) and use Communicator"
        )
    ordinals = [d.ordinal if isinstance(d, Device) else int(d) for d in devices]
    for d in ordinals:
        Device(d)
    engines = nccl_cuda.NcclEngine.init_all(ordinals, DEFAULT_TIMEOUT)
    return [Communicator._wrap(e, d) for e, d in zip(engines, ordinals)]


class _Buffer:
    """A contiguous device buffer: address, elements, dtype, device, and the GPUArray if any."""

    __slots__ = ("array", "count", "device", "dtype", "ptr")
    array: GPUArray | None
    ptr: int
    count: int
    dtype: np.dtype[Any]
    device: int | None  # None where the interface does not say (CAI)

    def __init__(self, obj: Any, what: str) -> None:
        if not isinstance(obj, GPUArray) and not hasattr(obj, "__cuda_array_interface__"):
            if not hasattr(obj, "__dlpack__"):
                raise TypeError(
                    f"{what} must be a GPUArray or have __cuda_array_interface__ or __dlpack__, "
                    f"not {type(obj).__name__}"
                )
            obj = from_dlpack(obj)
        if isinstance(obj, GPUArray):
            if not obj.flags.c_contiguous and not obj.flags.f_contiguous:
                raise ValueError(f"{what} must be contiguous (strides {obj.strides}): make a copy first")
            self.array = obj
            self.ptr, self.count, self.dtype, self.device = obj.ptr, obj.size, obj.dtype, obj.device
            return
        cai = obj.__cuda_array_interface__
        shape = tuple(cai["shape"])
        dtype = np.dtype(cai["typestr"])
        strides = cai.get("strides")
        count = int(np.prod(shape, dtype=np.int64))
        if strides is not None and count > 1:
            expected = []
            step = dtype.itemsize
            for extent in reversed(shape):
                expected.append(step)
                step *= extent
            if tuple(s for s, e in zip(strides, shape) if e > 1) != tuple(
                s for s, e in zip(reversed(expected), shape) if e > 1
            ):
                raise ValueError(f"{what} must be C-contiguous (strides {strides}): make a copy first")
        self.array = None
        self.ptr, self.count, self.dtype, self.device = int(cai["data"][0]), count, dtype, None

    def host_view(self) -> np.ndarray[Any, Any]:
        """The buffer as a flat numpy array over its memory (host backend: device memory is
        host memory, and its streams have run their work by the time it is enqueued)."""
        assert self.array is not None  # the host backend has no CUDA Array Interface
        return np.asarray(self.array).reshape(-1, order="A")


def _reducible(dtype: np.dtype[Any], op: str, what: str) -> None:
    if op not in _OPS:
        raise ValueError(f"op must be one of {', '.join(_OPS)}, not {op!r}")
    if dtype in _COMPLEX:
        if op not in ("sum", "avg"):
            raise TypeError(f"{what}: {op} of complex numbers is not defined; sum and avg are")
    elif dtype not in nccl_cuda.DTYPES:
        names = ", ".join(str(d) for d in nccl_cuda.DTYPES)
        raise TypeError(f"{what}: NCCL reduces {names} (and complex sums), not {dtype}")


def _same(big: _Buffer, small: _Buffer, times: int, what: str) -> None:
    if big.dtype != small.dtype or big.count != small.count * times:
        raise ValueError(
            f"{what} ({big.count} and {small.count} elements of {big.dtype} and {small.dtype}): buffers of "
            "mismatched sizes would make NCCL read or write past them"
        )


class Communicator:
    """Rank ``rank`` of ``nranks`` on the current device (or ``device``), from ``uid``
    (``get_unique_id()`` of rank 0). Blocks until every rank has joined. ``close()`` (or
    garbage collection) destroys it; ``abort()`` ends it without waiting for the others.
    ``timeout`` (seconds; default ``PYGPU_NCCL_TIMEOUT`` or 600) bounds every wait for the other
    ranks: joining, each call (on cuda, the part NCCL does before queueing it), ``synchronize()``;
    past it the communicator is aborted and ``NcclError`` raised.

    ``blocking=True`` (cuda) makes NCCL's usual blocking communicator: each call costs about 70 µs
    less (a grouped send/recv 30 against 100 µs between two H100s, MPI ranks bound to a core
    each), but joining and a call that makes the first connection to a peer wait for the other
    ranks without a deadline; ``synchronize()`` keeps its timeout. For step loops whose ranks
    are known to be alive (a rank that dies ends the MPI job)."""

    def __init__(
        self,
        nranks: int,
        uid: bytes,
        rank: int,
        device: int | Device | None = None,
        *,
        timeout: float | None = None,
        blocking: bool = False,
    ) -> None:
        on_host = _over_mpi()
        if not isinstance(uid, (bytes, bytearray)) or len(uid) != UNIQUE_ID_BYTES:
            raise ValueError(f"uid is the {UNIQUE_ID_BYTES} bytes of get_unique_id(), not {uid!r:.40}")
        if not 0 <= rank < nranks:
            raise ValueError(f"rank {rank} is not one of the {nranks} ranks")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout is a number of seconds > 0, not {timeout!r}")
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        ordinal = get_device() if device is None else Device(int(device)).ordinal
        engine: Any
        with Device(ordinal):
            if on_host:
                engine = nccl_mpi.MpiEngine(nranks, bytes(uid), rank, self.timeout)
            else:
                engine = nccl_cuda.NcclEngine.init_rank(nranks, bytes(uid), rank, self.timeout, blocking)
        self._engine: Any = engine
        self._size: int | None = None
        self.device = ordinal

    @classmethod
    def _wrap(cls, engine: Any, device: int) -> Communicator:
        comm: Communicator = cls.__new__(cls)
        comm._engine, comm.device, comm.timeout, comm._size = engine, device, DEFAULT_TIMEOUT, None
        return comm

    def _live(self) -> Any:
        if self._engine is None:
            raise ValueError("this Communicator was closed and can no longer be used")
        if getattr(self._engine, "ended", False):
            raise ValueError("this Communicator was aborted after an NCCL error or timeout: make a new one")
        return self._engine

    @property
    def rank(self) -> int:
        """This communicator's rank, from 0 to ``nranks - 1``; raises ValueError once closed."""
        return int(self._live().rank)

    @property
    def nranks(self) -> int:
        """The number of ranks in the communicator; raises ValueError once closed."""
        engine = self._live()
        if self._size is None:  # asked once: every send and recv checks its peer against it
            self._size = int(engine.nranks)
        return self._size

    def close(self) -> None:
        """Destroys the communicator (after its queued work); idempotent."""
        engine, self._engine = getattr(self, "_engine", None), None
        if engine is not None and not getattr(engine, "ended", False):
            engine.close()

    def abort(self) -> None:
        """Ends the communicator at once, abandoning its queued work (after a rank died)."""
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.abort()

    def __del__(self) -> None:
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.release()  # never raises

    def __repr__(self) -> str:
        state = " (closed)" if self._engine is None else ""
        return f"<pygpu.nccl.Communicator on device {self.device}{state}>"

    def synchronize(self, stream: Any = None, timeout: float | None = None) -> None:
        """Waits until the work queued on ``stream`` (None: the legacy default stream) is done.
        Past ``timeout`` seconds (default: the communicator's), or when NCCL reports an error,
        aborts the communicator and raises ``NcclError``: a rank that died or made another call
        cannot make this one hang."""
        seconds = self.timeout if timeout is None else float(timeout)
        try:
            finished = self._live().wait(stream, seconds)
        except NcclError:
            self.abort()  # NCCL's way out of an asynchronous error
            raise
        if not finished:
            self.abort()  # ends the communicator's kernels, so the stream drains
            raise nccl_cuda.timed_out("the collectives on this stream", seconds)

    # ------------------------------------------------------------------ calls

    def _issue(self, call: str, stream: Any, reads: Sequence[_Buffer], writes: Sequence[_Buffer], *args: Any) -> None:
        """Checks the buffers' device, orders the call after their pending writes, makes the
        engine's ``call(*args, stream handle)`` on the communicator's device and records its
        writes. Every step loop's exchange comes through here: it switches devices only when
        another one is current."""
        engine = self._live()
        for b in (*reads, *writes):
            if b.device is not None and b.device != self.device:
                raise ValueError(
                    f"a buffer is on device {b.device}, but this communicator runs on device {self.device}"
                )
        handle = self._stream(stream)
        host = isinstance(engine, nccl_mpi.MpiEngine)
        if host:
            if stream is not None:
                stream_synchronize(stream)  # MPI acts now, after what the stream was asked to do
        else:
            for b in (*reads, *writes):
                if b.array is not None:
                    b.array._order.before(stream)
        if current_device() == self.device:
            getattr(engine, call)(*args, handle)
        else:
            with Device(self.device):
                getattr(engine, call)(*args, handle)
        if not host:
            for b in writes:
                if b.array is not None:
                    b.array._order.wrote(stream)

    def _stream(self, stream: Any) -> int:
        if stream is None:
            return 0
        if getattr(stream, "device", self.device) != self.device:
            raise ValueError(f"the stream is of device {stream.device}, the communicator's device is {self.device}")
        return int(stream.handle) if hasattr(stream, "handle") else int(stream)

    def all_reduce(self, sendbuf: Any, recvbuf: Any, op: str = "sum", stream: Any = None) -> None:
        """recvbuf = op over the ranks of sendbuf (the same size everywhere; may be one buffer)."""
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _reducible(send.dtype, op, "all_reduce")
        _same(send, recv, 1, "all_reduce: recvbuf must match sendbuf")
        self._issue("all_reduce", stream, [send], [recv], send, recv, op)

    def broadcast(self, sendbuf: Any, recvbuf: Any, root: int = 0, stream: Any = None) -> None:
        """recvbuf = root's sendbuf on every rank (sendbuf matters only on root)."""
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _same(send, recv, 1, "broadcast: recvbuf must match sendbuf")
        self._issue("broadcast", stream, [send], [recv], send, recv, self._root(root))

    def reduce(self, sendbuf: Any, recvbuf: Any, op: str = "sum", root: int = 0, stream: Any = None) -> None:
        """recvbuf on root = op over the ranks of sendbuf."""
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _reducible(send.dtype, op, "reduce")
        _same(send, recv, 1, "reduce: recvbuf must match sendbuf")
        self._issue("reduce", stream, [send], [recv], send, recv, op, self._root(root))

    def all_gather(self, sendbuf: Any, recvbuf: Any, stream: Any = None) -> None:
        """recvbuf = every rank's sendbuf, in rank order (recvbuf holds nranks times sendbuf)."""
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _same(recv, send, self.nranks, "all_gather: recvbuf must hold nranks times sendbuf")
        self._issue("all_gather", stream, [send], [recv], send, recv)

    def reduce_scatter(self, sendbuf: Any, recvbuf: Any, op: str = "sum", stream: Any = None) -> None:
        """recvbuf = this rank's block of op over the ranks of sendbuf (nranks blocks of recvbuf's size)."""
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _reducible(recv.dtype, op, "reduce_scatter")
        _same(send, recv, self.nranks, "reduce_scatter: sendbuf must hold nranks times recvbuf")
        self._issue("reduce_scatter", stream, [send], [recv], send, recv, op)

    def send(self, buf: Any, peer: int, stream: Any = None) -> None:
        """Sends buf to rank ``peer``, which receives it with recv (pair them inside group())."""
        b = _Buffer(buf, "buf")
        self._issue("send", stream, [b], [], b, self._peer(peer))

    def recv(self, buf: Any, peer: int, stream: Any = None) -> None:
        """Receives into buf what rank ``peer`` sends."""
        b = _Buffer(buf, "buf")
        self._issue("recv", stream, [], [b], b, self._peer(peer))

    def _root(self, root: int) -> int:
        if not 0 <= root < self.nranks:
            raise ValueError(f"root must be a rank of 0..{self.nranks - 1}, not {root}")
        return root

    def _peer(self, peer: int) -> int:
        if not 0 <= peer < self.nranks:
            raise ValueError(f"peer must be a rank of 0..{self.nranks - 1}, not {peer}")
        return peer
