"""pygpu.nccl: the loader's answer without NCCL and the argument checks (every backend), and
collectives against numpy on two GPUs, in one process (init_all + group) and in two
processes sharing a unique id (marked gpu; skipped without NCCL or a second GPU)."""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from conftest import run_python

import pygpu
from pygpu import nccl
from pygpu._collectives import nccl_cuda
from pygpu._collectives import nccl_library

N_DEVICES = pygpu.cudaGetDeviceCount()[0]
IPC_TIMEOUT = 120
spawn = multiprocessing.get_context("spawn")


def _nccl_present() -> bool:
    try:
        nccl_library.library()
    except nccl.NcclUnavailableError:
        return False
    return True


needs_nccl = pytest.mark.skipif(
    pygpu.backend() != "cuda" or N_DEVICES < 2 or not _nccl_present(),
    reason=f"needs NCCL and 2 GPUs on the cuda backend ({pygpu.backend()}, {N_DEVICES} device(s))",
)


def test_a_missing_library_is_a_clear_error() -> None:
    result = run_python(
        """
        from pygpu import nccl
        try:
            nccl.get_unique_id()
        except nccl.NcclUnavailableError as e:
            print("unavailable:", e)
        else:
            print("loaded NCCL")
        """,
        env={"PYGPU_NCCL_LIBRARY": "/nonexistent/libnccl.so.2"},
    )
    assert result.returncode == 0, result.stderr
    if "loaded NCCL" in result.stdout:
        pytest.skip("this machine has NCCL (a wheel on sys.path or the system's)")
    assert "pip install nvidia-nccl-cu13" in result.stdout and "/nonexistent/libnccl.so.2" in result.stdout


def test_unique_ids_are_whole_and_new() -> None:
    if not _nccl_present():
        pytest.skip("no NCCL on this machine")
    assert nccl.get_version() >= 20000
    ids = {nccl.get_unique_id() for _ in range(3)}
    assert len(ids) == 3 and all(len(u) == 128 for u in ids)


def test_init_all_is_cuda_only_and_says_what_to_do_instead(backend: str) -> None:
    if backend == "cuda":
        pytest.skip("the cuda backend has ncclCommInitAll")
    with pytest.raises(nccl.NcclUnavailableError, match="mpiexec|cuda backend"):
        nccl.init_all([0])


@pytest.fixture
def unopened() -> Iterator[nccl.Communicator]:
    """A communicator object that never reached NCCL: the checks made before any NCCL call run
    on it. Its made-up handle is dropped before the object is, so nothing destroys it."""
    comm = nccl.Communicator._wrap(nccl_cuda.NcclEngine(12345, 1.0), pygpu.cudaGetDevice()[0])
    yield comm
    comm._engine = None


def test_buffers_are_checked_before_nccl_is_called(unopened: nccl.Communicator) -> None:
    comm = unopened
    a, b = pygpu.zeros(8, np.float32), pygpu.zeros(4, np.float32)
    with pytest.raises(ValueError, match="mismatched sizes"):
        comm.all_reduce(a, b)
    with pytest.raises(ValueError, match="mismatched sizes"):
        comm.all_reduce(a, pygpu.zeros(8, np.float64))
    with pytest.raises(ValueError, match="op must be one of"):
        comm.all_reduce(a, a, op="xor")
    with pytest.raises(TypeError, match="prod of complex"):
        comm.all_reduce(pygpu.zeros(2, np.complex64), pygpu.zeros(2, np.complex64), op="prod")
    with pytest.raises(TypeError, match="not int16"):
        comm.reduce(pygpu.zeros(2, np.int16), pygpu.zeros(2, np.int16))
    with pytest.raises(ValueError, match="contiguous"):
        comm.send(pygpu.zeros((4, 4))[:, ::2], peer=1)
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        comm.send([1.0, 2.0], peer=1)
    comm._engine.ended = True  # as an abort after a timeout leaves it
    with pytest.raises(ValueError, match="aborted after an NCCL error or timeout"):
        comm.all_reduce(a, a)
    comm._engine = None  # as close() leaves it, without calling NCCL
    with pytest.raises(ValueError, match="closed"):
        comm.all_reduce(a, a)
    comm.close()  # idempotent


def test_buffers_of_another_device_are_refused(unopened: nccl.Communicator) -> None:
    if N_DEVICES < 2:
        pytest.skip(f"needs 2 devices, this process has {N_DEVICES}")
    comm = unopened
    with pygpu.Device(1):
        on1 = pygpu.zeros(4, np.float32)
    with pytest.raises(ValueError, match="on device 1, but this communicator runs on device 0"):
        comm.all_reduce(on1, on1)


