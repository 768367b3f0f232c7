"""pygpu's figures (see bench/common.py for the method). Runs on any backend:

    PYGPU_BACKEND=cuda python3 bench/pygpu_bench.py [--quick]   # prints one JSON object

Every figure is a function of (cfg, ctx) returning a positive number, listed in FIGURES
so that tests/test_bench_smoke.py can run each on the host backend.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Config, Results, bandwidth_gbs, loop_ns, per_call_us  # noqa: E402

import pygpu  # noqa: E402

LIBRARY = "pygpu"


class Context:
    """What the figures share: kernels, a stream, an event, small and large buffers."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.module = pygpu.load_kernels("testing")
        self.empty = self.module.get_function("empty_kernel")
        self.scale = self.module.get_function("scale_args")
        self.scale_prepared = self.module.get_function("scale_args").prepare("Pid")
        self.stream = pygpu.cudaStream_t()
        self.event = pygpu.cudaEvent_t()
        self.event_nt = pygpu.cudaEvent_t(2)  # cudaEventDisableTiming
        self.out = pygpu.mem_alloc(8)
        self.host8 = np.zeros(1, np.float64)
        self.i32 = np.int32(3)
        self.f64 = np.float64(2.0)
        self._big: dict[str, Any] = {}

    def ns(self, **extra: Any) -> dict[str, Any]:
        """The namespace a timed statement sees."""
        d: dict[str, Any] = {"pygpu": pygpu, "np": np, "c": self}
        d.update(extra)
        return d

    def sync(self) -> None:
        pygpu.cudaStreamSynchronize(self.stream).check()

    def big(self) -> dict[str, Any]:
        """Large buffers for the bandwidth figures, made once."""
        if not self._big:
            n = self.cfg.bandwidth_bytes
            pageable = np.ones(n, np.uint8)  # touched, so every page is resident
            pinned = pygpu.pagelocked_empty(n, np.uint8)
            pinned.fill(1)
            self._big = {
                "n": n,
                "pageable": pageable,
                "pinned": pinned,
                "d1": pygpu.mem_alloc(n),
                "d2": pygpu.mem_alloc(n),
            }
        return self._big


# --- per-call figures, µs -----------------------------------------------------------


def get_device(cfg: Config, c: Context) -> float:
    return per_call_us(cfg, "f()", c.ns(f=pygpu.cudaGetDevice))


def event_record(cfg: Config, c: Context) -> float:
    return per_call_us(cfg, "f(e, s)", c.ns(f=pygpu.cudaEventRecord, e=c.event, s=c.stream), after=c.sync)


def stream_sync_idle(cfg: Config, c: Context) -> float:
    c.sync()
    return per_call_us(cfg, "f(s)", c.ns(f=pygpu.cudaStreamSynchronize, s=c.stream))


def malloc_free_1mib(cfg: Config, c: Context) -> float:
    # The temporary allocation is freed as soon as it is dropped, as in PyCUDA.
    return per_call_us(cfg, "f(1048576)", c.ns(f=pygpu.mem_alloc))


def memcpy_htod_8b(cfg: Config, c: Context) -> float:
    return per_call_us(cfg, "f(d, a)", c.ns(f=pygpu.memcpy_htod, d=c.out, a=c.host8))


def memcpy_dtoh_8b(cfg: Config, c: Context) -> float:
    return per_call_us(cfg, "f(a, d)", c.ns(f=pygpu.memcpy_dtoh, d=c.out, a=c.host8))


def to_gpu_8b(cfg: Config, c: Context) -> float:
    return per_call_us(cfg, "f(a)", c.ns(f=pygpu.to_gpu, a=c.host8))  # type: ignore[attr-defined]


def get_8b(cfg: Config, c: Context) -> float:
    g = pygpu.to_gpu(c.host8)  # type: ignore[attr-defined]
    return per_call_us(cfg, "f()", c.ns(f=g.get))


def launch_empty(cfg: Config, c: Context) -> float:
    return per_call_us(cfg, "k(block=(1, 1, 1), grid=(1, 1), stream=s)", c.ns(k=c.empty, s=c.stream), after=c.sync)


