"""Reductions (sum, dot, vdot, min, max, subset_*, any, all) against numpy: every dtype,
lengths around the block and grid sizes, contiguous / strided / transposed / 0-d / empty
operands, PyCUDA's argument forms, and the errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpu
import pytest
from conftest import count_fuzz_case, run_threads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygpu import gpuarray
from conftest import GPUARRAY_DTYPES

DTYPES = GPUARRAY_DTYPES
# 0, 1, a block, a block + 1, a few thousand, past one grid of blocks on the host.
LENGTHS = [0, 1, 255, 256, 257, 3001, 70001]
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sample(n: int | tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    """Values that keep integer sums exact in the type numpy accumulates in."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    shape = (n,) if isinstance(n, int) else n
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -50
        return rng.integers(lo, 50, shape).astype(dt)
    values = rng.standard_normal(shape)
    if dt.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dt)


def tolerance(dtype: np.dtype, n: int) -> float:
    """Relative error a tree sum of n terms meets (numpy's pairwise sum is of the same order)."""
    eps = float(np.finfo(dtype).eps) if dtype.kind in "fc" else 0.0
    return eps * (8 + 2 * np.log2(max(n, 2)))


def assert_close(got: gpuarray.GPUArray, want: Any, n: int, scale: float) -> None:
    assert isinstance(got, gpuarray.GPUArray) and got.shape == ()
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    value = got.get()
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(value, want, rtol=0, atol=tolerance(want.dtype, n) * max(scale, 1e-30))
    else:
        assert value == want


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_matches_numpy(dtype: str, n: int) -> None:
    host = sample(n, dtype)
    g = gpuarray.to_gpu(host)
    scale = float(np.abs(host.astype(np.complex128)).sum()) if n else 0.0
    want = host.sum() if dtype != "float16" else host.astype(np.float32).sum().astype(np.float16)
    assert_close(gpuarray.sum(g), want, n, scale)
    assert_close(g.sum(), want, n, scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_and_vdot_match_numpy(dtype: str) -> None:
    n = 3001
    a, b = sample(n, dtype, 1), sample(n, dtype, 2)
    ga, gb = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    if dtype == "bool":
        with pytest.raises(TypeError, match="dot of bool"):
            gpuarray.dot(ga, gb)
        return
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    scale = float(np.abs(a.astype(wide) * b.astype(wide)).sum())
    if dtype == "float16":
        # Accumulated in float32, returned as numpy's float16.
        want32 = np.dot(a.astype(np.float32), b.astype(np.float32))
        got = gpuarray.dot(ga, gb)
        assert got.dtype == np.float16
        np.testing.assert_allclose(float(got.get()), float(want32.astype(np.float16)), rtol=1e-3)
        return
    assert_close(gpuarray.dot(ga, gb), np.dot(a, b), n, scale)
    assert_close(gpuarray.vdot(ga, gb), np.vdot(a, b), n, scale)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if not d.startswith("complex")])
@pytest.mark.parametrize("n", [1, 257, 3001])
def test_min_max_match_numpy(dtype: str, n: int) -> None:
    host = sample(n, dtype, 3)
    g = gpuarray.to_gpu(host)
    for got, want in (
        (gpuarray.min(g), host.min()),
        (gpuarray.max(g), host.max()),
        (g.min(), host.min()),
        (g.max(), host.max()),
    ):
        assert got.shape == () and got.dtype == host.dtype
        assert got.get() == want


