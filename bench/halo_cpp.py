"""The C++ NCCL halo loop (bench/cpp/halo_nccl.cu) for bench/burgers_scaling.py: finding NCCL's
header and library, building the program with nvcc, and running one process of it beside each
MPI rank of a group, on that rank's GPU.

The C++ ranks share NCCL's unique id through a file, not through MPI: they would need mpi.h and
an MPI library to link against, which the GPU machine's pip-installed mpi4py does not promise (and
an mpiexec started from inside an MPI job is refused by Open MPI). Each Python rank starts its C++
rank with subprocess instead, so the C++ processes land on the same GPUs as the Python ranks and
need nothing but nvcc and the NCCL wheel. They are processes of one node (the id file's folder
must be seen by all of them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from burgers import find_nvcc

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "bench" / "cpp" / "halo_nccl.cu"
#: Seconds one C++ run may take (NCCL's start, the loops); past it the run is reported as failed.
TIMEOUT = 180


def nccl_paths() -> tuple[Path, Path] | str:
    """(include folder with nccl.h, libnccl.so.2) of the NCCL that pygpu.nccl loads (the
    nvidia-nccl-cu13/-cu12 wheel on sys.path, or $PYGPU_NCCL_LIBRARY), or why there is none."""
    from pygpu._collectives.nccl_library import search_paths

    libraries = search_paths()
    for library in libraries:
        include = Path(library).resolve().parent.parent / "include"
        if (include / "nccl.h").is_file():
            return include, Path(library).resolve()
    if not libraries:
        return "no NCCL wheel on sys.path (pip install nvidia-nccl-cu13) and no $PYGPU_NCCL_LIBRARY"
    return f"no nccl.h beside {', '.join(libraries)} (expected in ../include)"


def build(nvcc: str, build_dir: Path, include: Path, library: Path) -> Path:
    """Compiles halo_nccl.cu against that NCCL (run_group puts its folder on LD_LIBRARY_PATH)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    # The wheels ship libnccl.so.2 only: a libnccl.so beside the build lets -lnccl find it.
    link = build_dir / "libnccl.so"
    link.unlink(missing_ok=True)
    link.symlink_to(library)
    binary = build_dir / "halo_nccl"
    cmd = [nvcc, "-O3", "-std=c++17", "-arch=native", "-I", str(include), "-o", str(binary), str(SOURCE)]
    cmd += ["-L", str(build_dir), "-lnccl"]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return binary


def prepare(backend: str, explicit_binary: str | None, nvcc: str | None, build_dir: str | None) -> dict[str, Any]:
    """The C++ baseline to run ({"binary", "library"}), or {"skipped": why}. Builds it unless
    `explicit_binary` is given; run on one rank."""
    if backend != "cuda":
        return {"skipped": f"{backend} backend: the C++ baseline is NCCL on CUDA GPUs"}
    paths = nccl_paths()
    if isinstance(paths, str):
        return {"skipped": paths}
    include, library = paths
    if explicit_binary:
        return {"binary": str(Path(explicit_binary).resolve()), "library": str(library)}
    compiler = find_nvcc(nvcc)
    if compiler is None:
        return {"skipped": "no nvcc (--nvcc, $NVCC, PATH, /usr/local/cuda/bin/nvcc)"}
    folder = Path(build_dir) if build_dir else Path(tempfile.mkdtemp(prefix="halo-nccl-"))
    try:
        binary = build(compiler, folder, include, library)
    except subprocess.CalledProcessError as e:
        return {"skipped": f"nvcc failed: {(e.stderr or '').strip()[-2000:]}"}
    return {"binary": str(binary), "library": str(library), "nccl_include": str(include)}


def run_group(cpp: dict[str, Any], group: Any, device: int, n: int, iters: int, reps: int) -> list[dict[str, Any]]:
    """Every rank of the MPI group `group` starts its C++ rank on `device` and waits for it;
    returns every rank's result (its JSON, or {"error": ...}) on every rank."""
    rank, size = group.Get_rank(), group.Get_size()
    folder = group.bcast(tempfile.mkdtemp(prefix="halo-nccl-id-") if rank == 0 else None, root=0)
    cmd = [cpp["binary"], str(rank), str(size), str(device), str(Path(folder) / "nccl-id")]
    cmd += [str(n), str(iters), str(reps)]
    env = dict(os.environ)
    libdir = str(Path(cpp["library"]).parent)
    env["LD_LIBRARY_PATH"] = libdir + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    result: dict[str, Any]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        if done.returncode == 0:
            result = json.loads(done.stdout)
        else:
            result = {"error": f"exit status {done.returncode}: {done.stderr.strip()[-1000:]}"}
    except subprocess.TimeoutExpired:
        result = {"error": f"no result within {TIMEOUT} s (a rank that failed leaves the others waiting)"}
    except (OSError, ValueError) as e:
        result = {"error": f"{type(e).__name__}: {e}"}
    results: list[dict[str, Any]] = group.allgather(result)
    group.Barrier()
    if rank == 0:
        shutil.rmtree(folder, ignore_errors=True)
    return results
