"""In-situ analysis for the Burgers demo, called by both drivers (burger.py and the Rust program
in rust/, which embeds Python).

The solver leaves its snapshots in a device-resident matrix (rows x (NX + 2) doubles). This
module looks at that memory in place: `device_matrix` wraps a raw device address as a CuPy array
through `__cuda_array_interface__` on CUDA (no copy), or as a numpy array through
`__array_interface__` on the host backend, where device memory is host memory. `Collector` then
does what the seeds' python_module.py did -- collection during the run, the field plot, the SVD --
on that array: CuPy's SVD on the GPU, numpy's on the host.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "SUMMARY_DISTRIBUTED_KEYS",
    "SUMMARY_KEYS",
    "SUMMARY_RESULT_KEYS",
    "Collector",
    "DeviceMemory",
    "array_module",
    "device_matrix",
    "plot_rows",
    "snapshot_time",
    "svd_report",
    "svd_summary",
    "write_summary",
]

# SVD modes written to SVD_Eigenvectors.png and to the HDF5 file.
N_MODES = 3

#: summary.json's keys, one schema for both drivers (write_summary refuses anything else): the
#: run's parameters, where it ran, its timings (seconds; setup is graph capture), the snapshot
#: rows and collection calls, and u10, the solution at index 10 (the seeds' printed value).
SUMMARY_KEYS = frozenset(
    {
        "driver", "backend", "device", "nx", "nu", "dt", "t_final", "t_end", "steps", "scheme", "kernel",
        "snapshot_every", "graph", "grid", "block",
        "mean_step_seconds", "loop_seconds", "setup_seconds",
        "rows", "collections", "u10",
    }
)  # fmt: skip
#: Keys of the analysis results, present when it ran (snapshots taken; hdf5 with --hdf5).
SUMMARY_RESULT_KEYS = frozenset(
    {
        "field_plot", "singular_values", "energy_fraction", "energy_first_modes", "svd_seconds", "svd_library",
        "svd_plot", "hdf5",
    }
)  # fmt: skip
#: Keys of the distributed driver (burger_mpi.py): its ranks and its streaming SVD's settings.
SUMMARY_DISTRIBUTED_KEYS = frozenset({"ranks", "stream_modes", "stream_every"})


class DeviceMemory:
    """A raw device address seen as a C-contiguous float64 matrix, exported zero-copy: through
    `__cuda_array_interface__` (v3) for CuPy/PyTorch/Numba on a GPU, or `__array_interface__` for
    numpy on the host backend. `owner` is kept alive as long as this object (and so as long as
    any array made from it)."""

    def __init__(self, ptr: int, shape: tuple[int, ...], backend: str, owner: object = None):
        self.ptr = int(ptr)
        self.shape = tuple(int(n) for n in shape)
        self.backend = backend
        self.owner = owner
        interface = {"shape": self.shape, "typestr": "<f8", "data": (self.ptr, False), "version": 3}
        if backend == "host":
            self.__array_interface__ = interface
        else:
            # "stream": None -- the drivers synchronise their solver stream before handing over.
            self.__cuda_array_interface__ = {**interface, "strides": None, "stream": None}


def array_module(backend: str) -> Any:
    """cupy on a GPU backend, numpy on the host backend."""
    if backend == "host":
        return np
    try:
        import cupy
    except ImportError as e:
        raise RuntimeError(
            f"the in-situ analysis on the {backend} backend needs CuPy (pip install cupy-cuda12x or "
            "cupy-cuda13x); or run the demo with --backend host"
        ) from e
    return cupy


def device_matrix(ptr: int, rows: int, cols: int, backend: str, owner: object = None) -> Any:
    """The rows x cols float64 matrix at device address `ptr`, as an array of the backend's array
    module, sharing the memory (no copy)."""
    memory = DeviceMemory(ptr, (rows, cols), backend, owner)
    xp = array_module(backend)
    return xp.asarray(memory)


def to_numpy(a: Any) -> np.ndarray:
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def plot_rows(rows: int) -> list[int]:
    """The snapshot rows in Field_evolution.png: 0, 400, ..., 2000 for the seeds' 2001 rows."""
    if rows <= 0:
        return []
    stride = max(1, (rows - 1) // 5)
    return list(range(0, rows, stride))


def snapshot_time(row: int, every: int, dt: float) -> float:
    """The physical time of snapshot row ``row``: it holds the solution after step
    (row + 1) * every, at t = (row + 1) * every * dt (row 2000 of the seeds' run: t = 2.001)."""
    return (row + 1) * every * dt


class Collector:
    """The in-situ side of a run. `snapshots` is the zero-copy view of the device-resident snapshot
    matrix (rows x (NX + 2), ghosts included), `x` the interior coordinates, `meta` the run's
    parameters (written to summary.json and the HDF5 file)."""

    def __init__(self, snapshots: Any, x: Any, meta: dict[str, Any]):
        self.snapshots = snapshots
        self.x = np.asarray(x, dtype=np.float64)
        self.meta = dict(meta)
        self.backend = str(self.meta.get("backend", "host"))
        self.xp = array_module(self.backend)
        self.rows = 0
        self.collections = 0
        self.results: dict[str, Any] = {}
        self.svd_result: tuple[np.ndarray, np.ndarray] | None = None

    # -- during the run ------------------------------------------------------------------------

    def collect(self, rows: int) -> None:
        """Called as snapshots arrive (the seeds' collection_func): the solver has already copied
        them into the matrix on the device, so only the count moves here."""
        if not 0 <= rows <= self.snapshots.shape[0]:
            raise ValueError(f"{rows} rows collected, but the snapshot matrix has {self.snapshots.shape[0]}")
        self.rows = int(rows)
        self.collections += 1

    def interior(self) -> Any:
        """The collected snapshots without the ghost columns: a strided view, still no copy."""
        return self.snapshots[: self.rows, 1:-1]

    # -- after the run -------------------------------------------------------------------------

    def plot_field(self, out_dir: str | os.PathLike[str]) -> str:
        """Field_evolution.png: the snapshot rows 0, 400, ..., 2000 (for the seeds' run), each
        curve labelled by its physical time t."""
        plt = _pyplot()
        path = Path(out_dir) / "Field_evolution.png"
        chosen = plot_rows(self.rows)
        # Only the plotted rows come to the host.
        lines = to_numpy(self.snapshots[chosen, 1:-1]) if chosen else np.empty((0, self.x.size))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        every = int(self.meta.get("snapshot_every", 1)) or 1
        dt = float(self.meta.get("dt", 0.0))
        for row, u in zip(chosen, lines):
            ax.plot(self.x, u, label=f"t = {snapshot_time(row, every, dt):.4g}")
        ax.set_xlabel("x")
        ax.set_ylabel("u")
        ax.set_title(f"Field evolution (NX = {self.x.size}, {self.backend})")
        if chosen:
            ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        self.results["field_plot"] = str(path)
        return str(path)

    def svd(self, out_dir: str | os.PathLike[str], n_modes: int = N_MODES) -> dict[str, Any]:
        """SVD of the interior snapshots where they are (CuPy on the GPU, numpy on the host);
        SVD_Eigenvectors.png shows the first right singular vectors (the spatial modes)."""
        print("Performing SVD", flush=True)
        if self.rows == 0:
            raise ValueError("no snapshots were collected: run with --snapshot-every >= 1")
        xp = self.xp
        start = time.perf_counter()
        _, s, vt = xp.linalg.svd(self.interior(), full_matrices=False)
        s_host = to_numpy(s)
        seconds = time.perf_counter() - start
        modes = to_numpy(vt[:n_modes])
        self.svd_result = (s_host, modes)
        result = svd_summary(s_host, seconds, xp.__name__, n_modes)
        print(svd_report(result))

        plt = _pyplot()
        path = Path(out_dir) / "SVD_Eigenvectors.png"
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for i, mode in enumerate(modes):
            ax.plot(self.x, mode, label=f"Mode {i + 1} (σ = {s_host[i]:.4g})")
        ax.set_xlabel("x")
        ax.set_ylabel("right singular vector")
        ax.set_title(f"SVD eigenvectors ({xp.__name__}, {self.rows} snapshots)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        result["svd_plot"] = str(path)
        self.results.update(result)
        return result

    def write_hdf5(self, path: str | os.PathLike[str]) -> str:
        """Snapshots, coordinates, singular values and modes, with the run's parameters as
        attributes. The snapshots come to the host here: HDF5 is host I/O."""
        try:
            import h5py
        except ImportError as e:
            raise RuntimeError("--hdf5 needs h5py (pip install h5py)") from e
        with h5py.File(path, "w") as f:
            f.create_dataset("snapshots", data=to_numpy(self.snapshots[: self.rows]), compression="gzip")
            f.create_dataset("x", data=self.x)
            if self.svd_result is not None:
                s, modes = self.svd_result
                f.create_dataset("singular_values", data=s)
                f.create_dataset("modes", data=modes)
            for key, value in self.meta.items():
                f.attrs[key] = value
        self.results["hdf5"] = str(path)
        return str(path)

    def finish(
        self, final_u: Any, out_dir: str | os.PathLike[str], extra: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Writes final.npy and summary.json (see write_summary) with this run's results."""
        summary = {**self.meta, **(extra or {}), **self.results, "rows": self.rows, "collections": self.collections}
        return write_summary(final_u, out_dir, summary)


def svd_summary(s: np.ndarray, seconds: float, library: str, n_modes: int = N_MODES) -> dict[str, Any]:
    """summary.json's SVD keys for the singular values `s` (decreasing): the leading ones and
    the energy fractions of the first `n_modes` modes."""
    energy = s**2 / float(np.sum(s**2))
    k = min(n_modes, s.size)
    return {
        "singular_values": s[: max(k, 5)].tolist(),
        "energy_fraction": energy[:k].tolist(),
        "energy_first_modes": float(np.sum(energy[:k])),
        "svd_seconds": seconds,
        "svd_library": library,
    }


def svd_report(result: dict[str, Any]) -> str:
    """The drivers' two lines about an SVD (`svd_summary`'s result)."""
    lead = ", ".join(f"{v:.6g}" for v in result["singular_values"])
    energy = result["energy_fraction"]
    return (
        f"Leading singular values: {lead}\n"
        f"Energy fraction of the first {len(energy)} modes: {result['energy_first_modes']:.6f} "
        f"({', '.join(f'{e:.6f}' for e in energy)})"
    )


def write_summary(final_u: Any, out_dir: str | os.PathLike[str], summary: dict[str, Any]) -> dict[str, Any]:
    """Writes final.npy (the last solution, ghosts included) and summary.json (the run's
    parameters, u[10], timings, SVD results) into out_dir; returns the summary."""
    final = np.asarray(final_u, dtype=np.float64)
    summary = {**summary, "u10": float(final[10]) if final.size > 10 else math.nan}
    missing = sorted(SUMMARY_KEYS - summary.keys())
    unknown = sorted(summary.keys() - SUMMARY_KEYS - SUMMARY_RESULT_KEYS - SUMMARY_DISTRIBUTED_KEYS)
    if missing or unknown:
        raise ValueError(f"summary.json's schema (analysis.SUMMARY_KEYS): missing {missing}, unknown {unknown}")
    out = Path(out_dir)
    np.save(out / "final.npy", final)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as e:
        raise RuntimeError(
            "the demo's plots need matplotlib: pip install pygpu[demo] (or matplotlib); "
            "or run with --snapshot-every 0 (no analysis)"
        ) from e

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
