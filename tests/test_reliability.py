"""Threads, the GIL, fork, Ctrl-C, out-of-memory and kernel faults: nothing here may crash,
hang or leave pygpu unusable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import pygpu
from conftest import run_python


@pytest.fixture(scope="module")
def testing() -> pygpu.Module:
    return pygpu.load_kernels("testing")


def spin_iterations(backend: str, seconds: float) -> int:
    # volatile memory round trips: a few ns each on a CPU, ~0.5 us on a GPU
    return int(seconds * (2e8 if backend == "host" else 2e6))


def test_eight_threads_on_their_own_streams(testing: pygpu.Module) -> None:
    add = testing.get_function("add_scalar_f64")
    errors: list[BaseException] = []
    n = 1 << 14

    def worker(k: int) -> None:
        try:
            s = pygpu.cudaStream_t()
            start, end = pygpu.cudaEvent_t(), pygpu.cudaEvent_t()
            host = pygpu.pagelocked_empty((n,), np.float64)
            for rep in range(20):
                host[:] = k
                d = pygpu.mem_alloc(host.nbytes)
                pygpu.cudaEventRecord(start, s)
                pygpu.memcpy_htod(d, host, stream=s)
                add(d, np.int64(n), np.float64(rep), grid=16, block=128, stream=s)
                pygpu.memcpy_dtoh(host, d, stream=s)
                pygpu.cudaEventRecord(end, s)
                assert pygpu.cudaEventSynchronize(end) == 0
                assert pygpu.cudaStreamSynchronize(s) == 0
                assert (host == k + rep).all(), (k, rep)
                assert pygpu.cudaEventElapsedTime(start, end)[1] == 0
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    assert not errors, errors


def test_long_synchronize_releases_the_gil(testing: pygpu.Module, backend: str) -> None:
    spin = testing.get_function("spin")
    x = pygpu.mem_alloc(8)
    pygpu.memset_d8(x, 0, 8)
    s = pygpu.cudaStream_t()
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        t0 = time.perf_counter()
        spin(x, np.int64(spin_iterations(backend, 0.5)), block=1, stream=s)
        pygpu.cudaStreamSynchronize(s)
        elapsed = time.perf_counter() - t0
    finally:
        stop.set()
        counter.join()
    assert elapsed > 0.1
    # The other thread kept running while we waited (at least a third of the possible ticks).
    assert ticks > elapsed * 1000 / 3


def test_large_copy_releases_the_gil() -> None:
    host = np.ones(64 << 20, np.uint8)
    dev = pygpu.mem_alloc(host.nbytes)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    for _ in range(10):
        pygpu.memcpy_htod(dev, host)
    done.set()
    counter.join()
    assert ticks > 1000


def test_ctrl_c_during_a_long_synchronize_ends_cleanly(backend: str) -> None:
    code = f"""
        import numpy as np, pygpu, sys
        spin = pygpu.load_kernels("testing").get_function("spin")
        x = pygpu.mem_alloc(8)
        s = pygpu.cudaStream_t()
        print("ready", flush=True)
        spin(x, np.int64({spin_iterations(backend, 3.0 if backend == "host" else 20.0)}), block=1, stream=s)
        try:
            pygpu.cudaStreamSynchronize(s)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
        print("not interrupted", flush=True)
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    # On the host backend the kernel runs inside the launch call; the interrupt then
    # lands when the launch returns, at the latest.
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the process did not end after Ctrl-C")
    assert "not interrupted" not in out
    if backend != "host":
        # On a GPU the wait itself is interrupted, well before the 20 s kernel ends.
        assert proc.returncode == 3 and "interrupted" in out, (out, err)
    else:
        assert proc.returncode == 3 or (proc.returncode != 0 and "KeyboardInterrupt" in err), (out, err)
    assert "panic" not in err.lower() and "Segmentation" not in err


def test_gpu_in_a_forked_child_is_a_clear_error(backend: str) -> None:
    result = run_python(
        """
        import os, sys, pygpu
        a = pygpu.mem_alloc(1024)
        pid = os.fork()
        if pid == 0:
            try:
                pygpu.mem_alloc(16)
                print("child: allocation worked", flush=True)
                os._exit(0)
            except pygpu.BackendUnavailableError as e:
                print("child:", e, flush=True)
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        print("parent: child status", os.waitstatus_to_exitcode(status))
        b = pygpu.mem_alloc(16)       # the parent is unaffected
        print("parent: ok")
        """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    if backend == "host":
        # The host backend has no driver state: forking is fine.
        assert "child: allocation worked" in result.stdout
    else:
        assert "child: this process was forked after the GPU backend started" in result.stdout
        assert "spawn" in result.stdout
        assert "parent: child status 4" in result.stdout
    assert "parent: ok" in result.stdout


@pytest.mark.gpu
def test_out_of_memory_then_keeps_working() -> None:
    blocks = []
    with pytest.raises(pygpu.CudaMemoryError) as info:
        for _ in range(10_000):
            blocks.append(pygpu.mem_alloc(1 << 30))
    assert info.value.code == 2
    assert len(blocks) > 10
    blocks.clear()
    pygpu.cudaGetLastError()
    x = pygpu.mem_alloc(1 << 20)
    pygpu.memset_d32(x, 7, 1 << 18)
    out = np.zeros(1 << 18, np.uint32)
    pygpu.memcpy_dtoh(out, x)
    assert (out == 7).all()
    assert pygpu.mem_get_info()[0] > pygpu.mem_get_info()[1] // 2


@pytest.mark.gpu
def test_kernel_fault_surfaces_as_a_cuda_error() -> None:
    # A fault poisons the CUDA context for the rest of the process: run it in a child.
    result = run_python(
        """
        import numpy as np, pygpu
        f = pygpu.load_kernels("testing").get_function("oob_write")
        x = pygpu.mem_alloc(16)
        f(x, np.int64(1 << 40), block=1)     # the launch itself succeeds
        try:
            pygpu.cudaDeviceSynchronize().check()
        except pygpu.LaunchError as e:
            print("caught", type(e).__name__, e.code, e.name)
        try:
            pygpu.mem_alloc(16)
        except pygpu.CudaError as e:
            print("after:", e.code)
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "caught LaunchError 700 cudaErrorIllegalAddress" in result.stdout
    assert "after: 700" in result.stdout
