"""``pygpu.nccl`` on the host backend: the same collectives over MPI (mpi4py), so the whole
multi-process path runs, and is tested, on machines without a GPU.

Device memory of the host backend is host memory, so MPI reads and writes it in place through
numpy views. Every call is issued as a non-blocking MPI request; outside ``group()`` it is waited
for at once, inside it is waited for at ``group_end()`` (so send/recv pairs in either order do
not deadlock, as with NCCL). Waits poll with a deadline (the communicator's ``timeout``): a rank
that never takes part gives ``NcclError`` instead of a hang. Before each collective the ranks
compare what they were asked to do (kind, size, dtype, root, op) with one small all-gather, so a
mismatch across ranks is a clear ``ValueError`` on every rank, not corrupted memory.

A communicator is made with ``MPI.COMM_WORLD.Split`` keyed by the unique id, so every process of
the MPI job creates its communicator at the same time (as with ``ncclCommInitRank``, each waits
for the others).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pygpu.errors import NcclError, NcclUnavailableError

__all__ = ["MpiEngine", "group_end", "group_start", "unique_id"]

_KINDS = ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter")
_OPS = ("sum", "prod", "max", "min", "avg")


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise NcclUnavailableError(
            "pygpu.nccl on the host backend runs over MPI: pip install mpi4py, with an MPI "
            f"(pip install mpich, or your system's Open MPI / MPICH) ({e})"
        ) from None
    return MPI


def unique_id(nbytes: int) -> bytes:
    return os.urandom(nbytes)


class _Pending:
    """Requests issued and not yet waited for, each with what to do once it completed (given
    its MPI status)."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.finish: list[Callable[[Any], None] | None] = []
        self.buffers: list[np.ndarray] = []
        self.timeout = math.inf  # the shortest of the calls' timeouts

    def add(self, request: Any, finish: Callable[[Any], None] | None, timeout: float, buffers: Any) -> None:
        self.requests.append(request)
        self.finish.append(finish)
        self.buffers.extend(buffers)
        self.timeout = min(self.timeout, timeout)

    def wait(self) -> None:
        requests, finish, buffers, timeout = self.requests, self.finish, self.buffers, self.timeout
        self.requests, self.finish, self.buffers, self.timeout = [], [], [], math.inf
        statuses = _wait(requests, timeout, buffers)
        for step, status in zip(finish, statuses):
            if step is not None:
                step(status)


_group_depth = 0
_pending = _Pending()


def group_start() -> None:
    global _group_depth
    _group_depth += 1


def group_end() -> None:
    global _group_depth
    if _group_depth == 0:
        raise NcclError(5, "group_end() without group_start()")  # ncclInvalidUsage
    _group_depth -= 1
    if _group_depth == 0:
        _pending.wait()


_abandoned: list[Any] = []


def _wait(requests: list[Any], timeout: float, keep: Any = None) -> list[Any]:
    """Waits for every request, polling (so the deadline holds and Ctrl-C works); their
    statuses. ``keep``: what the requests read and write."""
    MPI = _mpi()
    statuses = [MPI.Status() for _ in requests]
    if not requests:
        return statuses
    deadline = time.monotonic() + timeout
    pause = 0.0
    try:
        while not MPI.Request.Testall(requests, statuses):
            if time.monotonic() > deadline:
                # MPI cannot cancel collectives: the buffers stay referenced (never freed) so
                # that a late rank cannot make MPI write into memory reused since.
                _abandoned.append((requests, keep))
                raise NcclError(
                    6,  # ncclRemoteError: another rank did not take part
                    f"pygpu.nccl (host, MPI): the other ranks did not complete the call within {timeout:g} s "
                    "(a rank that exited or called something else); set the communicator's timeout= or "
                    "PYGPU_NCCL_TIMEOUT to wait longer",
                )
            time.sleep(pause)
            pause = min(0.001, pause + 0.0001)
    except MPI.Exception as e:
        if e.Get_error_class() == MPI.ERR_TRUNCATE:
            raise ValueError(
                "pygpu.nccl: recv got a message larger than its buffer: send and recv must use buffers of one "
                "size and dtype"
            ) from None
        raise NcclError(6, f"pygpu.nccl (host, MPI): {e.Get_error_string()}") from None
    return statuses


