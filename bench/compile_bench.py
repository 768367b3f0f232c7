"""Runtime compilation on a GPU machine: pygpu.compiler against its peers.

* cache hit, new process: from ``SourceModule(src)`` to a launchable function
  (``get_function``), in a fresh interpreter whose disk cache already holds the kernel,
  against CuPy's ``RawModule(code=src).get_function`` with its own warm disk cache;
* the cache hit's breakdown: where its time goes, step by step (``pygpu._toolchain.source_module.trace``),
  median per step over new processes, and the import of ``pygpu.compiler`` (not in the hit);
* cache miss: ``pygpu.compiler.compile(src, cache_dir=False)`` (and a whole
  ``SourceModule(..., cache_dir=False)``) against calling NVRTC directly through
  ``cuda.bindings.nvrtc`` with the options pygpu passes (``extern "C"``, ``--gpu-architecture=sm_XY``).

Each figure is the median of its samples, in milliseconds; a table goes to stdout
(``--json PATH`` also writes the numbers there). Run with the cuda backend:

    PYGPU_BACKEND=cuda python3 bench/compile_bench.py [--samples 15] [--json PATH]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import Any

SOURCE = """
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* y)
{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}
"""

# Each prints the seconds from constructing the module to holding the function, after the
# device is initialised (context creation is not part of either figure).
PYGPU_HIT = """
import sys, time
import pygpu
from pygpu.compiler import SourceModule
pygpu.mem_alloc(1)
source = sys.stdin.read()
t0 = time.perf_counter()
f = SourceModule(source).get_function("saxpy")
print(time.perf_counter() - t0)
"""

# The same, step by step: source_module.trace collects (step, time) pairs; printed as JSON
# [[step, seconds since the previous step], ...].
PYGPU_HIT_STEPS = """
import json, sys, time
t_import = time.perf_counter()
import pygpu
from pygpu import compiler
from pygpu._toolchain import source_module
t_imported = time.perf_counter()
pygpu.mem_alloc(1)
source = sys.stdin.read()
source_module.trace = []
t0 = time.perf_counter()
m = compiler.SourceModule(source)
t1 = time.perf_counter()
f = m.get_function("saxpy")
t2 = time.perf_counter()
steps, last = [["import pygpu.compiler (before the hit)", t_imported - t_import]], t0
for step, t in source_module.trace:
    steps.append([step, t - last])
    last = t
steps += [["get_function", t2 - t1], ["total: SourceModule -> function", t2 - t0]]
print(json.dumps(steps))
"""

CUPY_HIT = """
import sys, time
import cupy
cupy.zeros(1)
source = sys.stdin.read()
t0 = time.perf_counter()
# CuPy compiles as C++: the same extern "C" that SourceModule adds keeps the plain name.
f = cupy.RawModule(code='extern "C" {' + source + '}').get_function("saxpy")
print(time.perf_counter() - t0)
"""


def new_process_seconds(script: str, env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        input=SOURCE,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed")
    return float(done.stdout.strip().splitlines()[-1])


def hit_steps(samples: int, env: dict[str, str]) -> list[tuple[str, float]]:
    """The median of each step of a new process's cache hit, in ms (the cache already filled)."""
    runs: list[list[list[Any]]] = []
    for _ in range(samples):
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(PYGPU_HIT_STEPS)],
            input=SOURCE,
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=300,
            check=True,
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    names = [step for step, _ in runs[0]]
    return [(name, statistics.median(run[i][1] for run in runs) * 1e3) for i, name in enumerate(names)]


def in_new_process(script: str, env: dict[str, str]) -> Callable[[], float]:
    return lambda: new_process_seconds(script, env)


def median_ms(samples: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(samples)) * 1e3


def timed(call: Callable[[], object]) -> Callable[[], float]:
    def run() -> float:
        t0 = time.perf_counter()
        call()
        return time.perf_counter() - t0

    return run


