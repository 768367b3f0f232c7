"""Threads, the GIL, fork, Ctrl-C, out-of-memory and kernel faults: nothing here may crash,
hang or leave pygpu unusable."""

from __future__ import annotations

import os
import pathlib
import threading
import time

import numpy as np
import pytest

import pygpu
from conftest import interrupt_python, run_python


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
    # On the host backend the kernel runs inside the launch call; the interrupt then
    # lands when the launch returns, at the latest.
    result = interrupt_python(code, after=1.0, timeout=60)
    out, err = result.stdout, result.stderr
    assert "not interrupted" not in out
    if backend != "host":
        # On a GPU the wait itself is interrupted, well before the 20 s kernel ends.
        assert result.returncode == 3 and "interrupted" in out, (out, err)
    else:
        assert result.returncode == 3 or (result.returncode != 0 and "KeyboardInterrupt" in err), (out, err)
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


@pytest.mark.parametrize("allocate", ["mem_alloc", "gpuarray"])
def test_host_kernel_writing_outside_an_arguments_allocation_is_error_700(backend: str, allocate: str) -> None:
    """A host kernel is host code: a write one element past an array, or before it, would corrupt
    the process's heap silently. The host backend watches the bytes around each allocation a
    launch's arguments point into, and reports the write as a GPU reports its fault, then keeps
    working."""
    if backend != "host":
        pytest.skip("on a GPU this is the driver's fault (test_kernel_fault_surfaces_as_a_cuda_error)")
    oob_write = pygpu.load_kernels("testing").get_function("oob_write")
    n = 128  # 512 bytes: a whole pool size class, so the next element is past the block too
    if allocate == "mem_alloc":
        x: object = pygpu.mem_alloc(4 * n)
    else:
        x = pygpu.gpuarray.zeros(n, np.int32)
    oob_write(x, np.int64(n - 1), block=(1, 1, 1))  # the last element: fine
    with pytest.raises(pygpu.LaunchError, match="past the end of the allocation") as caught:
        oob_write(x, np.int64(n), block=(1, 1, 1))
    assert caught.value.code == 700
    with pytest.raises(pygpu.LaunchError, match="16 byte"):  # bytes 13 to 16 after the end
        oob_write(x, np.int64(n + 3), block=(1, 1, 1))
    oob_write(x, np.int64(0), block=(1, 1, 1))  # reported once: the watch is restored
    # before the start, as a stencil's u[i - 1] at i = 0
    with pytest.raises(pygpu.LaunchError, match="before the start of the allocation.*: 4 byte") as caught:
        oob_write(x, np.int64(-1), block=(1, 1, 1))
    assert caught.value.code == 700
    with pytest.raises(pygpu.LaunchError, match="256 byte"):  # the far end of the watched bytes
        oob_write(x, np.int64(-64), block=(1, 1, 1))
    oob_write(x, np.int64(0), block=(1, 1, 1))
    ints = pygpu.gpuarray.GPUArray((n,), np.int32, gpudata=x) if allocate == "mem_alloc" else x
    got = ints.get()  # type: ignore[attr-defined]
    assert got[0] == 1 and got[n - 1] == 1 and got[1 : n - 1].sum() == 0


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


@pytest.mark.device_free_memory
def test_free_during_a_running_host_kernel_waits_for_it(backend: str) -> None:
    """free() on one thread while a kernel on another writes the memory: the memory stays
    mapped until the kernel ends (a GPU's cudaFree waits likewise), then it is released."""
    if backend != "host":
        pytest.skip("on a GPU the driver orders cudaFree after running kernels")
    result = run_python(
        f"""
        import threading, time, numpy as np, pygpu
        spin = pygpu.load_kernels("testing").get_function("spin")
        x = pygpu.mem_alloc(16 << 20)   # large: freed memory is unmapped, a stray write faults
        free_before = pygpu.mem_get_info()[0]
        t = threading.Thread(target=lambda: spin(x, np.int64({spin_iterations(backend, 0.6)}), block=1))
        t.start()
        time.sleep(0.2)
        x.free()
        t.join()
        assert pygpu.mem_get_info()[0] >= free_before + (16 << 20), "released once the kernel ended"
        print("ok")
        """
    )
    assert result.returncode == 0 and "ok" in result.stdout, (result.returncode, result.stderr)


