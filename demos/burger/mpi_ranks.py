"""The MPI job of the distributed Burgers run (burger_mpi.py): starting every rank's device,
refusing a run on every rank at once, the pygpu.nccl communicator, the ranks as a tsqr.Team,
and gathering the field to rank 0.

Checks before the run are made by every rank and agreed on (`agree`, one allgather): a rank
that refused alone would leave the others waiting for it in their first collective.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

import analysis
import burger
import domain

__all__ = [
    "NcclTeam",
    "Refused",
    "agree",
    "analysis_module",
    "communicator",
    "gather_field",
    "row_counts",
    "run_or_abort",
    "start_device",
]


class Refused(Exception):
    """A run that cannot go ahead, found before the steps (every rank refuses it together)."""


def run_or_abort(prog: str, world: Any, work: Callable[[], int]) -> int:
    """`work()`'s exit code on this rank. A Refused run (refused by every rank together) is said
    once, by rank 0, with exit code 2; any other failure ends the whole job (MPI_Abort), since the
    other ranks would wait for this one in their next collective."""
    rank = world.Get_rank()
    try:
        return work()
    except Refused as e:
        if rank == 0:
            print(f"{prog}: {e}", file=sys.stderr, flush=True)
        return 2
    except Exception:
        print(f"{prog}: rank {rank} failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        if world.Get_size() > 1:
            world.Abort(1)
        return 1


def agree(world: Any, error: str | None) -> None:
    """A check that every rank makes: if any rank failed it, all raise Refused with the first
    failure (no rank goes on to wait for the others)."""
    errors = [e for e in world.allgather(error) if e]
    if errors:
        raise Refused(errors[0])


def start_device(world: Any, requested: str) -> tuple[str, int]:
    """Starts the backend on every rank and picks this rank's device; (backend, device). Rank 0
    says so when 'auto' fell back to the host backend."""
    import pygpu

    from mpi4py import MPI

    try:
        backend, notice = burger.choose_backend(requested)
        error = None
        if notice and world.Get_rank() == 0:
            print(notice, flush=True)
    except pygpu.CudaError as e:
        backend, error = "none", f"cannot start the {requested} backend: {e}"
    agree(world, error)
    backends = set(world.allgather(backend))
    agree(world, f"the ranks run different backends ({', '.join(sorted(backends))})" if len(backends) > 1 else None)
    local = world.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank, local_size = local.Get_rank(), local.Get_size()
    local.Free()
    count = pygpu.cudaGetDeviceCount()[0]
    agree(
        world,
        f"{local_size} ranks on one node share {count} GPU(s): NCCL needs a GPU per rank; run at most {count} "
        "ranks per node (or --backend host)"
        if backend != "host" and local_size > count
        else None,
    )
    device = local_rank % count
    pygpu.cudaSetDevice(device).check()
    return backend, device


def analysis_module(world: Any, backend: str, device: int) -> Any:
    """The SVD's array module on every rank (CuPy on this rank's GPU, numpy on the host)."""
    try:
        xp, error = analysis.array_module(backend), None
    except RuntimeError as e:
        xp, error = None, str(e)
    agree(world, error)
    if xp is not np:
        xp.cuda.Device(device).use()
    return xp


def communicator(world: Any) -> Any:
    """The pygpu.nccl communicator of all the ranks: rank 0's unique id shared with bcast."""
    from pygpu import nccl

    rank, size = world.Get_rank(), world.Get_size()
    uid: bytes | str | None = None
    if rank == 0:
        try:
            uid = nccl.get_unique_id()
        except (nccl.NcclUnavailableError, nccl.NcclError) as e:
            uid = f"pygpu.nccl: {e}"  # told to every rank, which would otherwise wait for an id
    uid = world.bcast(uid, root=0)
    if isinstance(uid, str):
        raise Refused(uid)
    assert uid is not None
    # Blocking: a step's ghost exchange costs 30 rather than 100 µs (H100s); a rank that dies
    # ends the MPI job, and the solver's synchronize() keeps its deadline.
    return nccl.Communicator(size, uid, rank, blocking=True)


class NcclTeam:
    """tsqr.Team over a pygpu.nccl communicator: the blocks are staged in GPUArrays, which `xp`
    sees in place (CuPy through __cuda_array_interface__, numpy on the host backend)."""

    def __init__(self, comm: Any, xp: Any):
        self.comm, self.xp = comm, xp
        self.rank, self.size = comm.rank, comm.nranks

    def all_gather(self, block: Any) -> Any:
        from pygpu import gpuarray

        send = gpuarray.empty(block.shape, np.float64)
        recv = gpuarray.empty((self.size * block.shape[0], *block.shape[1:]), np.float64)
        self.xp.asarray(send)[...] = block
        self.comm.all_gather(send, recv)
        return self.xp.asarray(recv)


def row_counts(slab: domain.Slab) -> list[int]:
    """Every rank's grid points: the rows of the tall matrix (the transposed snapshots) per rank."""
    return [s.n for s in domain.partition(slab.nx, slab.size)]


def gather_field(world: Any, slab: domain.Slab, local: np.ndarray) -> np.ndarray | None:
    """The global field (NX + 2 values, ghosts included) on rank 0, from every rank's slab with
    its ghosts; None on the other ranks."""
    slabs = domain.partition(slab.nx, slab.size)
    sizes = [s.n_total for s in slabs]
    recv = np.empty(sum(sizes)) if slab.rank == 0 else None
    world.Gatherv(local, (recv, sizes) if recv is not None else None, root=0)
    if recv is None:
        return None
    field = np.empty(slab.nx + 2)
    offset = 0
    for s in slabs:
        field[s.start + 1 : s.start + s.n + 1] = recv[offset + 1 : offset + s.n + 1]
        if s.rank == 0:
            field[0] = recv[offset]
        if s.rank == slab.size - 1:
            field[-1] = recv[offset + s.n + 1]
        offset += s.n_total
    return field