@pytest.mark.parametrize("what", ["min", "max"])
def test_min_max_propagate_nan_and_handle_infinities(what: str) -> None:
    host = np.array([1.0, -np.inf, np.inf, 2.0] * 100)
    assert getattr(gpuarray, what)(gpuarray.to_gpu(host)).get() == getattr(host, what)()
    host[150] = np.nan
    assert np.isnan(getattr(gpuarray, what)(gpuarray.to_gpu(host)).get())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_min_max_of_long_arrays_find_the_extreme_or_nan_anywhere(dtype: str) -> None:
    # Long enough for every part of the folds: the host's vector lanes and their runs, the
    # remainder after the last full vector, several threads' shares, a GPU's grid-stride loop.
    n = (1 << 20) + 37
    rng = np.random.default_rng(11)
    host = rng.uniform(-1.0, 1.0, n).astype(dtype)
    for position in (0, 1, 127, 128, 8191, 8192, n // 2 + 5, n - 38, n - 1):
        for what, extreme in (("min", -2.0), ("max", 2.0)):
            probe = host.copy()
            probe[position] = extreme
            assert getattr(gpuarray, what)(gpuarray.to_gpu(probe)).get() == extreme, (what, position)
            probe[position] = np.nan
            assert np.isnan(getattr(gpuarray, what)(gpuarray.to_gpu(probe)).get()), (what, position)


@pytest.mark.parametrize("dtype", DTYPES)
def test_any_all_match_numpy(dtype: str) -> None:
    for host in (np.zeros(300, dtype), np.ones(300, dtype), sample(3001, dtype, 4)):
        g = gpuarray.to_gpu(host)
        for got, want in (
            (gpuarray.any(g), host.any()),
            (gpuarray.all(g), host.all()),
            (g.any(), host.any()),
            (g.all(), host.all()),
        ):
            assert got.dtype == np.bool_ and got.shape == () and got.get() == want
    if np.dtype(dtype).kind == "f":  # -0.0 is zero
        assert not gpuarray.any(gpuarray.to_gpu(np.full(5, -0.0, dtype))).get()


def test_empty_reductions() -> None:
    e = gpuarray.to_gpu(np.zeros(0, np.float32))
    assert gpuarray.sum(e).get() == 0 and gpuarray.dot(e, e).get() == 0
    assert not gpuarray.any(e).get() and gpuarray.all(e).get()
    for f in (gpuarray.min, gpuarray.max):
        with pytest.raises(ValueError, match="zero-size array"):
            f(e)


def test_zero_dimensional_operand() -> None:
    g = gpuarray.to_gpu(np.array(2.5))
    assert gpuarray.sum(g).get() == 2.5 and gpuarray.max(g).get() == 2.5 and gpuarray.dot(g, g).get() == 6.25


@pytest.mark.parametrize("layout", ["strided", "transposed", "reversed", "column", "fortran"])
@pytest.mark.parametrize("dtype", ["int32", "float64", "complex64"])
def test_non_contiguous_operands(layout: str, dtype: str) -> None:
    host = sample((60, 70), dtype, 5)
    g = gpuarray.to_gpu(host)
    view, hview = {
        "strided": (g[::3, 1::2], host[::3, 1::2]),
        "transposed": (g.T, host.T),
        "reversed": (g[::-1, ::-2], host[::-1, ::-2]),
        "column": (g[:, 7], host[:, 7]),
        "fortran": (gpuarray.to_gpu(np.asfortranarray(host)), host),
    }[layout]
    scale = float(np.abs(hview.astype(np.complex128)).sum())
    assert_close(gpuarray.sum(view), hview.sum(), hview.size, scale)
    other = gpuarray.to_gpu(np.ascontiguousarray(hview))
    dscale = float((np.abs(hview.astype(np.complex128)) ** 2).sum())
    assert_close(gpuarray.dot(view, other), np.dot(hview.ravel(), hview.ravel()), hview.size, dscale)
    if dtype != "complex64":
        assert gpuarray.max(view).get() == hview.max() and gpuarray.min(view).get() == hview.min()


def test_sum_dtype_argument() -> None:
    host = np.arange(1, 301, dtype=np.int32)
    g = gpuarray.to_gpu(host)
    for dtype in (np.int8, np.uint8, np.int16, np.int32, np.uint64, np.float32, np.float64):
        got = gpuarray.sum(g, dtype=dtype)
        assert got.dtype == dtype
        assert got.get() == host.sum(dtype=dtype)
    f = gpuarray.to_gpu(np.full(1000, 0.1, np.float32))
    assert gpuarray.sum(f, dtype=np.float64).dtype == np.float64
    np.testing.assert_allclose(gpuarray.sum(f, dtype=np.float64).get(), 1000 * np.float64(np.float32(0.1)))


def test_dot_of_mixed_dtypes_uses_the_common_type() -> None:
    a = gpuarray.to_gpu(np.arange(10, dtype=np.int32))
    b = gpuarray.to_gpu(np.arange(10, dtype=np.float32))
    got = gpuarray.dot(a, b)
    assert got.dtype == np.float64 and got.get() == 285.0
    assert gpuarray.dot(a, b, dtype=np.float32).dtype == np.float32


def test_float16_dot_is_float16_as_numpys() -> None:
    # Computed in float32 (no float16 kernel), returned in numpy's (and PyCUDA's) result type.
    h = np.linspace(-2, 2, 300).astype(np.float16)
    g = gpuarray.to_gpu(h)
    idx = gpuarray.to_gpu(np.arange(0, 300, 3, dtype=np.int32))
    for got, want in [
        (gpuarray.dot(g, g), np.dot(h, h)),
        (gpuarray.vdot(g, g), np.vdot(h, h)),
        (gpuarray.subset_dot(idx, g, g), np.dot(h[::3], h[::3])),
    ]:
        assert got.dtype == want.dtype == np.float16
        np.testing.assert_allclose(float(got.get()), float(want), rtol=2e-3)
    assert gpuarray.dot(g, g, dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize("index_dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_subset_reductions(index_dtype: Any) -> None:
    a, b = sample(5000, np.float64, 6), sample(5000, np.float64, 7)
    idx = np.random.default_rng(8).choice(5000, 777, replace=False).astype(index_dtype)
    ga, gb, gi = gpuarray.to_gpu(a), gpuarray.to_gpu(b), gpuarray.to_gpu(idx)
    np.testing.assert_allclose(gpuarray.subset_dot(gi, ga, gb).get(), np.dot(a[idx], b[idx]), rtol=1e-12)
    np.testing.assert_allclose(gpuarray.subset_sum(gi, ga).get(), a[idx].sum(), rtol=1e-12)
    assert gpuarray.subset_min(gi, ga).get() == a[idx].min()
    assert gpuarray.subset_max(gi, ga).get() == a[idx].max()


def test_allocator_and_stream() -> None:
    calls: list[int] = []

    def allocator(nbytes: int) -> Any:
        calls.append(nbytes)
        return pygpu.mem_alloc(nbytes)

    stream = pygpu.driver.Stream()
    host = sample(100000, np.float64, 9)
    g = gpuarray.to_gpu_async(host, stream=stream)
    result = gpuarray.sum(g, stream=stream, allocator=allocator)
    assert calls == [8]  # the 0-d result came from the allocator
    np.testing.assert_allclose(result.get(), host.sum(), rtol=1e-12)
    assert gpuarray.max(g, stream=stream).get() == host.max()


@pytest.mark.parametrize("n", [1, 257, 2000, 2048, 2049, 70001])
def test_allocator_gives_the_result(n: int) -> None:
    # The allocator is called once, for the result, at any size (PyCUDA also allocates the
    # partials of its first stage through it past 2,048 terms; pygpu's one pass keeps its
    # blocks' values in the stream's scratch).
    calls: list[int] = []

    def allocator(nbytes: int) -> Any:
        calls.append(nbytes)
        return pygpu.mem_alloc(nbytes)

    host = sample(n, np.float64, 10)
    idx = np.arange(0, n, 2, dtype=np.int32)
    g, gi = gpuarray.to_gpu(host), gpuarray.to_gpu(idx)
    cases: list[tuple[Callable[[], gpuarray.GPUArray], Any, int]] = [
        (lambda: gpuarray.sum(g, allocator=allocator), host.sum(), n),
        (lambda: gpuarray.subset_sum(gi, g, allocator=allocator), host[idx].sum(), idx.size),
        (lambda: gpuarray.dot(g, g, allocator=allocator), np.dot(host, host), n),
        (lambda: gpuarray.max(g, allocator=allocator), host.max(), n),
    ]
    for reduce, want, terms in cases:
        calls.clear()
        np.testing.assert_allclose(reduce().get(), want, rtol=1e-12)
        assert calls == [8], (terms, calls)  # the 0-d float64 result


def test_results_are_device_arrays_usable_by_later_work() -> None:
    g = gpuarray.to_gpu(np.arange(100, dtype=np.float64))
    s = gpuarray.sum(g)
    assert float(s) == 4950.0 and s.get().shape == ()


def test_bad_input_is_a_clear_error() -> None:
    g = gpuarray.to_gpu(np.arange(10, dtype=np.float32))
    with pytest.raises(TypeError, match="GPUArray"):
        gpuarray.sum(np.arange(3))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="same size"):
        gpuarray.dot(g, gpuarray.to_gpu(np.arange(11, dtype=np.float32)))
    with pytest.raises(TypeError, match="complex"):
        gpuarray.max(gpuarray.to_gpu(np.ones(3, np.complex64)))
    with pytest.raises(TypeError, match="subset indices"):
        gpuarray.subset_max(gpuarray.to_gpu(np.zeros(2, np.float32)), g)
    freed = gpuarray.to_gpu(np.arange(10.0))
    freed.gpudata.free()
    with pytest.raises(pygpu.CudaError):
        gpuarray.sum(freed)


@st.composite
def operands(draw: st.DrawFn) -> tuple[np.ndarray, Any]:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 40), min_size=0, max_size=3)))
    host = sample(shape, dtype, draw(st.integers(0, 1000)))
    steps = tuple(draw(st.sampled_from([1, 2, -1, -3])) for _ in shape)
    return host, tuple(slice(None, None, s) for s in steps)


