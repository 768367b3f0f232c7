"""The domain decomposition of the distributed Burgers run (burger_mpi.py): which slab of the
NX interior points each rank owns, its initial data, and the ghost-cell messages of one step.

Rank r of N owns a contiguous slab of the interior (the first NX mod N ranks one point more)
and stores it with two ghosts, as the single-process arrays: local index i is global index
start + i, so local 0 and n + 1 are the ghosts. The ranks form a periodic ring.

The messages are data (`halo_messages`), so that the same plan drives the NCCL exchange of the
driver and the pure-numpy simulation of the tests. They make the distributed steps bitwise
identical to the single-process kernels of kernels/burgers.cu:
- `periodic` (burgers_step_periodic): every ghost holds the neighbour's current boundary value.
- `seed` (burgers_step_lagged): the same between ranks, but the ghosts at the ends of the global
  domain hold the values of the *previous* step (the seeds' kernel copies the new ghosts from the
  old interior), so the last rank and rank 0 send those from the previous state's buffer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["Message", "Slab", "halo_messages", "local_u0", "partition"]

#: Which of a rank's two buffers a message is read from: the state being stepped, or the one of
#: the step before (which the step overwrites next).
Source = Literal["current", "previous"]


@dataclass(frozen=True)
class Slab:
    """Rank `rank` of `size`: interior points start + 1 .. start + n of the NX (global indices)."""

    rank: int
    size: int
    nx: int
    start: int
    n: int

    @property
    def n_total(self) -> int:
        return self.n + 2

    @property
    def left(self) -> int:
        return (self.rank - 1) % self.size

    @property
    def right(self) -> int:
        return (self.rank + 1) % self.size


def partition(nx: int, size: int) -> list[Slab]:
    """The slabs of `size` ranks over `nx` interior points (sizes differ by at most one)."""
    if size < 1:
        raise ValueError(f"the decomposition needs at least one rank, not {size}")
    if size > nx:
        raise ValueError(
            f"{size} ranks for NX = {nx} interior points: every rank needs at least one point; "
            f"run with -n {nx} or fewer, or a larger --nx"
        )
    base, extra = divmod(nx, size)
    slabs, start = [], 0
    for rank in range(size):
        n = base + (rank < extra)
        slabs.append(Slab(rank, size, nx, start, n))
        start += n
    return slabs


def local_u0(nx: int, slab: Slab) -> np.ndarray:
    """The slab's part of burger.Problem.u0() (sin x with periodic ghosts), ghosts included,
    computed with the same operations element by element, so bitwise equal to that array's
    slice, without making the global array."""
    k = (np.arange(slab.start - 1, slab.start + slab.n + 1) % nx).astype(np.int64)
    return np.sin(2.0 * math.pi * k / nx)


@dataclass(frozen=True)
class Message:
    """One value sent to, or received from, rank `peer`: the local `index` of the `source`
    buffer (sends) or of the current state (receives)."""

    peer: int
    index: int
    source: Source = "current"


def halo_messages(slab: Slab, scheme: str) -> tuple[list[Message], list[Message]]:
    """(sends, receives) of one ghost exchange, each list in the order the calls are issued.
    With 1 or 2 ranks the left and right neighbours are the same rank (or this one), so the
    pairing relies on messages between two ranks arriving in the order they were sent (NCCL's
    and MPI's rule): first the value for the receiver's left ghost, then the one for its right."""
    if scheme not in ("seed", "periodic"):
        raise ValueError(f"unknown scheme {scheme!r}: choose seed or periodic")
    lagged = scheme == "seed"
    last = slab.rank == slab.size - 1
    first = slab.rank == 0
    sends = [
        # my last point is the right neighbour's left ghost (rank 0's, across the global end)
        Message(slab.right, slab.n, "previous" if lagged and last else "current"),
        # my first point is the left neighbour's right ghost
        Message(slab.left, 1, "previous" if lagged and first else "current"),
    ]
    receives = [Message(slab.left, 0), Message(slab.right, slab.n + 1)]
    return sends, receives