def test_fork_while_another_thread_holds_the_backend(backend: str) -> None:
    """Forks while another thread keeps the host backend busy with large copies (holding its
    registry lock): every child must be able to use pygpu (a GPU backend refuses, see above)."""
    if backend != "host":
        pytest.skip("GPU backends refuse in a forked child")
    result = run_python(
        """
        import os, signal, threading, numpy as np, pygpu
        host = np.ones(32 << 20, np.uint8)
        dev = pygpu.mem_alloc(host.nbytes)
        stop = threading.Event()
        def copy():
            while not stop.is_set():
                pygpu.memcpy_htod(dev, host)
        t = threading.Thread(target=copy)
        t.start()
        failures = 0
        for _ in range(12):
            pid = os.fork()
            if pid == 0:
                signal.alarm(10)   # a deadlocked child dies instead of hanging the test
                a = pygpu.mem_alloc(64)
                pygpu.memset_d8(a, 1, 64)
                out = np.zeros(64, np.uint8)
                pygpu.memcpy_dtoh(out, a)
                os._exit(0 if out.sum() == 64 else 5)
            _, status = os.waitpid(pid, 0)
            failures += os.waitstatus_to_exitcode(status) != 0
        stop.set()
        t.join()
        print("failures", failures)
        """,
        timeout=120,
    )
    assert result.returncode == 0 and "failures 0" in result.stdout, (result.stdout, result.stderr)


def test_truncated_kernel_libraries_are_refused_before_loading(backend: str) -> None:
    """dlopen of a truncated ELF file is SIGBUS: images are checked first (subprocess: a
    regression would kill the test process)."""
    if backend != "host":
        pytest.skip("host kernels libraries; GPU images are the driver's to check")
    result = run_python(
        """
        import os, pygpu
        from pygpu._toolchain.bundled_kernels import KERNELS_DIR
        image = open(os.path.join(KERNELS_DIR, "libtesting.so"), "rb").read()
        n = len(image)
        refused = 0
        for cut in sorted({4, 16, 63, 64, 100, 4096, n // 4, n // 2, n - 4096, n - 100, n - 1}):
            try:
                pygpu.Module(image[:cut])
            except pygpu.CudaError as e:
                refused += "damaged or truncated" in str(e) or "not an ELF" in str(e)
            else:
                print("loaded", cut)
        pygpu.Module(image)   # the whole image still loads
        print("refused", refused)
        """
    )
    assert result.returncode == 0 and "refused 11" in result.stdout, (result.stdout, result.stderr)


def test_module_from_file_names_what_is_wrong(tmp_path: pathlib.Path) -> None:
    with pytest.raises(IsADirectoryError, match=str(tmp_path)):
        pygpu.Module.from_file(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="missing.so"):
        pygpu.Module.from_file(str(tmp_path / "missing.so"))
    with pytest.raises(ValueError):
        pygpu.Module.from_file("/tmp/a\0b")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="not a regular file"):
        pygpu.Module.from_file("/dev/zero")  # endless: refused, not read
    assert time.perf_counter() - t0 < 1


def test_public_functions_stay_within_an_address_space_limit(backend: str) -> None:
    """The fuzzed arguments of test_fuzz.test_functions_reject_invalid_arguments under
    RLIMIT_AS: host memory sized by an argument must be checked against what is available
    (an error), never promised and then touched (an OOM kill on a machine without the limit)."""
    if backend != "host":
        pytest.skip("a GPU driver maps device memory into the address space: test_fuzz runs as is there")
    result = run_python(
        """
        import resource, itertools, numpy as np, pygpu
        from test_fuzz import LOW_LEVEL, WEIRD_VALUES
        pygpu.mem_alloc(16)   # start the backend and its thread pool before the limit
        pages = int(open("/proc/self/statm").read().split()[0])
        limit = pages * resource.getpagesize() + (3 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        sizes = [v for v in WEIRD_VALUES if isinstance(v, int) or isinstance(v, float)]
        calls = 0
        for f in LOW_LEVEL:
            for args in itertools.chain(((v,) for v in WEIRD_VALUES), itertools.product(sizes, repeat=2)):
                try:
                    f(*args)
                except Exception:
                    pass
                calls += 1
        print("calls", calls)
        """,
        env={"PYTHONPATH": os.path.dirname(__file__) + os.pathsep + os.environ.get("PYTHONPATH", "")},
        timeout=300,
    )
    assert result.returncode == 0 and "calls" in result.stdout, (result.returncode, result.stderr[-2000:])


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_get_function_in_a_loop_and_module_reloads_stay_flat() -> None:
    """get_function hands out one handle per kernel (nothing accumulates per call), and a module
    whose functions are gone unloads: its file descriptor and mapping go with it."""
    import gc

    m = pygpu.load_kernels("testing")
    first = m.get_function("fill_i32")
    for _ in range(2000):
        m.get_function("fill_i32")
    assert m.get_function("fill_i32") is not None and first is not None
    del first
    m.close()
    gc.collect()
    before = _open_fds()
    for _ in range(30):
        mod = pygpu.load_kernels("testing")
        f = mod.get_function("fill_i32")
        del f
        mod.close()
        del mod
    gc.collect()
    assert _open_fds() <= before + 2