@PROPERTY
@given(operands())
def test_property_sum_any_all_of_views(case: tuple[np.ndarray, Any]) -> None:
    count_fuzz_case()
    host, key = case
    hview = host[key]
    view = gpuarray.to_gpu(host)[key]
    want = hview.sum() if host.dtype != np.float16 else hview.astype(np.float32).sum().astype(np.float16)
    scale = float(np.abs(hview.astype(np.complex128)).sum()) if hview.size else 0.0
    assert_close(gpuarray.sum(view), want, hview.size, scale)
    assert gpuarray.any(view).get() == hview.any() and gpuarray.all(view).get() == hview.all()
    if hview.size and host.dtype.kind != "c":
        assert gpuarray.max(view).get() == hview.max() and gpuarray.min(view).get() == hview.min()


def test_reduction_benchmark_script_runs() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import reduction_bench

    figures = reduction_bench.main(["--quick"])["pygpu"]
    assert all(v > 0 for v in figures.values())


def test_one_pass_reductions_on_streams_share_nothing_across_streams() -> None:
    # Past one block a reduction is one launch whose last block folds the blocks' values, kept
    # in its stream's scratch with a ticket counter that the launch sets back to 0. Many in a
    # row on one stream, and interleaved on several, each get their own operand's result.
    streams = [pygpu.driver.Stream() for _ in range(3)] + [None]
    hosts = [sample(300_001 + 7 * k, np.float64, 20 + k) for k in range(len(streams))]
    arrays = [gpuarray.to_gpu(h) for h in hosts]
    results = []
    for _ in range(25):
        for s, g in zip(streams, arrays, strict=True):
            results.append((gpuarray.sum(g, stream=s), gpuarray.max(g, stream=s), s))
    for k, (total, largest, _) in enumerate(results):
        host = hosts[k % len(streams)]
        np.testing.assert_allclose(total.get(), host.sum(), rtol=1e-12)
        assert largest.get() == host.max()
    for s in streams[:-1]:
        scratch = s._scratch  # type: ignore[union-attr]
        assert scratch is not None and int(scratch.get()[0]) == 0  # every ticket handed back
        s.close()  # type: ignore[union-attr]
        assert s._scratch is None  # type: ignore[union-attr]  # let go once the stream's work was done


