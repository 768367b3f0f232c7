"""``pygpu.nccl`` on the cuda backend: the calls into libnccl (``_nccl_library``) for one
communicator, given buffers already checked by ``pygpu.nccl``."""

from __future__ import annotations

import contextlib
import ctypes
import time
from typing import Any

import numpy as np

from pygpu._nccl_library import NcclError, UniqueIdStruct, library
from pygpu._pygpu import cudaStreamQuery

__all__ = ["NcclEngine", "check", "group_end", "group_start", "unique_id", "version"]

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


def group_start() -> None:
    check(library().ncclGroupStart())


def group_end() -> None:
    check(library().ncclGroupEnd())


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
    """One communicator handle and the NCCL calls on it. Buffers: ``pygpu.nccl._Buffer``."""

    def __init__(self, handle: int) -> None:
        self.handle: int | None = handle

    @classmethod
    def init_rank(cls, nranks: int, uid: bytes, rank: int) -> NcclEngine:
        struct = UniqueIdStruct.from_buffer_copy(bytes(uid))
        handle = ctypes.c_void_p()
        check(library().ncclCommInitRank(ctypes.byref(handle), nranks, struct, rank))
        return cls(handle.value or 0)

    @classmethod
    def init_all(cls, ordinals: list[int]) -> list[NcclEngine]:
        handles = (ctypes.c_void_p * len(ordinals))()
        devlist = (ctypes.c_int * len(ordinals))(*ordinals)
        check(library().ncclCommInitAll(handles, len(ordinals), devlist))
        return [cls(h or 0) for h in handles]

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

    def close(self) -> None:
        check(library().ncclCommDestroy(self.handle))

    def abort(self) -> None:
        check(library().ncclCommAbort(self.handle))

    def release(self) -> None:
        """For a destructor: destroys the communicator, never raising."""
        with contextlib.suppress(Exception):
            library().ncclCommDestroy(self.handle)

    def wait(self, stream: Any, timeout: float) -> bool:
        """Polls ``stream`` and the communicator's asynchronous error until the stream is done
        (True), an error (raised) or ``timeout`` seconds (False)."""
        deadline = time.monotonic() + timeout
        pause = 0.0
        while True:
            status = cudaStreamQuery(stream)
            if status == 0:
                return True
            if status != 600:  # cudaErrorNotReady
                status.check()
            error = self._query(library().ncclCommGetAsyncError)
            if error not in (0, _IN_PROGRESS):
                check(error, self.handle)
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(0.001, pause + 0.0001)

    # ------------------------------------------------------------------ calls

    def all_reduce(self, send: Any, recv: Any, op: str, stream: int) -> None:
        count, dtype = _typed(send, op)
        check(library().ncclAllReduce(send.ptr, recv.ptr, count, dtype, _OPS[op], self.handle, stream), self.handle)

    def broadcast(self, send: Any, recv: Any, root: int, stream: int) -> None:
        count, dtype = _typed(recv, None)
        check(library().ncclBroadcast(send.ptr, recv.ptr, count, dtype, root, self.handle, stream), self.handle)

    def reduce(self, send: Any, recv: Any, op: str, root: int, stream: int) -> None:
        count, dtype = _typed(send, op)
        args = (send.ptr, recv.ptr, count, dtype, _OPS[op], root, self.handle, stream)
        check(library().ncclReduce(*args), self.handle)

    def all_gather(self, send: Any, recv: Any, stream: int) -> None:
        count, dtype = _typed(send, None)
        check(library().ncclAllGather(send.ptr, recv.ptr, count, dtype, self.handle, stream), self.handle)

    def reduce_scatter(self, send: Any, recv: Any, op: str, stream: int) -> None:
        count, dtype = _typed(recv, op)
        args = (send.ptr, recv.ptr, count, dtype, _OPS[op], self.handle, stream)
        check(library().ncclReduceScatter(*args), self.handle)

    def send(self, buf: Any, peer: int, stream: int) -> None:
        count, dtype = _typed(buf, None)
        check(library().ncclSend(buf.ptr, count, dtype, peer, self.handle, stream), self.handle)

    def recv(self, buf: Any, peer: int, stream: int) -> None:
        count, dtype = _typed(buf, None)
        check(library().ncclRecv(buf.ptr, count, dtype, peer, self.handle, stream), self.handle)
