"""The peers' figures, measured the way bench/pygpu_bench.py measures pygpu's:

    python3 bench/peers.py LIBRARY [--quick]    # cupy | cuda.bindings | cuda.core | pycuda

Each library runs in its own process (PyCUDA makes its own context). Every library uses
its idiomatic calls; where a library has no counterpart to a figure it is left out (the
table shows "–"), with the reason in "errors". Kernels come from the PTX that pygpu ships
(python/pygpu/kernels/testing.ptx, kernels/testing.cu), never from the libraries' own JIT.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Config, Results, bandwidth_gbs, loop_ns, per_call_us, ptx_path  # noqa: E402

PEERS = ("cupy", "cuda.bindings", "cuda.core", "pycuda")


def big_host(n: int) -> np.ndarray:
    a = np.ones(n, np.uint8)  # touched: every page resident
    return a


# --- CuPy -------------------------------------------------------------------------------


def run_cupy(cfg: Config, r: Results) -> None:
    import cupy
    import cupyx

    rt = cupy.cuda.runtime
    r.notes["version"] = cupy.__version__
    mod = cupy.RawModule(path=ptx_path())
    empty = mod.get_function("empty_kernel")
    scale = mod.get_function("scale_args")
    s = cupy.cuda.Stream(non_blocking=False)
    ev = cupy.cuda.Event()
    out = cupy.zeros(1, cupy.float64)
    host8 = np.zeros(1, np.float64)
    i32, f64 = np.int32(3), np.float64(2.0)
    ns: dict[str, Any] = {
        "rt": rt,
        "cupy": cupy,
        "s": s,
        "ev": ev,
        "out": out,
        "host8": host8,
        "empty": empty,
        "scale": scale,
        "i32": i32,
        "f64": f64,
        "np": np,
    }

    r.measure("get_device", lambda: per_call_us(cfg, "f()", {"f": rt.getDevice}))
    r.measure("event_record", lambda: per_call_us(cfg, "ev.record(s)", ns, after=s.synchronize))
    r.measure("stream_sync_idle", lambda: per_call_us(cfg, "s.synchronize()", ns))
    # Raw cudaMalloc/cudaFree; cupy.empty would use CuPy's pool instead (see notes).
    r.measure(
        "malloc_free_1mib", lambda: per_call_us(cfg, "free(malloc(1048576))", {"free": rt.free, "malloc": rt.malloc})
    )
    ptr, hptr = out.data.ptr, host8.ctypes.data
    r.measure("memcpy_htod_8b", lambda: per_call_us(cfg, "f(d, h, 8, 1)", {"f": rt.memcpy, "d": ptr, "h": hptr}))
    r.measure("memcpy_dtoh_8b", lambda: per_call_us(cfg, "f(h, d, 8, 2)", {"f": rt.memcpy, "d": ptr, "h": hptr}))
    r.measure("to_gpu_8b", lambda: per_call_us(cfg, "f(host8)", {"f": cupy.asarray, "host8": host8}))
    g = cupy.asarray(host8)
    r.measure("get_8b", lambda: per_call_us(cfg, "f()", {"f": g.get}))
    s.use()  # RawKernel launches on the current stream
    r.measure("launch_empty", lambda: per_call_us(cfg, "empty((1,), (1,), ())", ns, after=s.synchronize))
    r.measure("launch_args", lambda: per_call_us(cfg, "scale((1,), (1,), (out, i32, f64))", ns, after=s.synchronize))
    r.missing("launch_args_prepared", "CuPy has no prepared call")

    def graph() -> float:
        s.begin_capture()
        scale((1,), (1,), (out, i32, f64))
        gr = s.end_capture()
        gr.launch(s)
        s.synchronize()
        if float(out.get()[0]) != 6.0:
            raise AssertionError("graph replay wrote the wrong value")
        return per_call_us(cfg, "f(s)", {"f": gr.launch, "s": s}, after=s.synchronize)

    r.measure("graph_launch", graph)
    cupy.cuda.Stream.null.use()
    if r.skip_bandwidth:
        return
    n = cfg.bandwidth_bytes
    pageable = big_host(n)
    pinned = cupyx.empty_pinned(n, np.uint8)
    pinned.fill(1)
    d1 = cupy.cuda.alloc(n)
    d2 = cupy.cuda.alloc(n)
    memcpy = rt.memcpy
    r.measure("htod_pageable_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(d1.ptr, pageable.ctypes.data, n, 1), n))
    r.measure("dtoh_pageable_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(pageable.ctypes.data, d1.ptr, n, 2), n))
    r.measure("htod_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(d1.ptr, pinned.ctypes.data, n, 1), n))
    r.measure("dtoh_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(pinned.ctypes.data, d1.ptr, n, 2), n))
    r.measure(
        "dtod_256mib",
        lambda: 2 * bandwidth_gbs(cfg, lambda: memcpy(d2.ptr, d1.ptr, n, 3), n, finish=rt.deviceSynchronize),
    )
    r.notes["breakdown_us"] = {
        "cupy_empty_8b_pool": _safe(lambda: per_call_us(cfg, "f(1, np.float64)", {"f": cupy.empty, "np": np})),
        "launch_args_new_numpy_scalars": _safe(
            lambda: per_call_us(
                cfg,
                "scale((1,), (1,), (out, np.int32(3), np.float64(2.0)), stream=None)",
                ns,
                after=rt.deviceSynchronize,
            )
        ),
    }


# --- cuda.bindings ------------------------------------------------------------------------


def _check(result: Any) -> Any:
    err = result[0]
    if int(err) != 0:
        raise RuntimeError(f"CUDA error {err}")
    return result[1] if len(result) == 2 else result[1:]


def run_bindings(cfg: Config, r: Results) -> None:
    from cuda.bindings import driver as cu
    from cuda.bindings import runtime as rt

    try:
        from importlib.metadata import version

        r.notes["version"] = version("cuda-bindings")
    except Exception:  # noqa: BLE001
        pass
    _check(rt.cudaSetDevice(0))
    _check(rt.cudaFree(0))  # the primary context becomes current
    with open(ptx_path(), "rb") as f:
        ptx = f.read() + b"\0"
    module = _check(cu.cuModuleLoadData(ptx))
    empty = _check(cu.cuModuleGetFunction(module, b"empty_kernel"))
    scale = _check(cu.cuModuleGetFunction(module, b"scale_args"))
    s = _check(cu.cuStreamCreate(0))
    ev = _check(rt.cudaEventCreate())
    out = _check(rt.cudaMalloc(8))
    host8 = np.zeros(1, np.float64)
    H2D, D2H, D2D = (
        rt.cudaMemcpyKind.cudaMemcpyHostToDevice,
        rt.cudaMemcpyKind.cudaMemcpyDeviceToHost,
        rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice,
    )
    sync = lambda: _check((rt.cudaStreamSynchronize(s)[0], None))  # noqa: E731
    ns: dict[str, Any] = {
        "rt": rt,
        "cu": cu,
        "s": s,
        "ev": ev,
        "out": out,
        "h": host8.ctypes.data,
        "H2D": H2D,
        "D2H": D2H,
        "empty": empty,
        "scale": scale,
        "ct": ctypes,
        "launch": cu.cuLaunchKernel,
    }
    r.measure("get_device", lambda: per_call_us(cfg, "f()", {"f": rt.cudaGetDevice}))
    r.measure("event_record", lambda: per_call_us(cfg, "rt.cudaEventRecord(ev, s)", ns, after=sync))
    r.measure("stream_sync_idle", lambda: per_call_us(cfg, "rt.cudaStreamSynchronize(s)", ns))
    r.measure("malloc_free_1mib", lambda: per_call_us(cfg, "f(m(1048576)[1])", {"f": rt.cudaFree, "m": rt.cudaMalloc}))
    r.measure("memcpy_htod_8b", lambda: per_call_us(cfg, "rt.cudaMemcpy(out, h, 8, H2D)", ns))
    r.measure("memcpy_dtoh_8b", lambda: per_call_us(cfg, "rt.cudaMemcpy(h, out, 8, D2H)", ns))
    r.missing("to_gpu_8b", "cuda.bindings has no array type")
    r.missing("get_8b", "cuda.bindings has no array type")
    r.measure("launch_empty", lambda: per_call_us(cfg, "launch(empty, 1, 1, 1, 1, 1, 1, 0, s, 0, 0)", ns, after=sync))
    # The documented way to pass values: ((values), (ctypes types)), packed on every call.
    r.measure(
        "launch_args",
        lambda: per_call_us(
            cfg,
            "launch(scale, 1, 1, 1, 1, 1, 1, 0, s, ((out, 3, 2.0), (ct.c_void_p, ct.c_int, ct.c_double)), 0)",
            ns,
            after=sync,
        ),
    )
    # The fastest way: kernelParams packed once by the caller (a void** as an int).
    vals = (ctypes.c_uint64(int(out)), ctypes.c_int(3), ctypes.c_double(2.0))
    params = (ctypes.c_void_p * 3)(*[ctypes.addressof(v) for v in vals])
    ns["params"] = ctypes.addressof(params)
    r.measure(
        "launch_args_prepared",
        lambda: per_call_us(cfg, "launch(scale, 1, 1, 1, 1, 1, 1, 0, s, params, 0)", ns, after=sync),
    )

    def graph() -> float:
        _check((rt.cudaStreamBeginCapture(s, rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal)[0], None))
        _check((cu.cuLaunchKernel(scale, 1, 1, 1, 1, 1, 1, 0, s, ns["params"], 0)[0], None))
        g = _check(rt.cudaStreamEndCapture(s))
        exe = _check(rt.cudaGraphInstantiate(g, 0))
        return per_call_us(cfg, "f(exe, s)", {"f": rt.cudaGraphLaunch, "exe": exe, "s": s}, after=sync)

    r.measure("graph_launch", graph)
    if r.skip_bandwidth:
        return
    n = cfg.bandwidth_bytes
    pageable = big_host(n)
    pinned = _check(rt.cudaMallocHost(n))
    ctypes.memset(pinned, 1, n)
    d1 = _check(rt.cudaMalloc(n))
    d2 = _check(rt.cudaMalloc(n))
    memcpy = rt.cudaMemcpy
    pa = pageable.ctypes.data
    r.measure("htod_pageable_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(d1, pa, n, H2D), n))
    r.measure("dtoh_pageable_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(pa, d1, n, D2H), n))
    r.measure("htod_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(d1, pinned, n, H2D), n))
    r.measure("dtoh_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: memcpy(pinned, d1, n, D2H), n))
    r.measure(
        "dtod_256mib",
        lambda: 2 * bandwidth_gbs(cfg, lambda: memcpy(d2, d1, n, D2D), n, finish=rt.cudaDeviceSynchronize),
    )
    r.notes["breakdown_us"] = {
        "cuCtxGetCurrent": _safe(lambda: per_call_us(cfg, "f()", {"f": cu.cuCtxGetCurrent})),
        "cudaGetLastError": _safe(lambda: per_call_us(cfg, "f()", {"f": rt.cudaGetLastError})),
        "cudaStreamQuery_idle": _safe(lambda: per_call_us(cfg, "f(s)", {"f": rt.cudaStreamQuery, "s": s})),
    }


# --- cuda.core ------------------------------------------------------------------------------


def run_core(cfg: Config, r: Results) -> None:
    import cuda.core as cc
    from cuda.core import Device, EventOptions, LaunchConfig, LegacyPinnedMemoryResource, ObjectCode, launch

    r.notes["version"] = getattr(cc, "__version__", "?")
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    obj = ObjectCode.from_ptx(open(ptx_path(), "rb").read())
    empty = obj.get_kernel("empty_kernel")
    scale = obj.get_kernel("scale_args")
    cfg1 = LaunchConfig(grid=1, block=1)
    out = dev.allocate(8, stream=s)
    # Timing enabled, as cudaEventCreate's default (the others' events) is; cuda.core's
    # default disables it, which records far faster (see notes).
    ev = dev.create_event(EventOptions(timing_enabled=True))
    ev_nt = dev.create_event()
    i32, f64 = np.int32(3), np.float64(2.0)
    ns: dict[str, Any] = {
        "ev_nt": ev_nt,
        "s": s,
        "ev": ev,
        "dev": dev,
        "launch": launch,
        "cfg": cfg1,
        "empty": empty,
        "scale": scale,
        "out": out,
        "i32": i32,
        "f64": f64,
        "Device": Device,
    }
    r.measure("get_device", lambda: per_call_us(cfg, "Device()", ns))
    r.notes["get_device"] = "Device() (the current device object)"
    r.measure("event_record", lambda: per_call_us(cfg, "s.record(ev)", ns, after=s.sync))
    r.measure("stream_sync_idle", lambda: per_call_us(cfg, "s.sync()", ns))
    r.notes["breakdown_us"] = {
        "event_record_timing_disabled": _safe(lambda: per_call_us(cfg, "s.record(ev_nt)", ns, after=s.sync))
    }
    # Stream-ordered allocation from the device's memory pool (cuMemAllocAsync), not cudaMalloc.
    r.measure(
        "malloc_free_1mib", lambda: per_call_us(cfg, "dev.allocate(1048576, stream=s).close(s)", ns, after=s.sync)
    )
    r.notes["malloc_free_1mib"] = "Device.allocate/Buffer.close: the stream-ordered memory pool"
    r.missing("memcpy_htod_8b", "cuda.core copies only between Buffers (no pageable host memcpy)")
    r.missing("memcpy_dtoh_8b", "cuda.core copies only between Buffers (no pageable host memcpy)")
    r.missing("to_gpu_8b", "cuda.core has no array type")
    r.missing("get_8b", "cuda.core has no array type")
    r.measure("launch_empty", lambda: per_call_us(cfg, "launch(s, cfg, empty)", ns, after=s.sync))
    r.measure("launch_args", lambda: per_call_us(cfg, "launch(s, cfg, scale, out, i32, f64)", ns, after=s.sync))
    r.missing("launch_args_prepared", "cuda.core has no prepared call")

    def graph() -> float:
        gb = s.create_graph_builder()
        gb.begin_building()
        launch(gb, cfg1, scale, out, i32, f64)
        gb.end_building()
        g = gb.complete()
        g.launch(s)
        s.sync()
        return per_call_us(cfg, "f(s)", {"f": g.launch, "s": s}, after=s.sync)

    r.measure("graph_launch", graph)
    r.missing("htod_pageable_256mib", "cuda.core copies only between Buffers (no pageable host memory)")
    r.missing("dtoh_pageable_256mib", "cuda.core copies only between Buffers (no pageable host memory)")
    if r.skip_bandwidth:
        return
    n = cfg.bandwidth_bytes
    pinned = LegacyPinnedMemoryResource().allocate(n)
    ctypes.memset(int(pinned.handle), 1, n)
    d1 = dev.allocate(n, stream=s)
    d2 = dev.allocate(n, stream=s)
    s.sync()
    r.measure(
        "htod_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: d1.copy_from(pinned, stream=s), n, finish=s.sync)
    )
    r.measure(
        "dtoh_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: pinned.copy_from(d1, stream=s), n, finish=s.sync)
    )
    r.measure("dtod_256mib", lambda: 2 * bandwidth_gbs(cfg, lambda: d2.copy_from(d1, stream=s), n, finish=s.sync))
    r.notes["bandwidth"] = "async Buffer.copy_from on a stream, then Stream.sync()"


# --- PyCUDA -----------------------------------------------------------------------------------


def run_pycuda(cfg: Config, r: Results) -> None:
    import pycuda
    import pycuda.autoprimaryctx  # noqa: F401  (the device's primary context, like the others)
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    r.notes["version"] = ".".join(map(str, getattr(pycuda, "VERSION", ())))
    mod = drv.module_from_file(ptx_path())
    empty = mod.get_function("empty_kernel")
    scale = mod.get_function("scale_args")
    scale_p = mod.get_function("scale_args")
    scale_p.prepare("Pid")
    s = drv.Stream()
    ev = drv.Event()
    out = drv.mem_alloc(8)
    host8 = np.zeros(1, np.float64)
    i32, f64 = np.int32(3), np.float64(2.0)
    ns: dict[str, Any] = {
        "drv": drv,
        "s": s,
        "ev": ev,
        "out": out,
        "host8": host8,
        "empty": empty,
        "scale": scale,
        "i32": i32,
        "f64": f64,
        "ga": gpuarray,
    }
    r.measure("get_device", lambda: per_call_us(cfg, "f()", {"f": drv.Context.get_device}))
    r.measure("event_record", lambda: per_call_us(cfg, "ev.record(s)", ns, after=s.synchronize))
    r.measure("stream_sync_idle", lambda: per_call_us(cfg, "s.synchronize()", ns))
    r.measure("malloc_free_1mib", lambda: per_call_us(cfg, "f(1048576)", {"f": drv.mem_alloc}))
    r.measure(
        "memcpy_htod_8b", lambda: per_call_us(cfg, "f(out, host8)", {"f": drv.memcpy_htod, "out": out, "host8": host8})
    )
    r.measure(
        "memcpy_dtoh_8b", lambda: per_call_us(cfg, "f(host8, out)", {"f": drv.memcpy_dtoh, "out": out, "host8": host8})
    )
    r.measure("to_gpu_8b", lambda: per_call_us(cfg, "f(host8)", {"f": gpuarray.to_gpu, "host8": host8}))
    g = gpuarray.to_gpu(host8)
    r.measure("get_8b", lambda: per_call_us(cfg, "f()", {"f": g.get}))
    r.measure(
        "launch_empty",
        lambda: per_call_us(cfg, "empty(block=(1, 1, 1), grid=(1, 1), stream=s)", ns, after=s.synchronize),
    )
    r.measure(
        "launch_args",
        lambda: per_call_us(
            cfg, "scale(out, i32, f64, block=(1, 1, 1), grid=(1, 1), stream=s)", ns, after=s.synchronize
        ),
    )
    r.measure(
        "launch_args_prepared",
        lambda: per_call_us(
            cfg,
            "f((1, 1), (1, 1, 1), s, out, 3, 2.0)",
            {"f": scale_p.prepared_async_call, "s": s, "out": out},
            after=s.synchronize,
        ),
    )

    r.missing("graph_launch", "PyCUDA has no CUDA graph API (no stream capture in its wrapper)")
    if r.skip_bandwidth:
        return
    n = cfg.bandwidth_bytes
    pageable = big_host(n)
    pinned = drv.pagelocked_empty(n, np.uint8)
    pinned.fill(1)
    d1 = drv.mem_alloc(n)
    d2 = drv.mem_alloc(n)
    r.measure("htod_pageable_256mib", lambda: bandwidth_gbs(cfg, lambda: drv.memcpy_htod(d1, pageable), n))
    r.measure("dtoh_pageable_256mib", lambda: bandwidth_gbs(cfg, lambda: drv.memcpy_dtoh(pageable, d1), n))
    r.measure("htod_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: drv.memcpy_htod(d1, pinned), n))
    r.measure("dtoh_pinned_256mib", lambda: bandwidth_gbs(cfg, lambda: drv.memcpy_dtoh(pinned, d1), n))
    r.measure(
        "dtod_256mib",
        lambda: 2 * bandwidth_gbs(cfg, lambda: drv.memcpy_dtod(d2, d1, n), n, finish=drv.Context.synchronize),
    )


def _safe(fn: Any) -> float:
    try:
        return float(fn())
    except Exception as e:  # noqa: BLE001
        print(f"breakdown: {type(e).__name__}: {e}", file=sys.stderr)
        return float("nan")


RUNNERS = {"cupy": run_cupy, "cuda.bindings": run_bindings, "cuda.core": run_core, "pycuda": run_pycuda}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("library", choices=PEERS)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--skip-bandwidth", action="store_true", help="per-call figures only")
    a = p.parse_args()
    cfg = Config(quick=a.quick)
    r = Results(a.library)
    r.skip_bandwidth = a.skip_bandwidth
    r.notes["loop_ns"] = loop_ns(cfg)
    try:
        RUNNERS[a.library](cfg, r)
    except Exception as e:  # noqa: BLE001 (set-up failed: every figure not yet measured is missing)
        import traceback

        traceback.print_exc()
        r.notes["setup_error"] = f"{type(e).__name__}: {e}"[:500]
    r.emit()


if __name__ == "__main__":
    main()