class MpiEngine:
    """One rank's communicator over MPI. Buffers: ``pygpu.nccl._Buffer``, read and written
    through their flat numpy views; ``stream`` is unused (``pygpu.nccl`` synchronized it)."""

    def __init__(self, nranks: int, uid: bytes, rank: int, timeout: float) -> None:
        MPI = _mpi()
        self.timeout = timeout
        color = int.from_bytes(hashlib.blake2b(uid, digest_size=4).digest(), "little") & 0x7FFFFFFF
        self.comm = MPI.COMM_WORLD.Split(color, rank)
        ranks = self.comm.allgather(rank)
        if self.comm.Get_size() != nranks or sorted(ranks) != list(range(nranks)):
            size = self.comm.Get_size()
            self.comm.Free()
            raise ValueError(
                f"the ranks that share this unique id asked for ranks {sorted(ranks)} of a communicator of {nranks}, "
                f"but {size} MPI processes joined it: every rank 0..{nranks - 1} must create it, once"
            )

    @property
    def rank(self) -> int:
        return int(self.comm.Get_rank())

    @property
    def nranks(self) -> int:
        return int(self.comm.Get_size())

    def close(self) -> None:
        self.comm.Free()

    def abort(self) -> None:
        # MPI cannot end one communicator's pending calls; MPI_Comm_free releases it once they end.
        self.comm.Free()

    def release(self) -> None:
        """For a destructor: frees the communicator, never raising (not at all once MPI ended)."""
        MPI = _mpi()
        if not MPI.Is_finalized():
            with contextlib.suppress(Exception):
                self.comm.Free()

    def wait(self, stream: Any, timeout: float) -> bool:
        """Nothing to wait for: the calls completed before they returned (or at group_end)."""
        return True

    # ------------------------------------------------------------------ issuing

    def _issue(self, request: Any, finish: Callable[[Any], None] | None, *buffers: Any) -> None:
        """Waits for ``request`` now, or at the group's end; ``buffers``: the memory it uses
        (numpy views, which keep their GPUArrays alive)."""
        _pending.add(request, finish, self.timeout, buffers)
        if _group_depth == 0:
            _pending.wait()

    def _agree(self, kind: str, data: np.ndarray, op: str | None = None, root: int = -1) -> None:
        """Checks that every rank is making the same call, before the call can corrupt memory."""
        mine = np.array(
            [
                _KINDS.index(kind),
                data.size,
                data.dtype.num,
                data.dtype.itemsize,
                root,
                -1 if op is None else _OPS.index(op),
            ],
            np.int64,
        )
        everyone = np.empty((self.nranks, mine.size), np.int64)
        _wait([self.comm.Iallgather(mine, everyone)], self.timeout, (mine, everyone))
        if (everyone != mine).any():
            calls = "; ".join(
                f"rank {r}: {_KINDS[row[0]]} of {row[1]} elements of {_dtype_name(row[2], row[3])}, root {row[4]}, "
                f"op {_OPS[row[5]] if row[5] >= 0 else '-'}"
                for r, row in enumerate(everyone)
            )
            raise ValueError(
                f"pygpu.nccl: the ranks made different calls ({calls}); every rank must pass buffers of the "
                "same size and dtype, the same root and op, in the same order"
            )

    def _reduction(self, send: np.ndarray, recv: np.ndarray, op: str) -> tuple[np.ndarray, Any, Callable[[Any], None]]:
        """(what MPI reduces into, MPI's op, the step after): float16 is reduced as float32
        (MPI has no half type) and avg as a sum divided by the ranks."""
        MPI = _mpi()
        mpi_op = {"sum": MPI.SUM, "avg": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}[op]
        target = recv.astype(np.float32) if recv.dtype == np.float16 else recv
        n = self.nranks

        def finish(status: Any) -> None:
            if op == "avg":
                if np.issubdtype(target.dtype, np.integer):
                    np.copyto(target, np.trunc(target / n).astype(target.dtype))
                else:
                    target[...] /= n
            if target is not recv:
                np.copyto(recv, target.astype(recv.dtype))

        return target, mpi_op, finish

    # ------------------------------------------------------------------ calls

    def all_reduce(self, send_buffer: Any, recv_buffer: Any, op: str, stream: Any) -> None:
        send, recv = send_buffer.host_view(), recv_buffer.host_view()
        self._agree("all_reduce", send, op)
        target, mpi_op, finish = self._reduction(send, recv, op)
        source = _source(send, target)
        self._issue(self.comm.Iallreduce(source, target, mpi_op), finish, source, target, send, recv)

    def broadcast(self, send_buffer: Any, recv_buffer: Any, root: int, stream: Any) -> None:
        send, recv = send_buffer.host_view(), recv_buffer.host_view()
        self._agree("broadcast", recv, root=root)
        if self.rank == root and not _same_memory(send, recv):
            np.copyto(recv, send)
        self._issue(self.comm.Ibcast(recv.view(np.uint8), root), None, recv)

    def reduce(self, send_buffer: Any, recv_buffer: Any, op: str, root: int, stream: Any) -> None:
        send, recv = send_buffer.host_view(), recv_buffer.host_view()
        self._agree("reduce", send, op, root)
        target, mpi_op, finish = self._reduction(send, recv, op)
        if self.rank == root:
            source = _source(send, target)
            self._issue(self.comm.Ireduce(source, target, mpi_op, root), finish, source, target, send, recv)
        else:
            source = _copy_if_half(send)
            self._issue(self.comm.Ireduce(source, None, mpi_op, root), None, source, send)

    def all_gather(self, send_buffer: Any, recv_buffer: Any, stream: Any) -> None:
        send, recv = send_buffer.host_view(), recv_buffer.host_view()
        self._agree("all_gather", send)
        source = _detached(send, recv)
        self._issue(self.comm.Iallgather(source.view(np.uint8), recv.view(np.uint8)), None, source, recv)

    def reduce_scatter(self, send_buffer: Any, recv_buffer: Any, op: str, stream: Any) -> None:
        send, recv = send_buffer.host_view(), recv_buffer.host_view()
        self._agree("reduce_scatter", send, op)
        target, mpi_op, finish = self._reduction(send, recv, op)
        source = _copy_if_half(_detached(send, recv))
        self._issue(self.comm.Ireduce_scatter_block(source, target, mpi_op), finish, source, target, send, recv)

    def send(self, buffer: Any, peer: int, stream: Any) -> None:
        buf = buffer.host_view()
        self._issue(self.comm.Isend(buf.view(np.uint8), peer), None, buf)

    def recv(self, buffer: Any, peer: int, stream: Any) -> None:
        buf = buffer.host_view()
        expected = buf.nbytes

        def check(status: Any) -> None:
            got = status.Get_count(_mpi().BYTE)
            if got != expected:
                raise ValueError(
                    f"pygpu.nccl: recv from rank {peer} got {got} bytes into a buffer of {expected}: send and "
                    "recv must use buffers of one size and dtype"
                )

        self._issue(self.comm.Irecv(buf.view(np.uint8), peer), check, buf)


def _dtype_name(number: int, itemsize: int) -> str:
    for t in set(np.sctypeDict.values()):
        if np.dtype(t).num == number and np.dtype(t).itemsize == itemsize:
            return np.dtype(t).name
    return f"a {itemsize}-byte dtype"


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.nbytes == b.nbytes


def _source(send: np.ndarray, target: np.ndarray) -> Any:
    """MPI's in-place marker when the reduction reads and writes one buffer."""
    if _same_memory(send, target):
        return _mpi().IN_PLACE
    return _copy_if_half(_detached(send, target))


def _copy_if_half(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _detached(send: np.ndarray, recv: np.ndarray) -> np.ndarray:
    """``send``, copied first when it overlaps ``recv`` (MPI forbids aliased buffers; NCCL's
    in-place forms put send inside recv)."""
    return send.copy() if np.shares_memory(send, recv) else send
