"""Large copies between pageable host memory and the device (staged through page-locked
buffers on cuda, src/runtime/cuda/copy.rs): odd sizes and offsets around the staging
threshold and chunk size, both directions, with and without a stream, against numpy. The
same checks run on every backend; the `gpu` ones drive the staged path with small chunks
and many threads in a fresh process, so that every buffer is reused many times, and from
several Python threads at once, which share the buffers."""

from __future__ import annotations

import numpy as np
import pytest

import pygpu
from conftest import run_python
from pygpu import driver as cuda
from pygpu import gpuarray

MiB = 1 << 20

# Around the default threshold (4 MiB) and chunk (2 MiB), plus odd ends.
SIZES = [4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 5 * 2 * MiB + 12345, 9 * MiB + 7]
OFFSETS = [0, 1, 4093]


def _pattern(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("offset", OFFSETS)
def test_pageable_round_trip_of_odd_sizes_and_offsets(size: int, offset: int) -> None:
    backing = _pattern(size + offset + 3, size + offset)
    source = backing[offset : offset + size]  # a view: the address is not page-aligned
    device = pygpu.mem_alloc(size)
    pygpu.memcpy_htod(device, source)
    back = np.zeros(size + offset + 3, np.uint8)
    pygpu.memcpy_dtoh(back[offset : offset + size], device)
    assert np.array_equal(back[offset : offset + size], source)
    assert not back[:offset].any() and not back[offset + size :].any(), "nothing written outside the view"


@pytest.mark.parametrize("size", [4 * MiB + 1, 11 * MiB + 5])
def test_pageable_copies_on_a_stream(size: int) -> None:
    source = _pattern(size, 7)
    keep = source.copy()
    stream = cuda.Stream()
    device = pygpu.mem_alloc(size)
    cuda.memcpy_htod_async(device, source, stream)
    source[:] = 0  # the source may be reused once the call returns, as CUDA's pageable copies allow
    back = np.empty(size, np.uint8)
    cuda.memcpy_dtoh_async(back, device, stream)
    stream.synchronize()
    assert np.array_equal(back, keep)


def test_gpuarray_transfers_of_a_large_array() -> None:
    host = np.random.default_rng(3).standard_normal(5 * MiB // 8 + 3)
    g = gpuarray.to_gpu(host)
    assert np.array_equal(g.get(), host)
    strided = host[::2].copy()
    assert np.array_equal(gpuarray.to_gpu(strided).get(), strided)


def test_page_locked_memory_takes_the_direct_path_and_stays_correct() -> None:
    host = cuda.pagelocked_empty(6 * MiB + 1, np.uint8)
    host[:] = _pattern(host.size, 11)
    device = pygpu.mem_alloc(host.nbytes)
    pygpu.memcpy_htod(device, host)
    back = cuda.pagelocked_zeros(host.size, np.uint8)
    pygpu.memcpy_dtoh(back, device)
    assert np.array_equal(back, host)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("chunk", "buffers", "threads"), [("4096", "2", "1"), ("65536", "3", "3"), ("1048576", "4", "8")]
)
def test_staged_path_with_small_chunks_wraps_the_ring(chunk: str, buffers: str, threads: str) -> None:
    code = """
        import numpy as np, pygpu
        import pygpu.driver as cuda
        rng = np.random.default_rng(5)
        stream = cuda.Stream()
        for size in (4096, 4097, 65536 * 7 + 3, 3 * 1048576 + 11):
            for offset in (0, 3):
                backing = rng.integers(0, 256, size + offset + 1, dtype=np.uint8)
                src = backing[offset:offset + size]
                dev = pygpu.mem_alloc(size)
                pygpu.memcpy_htod(dev, src)
                out = np.zeros(size + offset + 1, np.uint8)
                pygpu.memcpy_dtoh(out[offset:offset + size], dev)
                assert np.array_equal(out[offset:offset + size], src), (size, offset)
                assert not out[:offset].any() and not out[offset + size:].any()
                cuda.memcpy_htod_async(dev, src[::-1].copy(), stream)
                cuda.memcpy_dtoh_async(out[offset:offset + size], dev, stream)
                stream.synchronize()
                assert np.array_equal(out[offset:offset + size], src[::-1]), (size, offset, "stream")
        print("ok")
    """
    env = {
        "PYGPU_STAGED_COPY_MIN_BYTES": "4096",
        "PYGPU_STAGED_COPY_CHUNK_BYTES": chunk,
        "PYGPU_STAGED_COPY_BUFFERS": buffers,
        "PYGPU_STAGED_COPY_THREADS": threads,
    }
    result = run_python(code, env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.gpu
def test_staged_copies_from_several_threads_at_once_share_the_buffers() -> None:
    code = """
        import threading
        import numpy as np, pygpu
        import pygpu.driver as cuda
        errors = []
        def worker(seed):
            try:
                rng = np.random.default_rng(seed)
                stream = cuda.Stream() if seed % 2 else None
                for size in (65536 * 5 + 7, 1048576 * 3 + 1):
                    src = rng.integers(0, 256, size, dtype=np.uint8)
                    dev = pygpu.mem_alloc(size)
                    out = np.zeros(size, np.uint8)
                    for _ in range(5):
                        if stream is None:
                            pygpu.memcpy_htod(dev, src)
                            pygpu.memcpy_dtoh(out, dev)
                        else:
                            cuda.memcpy_htod_async(dev, src, stream)
                            cuda.memcpy_dtoh_async(out, dev, stream)
                            stream.synchronize()
                        assert np.array_equal(out, src), (seed, size)
                        src = src[::-1].copy()
            except BaseException as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        print("ok")
    """
    env = {
        "PYGPU_STAGED_COPY_MIN_BYTES": "4096",
        "PYGPU_STAGED_COPY_CHUNK_BYTES": "65536",
        "PYGPU_STAGED_COPY_BUFFERS": "3",
        "PYGPU_STAGED_COPY_THREADS": "4",
    }
    result = run_python(code, env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.gpu
def test_staged_copies_match_with_the_staged_path_off() -> None:
    code = """
        import numpy as np, pygpu
        src = np.random.default_rng(9).integers(0, 256, 64 * 1048576 + 5, dtype=np.uint8)
        dev = pygpu.mem_alloc(src.nbytes)
        pygpu.memcpy_htod(dev, src)
        out = np.empty_like(src)
        pygpu.memcpy_dtoh(out, dev)
        assert np.array_equal(out, src)
        print("ok")
    """
    for switch in ("0", "1"):
        result = run_python(code, {"PYGPU_STAGED_COPY": switch}, timeout=120)
        assert result.returncode == 0 and result.stdout.strip() == "ok", (switch, result.stderr)
