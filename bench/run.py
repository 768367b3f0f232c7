"""pygpu against its peers, side by side in one run on a CUDA machine:

    PYGPU_BACKEND=cuda python3 bench/run.py --json OUT.json [--quick]

builds and runs the C++ baseline (bench/cpp/microbench.cu, with nvcc), runs pygpu's
figures (bench/pygpu_bench.py) and each peer's (bench/peers.py: CuPy, cuda.bindings,
cuda.core, PyCUDA) in its own process, times the imports, reads the wheel's size and the
build time measured on a development machine, runs bench/burgers.py if it exists, then
prints the table and writes OUT.json and OUT.md (the table as Markdown).

PyCUDA, if not importable, is built from its sdist carried in .wheels-bench/pycuda/ (with
its pure-Python dependencies as wheels) when nvcc and the Python headers are there.

On the development machine, `python3 bench/run.py --measure-build` clones the repository,
times kernels/build.sh and `maturin build --release` from clean, and writes
.wheels-bench/build-time.json, which a later run on the GPU machine reports.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from common import FIGURES  # noqa: E402

NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
WORK = os.environ.get("BENCH_WORK", "/tmp/pygpu-bench")
BENCH_WHEELS = os.path.join(REPO, ".wheels-bench")
BUILD_TIME_JSON = os.path.join(BENCH_WHEELS, "build-time.json")
COLUMNS = ["pygpu", "C++", "cupy", "cuda.bindings", "cuda.core", "pycuda"]
HEADERS = {
    "pygpu": "pygpu",
    "C++": "C++",
    "cupy": "CuPy",
    "cuda.bindings": "cuda.bindings",
    "cuda.core": "cuda.core",
    "pycuda": "PyCUDA",
}
PEERS = ["cupy", "cuda.bindings", "cuda.core", "pycuda"]

IMPORTS = {
    "bare": "pass",
    "numpy": "import numpy",
    "pygpu": "import pygpu",
    "numpy+pygpu": "import numpy; import pygpu",
    "cupy": "import cupy",
    "cuda.core": "import cuda.core",
    "cuda.bindings": "from cuda.bindings import runtime",
    "pycuda": "import pycuda.driver",
}


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def sh(
    cmd: list[str], timeout: float, env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def parse_json_line(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON object in the output")


# --- the machine ----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()}
    try:
        p = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], 30)
        info["gpu"] = p.stdout.strip()
    except Exception as e:  # noqa: BLE001
        info["gpu"] = f"nvidia-smi failed: {e}"
    info["python_include"] = sysconfig.get_paths().get("include")
    info["python_headers"] = {
        d: os.path.isfile(os.path.join(d, "Python.h"))
        for d in {
            sysconfig.get_paths().get("include") or "",
            f"/usr/include/python{sys.version_info[0]}.{sys.version_info[1]}",
        }
        if d
    }
    info["nvcc"] = NVCC if os.path.exists(NVCC) else None
    return info


# --- C++ --------------------------------------------------------------------------------------


def build_cpp() -> tuple[str | None, dict[str, Any]]:
    """The microbench binary: with the driver-API attribution figures if libcuda links."""
    if not os.path.exists(NVCC):
        return None, {"error": f"not measured: no nvcc at {NVCC}"}
    os.makedirs(WORK, exist_ok=True)
    exe = os.path.join(WORK, "microbench")
    src = os.path.join(HERE, "cpp", "microbench.cu")
    cuda_root = os.path.dirname(os.path.dirname(os.path.realpath(NVCC)))
    t0 = time.perf_counter()
    p = sh([NVCC, "-O3", "-arch=native", "-DWITH_DRIVER", "-o", exe, src, f"-L{cuda_root}/lib64/stubs", "-lcuda"], 300)
    info: dict[str, Any] = {"driver_breakdown": p.returncode == 0}
    if p.returncode != 0:
        info["driver_build_error"] = p.stderr[-500:]
        p = sh([NVCC, "-O3", "-arch=native", "-o", exe, src], 300)
        if p.returncode != 0:
            return None, {"error": f"nvcc failed: {p.stderr[-1500:]}"}
    info["nvcc_s"] = round(time.perf_counter() - t0, 1)
    return exe, info


def run_cpp(exe: str | None, build: dict[str, Any], args: list[str]) -> dict[str, Any]:
    if exe is None:
        return {"library": "C++", "figures": {}, "errors": {"*": build.get("error", "not built")}, "notes": {}}
    p = sh([exe] + args, 300)
    if p.returncode != 0:
        return {
            "library": "C++",
            "figures": {},
            "errors": {"*": f"microbench failed ({p.returncode}): {p.stderr[-1500:]}"},
            "notes": {},
        }
    r = parse_json_line(p.stdout)
    r["notes"].update(build)
    return r


def merge_rounds(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One library's rounds: each figure the median of its rounds' values."""
    first = results[0]
    values: dict[str, list[float]] = {}
    for r in results:
        for k, v in r.get("figures", {}).items():
            values.setdefault(k, []).append(v)
    merged = dict(first)
    merged["figures"] = {k: statistics.median(v) for k, v in values.items()}
    merged["round_values"] = values
    return merged


