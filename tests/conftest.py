"""One backend per test process: PYGPU_BACKEND picks it (host unless told otherwise).
Tests marked `gpu` need a real device and are skipped on the host backend; the GPU
machine's script (scripts/gpu_run.sh) runs the whole suite again with PYGPU_BACKEND=cuda."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# The same examples on every run, so that CI is reproducible (a failure found once is found
# again); HYPOTHESIS_PROFILE=explore draws new ones when looking for bugs on purpose.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

os.environ.setdefault("PYGPU_BACKEND", "host")

# A shell without job control starts background commands with SIGINT ignored, and children
# inherit that: the Ctrl-C tests' subprocesses would never see their SIGINT. Catching it here
# gives them the default disposition again (a caught signal is reset across exec).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import pygpu  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if pygpu.backend() != "host":
        return
    skip = pytest.mark.skip(reason="needs a GPU backend (run scripts/gpu_run.sh on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


#: Every dtype a GPUArray holds, written here independently of the package's own table, so a
#: dtype dropped from pygpu.gpuarray is caught by the tests that run over these.
GPUARRAY_DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]

_fuzz_cases = 0


def count_fuzz_case() -> None:
    """Counts one generated case of the property-based tests (test_fuzz.py)."""
    global _fuzz_cases
    _fuzz_cases += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _fuzz_cases:
        terminalreporter.write_line(f"property-based cases run: {_fuzz_cases} (backend {pygpu.backend()})")


@pytest.fixture(scope="session")
def backend() -> str:
    """The backend this process runs on: 'host', 'cuda' or 'hip'."""
    return pygpu.backend()


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter (for process life-cycle and backend-choice tests)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def interrupt_python(code: str, after: float, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter, waits for the line "ready" it prints, sends it SIGINT
    (Ctrl-C) `after` seconds later and returns what it did; fails the test if it outlives
    `timeout` seconds after the signal."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the process did not end after Ctrl-C")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_threads(target: Callable[[int], object], count: int, switch_interval: float | None = None) -> None:
    """Runs ``target(k)`` on ``count`` threads (k = 0, 1, ...) that start it at the same moment,
    waits for them all, and raises the first exception any of them raised. ``switch_interval``:
    how often Python switches threads meanwhile (seconds), so that races show sooner."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        start.wait()
        try:
            target(k)
        except BaseException as e:  # noqa: BLE001 - any failure of a thread is the test's
            errors.append(e)

    interval = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]


def receive_from(results: Any, process: Any, timeout: float) -> Any:
    """The answer of another process on queue `results`; fails at once if `process` died first
    (no wait for the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return results.get(timeout=0.5)
        except queue.Empty:
            if not process.is_alive():
                raise AssertionError(f"the other process exited ({process.exitcode}) without answering") from None
            if time.monotonic() > deadline:
                raise


# ---------------------------------------------------------------- MPI jobs (mpiexec + mpi4py)


def _mpiexec() -> str | None:
    beside_python = Path(sys.executable).parent / "mpiexec"  # the venv's (pip install mpich)
    return str(beside_python) if beside_python.exists() else shutil.which("mpiexec")


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


MPIEXEC = _mpiexec()
needs_mpi = pytest.mark.skipif(
    MPIEXEC is None or not _has_mpi4py(), reason="needs mpi4py and mpiexec (pip install mpi4py mpich)"
)


def need_ranks(n: int, backend: str) -> None:
    """Skips unless this backend can run `n` ranks of collectives (cuda: NCCL, one GPU per rank)."""
    if backend not in ("host", "cuda"):
        pytest.skip(f"pygpu.nccl has no {backend} path")
    devices = pygpu.cudaGetDeviceCount()[0]
    if backend == "cuda" and n > devices:
        pytest.skip(f"{n} NCCL ranks need {n} GPUs; this machine has {devices}")


def run_mpi(n: int, script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`mpiexec -n n python script args...` on this test's backend and sys.path."""
    env = dict(os.environ, PYGPU_BACKEND=pygpu.backend(), MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # One BLAS thread per rank (the ranks fill the cores already); Open MPI refuses root unless told.
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1")
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    assert MPIEXEC is not None
    command = [MPIEXEC, "-n", str(n), sys.executable, str(script), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