def test_reduction_while_capturing_keeps_its_partials_with_the_graph() -> None:
    # A captured reduction may replay on any stream: it takes two launches and partials of its
    # own (kept by the graph), not the capturing stream's scratch.
    # Non-blocking streams: allocating (the result, the partials) orders on the legacy stream,
    # which a capture on a blocking stream forbids.
    stream = pygpu.cudaStream_t(1)
    host = sample(100_000, np.float32, 30)
    g = gpuarray.to_gpu(host)
    g.get()  # copied: nothing for the capture to wait on
    stream.begin_capture()
    total = gpuarray.sum(g, stream=stream)
    graph = stream.end_capture()
    assert stream._scratch is None
    exec_ = graph.instantiate()
    for other in (stream, pygpu.cudaStream_t(1), stream):
        total.fill(0, stream=other)
        exec_.launch(other)
        pygpu.cudaStreamSynchronize(other)
        np.testing.assert_allclose(total.get(), host.sum(dtype=np.float64), rtol=1e-5)


def test_a_dropped_streams_scratch_goes_back_to_the_pool() -> None:
    pool = pygpu.get_default_memory_pool()
    g = gpuarray.to_gpu(sample(100_000, np.float64, 31))
    before = pool.used_bytes()
    for _ in range(20):  # each stream's scratch is freed with it, once its work is done
        s = pygpu.cudaStream_t(1)
        total = gpuarray.sum(g, stream=s)
        assert s._scratch is not None
        del s
        np.testing.assert_allclose(total.get(), g.get().sum(), rtol=1e-12)
        del total
    assert pool.used_bytes() == before