def launch_args(cfg: Config, c: Context) -> float:
    return per_call_us(
        cfg,
        "k(d, i, x, block=(1, 1, 1), grid=(1, 1), stream=s)",
        c.ns(k=c.scale, d=c.out, i=c.i32, x=c.f64, s=c.stream),
        after=c.sync,
    )


def launch_args_prepared(cfg: Config, c: Context) -> float:
    return per_call_us(
        cfg,
        "k((1, 1), (1, 1, 1), s, d, 3, 2.0)",
        c.ns(k=c.scale_prepared.prepared_async_call, d=c.out, s=c.stream),
        after=c.sync,
    )


def graph_launch(cfg: Config, c: Context) -> float:
    c.stream.begin_capture()
    try:
        c.scale(c.out, c.i32, c.f64, block=(1, 1, 1), grid=(1, 1), stream=c.stream)
    finally:
        graph = c.stream.end_capture()
    exe = graph.instantiate()
    exe.launch(c.stream)
    c.sync()
    got = np.zeros(1)
    pygpu.memcpy_dtoh(got, c.out)
    if got[0] != 6.0:
        raise AssertionError(f"scale_args through the graph wrote {got[0]}, expected 6.0")
    return per_call_us(cfg, "f(s)", c.ns(f=exe.launch, s=c.stream), after=c.sync)


# --- bandwidth, GB/s ----------------------------------------------------------------


def htod_pageable_256mib(cfg: Config, c: Context) -> float:
    b = c.big()
    return bandwidth_gbs(cfg, lambda: pygpu.memcpy_htod(b["d1"], b["pageable"]), b["n"])


def dtoh_pageable_256mib(cfg: Config, c: Context) -> float:
    b = c.big()
    return bandwidth_gbs(cfg, lambda: pygpu.memcpy_dtoh(b["pageable"], b["d1"]), b["n"])


def htod_pinned_256mib(cfg: Config, c: Context) -> float:
    b = c.big()
    return bandwidth_gbs(cfg, lambda: pygpu.memcpy_htod(b["d1"], b["pinned"]), b["n"])


def dtoh_pinned_256mib(cfg: Config, c: Context) -> float:
    b = c.big()
    return bandwidth_gbs(cfg, lambda: pygpu.memcpy_dtoh(b["pinned"], b["d1"]), b["n"])


def dtod_256mib(cfg: Config, c: Context) -> float:
    b = c.big()
    # Counted as bytes read plus bytes written, as the DESIGN notes' 3.9 TB/s is.
    gbs = bandwidth_gbs(
        cfg,
        lambda: pygpu.memcpy_dtod(b["d2"], b["d1"], b["n"]),
        b["n"],
        finish=lambda: pygpu.cudaDeviceSynchronize().check(),
    )
    return 2 * gbs


FIGURES: dict[str, Callable[[Config, Context], float]] = {
    "get_device": get_device,
    "event_record": event_record,
    "stream_sync_idle": stream_sync_idle,
    "malloc_free_1mib": malloc_free_1mib,
    "memcpy_htod_8b": memcpy_htod_8b,
    "memcpy_dtoh_8b": memcpy_dtoh_8b,
    "to_gpu_8b": to_gpu_8b,
    "get_8b": get_8b,
    "launch_empty": launch_empty,
    "launch_args": launch_args,
    "launch_args_prepared": launch_args_prepared,
    "graph_launch": graph_launch,
    "htod_pageable_256mib": htod_pageable_256mib,
    "dtoh_pageable_256mib": dtoh_pageable_256mib,
    "htod_pinned_256mib": htod_pinned_256mib,
    "dtoh_pinned_256mib": dtoh_pinned_256mib,
    "dtod_256mib": dtod_256mib,
}

# Figures that need API another issue is adding; reported as missing until it exists.
NEEDS = {"to_gpu_8b": "to_gpu", "get_8b": "to_gpu"}


def available(name: str) -> bool:
    return name not in NEEDS or hasattr(pygpu, NEEDS[name])


# --- breakdown: where a call's time goes ----------------------------------------------


