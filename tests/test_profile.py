"""pygpu.profile() and pygpu.nvtx: what a recording holds (kernels by name with their launch
shape, copies and fills with their bytes, allocations, synchronisations, named ranges), the
table, the trace file and the plot built from it, and the recorder's rules (one recording at a
time, nothing kept outside one)."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import pygpu
import pygpu.driver as drv
import pygpu.gpuarray as gpuarray
import pygpu.nvtx as nvtx
import pygpu.profiler
from pygpu import cumath
from pygpu.compiler import SourceModule
from pygpu.profiler import Activity, Profile

records = pytest.mark.skipif(
    not pygpu.capabilities().activity_records, reason="this backend does not record activity yet (roctracer is to come)"
)

FILL = """
__global__ void fill_seven(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 7;
}
"""


@pytest.fixture(scope="module")
def fill_seven() -> pygpu.Function:
    return SourceModule(FILL).get_function("fill_seven")


def test_host_and_cuda_record_hip_not_yet() -> None:
    assert pygpu.capabilities("host").activity_records
    assert pygpu.capabilities("cuda").activity_records
    assert not pygpu.capabilities("hip").activity_records
    assert "activity_records=" in repr(pygpu.capabilities())


def test_cupti_is_found_where_documented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYGPU_CUPTI", raising=False)
    for var in ("CUDA_PATH", "CUDA_HOME"):
        monkeypatch.delenv(var, raising=False)
    wheel = tmp_path / "site" / "nvidia" / "cu13" / "lib" / "libcupti.so.13"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    toolkit = tmp_path / "cuda" / "extras" / "CUPTI" / "lib64" / "libcupti.so.12"
    toolkit.parent.mkdir(parents=True)
    toolkit.write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "nothing here"), str(tmp_path / "site")])
    assert pygpu.profiler.find_cupti() == str(wheel)
    monkeypatch.setattr(sys, "path", [])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    found = pygpu.profiler.find_cupti()
    assert found == str(toolkit) or found.startswith("/usr/local/cuda/")
    monkeypatch.setenv("PYGPU_CUPTI", "/my/libcupti.so")
    assert pygpu.profiler.find_cupti() == "/my/libcupti.so"


@pytest.mark.skipif(pygpu.capabilities().backend != "cuda", reason="CUPTI is the cuda backend's recorder")
def test_a_cupti_that_cannot_be_loaded_says_what_to_install() -> None:
    # In a fresh process: the first CUPTI loaded serves the whole process.
    code = """
import pygpu
try:
    with pygpu.profile():
        pass
except pygpu.errors.BackendUnavailableError as e:
    print("refused:", e)
with pygpu.profile() as p:
    pass
"""
    env = {**os.environ, "PYGPU_CUPTI": "/nonexistent/libcupti.so.13"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "refused:" in done.stdout and "pygpu[cupti]" in done.stdout, done.stdout + done.stderr
    assert "/nonexistent/libcupti.so.13" in done.stdout
    # The refused recording left none running: the next start gets the same refusal, not "already runs".
    assert "already runs" not in done.stderr and "pygpu[cupti]" in done.stderr


SPIN = """
__global__ void spin(float* out, int rounds) {
    float x = threadIdx.x;
    for (int i = 0; i < rounds; ++i) x = x * 0.999f + 1.0f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}
