"""HDF5 output of the distributed Burgers run (burger_mpi.py --hdf5 FILE): per-rank files, joined by
virtual datasets.

Every rank writes its own slab to FILE's stem + `.rank<r>` + suffix (no gather, no parallel HDF5
needed: each rank's data goes from its device to its file). Rank 0 then writes FILE itself, whose
`x`, `final`, `snapshots` and `modes` are HDF5 virtual datasets over the ranks' files, laid side
by side along the grid axis, so that a reader sees the global arrays (NX columns, interior points;
the source files are found next to FILE, wherever it is moved with them). FILE also holds the
singular values, the temporal modes (batch SVD only) and the run's parameters as attributes.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

import analysis
import domain

__all__ = ["rank_file", "write"]


def rank_file(path: str | os.PathLike[str], rank: int) -> Path:
    """Rank `rank`'s file beside `path`: run.h5 -> run.rank0.h5."""
    p = Path(path)
    return p.with_name(f"{p.stem}.rank{rank}{p.suffix or '.h5'}")


def write(
    path: str | os.PathLike[str],
    world: Any,
    slab: domain.Slab,
    field: np.ndarray,
    snapshots: Any,
    svd: tuple[np.ndarray, np.ndarray, np.ndarray | None, float] | None,
    meta: dict[str, Any],
) -> list[str]:
    """Writes this rank's file (its slab of the final `field` (with ghosts), of the `snapshots`
    (rows x n, or None) and of the spatial modes of `svd`), then, on rank 0, FILE. Collective:
    every rank calls it. Returns [FILE, rank 0's file, rank 1's, ...]."""
    try:
        import h5py
    except ImportError as e:
        raise RuntimeError("--hdf5 needs h5py (pip install h5py)") from e
    slabs = domain.partition(slab.nx, slab.size)
    mine = rank_file(path, slab.rank)
    data = {
        "x": 2.0 * math.pi * np.arange(slab.start, slab.start + slab.n) / slab.nx,
        "final": field[1:-1],
        "snapshots": None if snapshots is None else analysis.to_numpy(snapshots),
        "modes": None if svd is None else svd[1],
    }
    with h5py.File(mine, "w") as f:
        for name, value in data.items():
            if value is not None:
                f.create_dataset(name, data=value)
        f.attrs.update(rank=slab.rank, ranks=slab.size, start=slab.start, n=slab.n)
    world.Barrier()  # every rank's file is complete before FILE points into it
    files = [str(rank_file(path, s.rank)) for s in slabs]
    if slab.rank == 0:
        with h5py.File(path, "w") as f:
            for name, value in data.items():
                if value is None:
                    continue
                lead = value.shape[:-1]  # rows of snapshots and modes: the same on every rank
                layout = h5py.VirtualLayout(shape=(*lead, slab.nx), dtype="f8")
                for s in slabs:
                    source = h5py.VirtualSource(rank_file(path, s.rank).name, name, shape=(*lead, s.n))
                    layout[..., s.start : s.start + s.n] = source
                f.create_virtual_dataset(name, layout, fillvalue=np.nan)
            if svd is not None:
                f.create_dataset("singular_values", data=svd[0])
                if svd[2] is not None:
                    f.create_dataset("temporal_modes", data=svd[2])
            f.attrs.update(meta)
            f.attrs["rank_files"] = [Path(p).name for p in files]
    world.Barrier()
    return [str(path), *files]