def test_dlpack_producer_consumer_cycles_are_collected() -> None:
    """A producer that keeps its consumer: the consumer's reference to the producer (inside the
    DLPack tensor) is visible to the garbage collector, so the cycle is collected."""
    import gc
    import weakref

    from pygpu import gpuarray

    gc.collect()
    refs = []
    for versioned in (True, False):
        for _ in range(10):
            producer = gpuarray.to_gpu(np.arange(16.0))
            capsule = producer.__dlpack__(max_version=(1, 0)) if versioned else producer.__dlpack__()
            consumer = gpuarray.from_dlpack(capsule)
            producer.base = consumer  # producer -> consumer -> its DLPack tensor -> producer
            refs.append(weakref.ref(producer))
            del producer, consumer, capsule
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


@pytest.mark.gpu
def test_truncated_gpu_code_objects_are_refused_at_once(backend: str) -> None:
    """A truncated fatbin or HSACO is refused before the driver sees it (the CUDA driver hung
    for 30 s on one): each cut is an error within a second, and the whole image still loads."""
    suffix = "fatbin" if backend == "cuda" else "hsaco"
    result = run_python(
        f"""
        import os, time, pygpu
        from pygpu._toolchain.bundled_kernels import KERNELS_DIR
        image = open(os.path.join(KERNELS_DIR, "testing.{suffix}"), "rb").read()
        n = len(image)
        for cut in (16, 4096, n // 2, n - 1):
            t0 = time.perf_counter()
            try:
                pygpu.Module(image[:cut])
                print("loaded", cut)
            except pygpu.CudaError as e:
                assert "damaged or truncated" in str(e), e
            assert time.perf_counter() - t0 < 1, cut
        pygpu.Module(image)
        print("ok")
        """,
        timeout=120,
    )
    assert result.returncode == 0 and "ok" in result.stdout and "loaded" not in result.stdout, (
        result.stdout,
        result.stderr,
    )


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("cycle", ["get_function", "stream_released_while_capturing"])
def test_repeated_cycles_keep_memory_flat(cycle: str) -> None:
    """Each cycle once leaked ~130 B (a function handle) or ~520 B (a capture) on the host
    backend: 50,000 cycles must not grow the resident set by 2 MiB."""
    m = pygpu.load_kernels("testing")
    a = pygpu.mem_alloc(64)

    def one() -> None:
        if cycle == "get_function":
            m.get_function("fill_i32")
        else:
            s = pygpu.cudaStream_t()
            s.begin_capture()
            pygpu.memset_d8(a, 1, 64, stream=s)
            del s

    for _ in range(2000):
        one()
    before = _resident_bytes()
    for _ in range(50_000):
        one()
    pygpu.cudaGetLastError()
    assert _resident_bytes() - before < 2 << 20


def test_pooled_memory_freed_during_a_running_host_kernel_is_not_handed_out(backend: str) -> None:
    """A pooled block freed while a kernel on another thread writes it goes back to the pool
    only when the kernel ends: an allocation meanwhile gets other memory."""
    if backend != "host":
        pytest.skip("on a GPU the pool's frees are stream-ordered")
    spin = pygpu.load_kernels("testing").get_function("spin")
    x = pygpu.pool_alloc(4096)
    address = int(x)
    t = threading.Thread(target=lambda: spin(x, np.int64(spin_iterations(backend, 0.5)), block=1))
    t.start()
    time.sleep(0.1)
    x.free()
    y = pygpu.pool_alloc(4096)  # same size class: would reuse the block if it were back
    reused_while_running = int(y) == address
    t.join()
    assert not reused_while_running