def nvrtc_direct(source: str, options: list[bytes]) -> Callable[[], object]:
    nvrtc: Any = importlib.import_module("cuda.bindings.nvrtc")  # only on the GPU machine

    def check(result: tuple[Any, ...]) -> tuple[Any, ...]:
        if int(result[0]) != 0:
            raise RuntimeError(f"NVRTC failed: {result[0]}")
        return result

    def compile_once() -> bytes:
        _, program = check(nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], []))
        try:
            check(nvrtc.nvrtcCompileProgram(program, len(options), options))
            _, size = check(nvrtc.nvrtcGetCUBINSize(program))
            cubin = b" " * int(size)
            check(nvrtc.nvrtcGetCUBIN(program, cubin))
            return bytes(cubin)
        finally:
            nvrtc.nvrtcDestroyProgram(program)

    return compile_once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this file")
    parser.add_argument("--hit-only", action="store_true", help="only the cache hit and its breakdown (any backend)")
    args = parser.parse_args()

    import pygpu
    from pygpu import compiler
    from pygpu._toolchain import rtc

    results: dict[str, float | str] = {}
    steps: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="pygpu-compile-bench-") as folder:
        env = {"PYGPU_CACHE_DIR": os.path.join(folder, "pygpu"), "CUPY_CACHE_DIR": os.path.join(folder, "cupy")}
        for name, script in (("pygpu_hit_new_process", PYGPU_HIT), ("cupy_hit_new_process", CUPY_HIT)):
            try:
                new_process_seconds(script, env)  # fills the cache
                results[name] = median_ms(args.samples, in_new_process(script, env))
            except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
                results[name] = f"error: {e}"
        steps = hit_steps(args.samples, env)
    if args.hit_only:
        print_steps(steps, args.samples)
        print(f"cache hit, new process, SourceModule -> function: {results['pygpu_hit_new_process']} ms")
        return

    major, minor = pygpu.cudaDeviceProp(0).compute_capability
    library = rtc.find_nvrtc()
    results["nvrtc_library"] = library
    # The misses are sampled in turn (pygpu, SourceModule, NVRTC directly, pygpu, ...), so that
    # drift in the machine's speed affects all three alike.
    misses: dict[str, Callable[[], float]] = {
        "pygpu_miss_compile": timed(lambda: compiler.compile(SOURCE, cache_dir=False)),
        "pygpu_miss_source_module": timed(lambda: compiler.SourceModule(SOURCE, cache_dir=False).get_function("saxpy")),
    }
    try:
        arch = f"--gpu-architecture=sm_{major}{minor}".encode()
        direct = nvrtc_direct(f'extern "C" {{\n{SOURCE}\n}}\n', [arch])
        direct()
        misses["cuda_bindings_nvrtc"] = timed(direct)
    except Exception as e:  # noqa: BLE001
        results["cuda_bindings_nvrtc"] = f"error: {e}"
    samples: dict[str, list[float]] = {name: [] for name in misses}
    for _ in range(args.samples):
        for name, run in misses.items():
            samples[name].append(run())
    for name, values in samples.items():
        results[name] = statistics.median(values) * 1e3

    if args.json:
        with open(args.json, "w") as f:
            json.dump({**results, "hit_steps_ms": steps}, f, indent=2)
    device = pygpu.cudaDeviceProp(0).name
    print(f"runtime compilation, {device} (sm_{major}{minor}), NVRTC {library}, median of {args.samples}")
    print(f"{'figure':<58} {'ms':>10}")
    labels = {
        "pygpu_hit_new_process": "cache hit, new process: pygpu SourceModule -> function",
        "cupy_hit_new_process": "cache hit, new process: CuPy RawModule -> function",
        "pygpu_miss_compile": "cache miss: pygpu compiler.compile(cache_dir=False)",
        "pygpu_miss_source_module": "cache miss: pygpu SourceModule(cache_dir=False) -> function",
        "cuda_bindings_nvrtc": "NVRTC directly (cuda.bindings), same options",
    }
    for key, label in labels.items():
        value = results[key]
        print(f"{label:<58} {value:>10.3f}" if isinstance(value, float) else f"{label:<58} {value}")
    print_steps(steps, args.samples)


def print_steps(steps: list[tuple[str, float]], samples: int) -> None:
    print(f"\ncache hit, new process, step by step (median of {samples} processes per step)")
    for step, ms in steps:
        print(f"  {step:<56} {ms:>10.3f}")


if __name__ == "__main__":
    main()