"""


@pytest.mark.skipif(
    not pygpu.capabilities().activity_records or pygpu.capabilities().kernels_on_cpu,
    reason="a GPU's records against its events (the host backend's share one clock already)",
)
def test_kernel_times_agree_with_events_within_5_percent() -> None:
    spin = SourceModule(SPIN).get_function("spin")
    out = drv.mem_alloc(4 * 256 * 132)
    rounds = np.int32(200_000)
    shape = {"block": (256, 1, 1), "grid": (132, 1)}
    spin(out, rounds, **shape)  # compiled and warm
    timed: list[float] = []
    with pygpu.profile() as p:
        for _ in range(9):
            start, stop = drv.Event(), drv.Event()
            # A kernel ahead keeps the device busy while the timed one is issued, so that the
            # events' interval holds no wait for the host.
            spin(out, rounds, **shape)
            start.record()
            spin(out, rounds, **shape)
            stop.record()
            stop.synchronize()
            timed.append(stop.time_since(start) * 1e6)
    recorded = [a.duration_ns for a in p.kernels() if a.name == "spin"][1::2]
    assert len(recorded) == 9
    by_events, by_records = float(np.median(timed)), float(np.median(recorded))
    assert by_records > 100_000, recorded  # long enough that the events' own cost is noise
    assert abs(by_records - by_events) <= 0.05 * by_events, (recorded, timed)


@pytest.mark.skipif(pygpu.capabilities().activity_records, reason="this backend records")
def test_a_backend_that_does_not_record_says_so() -> None:
    with pytest.raises(pygpu.CudaError, match="does not record on the .* backend yet"):
        with pygpu.profile():
            pass
    pygpu.cudaGetLastError()  # the refusal is a status too (cudaErrorNotSupported)


@records
def test_kernels_copies_and_fills_are_recorded_with_their_shape_and_bytes(fill_seven: pygpu.Function) -> None:
    host = np.arange(4096, dtype=np.float32)
    out = np.empty(1000, np.int32)
    with pygpu.profile() as p:
        a = gpuarray.to_gpu(host)
        cumath.exp(a)
        target = drv.mem_alloc(out.nbytes)
        drv.memset_d32(target, 3, out.size)
        fill_seven(target, np.int32(out.size), block=(128, 1, 1), grid=(8, 1))
        drv.memcpy_dtoh(out, target)
        copy = drv.mem_alloc(out.nbytes)
        drv.memcpy_dtod(copy, target, out.nbytes)
        pygpu.cudaDeviceSynchronize()
    assert (out == 7).all()
    by_kind: dict[str, list[Activity]] = {}
    for a_ in p.activities:
        by_kind.setdefault(a_.kind, []).append(a_)
    [htod] = by_kind["memcpy_htod"]
    assert htod.bytes == host.nbytes
    [dtoh] = by_kind["memcpy_dtoh"]
    assert dtoh.bytes == out.nbytes
    [dtod] = by_kind["memcpy_dtod"]
    assert dtod.bytes == out.nbytes
    [memset] = by_kind["memset"]
    assert memset.bytes == out.nbytes
    [mine] = [k for k in by_kind["kernel"] if k.name == "fill_seven"]
    assert mine.grid == (8, 1, 1) and mine.block == (128, 1, 1) and mine.bytes == 0
    assert any(k.name.startswith("exp") for k in by_kind["kernel"])
    assert any(a_.bytes == out.nbytes for a_ in by_kind["alloc"])
    assert by_kind["synchronize"]
    # One clock: in the order the program ran them, each taking time >= 0.
    order = [htod, memset, mine, dtoh, dtod]
    assert all(x.end_ns <= y.start_ns for x, y in zip(order, order[1:]))
    assert all(a_.duration_ns >= 0 for a_ in p.activities)
    assert p.activities == sorted(p.activities, key=lambda a_: (a_.start_ns, a_.end_ns))
    assert htod.gb_per_s is not None and htod.gb_per_s > 0 and mine.gb_per_s is None


@records
def test_a_graph_replay_records_its_kernels(fill_seven: pygpu.Function) -> None:
    target = drv.mem_alloc(4 * 256)
    s = pygpu.cudaStream_t()
    s.begin_capture()
    fill_seven(target, np.int32(256), block=(64, 1, 1), grid=(4, 1), stream=s)
    graph = s.end_capture().instantiate()
    with pygpu.profile() as p:
        graph.launch(s)
        graph.launch(s)
    launches = [a for a in p.kernels() if a.name == "fill_seven"]
    assert len(launches) == 2 and all(a.stream == s.handle for a in launches)


@records
def test_the_table_sums_calls_per_kernel_and_shares_the_device_time() -> None:
    a = gpuarray.to_gpu(np.ones(1 << 16, np.float32))
    with pygpu.profile() as p:
        for _ in range(5):
            a * 2
        gpuarray.sum(a).get()
    rows = p.summary()
    multiplies = [r for r in rows if r.kind == "kernel" and r.name.startswith("mul")]
    assert len(multiplies) == 1 and multiplies[0].calls == 5
    row = multiplies[0]
    assert row.min_ns <= row.mean_ns <= row.max_ns and row.total_ns == pytest.approx(5 * row.mean_ns)
    work = [r for r in rows if r.share is not None]
    assert sum(r.share for r in work if r.share is not None) == pytest.approx(1.0)
    assert [r.total_ns for r in rows] == sorted((r.total_ns for r in rows), reverse=True)
    text = p.table()
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["name", "kind", "calls"] and set(lines[1]) <= {"-", " "}
    assert any(line.startswith(row.name) and " 5 " in line for line in lines)
    assert len(p.table(limit=1).splitlines()) == 3
    only_copies = p.summary(kinds=["memcpy_dtoh"])
    assert [r.kind for r in only_copies] == ["memcpy_dtoh"] and only_copies[0].gb_per_s is not None


@records
def test_the_chrome_trace_is_trace_event_json(tmp_path: Path) -> None:
    with pygpu.profile() as p:
        with nvtx.range("outer"):
            (gpuarray.to_gpu(np.arange(100.0)) + 1).get()
    path = tmp_path / "trace.json"
    p.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert len(spans) == len(p.activities)
    for e in spans:
        assert isinstance(e["name"], str) and e["name"]
        assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["pid"], int) and isinstance(e["tid"], int)
    assert {"kernel", "range", "memcpy_htod", "memcpy_dtoh"} <= {e["cat"] for e in spans}
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in spans} <= named
    [outer] = [e for e in spans if e["name"] == "outer"]
    kernel = next(e for e in spans if e["cat"] == "kernel")
    assert outer["ts"] <= kernel["ts"] and kernel["ts"] + kernel["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    assert "grid" in kernel["args"] and "block" in kernel["args"]


@records
def test_plot_draws_one_row_per_stream_and_range_thread() -> None:
    pytest.importorskip("matplotlib")
    s = pygpu.cudaStream_t()
    a = gpuarray.to_gpu(np.ones(1000))
    with pygpu.profile() as p:
        with nvtx.range("two streams"):
            a.fill(2.0)
            a.fill(3.0, stream=s)
    figure = p.plot()
    [ax] = figure.axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert f"stream 0x{s.handle:x}" in labels and f"thread {threading.get_native_id()}" in labels
    assert len(labels) == len({(a_.kind == "range", a_.stream) for a_ in p.activities})


@records
def test_ranges_nest_and_decorate() -> None:
    @nvtx.range("decorated")
    def step(x: gpuarray.GPUArray) -> gpuarray.GPUArray:
        return x + 1

    x = gpuarray.to_gpu(np.zeros(10))
    with pygpu.profile() as p:
        with nvtx.range("outer"):
            with nvtx.range("inner"):
                step(x)
            step(x)
    ranges = {a.name: a for a in p.activities if a.kind == "range"}
    assert set(ranges) == {"outer", "inner", "decorated"}
    assert len([a for a in p.activities if a.name == "decorated"]) == 2
    outer, inner = ranges["outer"], ranges["inner"]
    assert outer.start_ns <= inner.start_ns <= inner.end_ns <= outer.end_ns
    assert step.__name__ == "step"
    with pytest.raises(TypeError, match="a range's name is a str"):
        nvtx.range(3)  # type: ignore[arg-type]


def test_ranges_reach_nvidia_nvtx_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []

    class Enabled:  # NVIDIA's nvtx package, installed
        @staticmethod
        def enabled() -> bool:
            return True

        @staticmethod
        def push_range(message: str) -> None:
            calls.append(("push", message))

        @staticmethod
        def pop_range() -> None:
            calls.append(("pop",))

    monkeypatch.setitem(sys.modules, "nvtx", Enabled)
    monkeypatch.setattr(nvtx, "_nvidia", False)  # looked up again
    with nvtx.range("outer"):
        with nvtx.range("inner"):
            pass
    assert calls == [("push", "outer"), ("push", "inner"), ("pop",), ("pop",)]
    # Installed but disabled (NVTX_DISABLE), or not installed: nothing is called.
    for absent in (type("Disabled", (Enabled,), {"enabled": staticmethod(lambda: False)}), None):
        calls.clear()
        monkeypatch.setitem(sys.modules, "nvtx", absent)
        monkeypatch.setattr(nvtx, "_nvidia", False)
        with nvtx.range("unheard"):
            pass
        assert calls == []


@records
def test_recordings_do_not_nest_and_keep_nothing_outside() -> None:
    a = gpuarray.to_gpu(np.ones(10))
    with nvtx.range("before"):
        a + 1
    with pygpu.profile() as p:
        with pytest.raises(pygpu.CudaError, match="recordings do not nest"):
            with pygpu.profile():
                pass
        a + 2  # the first recording goes on
    assert p.kernels() and not [r for r in p.activities if r.name == "before"]
    kept = list(p.activities)
    a + 3
    with pytest.raises(ZeroDivisionError):
        with pygpu.profile() as q:
            a + 4
            1 / 0
    assert p.activities == kept and q.kernels()
    with pygpu.profile() as empty:
        pass
    assert empty.activities == [] and empty.dropped == 0 and "name" in empty.table()
    pygpu.cudaGetLastError()  # the refused nested recording's status


@records
def test_every_thread_lands_in_one_recording() -> None:
    a = gpuarray.to_gpu(np.ones(1000, np.float32))

    def work() -> None:
        with nvtx.range("worker"):
            cumath.sqrt(a)

    with pygpu.profile() as p:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    workers = [r for r in p.activities if r.name == "worker"]
    assert len(workers) == 3 and len({r.stream for r in workers}) == 3
    assert len([k for k in p.kernels() if k.name.startswith("sqrt")]) == 3


@records
@pytest.mark.parametrize("module", [pygpu.profiler, nvtx], ids=["profiler", "nvtx"])
def test_the_modules_examples_run(module: object) -> None:
    failed, attempted = doctest.testmod(module)  # type: ignore[arg-type]
    assert attempted and not failed


def test_profile_is_a_fresh_recording_each_time() -> None:
    assert isinstance(pygpu.profile(), Profile) and pygpu.profile() is not pygpu.profile()
    assert "profile" in pygpu.__all__ and pygpu.profile is pygpu.profiler.profile


@records
def test_a_recording_keeps_its_bound_and_counts_the_rest() -> None:
    # The recorder keeps 2^20 activities (about 100 MB), so a forgotten recording cannot take
    # all memory; the rest are counted.
    src, dst = drv.mem_alloc(4), drv.mem_alloc(4)
    copy = drv.memcpy_dtod
    with pygpu.profile() as p:
        for _ in range((1 << 20) + 25):
            copy(dst, src, 4)
    assert len(p.activities) == 1 << 20 and p.dropped == 25
    assert "25 activities past the recorder's bound were not kept" in p.table()


@records
def test_stream_and_event_waits_are_recorded() -> None:
    s = drv.Stream()
    raw = pygpu.cudaStream_t()
    event = drv.Event()
    with pygpu.profile() as p:
        s.synchronize()
        pygpu.cudaStreamSynchronize(raw)
        event.record()
        event.synchronize()
        pygpu.cudaDeviceSynchronize()
    waits = [a for a in p.activities if a.kind == "synchronize"]
    assert [a.stream for a in waits] == [s.handle, raw.handle, 0, 0]


@records
def test_only_the_recording_s_own_with_block_ends_it() -> None:
    with pygpu.profile() as p:
        a = gpuarray.to_gpu(np.ones(8))
        # Another thread's stray stop, with any number, neither ends nor empties it.
        errors: list[BaseException] = []

        def stray() -> None:
            try:
                pygpu._pygpu.activity_stop(0)
            except pygpu.CudaError as e:
                errors.append(e)

        t = threading.Thread(target=stray)
        t.start()
        t.join()
        with pytest.raises(RuntimeError, match="not running"):
            pygpu.profile().__exit__(None, None, None)
        a.get()
    assert len(errors) == 1 and "not running" in str(errors[0])
    assert {"memcpy_htod", "memcpy_dtoh"} <= {r.kind for r in p.activities}
    with pytest.raises(RuntimeError, match="not running"):
        p.__exit__(None, None, None)  # ended already
    pygpu.cudaGetLastError()  # the stray stop's status


@records
def test_a_forked_child_starts_with_no_recording() -> None:
    a = gpuarray.to_gpu(np.ones(8))
    with pygpu.profile() as p:
        a + 1
        token = p._token
        pid = os.fork()
        if pid == 0:  # the child: no recording runs there (the parent's token ends nothing)
            code = 1
            try:
                try:
                    pygpu._pygpu.activity_stop(token)
                    code = 3
                except pygpu.CudaError:
                    code = 0
                if code == 0 and pygpu.capabilities().kernels_on_cpu:
                    # GPU backends refuse work in a forked child; the host backend records it.
                    with pygpu.profile() as mine:
                        a + 2
                    code = 0 if len(mine.kernels()) == 1 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        a + 3
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(p.kernels()) == 2


def test_range_names_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="UTF-8"):
        nvtx.range("step \ud800")


@records
def test_summary_takes_one_kind_or_several_and_refuses_unknown_ones() -> None:
    with pygpu.profile() as p:
        (2 * gpuarray.to_gpu(np.ones(10, np.float32))).get()
    assert p.summary(kinds="kernel") == p.summary(kinds=["kernel"]) != []
    with pytest.raises(ValueError, match="no activity kind 'bogus'; the kinds are kernel, "):
        p.summary(kinds=["bogus"])
    assert all(ord(c) < 128 for c in p.table()), "the table prints on any terminal"