def test_a_streams_scratch_is_never_replaced() -> None:
    # Two threads may make a stream's first scratch at once; the first stored is kept, so work
    # queued with it never sees it freed.
    stream = pygpu.cudaStream_t(1)
    first, second = gpuarray.zeros(4, np.uint32), gpuarray.zeros(4, np.uint32)
    stream._scratch = first
    stream._scratch = second
    assert stream._scratch is first


@pytest.mark.parametrize("on", ["a new stream", "the legacy stream"])
def test_threads_reducing_on_one_stream_agree(on: str) -> None:
    # Threads that reduce on one stream at once each get their own operand's result: the
    # stream orders their launches, which share its scratch (on the host backend too, which
    # runs a launch on the thread that makes it).
    stream = pygpu.cudaStream_t(1) if on == "a new stream" else None
    hosts = [sample(200_000 + 1000 * k, np.float64, 32 + k) for k in range(4)]
    arrays = [gpuarray.to_gpu(h) for h in hosts]
    totals: dict[int, list[float]] = {k: [] for k in range(4)}

    def reduce(k: int) -> None:
        for _ in range(15):
            totals[k].append(float(gpuarray.sum(arrays[k], stream=stream).get()))

    run_threads(reduce, 4)
    for k in range(4):
        np.testing.assert_allclose(totals[k], [hosts[k].sum()] * 15, rtol=1e-12)


@pytest.mark.parametrize("n", [2049, 100_000, 1 << 20, 1 << 26])
def test_reduction_grid_fits_the_device_and_the_scratch(n: int) -> None:
    # Past one block, a reduction's blocks leave their values in the stream's scratch, which has
    # room for MAX_GRID of the widest accumulator; on a GPU there are at most four blocks per
    # multiprocessor (kernels/README.md).
    from pygpu.gpuarray import _bundled, _reductions

    grid, block = _bundled.reduction_launch(n)
    assert 2 <= grid <= _bundled.MAX_GRID
    assert _reductions._TICKET_BYTES + grid * 16 <= _reductions._SCRATCH_WORDS * 4
    if not pygpu.capabilities().kernels_on_cpu:
        multiprocessors = pygpu.cudaDeviceProp(pygpu.cudaGetDevice()[0]).multiProcessorCount
        assert block == _bundled.BLOCK
        assert grid <= 4 * multiprocessors
        if n >= 1 << 20:  # enough terms for every block the device gets
            assert grid == min(4 * multiprocessors, _bundled.MAX_GRID)
