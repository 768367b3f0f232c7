"""Prints the memory figures of docs/reliability.md: device memory (mem_get_info) and peak
host RSS before and after 100k cycles of each kind, on the backend PYGPU_BACKEND names.
The pass/fail bounds live in tests/test_lifecycle.py; this reports the measured deltas."""

from __future__ import annotations

import gc
import json
import resource

import numpy as np

import pygpu

CYCLES = 100_000


def rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(name: str, body) -> dict:  # type: ignore[no-untyped-def]
    for i in range(1000):  # warm-up: first-use allocations and caches
        body(i)
    gc.collect()
    free0, rss0 = pygpu.mem_get_info()[0], rss_kib()
    for i in range(CYCLES):
        body(i)
    gc.collect()
    free1, rss1 = pygpu.mem_get_info()[0], rss_kib()
    return {"cycle": name, "cycles": CYCLES, "device_bytes_lost": free0 - free1, "peak_rss_growth_kib": rss1 - rss0}


def main() -> None:
    host = np.arange(16, dtype=np.float32)
    backend = pygpu.backend()

    def alloc(i: int) -> None:
        pygpu.mem_alloc(4096 + (i & 255))

    def transfer(i: int) -> None:
        pygpu.to_gpu(host).get()

    def view(i: int) -> None:
        g = pygpu.to_gpu(host)
        g[::2].T.reshape(8)

    def stream_event(i: int) -> None:
        s, e = pygpu.cudaStream_t(), pygpu.cudaEvent_t()
        pygpu.cudaEventRecord(e, s)

    def interop(i: int) -> None:
        g = pygpu.to_gpu(host)
        if backend == "host":
            g.__array_interface__
        else:
            g.__cuda_array_interface__
        pygpu.from_dlpack(g)
        g.__dlpack__()  # never consumed: the capsule's deleter frees it

    def device_properties(i: int) -> None:
        pygpu.cudaDeviceProp(0)

    results = [
        measure(n, f)
        for n, f in [
            ("mem_alloc/free", alloc),
            ("to_gpu/get", transfer),
            ("views", view),
            ("stream+event create/record/release", stream_event),
            ("CAI + DLPack export/consume", interop),
            ("cudaDeviceProp(0)", device_properties),
        ]
    ]
    print(json.dumps({"backend": backend, "results": results}, indent=1))


if __name__ == "__main__":
    main()
