"""Host kernels fault like a GPU (issue 27): an illegal address inside a host kernel ends that
launch with LaunchError 700 naming the kernel, and the process goes on; Ctrl-C stops a long host
kernel within milliseconds, even in the middle of one block (docs/reliability.md, "Host kernels
fault like a GPU"). A fault that was not caught would kill the test process, so each kind is
first run in a child process; the same cases then run in this one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu.compiler import SourceModule

pytestmark = pytest.mark.usefixtures("host_only")

SOURCE = r"""
extern "C" __global__ void write_at(int* a, long long offset) { a[offset + threadIdx.x] = 1; }
extern "C" __global__ void write_null(int* a) { int* p = 0; p[threadIdx.x] = a[0]; }
__device__ int descend(int n) {
  volatile int frame[64];
  frame[0] = n;
  return n == 0 ? 0 : descend(n - 1) + frame[0];
}
extern "C" __global__ void recurse(int* a, int depth) { a[threadIdx.x] = descend(depth); }
extern "C" __global__ void divide(int* a, int d) { a[threadIdx.x] = 7 / d; }
extern "C" __global__ void trap(int* a) { if (threadIdx.x == 3) __builtin_trap(); a[threadIdx.x] = 1; }
extern "C" __global__ void cuda_trap(int* a) { if (threadIdx.x == 1) __trap(); a[threadIdx.x] = 1; }
// Block `bad` faults; the blocks after it wait for a flag that is never set (as blocks waiting
// for the failed one would): the launch must still end, as a GPU ends the whole grid.
extern "C" __global__ void one_block_faults(volatile int* a, int bad) {
  if ((int)blockIdx.x == bad) { int* p = 0; *p = 1; }
  while ((int)blockIdx.x > bad && a[0] == 0) {}
}
extern "C" __global__ void spin(volatile int* a, long long iterations) {
  for (long long i = 0; i < iterations && a[0] == 0; ++i) a[1] += 1;
}
extern "C" __global__ void iota(int* a, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) a[i] = i;
}
"""

# case -> (kernel, its second argument as a Python expression, launch keywords, the error code,
# words the message has)
CASES = {
    "far_past_an_allocation": (
        "write_at",
        "np.int64(1 << 36)",
        dict(block=(32, 1, 1), grid=(2, 1)),
        700,
        "illegal memory access",
    ),
    "null_pointer": ("write_null", None, dict(block=(64, 1, 1)), 700, "null pointer"),
    "stack_overflow": ("recurse", "np.int32(1 << 20)", dict(block=(2, 1, 1)), 700, "overflowed its stack"),
    "one_block_of_many": (
        "one_block_faults",
        "np.int32(37)",
        dict(block=(8, 1, 1), grid=(64, 1)),
        700,
        "block (37,0,0)",
    ),
    "integer_division_by_zero": ("divide", "np.int32(0)", dict(block=(4, 1, 1)), 719, "division"),
    "trap": ("trap", None, dict(block=(8, 1, 1)), 715, "illegal instruction"),
    "cuda_trap": ("cuda_trap", None, dict(block=(4, 1, 1)), 715, "illegal instruction"),
}


@pytest.fixture(scope="module")
def host_only(backend: str) -> None:
    if backend != "host":
        pytest.skip("a GPU reports its own faults (test_reliability.py::test_kernel_fault_surfaces_as_a_cuda_error)")


@pytest.fixture(scope="module")
def module() -> SourceModule:
    return SourceModule(SOURCE)


def check_still_works(module: SourceModule) -> None:
    """What a process must still do after a fault: allocate, launch on every pool thread, copy."""
    n = 3000
    out = pygpu.gpuarray.zeros(n, np.int32)
    module.get_function("iota")(out, np.int32(n), block=(128, 1, 1), grid=((n + 127) // 128, 1))
    assert (out.get() == np.arange(n)).all()


def launch_case(module: SourceModule, case: str) -> pygpu.LaunchError:
    kernel, argument, launch, _, _ = CASES[case]
    a = pygpu.gpuarray.zeros(1024, np.int32)
    args: list[object] = [a]
    if argument is not None:
        args.append(eval(argument, {"np": np}))
    with pytest.raises(pygpu.LaunchError) as caught:
        module.get_function(kernel)(*args, **launch)
    return caught.value


def run_child(code: str, *python_options: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *python_options, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


CHILD_PRELUDE = f"""
import os, signal, sys, threading, time
import numpy as np, pygpu
from pygpu.compiler import SourceModule
module = SourceModule({SOURCE!r})
"""


def test_every_fault_kind_in_a_child_process_leaves_it_working() -> None:
    # Run first where an uncaught fault would only kill a child (the cases as in-process below).
    code = CHILD_PRELUDE + textwrap.dedent(
        f"""
        CASES = {CASES!r}
        a = pygpu.gpuarray.zeros(1024, np.int32)
        for case, (kernel, argument, launch, code, words) in CASES.items():
            args = [a] if argument is None else [a, eval(argument)]
            try:
                module.get_function(kernel)(*args, **launch)
                print(case, "no error", flush=True)
            except pygpu.LaunchError as e:
                print(case, e.code, words in str(e) and kernel in str(e), flush=True)
            out = pygpu.gpuarray.zeros(3000, np.int32)
            module.get_function("iota")(out, np.int32(3000), block=(128, 1, 1), grid=(24, 1))
            assert (out.get() == np.arange(3000)).all()
        print("alive", flush=True)
        """
    )
    result = run_child(code)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-3000:])
    lines = result.stdout.split("\n")
    for case, (_, _, _, code_, _) in CASES.items():
        assert f"{case} {code_} True" in lines, (case, result.stdout)
    assert "alive" in lines


@pytest.mark.parametrize("case", list(CASES))
def test_a_fault_in_a_host_kernel_is_a_launch_error_and_the_process_goes_on(module: SourceModule, case: str) -> None:
    kernel, _, _, code, words = CASES[case]
    error = launch_case(module, case)
    assert error.code == code
    assert words in str(error) and f'kernel "{kernel}"' in str(error)
    check_still_works(module)
    # The same fault again is reported again: nothing stays poisoned or blocked.
    assert launch_case(module, case).code == code
    check_still_works(module)


def test_a_fault_in_a_launch_from_another_python_thread(module: SourceModule) -> None:
    import threading

    errors: list[BaseException] = []

    def run() -> None:
        try:
            launch_case(module, "null_pointer")
            check_still_works(module)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("faulthandler", [True, False])
def test_a_fault_outside_kernels_still_kills_the_process_as_before(faulthandler: bool) -> None:
    # pygpu's handler is installed by the first launch, after faulthandler's: a fault that is
    # not in kernel code goes on to faulthandler (its report), or to the default action.
    code = CHILD_PRELUDE + textwrap.dedent(
        """
        try:
            module.get_function("write_null")(pygpu.mem_alloc(64), block=(1, 1, 1))
        except pygpu.LaunchError as e:
            print("kernel fault", e.code, flush=True)
        import ctypes
        ctypes.string_at(0)
        print("survived", flush=True)
        """
    )
    result = run_child(code, *(["-X", "faulthandler"] if faulthandler else []))
    assert "kernel fault 700" in result.stdout and "survived" not in result.stdout
    assert result.returncode == -signal.SIGSEGV, (result.returncode, result.stderr[-2000:])
    if faulthandler:
        assert "Fatal Python error: Segmentation fault" in result.stderr
        assert "string_at" in result.stderr  # faulthandler's traceback


SPIN_FOREVER = 1 << 62


@pytest.mark.parametrize("grid", [1, 64])
def test_ctrl_c_stops_a_host_kernel_within_milliseconds(grid: int) -> None:
    # In a child: the SIGINT hook is installed once per process, at its first launch.
    code = CHILD_PRELUDE + textwrap.dedent(
        f"""
        a = pygpu.gpuarray.zeros(4, np.int32)
        latencies = []
        for _ in range(3):
            sent = []
            def interrupt():
                sent.append(time.perf_counter())
                os.kill(os.getpid(), signal.SIGINT)
            timer = threading.Timer(0.2, interrupt)
            timer.start()
            try:
                module.get_function("spin")(a, np.int64({SPIN_FOREVER}), block=(32, 1, 1), grid=({grid}, 1))
                print("not interrupted", flush=True)
            except KeyboardInterrupt:
                latencies.append(time.perf_counter() - sent[0])
            timer.join()
        out = pygpu.gpuarray.zeros(3000, np.int32)
        module.get_function("iota")(out, np.int32(3000), block=(128, 1, 1), grid=(24, 1))
        assert (out.get() == np.arange(3000)).all()
        print("latencies", *latencies, flush=True)
        """
    )
    result = run_child(code, timeout=60)
    assert result.returncode == 0, (result.stdout, result.stderr[-3000:])
    assert "not interrupted" not in result.stdout
    latencies = [float(x) for x in result.stdout.split("latencies")[1].split()]
    assert len(latencies) == 3 and max(latencies) < 1.0, latencies  # target 0.1 s; measured ~1-10 ms


def test_a_sigint_handler_that_does_not_raise_lets_the_launch_finish() -> None:
    # A program that handles Ctrl-C itself (finish the step, then stop) keeps its launches.
    code = CHILD_PRELUDE + textwrap.dedent(
        """
        seen = []
        signal.signal(signal.SIGINT, lambda *_: seen.append(1))
        a = pygpu.gpuarray.zeros(4, np.int32)
        f = module.get_function("spin")
        f(a, np.int64(1000), block=(1, 1, 1))  # the first launch, with the handler in place
        start = time.perf_counter()
        timer = threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        iterations = 1
        while time.perf_counter() - start < 0.3:  # a launch long enough to see the signal
            a.fill(0)
            iterations *= 4
            f(a, np.int64(iterations), block=(1, 1, 1))
            assert a.get()[1] == iterations
        timer.join()
        print("finished", len(seen), flush=True)
        """
    )
    result = run_child(code, timeout=60)
    assert result.returncode == 0, (result.stdout, result.stderr[-3000:])
    assert "finished 1" in result.stdout


def test_copies_through_raw_addresses_say_where_the_range_went() -> None:
    import pygpu.driver as drv

    d = drv.mem_alloc(64)
    data = np.arange(16, dtype=np.float32)  # 64 bytes
    with pytest.raises(
        pygpu.InvalidValueError, match=r"runs 32 bytes past the end of the allocation at 0x[0-9a-f]+ \(64 bytes\)"
    ):
        drv.memcpy_htod(int(d) + 32, data)
    with pytest.raises(pygpu.InvalidValueError, match="is not in any live device allocation"):
        drv.memcpy_htod(12345, data)
    out = np.empty(2, np.float32)
    with pytest.raises(pygpu.InvalidValueError, match="runs 4 bytes past the end"):
        drv.memcpy_dtoh(out, int(d) + 60)
    freed = int(d)
    d.free()
    with pytest.raises(pygpu.InvalidValueError, match="is not in any live device allocation"):
        drv.memset_d8(freed, 0, 8)
    pygpu.cudaGetLastError()


def test_waiting_for_a_capturing_stream_is_refused() -> None:
    # As on a GPU (cudaErrorStreamCaptureUnsupported): a capturing stream's work is being
    # recorded, not run, so there is nothing to wait for.
    s = pygpu.cudaStream_t()
    s.begin_capture()
    try:
        assert pygpu.cudaStreamSynchronize(s).name == "cudaErrorStreamCaptureUnsupported"
        assert pygpu.cudaStreamQuery(s).name == "cudaErrorStreamCaptureUnsupported"
    finally:
        s.end_capture()
    assert pygpu.cudaStreamSynchronize(s) == 0  # after the capture: fine again
    pygpu.cudaGetLastError()


def test_faults_in_every_block_at_once_leave_no_signal_blocked() -> None:
    # Every block faults at about the same time, so a block's thread can take the stop signal of
    # another block's failure while its own fault handler runs, and recover from inside it. The
    # fault signal must not stay blocked on that thread: its next fault would kill the process
    # (the kernel kills a thread that faults with the fault signal blocked). In a child process,
    # where a death is a failure of this test rather than of the whole run.
    code = CHILD_PRELUDE + textwrap.dedent(
        """
        f = module.get_function("write_null")
        a = pygpu.gpuarray.zeros(1024, np.int32)
        handled = [int(s) for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)]
        def blocked_on_block_threads():
            found = []
            for tid in os.listdir("/proc/self/task"):
                try:
                    name = open(f"/proc/self/task/{tid}/comm").read().strip()
                    line = [l for l in open(f"/proc/self/task/{tid}/status") if l.startswith("SigBlk")][0]
                except OSError:
                    continue
                mask = int(line.split()[1], 16)
                if name.startswith("pygpu-host") and any(mask >> (s - 1) & 1 for s in handled):
                    found.append(name)
            return found
        for _ in range(400):
            try:
                f(a, block=(4, 1, 1), grid=(256, 1))
            except pygpu.LaunchError:
                pass
        print("blocked", blocked_on_block_threads(), flush=True)
        for _ in range(50):  # and every thread still survives its next fault
            try:
                f(a, block=(4, 1, 1), grid=(256, 1))
            except pygpu.LaunchError:
                pass
        print("alive", flush=True)
        """
    )
    result = run_child(code)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "blocked []" in result.stdout and "alive" in result.stdout, result.stdout
