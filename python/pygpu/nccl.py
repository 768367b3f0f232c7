"""NCCL collectives on device arrays: a thin layer over libnccl loaded at run time
(``_nccl_library``: the nvidia-nccl-cu13/-cu12 wheels or the system's; a clear
``NcclUnavailableError`` when absent).

A communicator joins ``nranks`` ranks, each on one device, from a unique id that rank 0
makes with ``get_unique_id()`` and shares (through mpi4py's ``bcast``, a pipe, ...)::

    uid = comm_world.bcast(nccl.get_unique_id() if rank == 0 else None)
    with pygpu.Device(local_rank):
        comm = nccl.Communicator(nranks, uid, rank)
        comm.all_reduce(x, x)            # in place, sum

Buffers are GPUArrays, or anything with ``__cuda_array_interface__`` or ``__dlpack__`` (CuPy,
PyTorch, ...), contiguous, on the communicator's device. Calls are queued on ``stream`` (a
pygpu stream of that device; None: the legacy default stream) and return at once, as NCCL's
do; pygpu's stream ordering of GPUArrays is kept. Several communicators driven from one
thread (one process, several devices) need their calls inside ``with nccl.group():``.
Only the cuda backend has NCCL; the host backend's path over MPI is not implemented yet.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import pygpu
from pygpu._contexts import Device
from pygpu._nccl_library import NcclError, NcclUnavailableError, UniqueIdStruct, UNIQUE_ID_BYTES, library
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

# ncclDataType_t and ncclRedOp_t.
_DTYPES = {
    np.dtype(np.int8): 0,
    np.dtype(np.uint8): 1,
    np.dtype(np.int32): 2,
    np.dtype(np.uint32): 3,
    np.dtype(np.int64): 4,
    np.dtype(np.uint64): 5,
    np.dtype(np.float16): 6,
    np.dtype(np.float32): 7,
    np.dtype(np.float64): 8,
}
_COMPLEX_PARTS = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
_UINT8 = 1


def _check(code: int, comm: Any = None) -> None:
    if code == 0:
        return
    lib = library()
    text = (lib.ncclGetErrorString(code) or b"").decode(errors="replace")
    detail = ""
    if hasattr(lib, "ncclGetLastError"):
        detail = (lib.ncclGetLastError(comm) or b"").decode(errors="replace")
    raise NcclError(code, f"NCCL error {code}: {text}" + (f" ({detail})" if detail else ""))


def get_version() -> int:
    """NCCL's version code, e.g. 22809 for 2.28.9."""
    version = ctypes.c_int()
    _check(library().ncclGetVersion(ctypes.byref(version)))
    return version.value


def get_unique_id() -> bytes:
    """A new communicator id (128 bytes) for rank 0 to share with the other ranks."""
    uid = UniqueIdStruct()
    _check(library().ncclGetUniqueId(ctypes.byref(uid)))
    return bytes(uid)  # all 128 bytes (the char array field would stop at the first NUL)


def group_start() -> None:
    _check(library().ncclGroupStart())


def group_end() -> None:
    _check(library().ncclGroupEnd())


@contextlib.contextmanager
def group() -> Iterator[None]:
    """``group_start()`` ... ``group_end()``: the calls inside are issued together (needed to
    drive several communicators from one thread, and for send/recv pairs)."""
    group_start()
    try:
        yield
    finally:
        group_end()


def _need_cuda() -> None:
    if pygpu.backend() != "cuda":
        raise NcclUnavailableError(
            f"pygpu.nccl runs on the cuda backend; the {pygpu.backend()} backend has no NCCL "
            "(its path over MPI is not implemented yet)"
        )


def init_all(devices: Sequence[int | Device]) -> list[Communicator]:
    """One communicator per device of this process, ranks in the order given (ncclCommInitAll)."""
    _need_cuda()
    ordinals = [d.ordinal if isinstance(d, Device) else int(d) for d in devices]
    for d in ordinals:
        Device(d)
    handles = (ctypes.c_void_p * len(ordinals))()
    devlist = (ctypes.c_int * len(ordinals))(*ordinals)
    _check(library().ncclCommInitAll(handles, len(ordinals), devlist))
    return [Communicator._wrap(h, d) for h, d in zip(handles, ordinals)]


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