def breakdown(cfg: Config, c: Context) -> dict[str, float]:
    """Per-call µs of pieces and variants, to explain the figures above."""
    s, e = c.stream, c.event
    cases: dict[str, tuple[str, dict[str, Any], Callable[[], object] | None]] = {
        "python_builtin_len": ("f(())", {"f": len}, None),
        "pyo3_backend_name": ("f()", {"f": pygpu.backend}, None),
        "cudaGetLastError": ("f()", {"f": pygpu.cudaGetLastError}, None),
        "cudaStreamQuery_idle": ("f(s)", {"f": pygpu.cudaStreamQuery, "s": s}, None),
        "cudaStreamSynchronize_default_idle": ("f()", {"f": pygpu.cudaStreamSynchronize}, None),
        "cudaEventRecord_default_stream": (
            "f(e)",
            {"f": pygpu.cudaEventRecord, "e": e},
            lambda: pygpu.cudaDeviceSynchronize(),
        ),
        "cudaEventQuery_done": ("f(e)", {"f": pygpu.cudaEventQuery, "e": e}, None),
        "stream_handle_getter": ("s.handle", {"s": s}, None),
        "launch_empty_default_stream": (
            "k(block=(1, 1, 1), grid=(1, 1))",
            {"k": c.empty},
            lambda: pygpu.cudaDeviceSynchronize(),
        ),
        "launch_empty_block_int": ("k(block=1, grid=1, stream=s)", {"k": c.empty, "s": s}, c.sync),
        "launch_args_new_numpy_scalars": (
            "k(d, np.int32(3), np.float64(2.0), block=(1, 1, 1), grid=(1, 1), stream=s)",
            {"k": c.scale, "d": c.out, "s": s},
            c.sync,
        ),
        "launch_args_prepared_default_stream": (
            "k((1, 1), (1, 1, 1), d, 3, 2.0)",
            {"k": c.scale_prepared.prepared_call, "d": c.out},
            lambda: pygpu.cudaDeviceSynchronize(),
        ),
        "memcpy_htod_8b_stream": ("f(d, a, s)", {"f": pygpu.memcpy_htod, "d": c.out, "a": c.host8, "s": s}, c.sync),
        "numpy_zeros_1": ("z(1)", {"z": np.zeros}, None),
        "numpy_empty_1": ("z(1)", {"z": np.empty}, None),
        "mem_alloc_8b_and_free": ("f(8)", {"f": pygpu.mem_alloc}, None),
        "cudaEventRecord_timing_disabled": ("f(e, s)", {"f": pygpu.cudaEventRecord, "e": c.event_nt, "s": s}, c.sync),
    }
    out: dict[str, float] = {}
    for name, (stmt, extra, after) in cases.items():
        try:
            out[name] = per_call_us(cfg, stmt, c.ns(**extra), after=after)
        except Exception as exc:  # noqa: BLE001
            out[name] = float("nan")
            print(f"breakdown {name}: {exc}", file=sys.stderr)
    return out


def run(cfg: Config, with_breakdown: bool = True, skip_bandwidth: bool = False) -> Results:
    r = Results(LIBRARY)
    r.skip_bandwidth = skip_bandwidth
    r.notes["backend"] = pygpu.backend()
    r.notes["version"] = pygpu.__version__
    r.notes["loop_ns"] = loop_ns(cfg)
    c = Context(cfg)
    for name, fn in FIGURES.items():
        if not available(name):
            r.missing(name, f"pygpu.{NEEDS[name]} does not exist yet")
            continue
        r.measure(name, functools.partial(fn, cfg, c))
    if with_breakdown:
        r.notes["breakdown_us"] = breakdown(cfg, c)
    return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="short samples (smoke runs)")
    p.add_argument("--no-breakdown", action="store_true")
    p.add_argument("--skip-bandwidth", action="store_true", help="per-call figures only")
    a = p.parse_args()
    run(Config(quick=a.quick), with_breakdown=not a.no_breakdown, skip_bandwidth=a.skip_bandwidth).emit()


if __name__ == "__main__":
    main()
