"""Copy bandwidth between two devices: pygpu against cuda.bindings' cuMemcpyPeerAsync, in one
process, on the same buffers and stream, samples interleaved, medians of 7 samples.

    PYGPU_BACKEND=cuda python3 bench/peer_copy.py [--quick] [--json OUT.json]

For each direction (0 -> 1, 1 -> 0), size, and peer access on and off, it times
``pygpu.cudaMemcpyPeerAsync`` (what ``driver.memcpy_peer_async`` calls), ``GPUArray.copy_to``
(which also allocates the result from the pool) and cuda.bindings' ``cuMemcpyPeerAsync``: a
sample is ``reps`` copies queued on a stream of the source device, then its synchronize. It
prints a table (GB/s = 1e9 bytes/s, and pygpu / cuda.bindings) and one JSON object. Without
cuda.bindings (or on the host backend, with PYGPU_HOST_DEVICES=2) pygpu's figures only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import pygpu
import pygpu.driver as cuda

MIB = 1 << 20


def _bindings() -> Any:
    """cuda.bindings' driver module with the primary contexts, or None where it is absent."""
    if pygpu.backend() != "cuda":
        return None
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        return None
    return cu


def _check(result: Any) -> Any:
    if int(result[0]) != 0:
        raise RuntimeError(f"CUDA error {result[0]}")
    return result[1] if len(result) > 1 else None


def _sample(copy: Callable[[], object], finish: Callable[[], object], reps: int, nbytes: int) -> float:
    """GB/s of one sample: ``reps`` copies queued, then waited for."""
    t0 = time.perf_counter_ns()
    for _ in range(reps):
        copy()
    finish()
    return nbytes * reps / ((time.perf_counter_ns() - t0) / 1e9) / 1e9


def measure(src_dev: int, dst_dev: int, nbytes: int, samples: int, reps: int, cu: Any) -> dict[str, float]:
    """Median GB/s of each way of copying ``nbytes`` from ``src_dev`` to ``dst_dev``."""
    with pygpu.Device(dst_dev):
        dst = cuda.mem_alloc(nbytes)
    with pygpu.Device(src_dev):
        src = cuda.mem_alloc(nbytes)
        cuda.memcpy_htod(src, np.frombuffer(np.random.default_rng(0).bytes(nbytes), np.uint8))
        array = pygpu.GPUArray((nbytes,), np.uint8, gpudata=src)
        stream = cuda.Stream()
    ways: dict[str, Callable[[], object]] = {
        "pygpu": lambda: pygpu.cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, nbytes, stream),
        "pygpu copy_to": lambda: array.copy_to(dst_dev, stream=stream),
    }
    if cu is not None:
        contexts = {d: _check(cu.cuDevicePrimaryCtxRetain(_check(cu.cuDeviceGet(d)))) for d in (src_dev, dst_dev)}
        raw = cu.CUstream(stream.handle)
        ways["cuda.bindings"] = lambda: cu.cuMemcpyPeerAsync(
            int(dst), contexts[dst_dev], int(src), contexts[src_dev], nbytes, raw
        )
    results: dict[str, list[float]] = {name: [] for name in ways}
    with pygpu.Device(src_dev):
        for copy in ways.values():  # warm-up (and the pool's first block for copy_to)
            _sample(copy, stream.synchronize, 1, nbytes)
        for _ in range(samples):
            for name, copy in ways.items():
                results[name].append(_sample(copy, stream.synchronize, reps, nbytes))
    out = {name: float(statistics.median(values)) for name, values in results.items()}
    # The result must be the source's bytes, whichever way copied last.
    check = np.empty(min(nbytes, 4096), np.uint8)
    expect = np.empty_like(check)
    cuda.memcpy_dtoh(check, dst)
    cuda.memcpy_dtoh(expect, src)
    if not np.array_equal(check, expect):
        raise RuntimeError("the peer copy did not copy the source's bytes")
    return out


def set_peer_access(on: bool) -> None:
    for here, there in ((0, 1), (1, 0)):
        with pygpu.Device(here):
            try:
                (cuda.Context.enable_peer_access if on else cuda.Context.disable_peer_access)(there)
            except pygpu.CudaError as e:
                if e.code not in (704, 705):  # already enabled / not enabled
                    raise


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 MiB only, 3 samples (smoke runs)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    count = pygpu.cudaGetDeviceCount()[0]
    if count < 2:
        print(f"peer_copy: needs 2 devices, the {pygpu.backend()} backend has {count}", file=sys.stderr)
        return 2
    cu = _bindings()
    if cu is not None:
        _check(cu.cuInit(0))
    sizes = [MIB] if args.quick else [MIB, 64 * MIB, 256 * MIB]
    samples = 3 if args.quick else 7
    can_peer = cuda.Device(0).can_access_peer(cuda.Device(1))
    figures: dict[str, dict[str, float]] = {}
    for access in [True, False] if can_peer else [False]:
        set_peer_access(access)
        for src_dev, dst_dev in ((0, 1), (1, 0)):
            for nbytes in sizes:
                reps = max(1, min(50, (1024 * MIB) // nbytes)) if not args.quick else 2
                key = f"{src_dev}->{dst_dev} {nbytes // MIB} MiB peer access {'on' if access else 'off'}"
                figures[key] = measure(src_dev, dst_dev, nbytes, samples, reps, cu)
    set_peer_access(False)
    names = ["pygpu", "pygpu copy_to"] + (["cuda.bindings"] if cu is not None else [])
    print(f"{'copy':40s}" + "".join(f"{n + ' GB/s':>22s}" for n in names) + ("  pygpu/bindings" if cu else ""))
    for key, values in figures.items():
        row = f"{key:40s}" + "".join(f"{values[n]:22.1f}" for n in names)
        if cu is not None:
            row += f"  {values['pygpu'] / values['cuda.bindings']:14.3f}"
        print(row)
    devices = [cuda.Device(d).name() for d in (0, 1)]
    result = {"library": "pygpu", "backend": pygpu.backend(), "devices": devices, "peer_access": can_peer}
    result["figures"] = figures
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