def test_calls_run_on_the_communicators_device_whichever_is_current() -> None:
    """The engine is called with the communicator's device current, then the caller's device is
    current again (host backend with two devices: the same switching as on cuda)."""
    done = run_python(
        """
        import numpy as np, pygpu
        from pygpu import nccl
        from pygpu._collectives import nccl_cuda

        class Recorder:
            ended, nranks, seen = False, 2, []
            def send(self, buf, peer, stream):
                self.seen.append((pygpu.cudaGetDevice()[0], buf.device, peer, stream))

        engine = Recorder()
        comm = nccl.Communicator._wrap(engine, 1)
        with pygpu.Device(1):
            x = pygpu.zeros(4, np.float32)
            comm.send(x, 1)
        comm.send(x, 0)  # device 0 current: switched to 1 for the call, and back
        print(engine.seen, pygpu.cudaGetDevice()[0])
        comm._engine = None
        """,
        env={"PYGPU_BACKEND": "host", "PYGPU_HOST_DEVICES": "2"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[(1, 1, 1, 0), (1, 1, 0, 0)] 0"


class _NonBlockingNccl:
    """Stands in for libnccl: a non-blocking communicator whose state stays ncclInProgress for
    ``polls`` queries, then becomes ``final``."""

    def __init__(self, polls: int, final: int = 0) -> None:
        self.polls, self.final, self.aborted = polls, final, []

    def ncclCommGetAsyncError(self, handle: int, state: Any) -> int:
        self.polls -= 1
        state._obj.value = 7 if self.polls >= 0 else self.final  # ncclInProgress
        return 0

    def ncclCommAbort(self, handle: int) -> int:
        self.aborted.append(handle)
        return 0

    def ncclGroupStart(self) -> int:
        return 0

    def ncclGroupEnd(self) -> int:
        return 7

    def ncclGetErrorString(self, code: int) -> bytes:
        return b"internal error"


def test_a_wait_nccl_never_finishes_is_a_timeout_that_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _NonBlockingNccl(polls=10**9)
    monkeypatch.setattr(nccl_cuda, "library", lambda: fake)
    engine = nccl_cuda.NcclEngine(1234, timeout=0.05)
    start = time.monotonic()
    with pytest.raises(nccl.NcclError, match=r"ncclAllReduce did not finish within 0.05 s .* aborted"):
        engine.settle(7, "ncclAllReduce")
    assert time.monotonic() - start < 1.0
    assert fake.aborted == [1234] and engine.ended
    engine.release()  # nothing more reaches NCCL once aborted
    engine.abort()
    assert fake.aborted == [1234]
    comm = nccl.Communicator._wrap(engine, pygpu.cudaGetDevice()[0])
    with pytest.raises(ValueError, match="aborted"):
        comm.all_reduce(pygpu.zeros(2, np.float32), pygpu.zeros(2, np.float32))
    comm.close()  # no finalize or destroy on an aborted handle


def test_synchronize_past_its_timeout_aborts_and_says_so() -> None:
    class Unfinished:
        ended, aborted = False, 0

        def wait(self, stream: Any, timeout: float) -> bool:
            return False

        def abort(self) -> None:
            self.aborted += 1

    engine = Unfinished()
    comm = nccl.Communicator._wrap(engine, pygpu.cudaGetDevice()[0])
    with pytest.raises(nccl.NcclError, match=r"the collectives on this stream did not finish within 0.5 s .* aborted"):
        comm.synchronize(timeout=0.5)
    assert engine.aborted == 1
    with pytest.raises(ValueError, match="closed"):
        comm.synchronize()


def test_an_asynchronous_error_aborts_and_names_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _NonBlockingNccl(polls=3, final=3)  # ncclInternalError
    monkeypatch.setattr(nccl_cuda, "library", lambda: fake)
    engine = nccl_cuda.NcclEngine(99, timeout=5.0)
    with pytest.raises(nccl.NcclError, match="NCCL error 3: internal error") as excinfo:
        engine.settle(7, "joining")
    assert excinfo.value.code == 3 and fake.aborted == [99] and engine.ended


def test_a_non_blocking_group_waits_for_each_communicator_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _NonBlockingNccl(polls=5)
    monkeypatch.setattr(nccl_cuda, "library", lambda: fake)
    engine = nccl_cuda.NcclEngine(7, timeout=5.0)
    nccl_cuda.group_start()
    engine._call(0, "ncclSend")  # queued inside the group
    nccl_cuda.group_end()  # ncclInProgress: polled on the engine until it settles
    assert fake.polls < 0 and not fake.aborted and not engine.ended


def test_a_group_end_without_its_start_is_nccls_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class Unopened(_NonBlockingNccl):
        def ncclGroupEnd(self) -> int:
            return 5  # ncclInvalidUsage, as NCCL answers a group_end with no group open

    monkeypatch.setattr(nccl_cuda, "library", lambda: Unopened(polls=0))
    raised: list[BaseException] = []

    def end_first() -> None:  # a thread of its own: no group was ever started on it
        try:
            nccl_cuda.group_end()
        except BaseException as e:  # noqa: BLE001 - the test looks at what was raised
            raised.append(e)

    thread = threading.Thread(target=end_first)
    thread.start()
    thread.join()
    assert len(raised) == 1 and isinstance(raised[0], nccl.NcclError), raised
    assert raised[0].code == 5


# ---------------------------------------------------------------- on two GPUs


@needs_nccl
@pytest.mark.gpu
def test_collectives_in_one_process_match_numpy() -> None:
    comms = nccl.init_all([0, 1])
    assert [c.rank for c in comms] == [0, 1] and comms[0].nranks == 2
    xs = [np.arange(6, dtype=np.float32) + 10 * r for r in range(2)]
    arrays = []
    for r in range(2):
        with pygpu.Device(r):
            arrays.append((pygpu.to_gpu(xs[r]), pygpu.zeros(6, np.float32), pygpu.zeros(12, np.float32)))
    with nccl.group():
        for r, c in enumerate(comms):
            c.all_reduce(arrays[r][0], arrays[r][1])
    with nccl.group():
        for r, c in enumerate(comms):
            c.all_gather(arrays[r][0], arrays[r][2])
    for r in range(2):
        with pygpu.Device(r):
            np.testing.assert_array_equal(arrays[r][1].get(), xs[0] + xs[1])
            np.testing.assert_array_equal(arrays[r][2].get(), np.concatenate(xs))
    for c in comms:
        c.close()
    with pytest.raises(ValueError, match="closed"):
        comms[0].all_reduce(arrays[0][0], arrays[0][1])


def _rank(rank: int, uid: bytes, results: Any) -> None:
    """One rank of two, on GPU ``rank``: each collective against numpy."""
    with pygpu.Device(rank):
        comm = nccl.Communicator(2, uid, rank)
        x = np.arange(8, dtype=np.float64) * (rank + 1)
        a, out = pygpu.to_gpu(x), pygpu.zeros(8, np.float64)
        comm.all_reduce(a, out, op="max")
        checks = {"all_reduce max": np.array_equal(out.get(), np.arange(8) * 2.0)}
        comm.broadcast(a, out, root=1)
        checks["broadcast"] = np.array_equal(out.get(), np.arange(8) * 2.0)
        comm.reduce(a, out, op="sum", root=0)
        if rank == 0:
            checks["reduce"] = np.array_equal(out.get(), np.arange(8) * 3.0)
        half = pygpu.zeros(4, np.float64)
        comm.reduce_scatter(a, half)
        checks["reduce_scatter"] = np.array_equal(half.get(), (np.arange(8) * 3.0)[4 * rank : 4 * rank + 4])
        c = pygpu.to_gpu(np.full(3, 1 + 2j * rank, np.complex128))
        got = pygpu.zeros(3, np.complex128)
        with nccl.group():
            comm.send(c, peer=1 - rank)
            comm.recv(got, peer=1 - rank)
        checks["send/recv"] = np.array_equal(got.get(), np.full(3, 1 + 2j * (1 - rank)))
        stream = pygpu.driver.Stream()
        comm.all_reduce(c, c, stream=stream)
        stream.synchronize()
        checks["complex sum on a stream"] = np.array_equal(c.get(), np.full(3, 2 + 2j))
        comm.close()
    results.put((rank, checks))


@needs_nccl
@pytest.mark.gpu
def test_collectives_in_two_processes_match_numpy() -> None:
    uid = nccl.get_unique_id()
    results = spawn.Queue()
    ranks = [spawn.Process(target=_rank, args=(r, uid, results)) for r in range(2)]
    for p in ranks:
        p.start()
    answers = {}
    deadline = time.monotonic() + IPC_TIMEOUT
    try:
        while len(answers) < 2:
            try:
                rank, checks = results.get(timeout=0.5)
                answers[rank] = checks
            except queue.Empty:
                dead = [p.exitcode for p in ranks if not p.is_alive() and p.exitcode != 0]
                assert not dead and time.monotonic() < deadline, f"a rank failed ({dead}) or timed out"
    finally:
        for p in ranks:
            p.join(IPC_TIMEOUT)
    for rank, checks in answers.items():
        assert all(checks.values()), (rank, checks)