def _typed(buffer: _Buffer, op: str | None, what: str) -> tuple[int, int]:
    """(count, ncclDataType_t) for a reduction ``op``, or for moving bytes when ``op`` is None."""
    if op is None:
        if buffer.dtype in _DTYPES:
            return buffer.count, _DTYPES[buffer.dtype]
        return buffer.count * buffer.dtype.itemsize, _UINT8
    part = _COMPLEX_PARTS.get(buffer.dtype)
    if part is not None:
        if op not in ("sum", "avg"):
            raise TypeError(f"{what}: {op} of complex numbers is not defined; sum and avg are")
        return buffer.count * 2, _DTYPES[part]
    if buffer.dtype not in _DTYPES:
        names = ", ".join(str(d) for d in _DTYPES)
        raise TypeError(f"{what}: NCCL reduces {names} (and complex sums), not {buffer.dtype}")
    return buffer.count, _DTYPES[buffer.dtype]


def _op_code(op: str) -> int:
    try:
        return _OPS[op]
    except KeyError:
        raise ValueError(f"op must be one of {', '.join(_OPS)}, not {op!r}") from None


class Communicator:
    """Rank ``rank`` of ``nranks`` on the current device (or ``device``), from ``uid``
    (``get_unique_id()`` of rank 0). Blocks until every rank has joined. ``close()`` (or
    garbage collection) destroys it; ``abort()`` ends it without waiting for the others."""

    def __init__(self, nranks: int, uid: bytes, rank: int, device: int | Device | None = None) -> None:
        _need_cuda()
        if not isinstance(uid, (bytes, bytearray)) or len(uid) != UNIQUE_ID_BYTES:
            raise ValueError(f"uid is the {UNIQUE_ID_BYTES} bytes of get_unique_id(), not {uid!r:.40}")
        if not 0 <= rank < nranks:
            raise ValueError(f"rank {rank} is not one of the {nranks} ranks")
        ordinal = pygpu.cudaGetDevice()[0] if device is None else Device(int(device)).ordinal
        struct = UniqueIdStruct.from_buffer_copy(bytes(uid))
        handle = ctypes.c_void_p()
        with Device(ordinal):
            _check(library().ncclCommInitRank(ctypes.byref(handle), nranks, struct, rank))
        self._handle: int | None = handle.value
        self.device = ordinal

    @classmethod
    def _wrap(cls, handle: Any, device: int) -> Communicator:
        comm: Communicator = cls.__new__(cls)
        comm._handle = handle if isinstance(handle, int) else ctypes.c_void_p(handle).value
        comm.device = device
        return comm

    def _live(self) -> int:
        if self._handle is None:
            raise ValueError("this Communicator was closed and can no longer be used")
        return self._handle

    def _query(self, fn: Any) -> int:
        value = ctypes.c_int()
        _check(fn(self._live(), ctypes.byref(value)), self._handle)
        return value.value

    @property
    def rank(self) -> int:
        return self._query(library().ncclCommUserRank)

    @property
    def nranks(self) -> int:
        return self._query(library().ncclCommCount)

    def close(self) -> None:
        """Destroys the communicator (after its queued work); idempotent."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            _check(library().ncclCommDestroy(handle))

    def abort(self) -> None:
        """Ends the communicator at once, abandoning its queued work (after a rank died)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _check(library().ncclCommAbort(handle))

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            with contextlib.suppress(Exception):  # a destructor never raises
                library().ncclCommDestroy(handle)

    def __repr__(self) -> str:
        state = " (closed)" if self._handle is None else ""
        return f"<pygpu.nccl.Communicator on device {self.device}{state}>"

    # ------------------------------------------------------------------ calls

    def _stream(self, stream: Any) -> int:
        if stream is None:
            return 0
        if getattr(stream, "device", self.device) != self.device:
            raise ValueError(f"the stream is of device {stream.device}, the communicator's device is {self.device}")
        return int(stream.handle) if hasattr(stream, "handle") else int(stream)

    def _buffers(self, stream: Any, reads: Sequence[_Buffer], writes: Sequence[_Buffer]) -> int:
        self._live()
        for b in (*reads, *writes):
            if b.device is not None and b.device != self.device:
                raise ValueError(
                    f"a buffer is on device {b.device}, but this communicator runs on device {self.device}"
                )
        for b in (*reads, *writes):
            if b.array is not None:
                b.array._order.before(stream)
        return self._stream(stream)

    def _issue(self, call: Any, stream: Any, writes: Sequence[_Buffer], *args: Any) -> None:
        with Device(self.device):
            _check(call(*args), self._handle)
        for b in writes:
            if b.array is not None:
                b.array._order.wrote(stream)

    def all_reduce(self, sendbuf: Any, recvbuf: Any, op: str = "sum", stream: Any = None) -> None:
        """recvbuf = op over the ranks of sendbuf (the same size everywhere; may be one buffer)."""
        code = _op_code(op)
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        count, dtype = _typed(send, op, "all_reduce")
        _same(send, recv, 1, "all_reduce: recvbuf must match sendbuf")
        s = self._buffers(stream, [send], [recv])
        self._issue(library().ncclAllReduce, stream, [recv], send.ptr, recv.ptr, count, dtype, code, self._live(), s)

    def broadcast(self, sendbuf: Any, recvbuf: Any, root: int = 0, stream: Any = None) -> None:
        """recvbuf = root's sendbuf on every rank (sendbuf matters only on root)."""
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _same(send, recv, 1, "broadcast: recvbuf must match sendbuf")
        count, dtype = _typed(recv, None, "broadcast")
        s = self._buffers(stream, [send], [recv])
        self._issue(library().ncclBroadcast, stream, [recv], send.ptr, recv.ptr, count, dtype, root, self._live(), s)

    def reduce(self, sendbuf: Any, recvbuf: Any, op: str = "sum", root: int = 0, stream: Any = None) -> None:
        """recvbuf on root = op over the ranks of sendbuf."""
        code = _op_code(op)
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        count, dtype = _typed(send, op, "reduce")
        _same(send, recv, 1, "reduce: recvbuf must match sendbuf")
        s = self._buffers(stream, [send], [recv])
        args = (send.ptr, recv.ptr, count, dtype, code, root, self._live(), s)
        self._issue(library().ncclReduce, stream, [recv], *args)

    def all_gather(self, sendbuf: Any, recvbuf: Any, stream: Any = None) -> None:
        """recvbuf = every rank's sendbuf, in rank order (recvbuf holds nranks times sendbuf)."""
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _same(recv, send, self.nranks, "all_gather: recvbuf must hold nranks times sendbuf")
        count, dtype = _typed(send, None, "all_gather")
        s = self._buffers(stream, [send], [recv])
        self._issue(library().ncclAllGather, stream, [recv], send.ptr, recv.ptr, count, dtype, self._live(), s)

    def reduce_scatter(self, sendbuf: Any, recvbuf: Any, op: str = "sum", stream: Any = None) -> None:
        """recvbuf = this rank's block of op over the ranks of sendbuf (nranks blocks of recvbuf's size)."""
        code = _op_code(op)
        send, recv = _Buffer(sendbuf, "sendbuf"), _Buffer(recvbuf, "recvbuf")
        _same(send, recv, self.nranks, "reduce_scatter: sendbuf must hold nranks times recvbuf")
        count, dtype = _typed(recv, op, "reduce_scatter")
        s = self._buffers(stream, [send], [recv])
        args = (send.ptr, recv.ptr, count, dtype, code, self._live(), s)
        self._issue(library().ncclReduceScatter, stream, [recv], *args)

    def send(self, buf: Any, peer: int, stream: Any = None) -> None:
        """Sends buf to rank ``peer``, which receives it with recv (pair them inside group())."""
        b = _Buffer(buf, "buf")
        count, dtype = _typed(b, None, "send")
        s = self._buffers(stream, [b], [])
        self._issue(library().ncclSend, stream, [], b.ptr, count, dtype, peer, self._live(), s)

    def recv(self, buf: Any, peer: int, stream: Any = None) -> None:
        """Receives into buf what rank ``peer`` sends."""
        b = _Buffer(buf, "buf")
        count, dtype = _typed(b, None, "recv")
        s = self._buffers(stream, [], [b])
        self._issue(library().ncclRecv, stream, [b], b.ptr, count, dtype, peer, self._live(), s)


def _same(big: _Buffer, small: _Buffer, times: int, what: str) -> None:
    if big.dtype != small.dtype or big.count != small.count * times:
        raise ValueError(
            f"{what} ({big.count} and {small.count} elements of {big.dtype} and {small.dtype}): buffers of "
            "mismatched sizes would make NCCL read or write past them"
        )
