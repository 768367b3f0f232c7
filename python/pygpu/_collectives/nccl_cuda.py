"""``pygpu.nccl`` on the cuda backend: the calls into libnccl (``nccl_library``) for one
communicator, given buffers already checked by ``pygpu.nccl``."""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pygpu._collectives.nccl_library import ConfigStruct, UniqueIdStruct, library
from pygpu._pygpu import stream_query
from pygpu.errors import NcclError

__all__ = ["NcclEngine", "check", "group_end", "group_start", "timed_out", "unique_id", "version"]

# ncclDataType_t and ncclRedOp_t.
DTYPES = {
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
_IN_PROGRESS = 7  # ncclInProgress


def check(code: int, comm: Any = None) -> None:
    if code == 0:
        return
    lib = library()
    text = (lib.ncclGetErrorString(code) or b"").decode(errors="replace")
    detail = ""
    if hasattr(lib, "ncclGetLastError"):
        detail = (lib.ncclGetLastError(comm) or b"").decode(errors="replace")
    raise NcclError(code, f"NCCL error {code}: {text}" + (f" ({detail})" if detail else ""))


def version() -> int:
    value = ctypes.c_int()
    check(library().ncclGetVersion(ctypes.byref(value)))
    return value.value


def unique_id() -> bytes:
    uid = UniqueIdStruct()
    check(library().ncclGetUniqueId(ctypes.byref(uid)))
    return bytes(uid)  # all 128 bytes (the char array field would stop at the first NUL)


# The communicators called inside this thread's open ncclGroupStart (NCCL's groups are per
# thread): a non-blocking group's end is waited for on each of them.
_groups = threading.local()


def group_start() -> None:
    check(library().ncclGroupStart())
    _groups.depth = getattr(_groups, "depth", 0) + 1
    if _groups.depth == 1:
        _groups.members = []


def group_end() -> None:
    code = library().ncclGroupEnd()
    _groups.depth = max(0, getattr(_groups, "depth", 0) - 1)
    members: list[NcclEngine] = getattr(_groups, "members", []) if _groups.depth == 0 else []
    if code != _IN_PROGRESS:
        check(code)
    for engine in members:
        engine.settle(code, "the group of calls")


def timed_out(what: str, seconds: float) -> NcclError:
    """The error for a wait on the other ranks that passed its deadline (after the abort)."""
    return NcclError(
        6,  # ncclRemoteError
        f"NCCL: {what} did not finish within {seconds:g} s (a rank that died, never joined or called "
        "something else); the communicator was aborted",
    )


def _poll(ready: Callable[[], bool], timeout: float) -> bool:
    """Calls ``ready`` until it returns True (True) or ``timeout`` seconds have passed (False).
    Between tries it yields the processor for the first millisecond, then sleeps up to 1 ms: an
    MPI rank is often bound to one core, which NCCL's own threads need to finish the work (a
    busy loop made a grouped send/recv take 3.9 ms instead of 0.1 on an H100 host)."""
    start = time.monotonic()
    pause = 0.0
    while not ready():
        waited = time.monotonic() - start
        if waited > timeout:
            return False
        time.sleep(pause)
        if waited > 0.001:
            pause = min(0.001, pause + 0.0001)
    return True


def _typed(buffer: Any, op: str | None) -> tuple[int, int]:
    """(count, ncclDataType_t) for a reduction ``op`` (complex as pairs of reals), or for moving
    bytes when ``op`` is None."""
    if op is None:
        if buffer.dtype in DTYPES:
            return buffer.count, DTYPES[buffer.dtype]
        return buffer.count * buffer.dtype.itemsize, _UINT8
    part = _COMPLEX_PARTS.get(buffer.dtype)
    if part is not None:
        return buffer.count * 2, DTYPES[part]
    return buffer.count, DTYPES[buffer.dtype]


class NcclEngine:
    """One communicator handle and the NCCL calls on it. Buffers: ``pygpu.nccl._Buffer``.

    A non-blocking communicator (``init_rank(..., blocking=False)``, NCCL >= 2.14) returns
    ncclInProgress from a call that has to wait for other ranks (joining, the first connection to
    a peer, every group's end), and ``settle`` waits for it up to ``timeout`` seconds, then
    aborts the communicator: a rank that never comes is an error, not a hang."""

    def __init__(self, handle: int, timeout: float) -> None:
        self.handle = handle
        self.timeout = timeout
        #: Destroyed or aborted: the handle must not be passed to NCCL again.
        self.ended = False

    @classmethod
    def init_rank(cls, nranks: int, uid: bytes, rank: int, timeout: float, blocking: bool) -> NcclEngine:
        lib = library()
        struct = UniqueIdStruct.from_buffer_copy(bytes(uid))
        handle = ctypes.c_void_p()
        if not blocking and hasattr(lib, "ncclCommInitRankConfig"):
            config = ConfigStruct.non_blocking()
            code = lib.ncclCommInitRankConfig(ctypes.byref(handle), nranks, struct, rank, ctypes.byref(config))
        else:
            code = lib.ncclCommInitRank(ctypes.byref(handle), nranks, struct, rank)
        engine = cls(handle.value or 0, timeout)
        if not engine.handle:
            engine.ended = True
            check(code)
        engine.settle(code, f"joining the communicator of {nranks} ranks")
        return engine

    @classmethod
    def init_all(cls, ordinals: list[int], timeout: float) -> list[NcclEngine]:
        handles = (ctypes.c_void_p * len(ordinals))()
        devlist = (ctypes.c_int * len(ordinals))(*ordinals)
        check(library().ncclCommInitAll(handles, len(ordinals), devlist))
        return [cls(h or 0, timeout) for h in handles]

    def _query(self, fn: Any) -> int:
        value = ctypes.c_int()
        check(fn(self.handle, ctypes.byref(value)), self.handle)
        return value.value

    @property
    def rank(self) -> int:
        return self._query(library().ncclCommUserRank)

    @property
    def nranks(self) -> int:
        return self._query(library().ncclCommCount)

    def settle(self, code: int, what: str) -> None:
        """Raises for a failed call; for ncclInProgress, waits until NCCL has finished ``what``.
        An asynchronous error or the timeout aborts the communicator before raising."""
        if code == _IN_PROGRESS:
            state = [code]

            def settled() -> bool:
                state[0] = self._query(library().ncclCommGetAsyncError)
                return state[0] != _IN_PROGRESS

            if not _poll(settled, self.timeout):
                self.abort()
                raise timed_out(what, self.timeout)
            code = state[0]
            if code != 0:
                with contextlib.suppress(NcclError):
                    self.abort()
        check(code, self.handle)

    def _call(self, code: int, what: str) -> None:
        if getattr(_groups, "depth", 0):
            if self not in _groups.members:
                _groups.members.append(self)
        self.settle(code, what)

    def close(self) -> None:
        """Destroys the communicator once its queued work is done (``timeout`` bounds the wait)."""
        lib = library()
        if hasattr(lib, "ncclCommFinalize"):
            self.settle(lib.ncclCommFinalize(self.handle), "closing the communicator")
        self.ended = True
        check(lib.ncclCommDestroy(self.handle))

    def abort(self) -> None:
        if not self.ended:
            self.ended = True
            check(library().ncclCommAbort(self.handle))

    def release(self) -> None:
        """For a destructor: destroys the communicator, never raising."""
        if not self.ended:
            self.ended = True
            with contextlib.suppress(Exception):
                library().ncclCommDestroy(self.handle)

    def wait(self, stream: Any, timeout: float) -> bool:
        """Polls ``stream`` and the communicator's asynchronous error until the stream is done
        (True), an error (raised) or ``timeout`` seconds (False)."""

        def finished() -> bool:
            if stream_query(stream):
                return True
            error = self._query(library().ncclCommGetAsyncError)
            if error not in (0, _IN_PROGRESS):
                check(error, self.handle)
            return False

        return _poll(finished, timeout)

    # ------------------------------------------------------------------ calls

    def all_reduce(self, send: Any, recv: Any, op: str, stream: int) -> None:
        count, dtype = _typed(send, op)
        self._call(
            library().ncclAllReduce(send.ptr, recv.ptr, count, dtype, _OPS[op], self.handle, stream), "ncclAllReduce"
        )

    def broadcast(self, send: Any, recv: Any, root: int, stream: int) -> None:
        count, dtype = _typed(recv, None)
        self._call(
            library().ncclBroadcast(send.ptr, recv.ptr, count, dtype, root, self.handle, stream), "ncclBroadcast"
        )

    def reduce(self, send: Any, recv: Any, op: str, root: int, stream: int) -> None:
        count, dtype = _typed(send, op)
        args = (send.ptr, recv.ptr, count, dtype, _OPS[op], root, self.handle, stream)
        self._call(library().ncclReduce(*args), "ncclReduce")

    def all_gather(self, send: Any, recv: Any, stream: int) -> None:
        count, dtype = _typed(send, None)
        self._call(library().ncclAllGather(send.ptr, recv.ptr, count, dtype, self.handle, stream), "ncclAllGather")

    def reduce_scatter(self, send: Any, recv: Any, op: str, stream: int) -> None:
        count, dtype = _typed(recv, op)
        args = (send.ptr, recv.ptr, count, dtype, _OPS[op], self.handle, stream)
        self._call(library().ncclReduceScatter(*args), "ncclReduceScatter")

    def send(self, buf: Any, peer: int, stream: int) -> None:
        count, dtype = _typed(buf, None)
        self._call(library().ncclSend(buf.ptr, count, dtype, peer, self.handle, stream), "ncclSend")

    def recv(self, buf: Any, peer: int, stream: int) -> None:
        count, dtype = _typed(buf, None)
        self._call(library().ncclRecv(buf.ptr, count, dtype, peer, self.handle, stream), "ncclRecv")
