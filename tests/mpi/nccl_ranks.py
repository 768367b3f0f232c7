"""One rank of an MPI job that checks pygpu.nccl against numpy (run by tests/test_nccl_mpi.py
with mpiexec; any backend with collectives). ``python nccl_ranks.py CASE``: prints ``ok CASE`` on
success; a failed check raises, which makes mpiexec exit non-zero."""

from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

import pygpu
from pygpu import nccl

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
# One device per rank (NCCL refuses two ranks on one GPU), for the communicator and the buffers.
pygpu.cudaSetDevice(rank % pygpu.cudaGetDeviceCount()[0]).check()
DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]


def communicator(timeout: float | None = None) -> nccl.Communicator:
    uid = world.bcast(nccl.get_unique_id() if rank == 0 else None)
    return nccl.Communicator(size, uid, rank, timeout=timeout)


def values(dtype: type, r: int, n: int = 7) -> np.ndarray:
    """Small values (sums and products of them stay exact in every dtype), different per rank."""
    return ((np.arange(n) + r) % 3 + 1).astype(dtype)


def collectives() -> None:
    comm = communicator()
    assert (comm.rank, comm.nranks) == (rank, size)
    everyone = {dtype: [values(dtype, r) for r in range(size)] for dtype in DTYPES}
    for dtype, xs in everyone.items():
        stack = np.stack(xs)
        a, out = pygpu.to_gpu(xs[rank]), pygpu.zeros(7, dtype)
        for op, expect in [
            ("sum", stack.sum(0)),
            ("prod", stack.prod(0)),
            ("max", stack.max(0)),
            ("min", stack.min(0)),
        ]:
            comm.all_reduce(a, out, op=op)
            np.testing.assert_array_equal(out.get(), expect.astype(dtype), err_msg=f"all_reduce {op} {dtype}")
        if np.issubdtype(dtype, np.floating):
            comm.all_reduce(a, out, op="avg")
            np.testing.assert_allclose(out.get(), stack.astype(np.float64).mean(0), rtol=1e-3)
        inplace = a.copy()
        comm.all_reduce(inplace, inplace)
        np.testing.assert_array_equal(inplace.get(), stack.sum(0).astype(dtype), err_msg=f"in place {dtype}")
        root = size - 1
        comm.reduce(a, out, op="max", root=root)
        if rank == root:
            np.testing.assert_array_equal(out.get(), stack.max(0))
        comm.broadcast(a, out, root=1 % size)
        np.testing.assert_array_equal(out.get(), xs[1 % size])
        gathered = pygpu.zeros(7 * size, dtype)
        comm.all_gather(a, gathered)
        np.testing.assert_array_equal(gathered.get(), np.concatenate(xs))
        big = pygpu.to_gpu(np.tile(xs[rank], size))
        block = pygpu.zeros(7, dtype)
        comm.reduce_scatter(big, block)
        np.testing.assert_array_equal(block.get(), stack.sum(0).astype(dtype))
    # complex sums; structured bytes broadcast; 2-d and Fortran-ordered buffers
    c = pygpu.to_gpu(np.full(3, 1 + 2j * rank, np.complex128))
    comm.all_reduce(c, c)
    np.testing.assert_array_equal(c.get(), np.full(3, size + 2j * sum(range(size))))
    grid = pygpu.to_gpu(np.asfortranarray(np.arange(12.0).reshape(3, 4) * (rank + 1)))
    comm.all_reduce(grid, grid)
    np.testing.assert_array_equal(grid.get(), np.arange(12.0).reshape(3, 4) * sum(range(1, size + 1)))
    # a ring of send/recv in one group, on a stream, after a kernel on that stream wrote the buffer
    stream = pygpu.driver.Stream()
    ring = pygpu.zeros(5, np.float64)
    ring.fill(rank + 0.5, stream=stream)
    got = pygpu.zeros(5, np.float64)
    with nccl.group():
        comm.send(ring, peer=(rank + 1) % size, stream=stream)
        comm.recv(got, peer=(rank - 1) % size, stream=stream)
    comm.synchronize(stream)
    np.testing.assert_array_equal(got.get(), np.full(5, (rank - 1) % size + 0.5))
    # a plain runtime stream does as well
    raw = pygpu.cudaStream_t()
    comm.all_reduce(got, got, op="max", stream=raw)
    comm.synchronize(raw)
    np.testing.assert_array_equal(got.get(), np.full(5, size - 0.5))
    comm.close()
    try:
        comm.all_reduce(c, c)
    except ValueError as e:
        assert "closed" in str(e)
    else:
        raise AssertionError("a closed communicator was used")
    comm.close()


def mismatch() -> None:
    """Ranks asking for different sizes get a ValueError each, naming what each rank asked."""
    comm = communicator()
    a = pygpu.zeros(4 + rank, np.float32)
    try:
        comm.all_reduce(a, a)
    except ValueError as e:
        assert "different calls" in str(e) and "rank 1: all_reduce of 5 elements" in str(e), e
    else:
        raise AssertionError("mismatched all_reduce accepted")
    got = pygpu.zeros(3, np.float32)
    try:
        with nccl.group():
            if rank == 0:
                comm.send(pygpu.zeros(2, np.float32), peer=1)
            elif rank == 1:
                comm.recv(got, peer=0)
    except ValueError as e:
        assert rank == 1 and "got 8 bytes into a buffer of 12" in str(e), e
    else:
        assert rank != 1, "a short message was accepted"
    world.Barrier()


def absent_rank() -> None:
    """Rank 1 never joins the all_reduce: the others raise NcclError within the timeout (on the
    host backend from the call, on cuda from synchronize())."""
    comm = communicator(timeout=1.0)
    a = pygpu.zeros(4, np.float32)
    if rank == 1:
        time.sleep(3.0)
        return
    start = time.monotonic()
    try:
        comm.all_reduce(a, a)
        comm.synchronize()
    except nccl.NcclError as e:
        assert "within 1 s" in str(e), e
    else:
        raise AssertionError("an all_reduce without rank 1 completed")
    assert time.monotonic() - start < 2.5


def dies() -> None:
    """A rank that exits in the middle: mpiexec ends the job instead of leaving it hanging."""
    comm = communicator(timeout=30.0)
    if rank == 1:
        import os

        os._exit(3)
    a = pygpu.zeros(4, np.float32)
    comm.all_reduce(a, a)


if __name__ == "__main__":
    case = sys.argv[1]
    {"collectives": collectives, "mismatch": mismatch, "absent_rank": absent_rank, "dies": dies}[case]()
    print(f"ok {case} rank {rank}", flush=True)