# --- PyCUDA from its sdist ------------------------------------------------------------------------


def pycuda_env(env: dict[str, str], paths: list[str]) -> dict[str, str]:
    e = dict(env)
    e["PYTHONPATH"] = os.pathsep.join(paths + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    return e


def prepare_pycuda(env: dict[str, str], timeout: float) -> tuple[dict[str, str] | None, dict[str, Any]]:
    """An environment in which `import pycuda.driver` works, and what it took."""
    info: dict[str, Any] = {}
    if sh([sys.executable, "-c", "import pycuda.driver"], 60, env=env).returncode == 0:
        info["source"] = "installed"
        return env, info
    sdists = sorted(glob.glob(os.path.join(BENCH_WHEELS, "pycuda", "pycuda-*.tar.gz")))
    if not sdists:
        info["error"] = "PyCUDA is not installed and no sdist was carried in .wheels-bench/pycuda/"
        return None, info
    include = sysconfig.get_paths().get("include") or ""
    info["python_include"] = include
    info["python_h"] = os.path.isfile(os.path.join(include, "Python.h"))
    if not info["python_h"]:
        info["error"] = f"no Python.h in {include}: the Python headers (python3-dev) are not installed"
        return None, info
    if not os.path.exists(NVCC):
        info["error"] = f"no nvcc at {NVCC}"
        return None, info
    site = os.path.join(WORK, "pycuda-site")
    src_root = os.path.join(WORK, "pycuda-src")
    shutil.rmtree(site, ignore_errors=True)
    shutil.rmtree(src_root, ignore_errors=True)
    os.makedirs(src_root)
    wheels = sorted(glob.glob(os.path.join(BENCH_WHEELS, "pycuda", "*.whl")))
    t0 = time.perf_counter()
    if wheels:
        p = sh(
            [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--target", site]
            + wheels,
            120,
        )
        if p.returncode != 0:
            info["error"] = f"installing PyCUDA's dependencies failed: {p.stderr[-800:]}"
            return None, info
    with tarfile.open(sdists[-1]) as tf:
        tf.extractall(src_root, filter="data")
    src = glob.glob(os.path.join(src_root, "pycuda-*"))[0]
    info["sdist"] = os.path.basename(sdists[-1])
    cuda_root = os.path.dirname(os.path.dirname(os.path.realpath(NVCC)))
    benv = pycuda_env(env, [site])
    benv["PATH"] = os.path.dirname(NVCC) + os.pathsep + benv.get("PATH", "")
    p = sh(
        [sys.executable, "configure.py", f"--cuda-root={cuda_root}", "--no-cuda-enable-curand"], 60, env=benv, cwd=src
    )
    if p.returncode != 0:
        info["error"] = f"configure.py failed: {(p.stdout + p.stderr)[-800:]}"
        return None, info
    jobs = str(os.cpu_count() or 4)
    try:
        p = sh([sys.executable, "setup.py", "build_ext", "-j", jobs, "--inplace"], timeout, env=benv, cwd=src)
    except subprocess.TimeoutExpired:
        info["error"] = f"building PyCUDA took longer than {timeout:.0f} s"
        return None, info
    info["build_s"] = round(time.perf_counter() - t0, 1)
    if p.returncode != 0:
        info["error"] = f"building PyCUDA failed: {(p.stdout + p.stderr)[-1500:]}"
        return None, info
    renv = pycuda_env(env, [src, site])
    p = sh([sys.executable, "-c", "import pycuda.driver, pycuda.autoprimaryctx; print(pycuda.VERSION)"], 60, env=renv)
    if p.returncode != 0:
        info["error"] = f"the built PyCUDA does not import: {p.stderr[-800:]}"
        return None, info
    info["source"] = f"built here from {info['sdist']} in {info['build_s']} s"
    return renv, info


# --- the Python libraries -------------------------------------------------------------------------


def run_script(args: list[str], env: dict[str, str], timeout: float, library: str) -> dict[str, Any]:
    try:
        p = sh([sys.executable] + args, timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"library": library, "figures": {}, "errors": {"*": f"timed out after {timeout:.0f} s"}, "notes": {}}
    if p.stderr.strip():
        log(f"{library} stderr: {p.stderr.strip()[-1500:]}")
    try:
        return parse_json_line(p.stdout)
    except ValueError:
        return {
            "library": library,
            "figures": {},
            "errors": {"*": f"failed ({p.returncode}): {p.stderr[-1500:]}"},
            "notes": {},
        }


def time_imports(envs: dict[str, dict[str, str] | None], rounds: int) -> dict[str, Any]:
    """Median wall time of a fresh `python3 -c STMT`, in ms, and each over bare Python."""
    samples: dict[str, list[float]] = {k: [] for k in IMPORTS}
    failed: dict[str, str] = {}
    for _ in range(rounds):  # interleaved, so drifts hit every statement alike
        for name, stmt in IMPORTS.items():
            env = envs.get(name.split("+")[-1], envs["default"])
            if env is None or name in failed:
                continue
            t0 = time.perf_counter_ns()
            p = subprocess.run([sys.executable, "-c", stmt], env=env, capture_output=True, text=True)
            t1 = time.perf_counter_ns()
            if p.returncode != 0:
                failed[name] = p.stderr.strip()[-300:]
                continue
            samples[name].append((t1 - t0) / 1e6)
    med = {k: statistics.median(v) for k, v in samples.items() if v}
    out: dict[str, Any] = {"median_ms": med, "failed": failed}
    bare = med.get("bare")
    if bare is not None:
        out["over_bare_ms"] = {k: v - bare for k, v in med.items() if k != "bare"}
    if "numpy+pygpu" in med and "numpy" in med:
        out["pygpu_over_numpy_ms"] = med["numpy+pygpu"] - med["numpy"]
    return out


def import_breakdown(env: dict[str, str]) -> dict[str, float]:
    """`python -X importtime -c 'import pygpu'`: cumulative ms of the top-level imports."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pygpu"], env=env, capture_output=True, text=True
    )
    out: dict[str, float] = {}
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:") :].split("|")
        try:
            cumulative = int(parts[1].strip()) / 1e3
        except ValueError:
            continue
        name = parts[2].rstrip()
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 2 and cumulative >= 0.3:
            out[name.strip() if depth <= 1 else "  " + name.strip()] = round(cumulative, 2)
    return out


# --- the table -------------------------------------------------------------------------------------

TRIVIAL_ABSOLUTE = {"get_device"}
TRIVIAL_OVERHEAD = {"event_record", "stream_sync_idle", "malloc_free_1mib", "memcpy_htod_8b", "memcpy_dtoh_8b"}
LAUNCHES = {"launch_empty", "launch_args", "launch_args_prepared", "graph_launch"}
COPY_BASELINE = {"to_gpu_8b": "memcpy_htod_8b", "get_8b": "memcpy_dtoh_8b"}
PINNED = {"htod_pinned_256mib", "dtoh_pinned_256mib"}
PAGEABLE = {"htod_pageable_256mib", "dtoh_pageable_256mib"}


def judge(name: str, v: float | None, cpp: float | None, peers: list[float]) -> tuple[str, bool | None]:
    best_peer = min(peers) if peers else None
    below_peers = best_peer is None or (v is not None and v < best_peer)
    if name in TRIVIAL_ABSOLUTE:
        ok = v is not None and v <= 0.10 and below_peers
        return "≤ 0.10 µs, < peers", ok if v is not None else None
    if name in TRIVIAL_OVERHEAD:
        if v is None or cpp is None:
            return "≤ C++ + 0.10 µs, < peers", None
        return "≤ C++ + 0.10 µs, < peers", v - cpp <= 0.10 and below_peers
    if name in LAUNCHES:
        return "≤ C++ + 0.5 µs", None if v is None or cpp is None else v <= cpp + 0.5
    if name in COPY_BASELINE:
        return "≤ 1.3× C++ memcpy", None if v is None or cpp is None else v <= 1.3 * cpp
    if name in PINNED:
        return "≥ 97% of C++", None if v is None or cpp is None else v >= 0.97 * cpp
    if name in PAGEABLE:
        return "≥ C++ (goal 2×)", None if v is None or cpp is None else v >= cpp
    return "–", None


def build_rows(libs: dict[str, dict[str, Any]], extra: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, (label, unit, better) in FIGURES.items():
        values: dict[str, float | None] = {lib: libs.get(lib, {}).get("figures", {}).get(name) for lib in COLUMNS}
        if name in COPY_BASELINE:  # C++ has no array type: its baseline is the plain cudaMemcpy
            values["C++"] = libs.get("C++", {}).get("figures", {}).get(COPY_BASELINE[name])
            label += " (C++: cudaMemcpy)"
        rows.append(row(name, label, unit, better, values))
    imp = extra.get("imports", {}).get("over_bare_ms", {})
    values = {lib: imp.get(lib) for lib in COLUMNS}
    values["C++"] = None
    rows.append(row("import_ms", "import, over bare Python", "ms", "lower", values))
    wheel = extra.get("wheel", {})
    if wheel.get("bytes"):
        rows.append(row("wheel_mb", "wheel size", "MB", "lower", {"pygpu": wheel["bytes"] / 1e6}))
    build = extra.get("build", {})
    for key, label in (
        ("maturin_build_release_s", "build from clean: maturin build --release"),
        ("kernels_build_s", "build from clean: kernels/build.sh"),
    ):
        if build.get(key):
            rows.append(row(key, label + f" ({build.get('cores', '?')} cores)", "s", "lower", {"pygpu": build[key]}))
    return rows


def row(name: str, label: str, unit: str, better: str, values: dict[str, float | None]) -> dict[str, Any]:
    v, cpp = values.get("pygpu"), values.get("C++")
    peer_vals: dict[str, float] = {p: pv for p in PEERS if (pv := values.get(p)) is not None}
    best_peer = None
    if peer_vals:
        best_peer = (min if better == "lower" else max)(peer_vals, key=peer_vals.__getitem__)
    if name == "import_ms":
        target, ok = "≤ 20 ms", None if v is None else v <= 20
    elif name == "wheel_mb":
        target, ok = "≤ 2 MB", None if v is None else v <= 2.0
    elif better == "lower":
        target, ok = judge(name, v, cpp, list(peer_vals.values()))
    else:
        target, ok = judge(name, v, cpp, [])
    return {
        "figure": name,
        "label": label,
        "unit": unit,
        "better": better,
        "values": values,
        "ratio_cpp": (v / cpp) if v is not None and cpp else None,
        "best_peer": best_peer,
        "ratio_best_peer": (v / peer_vals[best_peer]) if v is not None and best_peer else None,
        "target": target,
        "pass": ok,
    }


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "–"
    if unit == "µs":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    if unit in ("GB/s", "ms", "s"):
        return f"{v:.1f}"
    return f"{v:.2f}"


def table(rows: list[dict[str, Any]]) -> list[list[str]]:
    head = ["figure", "unit"] + [HEADERS[c] for c in COLUMNS] + ["×C++", "×best peer", "target", "result"]
    out = [head]
    for r in rows:
        ratio_peer = "–" if r["ratio_best_peer"] is None else f"{r['ratio_best_peer']:.2f} ({HEADERS[r['best_peer']]})"
        result = {True: "pass", False: "MISS", None: "–"}[r["pass"]]
        out.append(
            [r["label"], r["unit"]]
            + [fmt(r["values"].get(c), r["unit"]) for c in COLUMNS]
            + ["–" if r["ratio_cpp"] is None else f"{r['ratio_cpp']:.2f}", ratio_peer, r["target"], result]
        )
    return out


def print_table(t: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in t) for i in range(len(t[0]))]
    lines = []
    for k, r in enumerate(t):
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(t: list[list[str]]) -> str:
    lines = ["| " + " | ".join(t[0]) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(t[0]))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in t[1:]]
    return "\n".join(lines)


# --- build time (development machine) ----------------------------------------------------------------


def measure_build(clone: str, target: str) -> dict[str, Any]:
    shutil.rmtree(clone, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", REPO, clone], check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
    ).stdout.strip()
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    t0 = time.perf_counter()
    k = subprocess.run(["bash", "kernels/build.sh"], cwd=clone, env=env, capture_output=True, text=True)
    t1 = time.perf_counter()
    m = subprocess.run(
        [sys.executable, "-m", "maturin", "build", "--release", "--out", os.path.join(clone, "wheels")],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    t2 = time.perf_counter()
    out: dict[str, Any] = {
        "commit": commit,
        "cores": os.cpu_count(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kernels_build_s": round(t1 - t0, 1),
        "kernels_ok": k.returncode == 0,
        "maturin_build_release_s": round(t2 - t1, 1),
        "maturin_ok": m.returncode == 0,
        "note": "fresh clone and CARGO_TARGET_DIR; kernels/build.sh includes installing its pinned CUDA toolchains from PyPI "
        "into the clone's kernels/.toolchain; the machine may have been shared with other builds",
    }
    if k.returncode != 0:
        out["kernels_error"] = k.stderr[-800:]
    if m.returncode != 0:
        out["maturin_error"] = m.stderr[-800:]
    whl = sorted(glob.glob(os.path.join(clone, "wheels", "*.whl")))
    if whl:
        out["wheel"] = os.path.basename(whl[-1])
        out["wheel_bytes"] = os.path.getsize(whl[-1])
        base = os.path.join(BENCH_WHEELS, "base")
        os.makedirs(base, exist_ok=True)
        for old in glob.glob(os.path.join(base, "*.whl")):
            os.remove(old)
        shutil.copy(whl[-1], base)
    return out


# --- main ----------------------------------------------------------------------------------------


def wheel_info() -> dict[str, Any]:
    for pattern in (os.path.join(BENCH_WHEELS, "pygpu-*.whl"), os.path.join(REPO, "wheels", "pygpu-*.whl")):
        found = sorted(glob.glob(pattern))
        if found:
            return {"file": os.path.relpath(found[-1], REPO), "bytes": os.path.getsize(found[-1])}
    return {}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="write the results here (and the Markdown table next to it, .md)")
    p.add_argument("--md", help="write the Markdown table here (default: the --json path with .md)")
    p.add_argument("--quick", action="store_true", help="short samples and 1 MiB copies: a smoke run")
    p.add_argument(
        "--skip", nargs="*", default=[], help="libraries to leave out (C++, cupy, cuda.bindings, cuda.core, pycuda)"
    )
    p.add_argument("--pycuda-build-timeout", type=float, default=170)
    p.add_argument("--burgers-timeout", type=float, default=150)
    p.add_argument("--budget", type=float, help="seconds for the whole run: bench/burgers.py (last) gets what is left")
    p.add_argument("--import-rounds", type=int, default=7)
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat the per-call figures of every library this often, "
        "alternating the order; each figure is the median of its rounds",
    )
    p.add_argument(
        "--also-pygpu",
        action="append",
        default=[],
        metavar="LABEL=SITE",
        help="also run pygpu_bench.py with SITE first on PYTHONPATH (e.g. the last commit's wheel), as LABEL",
    )
    p.add_argument(
        "--measure-build",
        action="store_true",
        help="development machine: time a clean build, write .wheels-bench/build-time.json",
    )
    a = p.parse_args()

    if a.measure_build:
        result = measure_build("/tmp/pygpu-clean", "/tmp/pygpu-clean-target")
        os.makedirs(BENCH_WHEELS, exist_ok=True)
        with open(BUILD_TIME_JSON, "w") as f:
            json.dump(result, f, indent=1)
        print(json.dumps(result, indent=1))
        return 0

    started = time.perf_counter()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("PYGPU_BACKEND", "cuda")
    # numpy's OpenBLAS threads spin on the cores after numpy starts; on a 16-core H200 host that
    # made every Python library's per-call figures bimodal (3.8 or 5.0 µs for one launch, by
    # process). No figure here uses BLAS, so each process gets one BLAS thread.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    quick = ["--quick"] if a.quick else []
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 bench/run.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "method": "per-call figures: median of 7 samples, each many calls (timeit loop, perf_counter_ns), async work "
        "synchronized at the end of each sample and counted; bandwidth: median of 7 samples of 3 copies of 256 MiB, "
        "GB = 1e9 bytes, D2D counts read + write; imports: median of fresh interpreters; "
        f"OPENBLAS_NUM_THREADS={env['OPENBLAS_NUM_THREADS']} in every process",
    }
    libs: dict[str, dict[str, Any]] = {}

    # PyCUDA first: its build must not overlap any timing.
    envs: dict[str, dict[str, str] | None] = {"default": env}
    if "pycuda" not in a.skip:
        log("preparing PyCUDA")
        penv, pinfo = prepare_pycuda(env, a.pycuda_build_timeout)
        report["pycuda_build"] = pinfo
        envs["pycuda"] = penv
        log(f"PyCUDA: {pinfo.get('source') or pinfo.get('error')}")
    exe, cpp_build = (None, {"error": "skipped"}) if "C++" in a.skip else build_cpp()
    jobs: list[tuple[str, Any]] = []
    if "C++" not in a.skip:
        jobs.append(("C++", None))
    jobs.append(("pygpu", None))
    for spec in a.also_pygpu:
        label, _, site = spec.partition("=")
        jobs.append((label, site))
    for peer in PEERS:
        if peer in a.skip:
            continue
        if envs.get(peer, env) is None:
            why = report.get("pycuda_build", {}).get("error", "unavailable")
            libs[peer] = {"library": peer, "figures": {}, "errors": {"*": f"not measured: {why}"}, "notes": {}}
            continue
        jobs.append((peer, None))
    rounds: dict[str, list[dict[str, Any]]] = {}
    for k in range(max(1, a.rounds)):
        later = ["--skip-bandwidth"] if k > 0 else []
        for name, site in jobs if k % 2 == 0 else list(reversed(jobs)):
            log(f"round {k + 1}: {name}")
            if name == "C++":
                res = run_cpp(exe, cpp_build, quick + later)
            elif name == "pygpu" or site is not None:
                jenv = env if site is None else pycuda_env(env, [site])
                res = run_script(
                    [os.path.join(HERE, "pygpu_bench.py")] + quick + later + (["--no-breakdown"] if k > 0 else []),
                    jenv,
                    600,
                    name,
                )
            else:
                res = run_script(
                    [os.path.join(HERE, "peers.py"), name] + quick + later, envs.get(name, env) or env, 300, name
                )
            rounds.setdefault(name, []).append(res)
    for name, results in rounds.items():
        libs[name] = merge_rounds(results)
    report["rounds"] = max(1, a.rounds)
    log("imports")
    report["imports"] = time_imports(envs, 3 if a.quick else a.import_rounds)
    report["imports"]["pygpu_importtime_ms"] = import_breakdown(env)
    report["wheel"] = wheel_info()
    if os.path.isfile(BUILD_TIME_JSON):
        with open(BUILD_TIME_JSON) as f:
            report["build"] = json.load(f)
    burgers = os.path.join(HERE, "burgers.py")
    if os.path.isfile(burgers) and "burgers" not in a.skip:
        log("burgers")
        out = os.path.join(WORK, "burgers.json")
        os.makedirs(WORK, exist_ok=True)
        limit = a.burgers_timeout
        if a.budget:
            limit = min(limit, max(20.0, a.budget - (time.perf_counter() - started) - 10))
        try:
            b = sh([sys.executable, burgers, "--json", out] + quick, limit, env=env)
            if b.returncode == 0 and os.path.isfile(out):
                with open(out) as f:
                    report["burgers"] = json.load(f)
                print(b.stdout, end="")
            else:
                report["burgers"] = {
                    "error": f"bench/burgers.py failed ({b.returncode}): {(b.stdout + b.stderr)[-1500:]}"
                }
        except subprocess.TimeoutExpired:
            report["burgers"] = {
                "error": f"bench/burgers.py took longer than {limit:.0f} s (the time left in this run)"
            }
    report["libraries"] = libs
    rows = build_rows(libs, report)
    report["figures"] = rows
    report["wall_s"] = round(time.perf_counter() - started, 1)

    device = libs.get("C++", {}).get("notes", {}).get("device") or report["machine"].get("gpu", "?")
    t = table(rows)
    text = print_table(t)
    print(f"\npygpu benchmarks on {device} ({report['date']})\n")
    print(text)
    missing = {lib: r.get("errors", {}) for lib, r in libs.items() if r.get("errors")}
    if missing:
        print("\nnot measured / errors:")
        for lib, errs in missing.items():
            for k, v in errs.items():
                print(f"  {lib}.{k}: {v}")
    md = [
        "# pygpu benchmarks",
        "",
        f"- device: {device}",
        f"- date: {report['date']}",
        f"- command: `{report['command']}`",
        f"- method: {report['method']}",
        "",
        markdown(t),
        "",
    ]
    imp = report["imports"]
    md += ["## imports (ms, fresh interpreter, median)", "", "```", json.dumps(imp, indent=1), "```", ""]
    if "burgers" in report:
        md += ["## Burgers (bench/burgers.py)", "", "```", json.dumps(report["burgers"], indent=1)[:20000], "```", ""]
    if "pycuda_build" in report:
        md += ["## PyCUDA", "", "```", json.dumps(report["pycuda_build"], indent=1), "```", ""]
    if missing:
        md += (
            ["## not measured / errors", ""]
            + [f"- {lib}.{k}: {v}" for lib, errs in missing.items() for k, v in errs.items()]
            + [""]
        )
    ab = [label for label, _, _ in (spec.partition("=") for spec in a.also_pygpu)]
    if ab:
        ab_lines = ["## pygpu against other builds (same run, interleaved rounds)", ""]
        head = ["figure", "pygpu"] + ab
        ab_lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        for fig, (flabel, unit, _) in FIGURES.items():
            vals = [libs.get(lib, {}).get("figures", {}).get(fig) for lib in ["pygpu"] + ab]
            ab_lines.append("| " + " | ".join([f"{flabel} ({unit})"] + [fmt(v, unit) for v in vals]) + " |")
        md += ab_lines + [""]
        print("\n" + "\n".join(ab_lines))
    md_text = "\n".join(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
        md_path = a.md or os.path.splitext(a.json)[0] + ".md"
        with open(md_path, "w") as f:
            f.write(md_text)
        log(f"wrote {a.json} and {md_path} in {report['wall_s']} s")
    elif a.md:
        with open(a.md, "w") as f:
            f.write(md_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
