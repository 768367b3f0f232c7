"""Communication-avoiding SVD of a tall matrix whose row blocks live on different ranks (TSQR),
and the streaming (incremental) SVD built on it. Used by burger_mpi.py on the snapshot matrix.

The tall matrix is X (rows: grid points, split over the ranks; columns: snapshots), the
transpose of the snapshot matrix. Each rank factors its block, X_r = Q_r R_r; the small R_r are
exchanged in one all-gather; every rank then takes the SVD of the stacked R's, W S V^T, the same
on every rank, so that X = U S V^T with this rank's rows of U being Q_r W_r (W_r: the rows of W
that multiply R_r). Only the R's travel, never X. The right singular vectors V (the snapshots'
temporal coefficients) come out the same on every rank; U is distributed as X (the spatial modes).

`xp` is the array module of the data (cupy on a GPU, numpy on the host backend), so the work stays
where X is. The ranks are a `Team`: its rank, its size and an all-gather.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["StreamingSVD", "Team", "tsqr_svd"]


class Team(Protocol):
    """The ranks taking part: `all_gather(block)` returns every rank's equally shaped `block`,
    stacked along the first axis in rank order (an array of the same module)."""

    rank: int
    size: int

    def all_gather(self, block: Any) -> Any: ...


def tsqr_svd(local: Any, team: Team, row_counts: Sequence[int], xp: Any) -> tuple[Any, Any, Any]:
    """Thin SVD X = U diag(s) Vt of the tall matrix whose row block on rank r has `row_counts[r]`
    rows, this rank's being `local` (n_r x m). Returns (this rank's rows of U, s, Vt), with
    min(rows of X, m) singular values in decreasing order; s and Vt are the same on every rank."""
    n_r, m = local.shape
    if len(row_counts) != team.size or n_r != row_counts[team.rank]:
        raise ValueError(f"rank {team.rank} holds {n_r} rows, but row_counts says {list(row_counts)}")
    # Every rank's R is padded to k rows so that the all-gather moves equal blocks; the padding
    # is dropped before the SVD, which then has exactly min(rows of X, m) singular values.
    k = min(max(row_counts), m)
    q, r = xp.linalg.qr(local, mode="reduced")
    padded = xp.zeros((k, m), dtype=local.dtype)
    padded[: r.shape[0]] = r
    stacked = team.all_gather(padded)
    kept = [min(n, m) for n in row_counts]
    rs = xp.concatenate([stacked[i * k : i * k + kept[i]] for i in range(team.size)])
    w, s, vt = xp.linalg.svd(rs, full_matrices=False)
    first = sum(kept[: team.rank])
    return q @ w[first : first + kept[team.rank]], s, vt


class StreamingSVD:
    """The leading `modes` singular triplets (U distributed, s) of a tall matrix that grows by
    blocks of columns, without keeping the columns: each `update(block)` takes the SVD of
    [U diag(s), block] by TSQR and truncates it to `modes` (Brand's incremental SVD). With
    `modes` at least the rank of the whole matrix nothing is dropped and the result is the batch
    SVD's, up to rounding."""

    def __init__(self, modes: int, team: Team, row_counts: Sequence[int], xp: Any):
        if modes < 1:
            raise ValueError(f"the streaming SVD keeps at least one mode, not {modes}")
        self.modes = modes
        self.team = team
        self.row_counts = list(row_counts)
        self.xp = xp
        self.u: Any = None  # this rank's rows of the leading left singular vectors
        self.s: Any = None
        self.columns = 0  # columns seen so far

    def update(self, block: Any) -> None:
        """Folds in new columns (`block`: this rank's rows of them, n_r x K)."""
        xp = self.xp
        grown = block if self.u is None else xp.concatenate([self.u * self.s, block], axis=1)
        u, s, _ = tsqr_svd(grown, self.team, self.row_counts, xp)
        self.u, self.s = u[:, : self.modes], s[: self.modes]
        self.columns += block.shape[1]
