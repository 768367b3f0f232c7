"""One rank of an MPI job that passes GPUArrays to mpi4py through pygpu.mpi.buffer (run by
tests/test_mpi_buffers.py). ``python buffer_ranks.py auto|staged|direct``: prints ``ok`` per
rank; a failed check raises, which makes mpiexec exit non-zero."""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

import pygpu
from pygpu import mpi

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
staged = {"auto": None, "staged": True, "direct": False}[sys.argv[1]]

with pygpu.Device(rank % pygpu.cudaGetDeviceCount()[0]):
    # a ring of Sendrecv, with a kernel's write on a stream still pending when MPI reads
    stream = pygpu.driver.Stream()
    x = pygpu.zeros((3, 4), np.float64)
    x.fill(rank + 0.25, stream=stream)
    y = pygpu.zeros((3, 4), np.float64)
    with mpi.buffer(x, staged=staged) as send, mpi.buffer(y, read=False, write=True, staged=staged) as recv:
        world.Sendrecv(send, dest=(rank + 1) % size, recvbuf=recv, source=(rank - 1) % size)
    np.testing.assert_array_equal(y.get(), np.full((3, 4), (rank - 1) % size + 0.25))

    # an in-place Allreduce on a Fortran-ordered array: read and written
    z = pygpu.to_gpu(np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3) * (rank + 1)))
    with mpi.buffer(z, write=True, staged=staged) as buf:
        world.Allreduce(MPI.IN_PLACE, buf)
    np.testing.assert_array_equal(z.get(), np.arange(6).reshape(2, 3) * sum(range(1, size + 1)))

    # a failed call writes nothing back from a staged copy
    if staged or (staged is None and pygpu.backend() != "host" and not mpi.cuda_aware()):
        w = pygpu.to_gpu(np.full(4, 7.0))
        try:
            with mpi.buffer(w, write=True, staged=staged) as buf:
                buf[...] = 1.0
                raise KeyError("the MPI call failed")
        except KeyError:
            pass
        np.testing.assert_array_equal(w.get(), 7.0)

print(f"ok rank {rank} staged={staged} cuda_aware={mpi.cuda_aware()}", flush=True)
