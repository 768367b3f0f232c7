"""Issue 27's Python-side defect classes (docs/reliability.md, "Second wave (issue 27)"): each
class has its regressions and one property test (hypothesis, CI-sized).

A  index-driven kernels check indices and ranges (IndexError, nothing out of bounds touched)
D  the compile cache keys macro includes, -include headers and relative -I folders correctly
E  generated kernels: C with Fortran operands as numpy, overlapping scans, float16
G  Ctrl-C during a host compile leaves no compiler process and no temporary file
H  numpy parity: integer arrays against out-of-range Python ints, bool ** 2
I  input checks and messages (curandom, ElementwiseKernel scalars, options, cache_dir, ...)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygpu
import pygpu.gpuarray as ga
from conftest import run_threads
from pygpu import curandom
from pygpu._toolchain import host_compiler
from pygpu._toolchain import kernel_hints
from pygpu._toolchain import rtc
from pygpu._toolchain.source_module import _absolute_paths, _include_dirs
from pygpu.compiler import CompileError, SourceModule
from pygpu.elementwise import ElementwiseKernel
from pygpu.gpuarray._arithmetic import binary
from pygpu.reduction import ReductionKernel
from pygpu.scan import ExclusiveScanKernel, InclusiveScanKernel

_SMALL = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------ A


@pytest.fixture(scope="module")
def fill_one() -> ElementwiseKernel:
    return ElementwiseKernel("float *x, float *y", "x[i] = 1; y[i] = 2", "fill_one")


def test_elementwise_range_outside_the_arrays_raises(fill_one: ElementwiseKernel) -> None:
    x, y = ga.zeros(10, np.float32), ga.zeros(10, np.float32)
    for bad in (slice(0, 10**9), slice(-1, 5), range(5, 11), slice(9, -2, -1)):
        with pytest.raises(IndexError, match="outside the first array"):
            fill_one(x, y, range=bad)
    short = ga.zeros(4, np.float32)
    with pytest.raises(ValueError, match="y has 4 elements"):
        fill_one(x, short, range=slice(0, 8))
    with pytest.raises(ValueError, match="y has 4 elements"):
        fill_one(x, short, slice=slice(0, None))
    with pytest.raises(TypeError):
        fill_one(x, y, range=slice(0.0, 5))
    assert not x.get().any() and not short.get().any()
    fill_one(x, y, range=slice(9, 2**61, 2**61))  # one index, a step that would overflow i
    fill_one(x, y, slice=slice(0, 10**9, 3))  # clipped to the array, as Python slices are
    want = np.zeros(10, np.float32)
    want[9] = want[0:10:3] = 1
    np.testing.assert_array_equal(x.get(), want)


@pytest.mark.parametrize("bad", [5, "x", np.float64(1.0)], ids=["int", "str", "float"])
def test_a_stream_argument_that_is_no_stream_says_what_it_takes(bad: Any) -> None:
    g = ga.zeros(4, np.float32)  # a write pending on the default stream: stream= is looked at
    calls = [
        lambda: g.set_async(np.ones(4, np.float32), stream=bad),
        lambda: g.fill(1.0, stream=bad),
        lambda: g.get(stream=bad),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=r"stream= takes a pygpu.driver.Stream \(cudaStream_t\) or None"):
            call()
        g = ga.zeros(4, np.float32)
    assert (g.get() == 0).all()


def test_like_functions_take_array_likes_as_numpy() -> None:
    for like, np_like in [(ga.zeros_like, np.zeros_like), (ga.ones_like, np.ones_like)]:
        for other in ([1, 2, 3], 2.5, [[1.0, 2.0]]):
            got, want = like(other), np_like(other)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert (got.get() == want).all()
    assert ga.empty_like(np.zeros((2, 3), np.int16)).dtype == np.int16
    with pytest.raises(TypeError, match="unsupported dtype object"):
        ga.zeros_like(object())


def test_misused_array_functions_say_what_they_take() -> None:
    g = ga.to_gpu(np.arange(6, dtype=np.float32))
    with pytest.raises(TypeError, match="maximum: at least one operand must be a GPUArray, not int and int"):
        ga.maximum(1, 2)
    with pytest.raises(TypeError, match="fmod: at least one operand must be a GPUArray"):
        pygpu.cumath.fmod(1.0, [2])
    with pytest.raises(TypeError, match="reshape takes a GPUArray, not NoneType"):
        ga.reshape(None, (2, 3))
    with pytest.raises(TypeError, match="transpose takes a GPUArray, not list"):
        ga.transpose([1, 2])
    with pytest.raises(TypeError, match="conj: out= must be a GPUArray, not int"):
        g.conj(out=1)
    with pytest.raises(ValueError, match="0 size dtype"):
        g.view(np.dtype([]))
    assert (g.get() == np.arange(6)).all()


def test_take_checks_indices_as_numpy() -> None:
    a = np.arange(5.0)
    g = ga.to_gpu(a)
    for index_dtype in (np.int32, np.int64, np.uint32, np.uint64):
        idx = np.array([0, 4, 2], index_dtype)
        np.testing.assert_array_equal(ga.take(g, ga.to_gpu(idx)).get(), a.take(idx))
    negative = np.array([-1, -5, 3], np.int64)
    np.testing.assert_array_equal(ga.take(g, ga.to_gpu(negative)).get(), a.take(negative))
    out = ga.to_gpu(np.full(2, 7.0))
    for bad in ([0, 10**7], [-6, 0], [0, 5]):
        with pytest.raises(IndexError, match=rf"index {bad[0] if bad[0] else bad[1]} .*size 5"):
            ga.take(g, ga.to_gpu(np.array(bad, np.int64)), out=out)
        with pytest.raises(IndexError):
            a.take(bad)
    np.testing.assert_array_equal(out.get(), [7.0, 7.0])  # nothing written on error, as numpy
    with pytest.raises(IndexError, match="18446744073709551615"):
        ga.take(g, ga.to_gpu(np.array([2**64 - 1], np.uint64)))
    with pytest.raises(IndexError, match="no valid index"):
        ga.take(ga.zeros(0, np.float64), ga.to_gpu(np.array([0], np.int32)))


def test_multi_put_and_take_put_never_write_outside() -> None:
    # Neighbours on both sides: an unchecked index would land in one of them.
    before, target, after = (ga.to_gpu(np.full(8, v, np.float32)) for v in (1.0, 2.0, 3.0))
    src = ga.to_gpu(np.arange(3, dtype=np.float32))
    for bad in ([0, 1, 8], [0, -9, 1], [2**31 - 1, 0, 0]):
        with pytest.raises(IndexError, match="multi_put: destination"):
            ga.multi_put([src], ga.to_gpu(np.array(bad, np.int32)), out=[target])
    with pytest.raises(IndexError, match=r"multi_take_put: source: index 0 \+ offset 6 = 6"):
        ga.multi_take_put(
            [src], ga.to_gpu(np.arange(3, dtype=np.int64)), ga.to_gpu(np.arange(3, dtype=np.int64)),
            out=[target], src_offsets=[6],
        )  # fmt: skip
    with pytest.raises(IndexError, match="take: source: index 8"):
        ga.multi_take([target], ga.to_gpu(np.array([8], np.int64)))
    for arr, value in ((before, 1.0), (target, 2.0), (after, 3.0)):
        np.testing.assert_array_equal(arr.get(), np.full(8, value, np.float32))
    # Distinct positions: which of two writes to one position lands is unordered on a GPU.
    ga.multi_put([src], ga.to_gpu(np.array([-1, 0, -7], np.int64)), out=[target])
    want = np.full(8, 2.0, np.float32)
    np.put(want, [-1, 0, -7], np.arange(3))
    np.testing.assert_array_equal(target.get(), want)


def test_subset_reductions_check_indices() -> None:
    a = ga.to_gpu(np.arange(10.0))
    bad = ga.to_gpu(np.array([0, 10], np.int32))
    negative = ga.to_gpu(np.array([-1], np.int64))
    for call in (
        lambda s: ga.subset_sum(s, a),
        lambda s: ga.subset_min(s, a),
        lambda s: ga.subset_max(s, a),
        lambda s: ga.subset_dot(s, a, a),
    ):
        with pytest.raises(IndexError, match=r"index 10 \(at position 1.*size 10; the valid indices are 0 to 9"):
            call(bad)
        with pytest.raises(IndexError, match="index -1"):
            call(negative)
    good = ga.to_gpu(np.array([1, 9, 3], np.uint64))
    assert float(ga.subset_sum(good, a).get()) == 13.0
    assert float(ga.subset_max(good, a).get()) == 9.0


@_SMALL
@given(
    st.integers(1, 40),
    st.lists(st.integers(-100, 100), min_size=1, max_size=30),
    st.sampled_from([np.int32, np.int64, np.uint32, np.uint64]),
)
def test_take_matches_numpy_or_raises_property(n: int, indices: list[int], index_dtype: Any) -> None:
    if np.dtype(index_dtype).kind == "u":
        indices = [i % 200 for i in indices]
    a = np.arange(n, dtype=np.float32) * 3
    idx = np.array(indices).astype(index_dtype)
    try:
        want = a.take(idx)
    except IndexError:
        with pytest.raises(IndexError):
            ga.take(ga.to_gpu(a), ga.to_gpu(idx))
        with pytest.raises(IndexError):
            ga.subset_sum(ga.to_gpu(idx), ga.to_gpu(a))
        return
    np.testing.assert_array_equal(ga.take(ga.to_gpu(a), ga.to_gpu(idx)).get(), want)
    if (idx.astype(np.int64) >= 0).all():
        assert float(ga.subset_sum(ga.to_gpu(idx), ga.to_gpu(a)).get()) == pytest.approx(float(want.sum()))


# ------------------------------------------------------------------------------------------ D


def _value(source: str, **kwargs: Any) -> int:
    module = SourceModule(source, **kwargs)
    x = ga.zeros(1, np.int32)
    module.get_function("f")(x, block=(1, 1, 1), grid=(1, 1))
    return int(x.get()[0])


_USES_VALUE = "__global__ void f(int *x) { x[0] = VALUE; }"


def _set(path: Path, value: int) -> None:
    # A new size and mtime: a change that the memo's stamp and the key must both see.
    path.write_text(f"#define VALUE {value}\n" + " " * value)


def test_macro_include_is_never_served_stale(tmp_path: Path) -> None:
    header = tmp_path / "value.h"
    source = f'#define HEADER "value.h"\n#include HEADER\n{_USES_VALUE}'
    for value in (1, 2, 3):
        _set(header, value)
        assert _value(source, include_dirs=[str(tmp_path)], cache_dir=str(tmp_path / "cache")) == value


def test_pre_included_header_is_in_the_key(tmp_path: Path) -> None:
    header = tmp_path / "pre.h"
    for value in (4, 5):
        _set(header, value)
        cache = str(tmp_path / "cache")
        assert _value(_USES_VALUE, options=["-include", str(header)], cache_dir=cache) == value
        assert _value(_USES_VALUE, options=[f"--pre-include={header}"], cache_dir=cache) == value


def test_relative_include_folders_follow_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("a", 1), ("b", 2)):
        (tmp_path / name / "inc").mkdir(parents=True)
        _set(tmp_path / name / "inc" / "v.h", value)
    source = f'#include "v.h"\n{_USES_VALUE}'
    cache = str(tmp_path / "cache")
    for name, value in (("a", 1), ("b", 2), ("a", 1)):
        monkeypatch.chdir(tmp_path / name)
        assert _value(source, options=["-Iinc"], cache_dir=cache) == value
        assert _value(source, include_dirs=["inc"], cache_dir=cache) == value


_FOLDER_FLAGS = ["-I", "-isystem", "-iquote", "-idirafter", "--include-path"]


@_SMALL
@given(
    st.lists(
        st.tuples(
            st.sampled_from([*_FOLDER_FLAGS, "-D"]),
            st.sampled_from(["joined", "separate", "equals"]),
            st.from_regex(r"[a-z][a-z0-9_]{0,6}(/[a-z0-9_]{1,4}){0,2}", fullmatch=True),
        ),
        max_size=6,
    )
)
def test_include_folders_are_absolute_in_keys_property(options: list[tuple[str, str, str]]) -> None:
    spelled: list[str] = []
    folders: list[str] = []
    for flag, form, value in options:
        if flag == "-D":
            spelled.append(f"-D{value}=1")
            continue
        if form == "separate" or (form == "joined" and flag == "--include-path"):
            spelled += [flag, value]
        elif form == "equals" and flag == "--include-path":
            spelled.append(f"{flag}={value}")
        else:
            spelled.append(f"{flag}{value}")
        folders.append(value)
    absolute = _absolute_paths(spelled)
    # Each folder comes out absolute (against the current folder), everything else as it was.
    assert [str(p) for p in _include_dirs(absolute, [])] == [os.path.abspath(f) for f in folders]
    assert [str(p) for p in _include_dirs(spelled, [])] == folders
    assert [o for o in absolute if o.startswith("-D")] == [o for o in spelled if o.startswith("-D")]


# ------------------------------------------------------------------------------------------ E


def test_elementwise_kernel_c_with_fortran_operands_is_numpy() -> None:
    a = np.arange(12.0).reshape(3, 4)
    b = np.asfortranarray(np.arange(12.0).reshape(3, 4) * 10)
    add = ElementwiseKernel("double *x, double *y, double *z", "z[i] = x[i] + y[i]", "add_orders")
    z = ga.empty((3, 4), np.float64)
    add(ga.to_gpu(a), ga.to_gpu(b), z)
    np.testing.assert_array_equal(z.get(), a + b)
    zf = ga.empty((3, 4), np.float64, order="F")  # a Fortran output written through its copy
    add(ga.to_gpu(a), ga.to_gpu(a), zf)
    np.testing.assert_array_equal(zf.get(), a + a)
    dot = ReductionKernel(np.float64, "0", "a+b", "x[i]*y[i]", "double *x, double *y")
    assert float(dot(ga.to_gpu(a), ga.to_gpu(b)).get()) == float((a * b).sum())
    g = ga.to_gpu(a)
    with pytest.raises(ValueError, match="share memory"):
        add(g, g.T, ga.empty((3, 4), np.float64))  # a Fortran view of g's own memory, with g


@_SMALL
@given(st.integers(1, 5), st.integers(1, 5), st.lists(st.booleans(), min_size=3, max_size=3))
def test_elementwise_orders_property(rows: int, cols: int, fortran: list[bool]) -> None:
    values = [np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) * (k + 1) for k in range(3)]
    arrays = [np.asfortranarray(v) if f else v for v, f in zip(values, fortran)]
    kernel = ElementwiseKernel("float *x, float *y, float *z", "z[i] = x[i] * 2 + y[i]", "orders_prop")
    gx, gy, gz = (ga.to_gpu(v) for v in arrays)
    kernel(gx, gy, gz)
    np.testing.assert_array_equal(gz.get(), values[0] * 2 + values[1])


@pytest.mark.parametrize("kernel_class", [InclusiveScanKernel, ExclusiveScanKernel])
@pytest.mark.parametrize("shift", [1, -1, 9])
def test_scan_with_overlapping_output(kernel_class: Any, shift: int) -> None:
    n = 6000
    kernel = (
        kernel_class(np.int64, "a+b", "0") if kernel_class is ExclusiveScanKernel else kernel_class(np.int64, "a+b")
    )
    data = np.arange(n + 20, dtype=np.int64)
    g = ga.to_gpu(data)
    src, dst = (g[:n], g[shift : shift + n]) if shift > 0 else (g[1 : n + 1], g[:n])
    want_in = data[:n] if shift > 0 else data[1 : n + 1]
    kernel(src, dst)
    want = np.cumsum(want_in)
    if kernel_class is ExclusiveScanKernel:
        want = np.concatenate([[0], want[:-1]])
    np.testing.assert_array_equal(dst.get(), want)


@_SMALL
@given(st.integers(1, 3000), st.integers(-50, 50))
def test_scan_overlap_property(n: int, shift: int) -> None:
    kernel = InclusiveScanKernel(np.int32, "a+b")
    data = np.arange(n + 100, dtype=np.int32) % 7
    g = ga.to_gpu(data)
    lo = 50
    src, dst = g[lo : lo + n], g[lo + shift : lo + shift + n]
    kernel(src, dst)
    np.testing.assert_array_equal(dst.get(), np.cumsum(data[lo : lo + n], dtype=np.int32))


def test_float16_generated_kernels() -> None:
    x = np.array([0.5, 1.5, -2.0, 3.25], np.float16)
    gx = ga.to_gpu(x)
    scale = ElementwiseKernel("__half a, __half *x, __half *y", "y[i] = a * x[i] + x[i]", "half_axpx")
    gy = ga.empty_like(gx)
    scale(np.float16(2), gx, gy)
    np.testing.assert_array_equal(gy.get(), (np.float16(2) * x + x).astype(np.float16))
    total = ReductionKernel(np.float16, "0", "a+b", "x[i]*x[i]", "half *x")
    assert total(gx).get() == (x * x).sum(dtype=np.float16)
    cumsum = InclusiveScanKernel(np.float16, "a+b")
    np.testing.assert_array_equal(cumsum(ga.to_gpu(x)).get(), np.cumsum(x, dtype=np.float16))
    excl = ExclusiveScanKernel(np.float16, "a+b", "0")
    np.testing.assert_array_equal(excl(ga.to_gpu(x)).get(), np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.float16))


def test_cuda_fp16_header_builds_on_every_backend() -> None:
    # CUDA's spellings of half maths. The include stays outside extern "C" (no_extern_c), as
    # CUDA's own cuda_fp16.h needs: its C++ overloads cannot have C linkage.
    module = SourceModule(
        "#include <cuda_fp16.h>\n"
        'extern "C" __global__ void halves(__half *x) { x[0] = __hadd(x[0] * __float2half(2.0f), __half(1)); }',
        no_extern_c=True,
    )
    x = ga.to_gpu(np.array([1.5, 7.0], np.float16))
    module.get_function("halves")(x, block=(1, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(x.get(), np.array([4.0, 7.0], np.float16))


# ------------------------------------------------------------------------------------------ G

_SLOW_CXX = """#!/bin/sh
# A compiler that starts a child of its own and leaves a temporary file, as g++ (cc1plus, as).
echo $$ > "$MARK/cxx.pid"
touch "$TMPDIR/cc-temporary.s"
sleep 60 &
echo $! > "$MARK/child.pid"
wait
exec "${REAL_CXX:-g++}" "$@"
"""


def _alive(pid: int) -> bool:
    """Whether `pid` still runs, a second after it was sent SIGKILL at the latest: the kill is
    sent before the compile call returns, but a process of the group other than the compiler
    itself (which is waited for) dies when the kernel next schedules it, which on a loaded
    machine can be some milliseconds later."""
    deadline = time.monotonic() + 1.0
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state == "Z":  # a zombie has stopped running (its parent reaps it)
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.005)


def _slow_compiler(tmp_path: Path) -> tuple[Path, Path, Path]:
    cxx, mark, work = tmp_path / "slowcxx", tmp_path / "mark", tmp_path / "tmp"
    cxx.write_text(_SLOW_CXX)
    cxx.chmod(0o755)
    mark.mkdir()
    work.mkdir()
    return cxx, mark, work


def _wait_for(path: Path, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_ctrl_c_during_a_host_compile_leaves_nothing(tmp_path: Path) -> None:
    cxx, mark, work = _slow_compiler(tmp_path)
    env = {**os.environ, "PYGPU_BACKEND": "host", "CXX": str(cxx), "MARK": str(mark), "TMPDIR": str(work)}
    env["PYGPU_DISABLE_CACHE"] = "1"
    code = (
        "import pygpu.autoinit\nfrom pygpu.compiler import SourceModule\nSourceModule('__global__ void g(float *x) {}')"
    )
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    _wait_for(mark / "child.pid")
    os.kill(child.pid, signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0 and b"KeyboardInterrupt" in err
    for name in ("cxx.pid", "child.pid"):
        assert not _alive(int((mark / name).read_text())), f"the compiler's {name} still runs"
    assert list(work.iterdir()) == []  # no pygpu-compile-* folder, no compiler temporary file


class _Interrupt(BaseException):
    pass


@settings(max_examples=5, deadline=None)
@given(st.floats(0.0, 0.3))
def test_interrupted_compiler_run_is_stopped_property(delay: float) -> None:
    """An exception at any moment of a compiler run (here a signal handler's, as Ctrl-C's
    KeyboardInterrupt arrives) leaves no process of the compiler and no file of its run."""
    import tempfile
    import threading

    def interrupt_later(mark: Path) -> None:
        _wait_for(mark / "child.pid")  # the compiler and its child both run
        time.sleep(0.02 + delay)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGALRM)

    def handler(*_: Any) -> None:
        raise _Interrupt

    with tempfile.TemporaryDirectory() as scratch:
        cxx, mark, _work = _slow_compiler(Path(scratch))
        os.environ["MARK"] = str(mark)
        previous = signal.signal(signal.SIGALRM, handler)
        trigger = threading.Thread(target=interrupt_later, args=(mark,), daemon=True)
        folders: list[Path] = []
        try:
            trigger.start()
            with pytest.raises(_Interrupt):
                with host_compiler._workdir(False) as folder:
                    folders.append(folder)
                    host_compiler._run([str(cxx), "--version"], folder, "out", 60)
            trigger.join()
        finally:
            signal.signal(signal.SIGALRM, previous)
            os.environ.pop("MARK", None)
        assert folders and not folders[0].exists()
        for name in ("cxx.pid", "child.pid"):
            assert not _alive(int((mark / name).read_text())), f"the compiler's {name} still runs"


def test_compiler_that_writes_nothing_is_a_compile_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if pygpu.backend() != "host":
        pytest.skip("the host backend's C++ compiler")
    fake = tmp_path / "fakecxx"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    with pytest.raises(CompileError, match="wrote no"):
        SourceModule("__global__ void nothing_written(float *x) {}", cache_dir=False)


# ------------------------------------------------------------------------------------------ H

_CMP = ["<", "<=", ">", ">=", "==", "!="]


def test_integer_array_against_out_of_range_int_is_numpy() -> None:
    a = np.arange(-3, 4, dtype=np.int8)
    g = ga.to_gpu(a)
    for op in _CMP:
        for v in (300, -300, 2**70):
            np.testing.assert_array_equal(eval(f"g {op} v").get(), eval(f"a {op} v"))
            np.testing.assert_array_equal(eval(f"v {op} g").get(), eval(f"v {op} a"))
    out = ga.zeros(7, np.bool_)
    binary(np.less, "lt", g, 300, out=out)  # the out= path of the operators
    assert out.get().all()
    b = np.array([True, False])
    assert (ga.to_gpu(b) ** 2).dtype == (b**2).dtype == np.int8
    np.testing.assert_array_equal((ga.to_gpu(b) ** 2).get(), b**2)
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        ga.to_gpu(np.array([1], np.uint8)) ** -1
    with pytest.raises(OverflowError):
        ga.to_gpu(np.array([1, 2], np.bool_)) < 2**64


@_SMALL
@given(
    st.sampled_from(["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]),
    st.integers(-(2**66), 2**66),
    st.sampled_from(_CMP),
    st.booleans(),
)
def test_comparison_with_python_int_property(dtype: str, value: int, op: str, reflected: bool) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.min, 0, info.max, 1], dtype)
    g = ga.to_gpu(a)
    expr = f"v {op} x" if reflected else f"x {op} v"
    want = eval(expr, {"v": value, "x": a})
    np.testing.assert_array_equal(eval(expr, {"v": value, "x": g}).get(), want)


# ------------------------------------------------------------------------------------------ I


def test_curandom_checks_seeds_offsets_and_parameters() -> None:
    for bad, error in ((1.5, TypeError), ("7", TypeError), (-1, ValueError), (2**64, ValueError), (True, TypeError)):
        with pytest.raises(error, match="seed must be an integer in"):
            curandom.PhiloxRandomNumberGenerator(seed=bad)
    assert curandom.PhiloxRandomNumberGenerator(seed=np.uint64(2**64 - 1)).seed == 2**64 - 1
    with pytest.raises(ValueError, match="offset must be a non-negative"):
        curandom.PhiloxRandomNumberGenerator(seed=1, offset=-1)
    gen = curandom.PhiloxRandomNumberGenerator(seed=1)
    with pytest.raises(ValueError, match="call_skip_ahead"):
        gen.call_skip_ahead(-3)
    with pytest.raises(ValueError, match="sigma"):
        gen.gen_log_normal((4,), np.float32, 0.0, -1.0)
    with pytest.raises(TypeError, match="gen_poisson needs a lambda_value"):
        gen.gen_poisson((4,), np.int32, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="real number"):
        gen.gen_poisson((4,), np.int32, "3")  # type: ignore[arg-type]
    # A PyCUDA seed getter's int32 seeds are taken as their bits.
    getter = curandom.XORWOWRandomNumberGenerator(seed_getter=lambda n: ga.to_gpu(np.full(n, -1, np.int32)))
    assert getter.seed == 2**32 - 1


@_SMALL
@given(st.integers(-(2**70), 2**70))
def test_seed_range_property(seed: int) -> None:
    if 0 <= seed < 2**64:
        gen = curandom.PhiloxRandomNumberGenerator(seed=seed)
        assert gen.seed == seed
        same = curandom.PhiloxRandomNumberGenerator(seed=seed)
        np.testing.assert_array_equal(gen.gen_uniform((8,), np.float32).get(), same.gen_uniform((8,), np.float32).get())
    else:
        with pytest.raises(ValueError, match=str(seed)):
            curandom.PhiloxRandomNumberGenerator(seed=seed)


def test_elementwise_scalars_must_be_numbers() -> None:
    kernel = ElementwiseKernel("float a, float *x", "x[i] = a", "set_scalar")
    x = ga.zeros(4, np.float32)
    for bad in (None, "1", b"1"):
        with pytest.raises(TypeError, match="pass a number"):
            kernel(bad, x)
    assert not x.get().any()


def test_options_as_one_string_and_empty_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _value(_USES_VALUE, options="-DVALUE=7 -DOTHER=1", cache_dir="") == 7
    assert list(tmp_path.iterdir()) == []  # cache_dir="" is no cache: nothing in the working folder
    kernel = ElementwiseKernel("int *x", "x[i] = VALUE", "one_string_options", options="-DVALUE=3")
    x = ga.zeros(2, np.int32)
    kernel(x)
    np.testing.assert_array_equal(x.get(), [3, 3])
    with pytest.raises(TypeError, match="list of str"):
        SourceModule(_USES_VALUE, options=[b"-DVALUE=1"])  # type: ignore[list-item]


def test_messages_name_environment_variables_and_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPU_COMPILE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="PYGPU_COMPILE_TIMEOUT='soon'"):
        host_compiler.compile_timeout()
    monkeypatch.setenv("PYGPU_COMPILE_TIMEOUT", "-4")
    with pytest.raises(ValueError, match="positive number of seconds"):
        host_compiler.compile_timeout()
    monkeypatch.setenv("PYGPU_COMPILE_TIMEOUT", "2.5")
    assert host_compiler.compile_timeout() == 2.5
    with pytest.raises(pygpu.BackendUnavailableError, match="pip install nvidia-cuda-nvrtc"):
        rtc.library_identity("libnvrtc.so.99")


def test_missing_kernel_hints() -> None:
    template = "template <class T> __global__ void foo(T *x) { x[0] = 1; }"
    assert "is a template" in (kernel_hints.missing_kernel_hint(template, "foo", True) or "")
    namespaced = "namespace ns { __global__ void foo(float *x) {} }"
    assert "mangled" in (kernel_hints.missing_kernel_hint(namespaced, "foo", True) or "")
    assert "without the namespace" in (kernel_hints.missing_kernel_hint(namespaced, "ns::foo", False) or "")
    hint = kernel_hints.missing_kernel_hint("__global__ void bar(float *x) {}", "foo", False)
    assert hint is not None and "its kernels: bar" in hint
    assert kernel_hints.missing_kernel_hint('extern "C" __global__ void foo(float *x) {}', "foo", True) is None


def test_get_function_says_why_a_kernel_is_missing() -> None:
    module = SourceModule(
        "template <class T> __global__ void foo(T *x) { x[0] = 1; }\ntemplate __global__ void foo<float>(float *);",
        no_extern_c=True,
    )
    with pytest.raises(pygpu.ModuleError) as info:
        module.get_function("foo")
    pygpu.cudaGetLastError()  # the failed look-up's status, read and cleared as CUDA's runtime has it
    assert any("is a template" in note for note in getattr(info.value, "__notes__", []))


def test_nccl_timeout_variable_is_named() -> None:
    code = "import pygpu.nccl"
    env = {**os.environ, "PYGPU_NCCL_TIMEOUT": "later"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "PYGPU_NCCL_TIMEOUT" in done.stderr


# --- integers out of a parameter's range say which parameter, the value and the range ---------

_NARROW = SourceModule("__global__ void narrow(float* p, int n, unsigned char b) { if (n < 0) p[0] = b; }")


@pytest.mark.parametrize(
    ("call", "what", "error"),
    [
        (
            lambda d: pygpu.memset_d8(d, 300, 4),
            "memset_d8's value takes an unsigned 8-bit integer, from 0 to 255",
            OverflowError,
        ),
        (lambda d: pygpu.memset_d16(d, 1 << 16, 4), "memset_d16's value takes an unsigned 16-bit", OverflowError),
        (
            lambda d: pygpu.memset_d32(d, -1, 4),
            "memset_d32's value takes an unsigned 32-bit integer, from 0 to 4294967295; -1",
            OverflowError,
        ),
        (lambda d: pygpu.memset_d32(d, 1.5, 4), "memset_d32's value: 'float' object cannot be interpreted", TypeError),
        (lambda d: pygpu.cudaSetDevice(2**40), "the device ordinal takes a signed 32-bit integer", OverflowError),
        (
            lambda d: _NARROW.get_function("narrow")(d, np.int32(1), np.uint8(1), block=(1, 1, 1), shared=-1),
            "shared= (bytes of dynamic shared memory) takes an unsigned 32-bit integer",
            OverflowError,
        ),
        (
            lambda d: _NARROW.get_function("narrow").prepare("PiB").prepared_call((1, 1), (1, 1, 1), d, 2**40, 1),
            "argument 1 takes a signed 32-bit integer, from -2147483648 to 2147483647; 1099511627776",
            OverflowError,
        ),
        (
            lambda d: _NARROW.get_function("narrow").prepare("PiB").prepared_call((1, 1), (1, 1, 1), d, 1, 300),
            "argument 2 takes an unsigned 8-bit integer, from 0 to 255; 300",
            OverflowError,
        ),
    ],
)
def test_out_of_range_integers_name_the_parameter_and_range(call: Any, what: str, error: type) -> None:
    d = pygpu.mem_alloc(64)
    with pytest.raises(error) as raised:
        call(d)
    assert what in str(raised.value)
    pygpu.cudaGetLastError()


# --- third wave (2026-11-28 probes): generated kernels and the array functions -----------------


def test_take_and_put_read_fortran_sources_and_indices_in_ravel_order() -> None:
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = ga.to_gpu(host)
    np.testing.assert_array_equal(ga.take(a.T, ga.to_gpu(np.array([1, 2], np.int32))).get(), np.take(host.T, [1, 2]))
    fortran_indices = np.asfortranarray(np.array([[0, 1], [2, 3]], np.int32).T)
    np.testing.assert_array_equal(ga.take(a, ga.to_gpu(fortran_indices)).get(), np.take(host, fortran_indices))
    put = ga.multi_put([a.T], ga.to_gpu(np.arange(12, dtype=np.int32)), dest_shape=(12,))[0]
    np.testing.assert_array_equal(put.get(), host.T.ravel())


def test_take_refuses_an_output_of_another_dtype_or_read_only() -> None:
    a = ga.to_gpu(np.arange(12, dtype=np.float32))
    idx = ga.to_gpu(np.array([1, 2, 3], np.int32))
    with pytest.raises(TypeError, match="out has dtype int32, the source float32"):
        ga.take(a, idx, out=ga.zeros(3, np.int32))  # same itemsize: the bits would be reinterpreted
    frozen = ga.zeros(3, np.float32)
    frozen._readonly = True
    with pytest.raises(ValueError, match="read-only"):
        ga.take(a, idx, out=frozen)


def test_reduction_kernel_arguments_may_take_any_name_but_its_index_and_count() -> None:
    x = ga.to_gpu(np.arange(10, dtype=np.float32))
    for name in ("k", "acc", "shared", "threads", "s"):  # once the generated loop's own names
        kernel = ReductionKernel(np.float32, "0", "a+b", f"in[i]*{name}", f"const float *in, float {name}")
        assert kernel(x, np.float32(2)).get() == 90
    for name in ("i", "n", "pygpu_start"):
        with pytest.raises(ValueError, match=rf"argument names \['{name}'\] are used by the generated kernels"):
            ReductionKernel(np.float32, "0", "a+b", "in[i]", f"const float *in, float {name}")
    with pytest.raises(ValueError, match="in declared more than once"):
        ReductionKernel(np.float32, "0", "a+b", "in[i]", "const float *in, const float *in")
    frozen = ga.zeros((), np.float32)
    frozen._readonly = True
    with pytest.raises(ValueError, match="read-only"):
        ReductionKernel(np.float32, "0", "a+b", arguments="const float *in")(x, out=frozen)


def test_scans_refuse_inputs_and_outputs_of_different_memory_orders() -> None:
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    scan = InclusiveScanKernel(np.float32, "a+b")
    with pytest.raises(ValueError, match="input is in Fortran order and the output in C order"):
        scan(ga.to_gpu(np.asfortranarray(host)), ga.zeros((3, 4), np.float32))
    same = ga.to_gpu(np.asfortranarray(host))
    out = ga.empty_like(same)
    scan(same, out)
    np.testing.assert_array_equal(out.get().ravel(order="F"), np.cumsum(host.ravel(order="F")))
    frozen = ga.zeros(12, np.float32)
    frozen._readonly = True
    with pytest.raises(ValueError, match="read-only"):
        scan(ga.to_gpu(host.ravel()), frozen)


def test_generated_kernel_names_and_arange_refuse_wrong_types_by_name() -> None:
    with pytest.raises(ValueError, match="kernel name 5 is not a C identifier"):
        ElementwiseKernel("float *x", "x[i] = 0", name=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kernel name None is not a C identifier"):
        ReductionKernel(np.float32, "0", "a+b", arguments="const float *in", name=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name_prefix 3 is not a C identifier"):
        InclusiveScanKernel(np.float32, "a+b", name_prefix=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="arange\\(\\) needs a stop value"):
        ga.arange(None)


def test_holds_recorded_by_many_threads_at_once_are_kept_until_done() -> None:
    # Every thread that launches with temporaries records a hold (an event after the launch and
    # the objects to keep until it is done). A thread switch between one thread's look at the
    # oldest hold and its pop let another pop it first: the pop then failed (IndexError) or, on a
    # GPU, took a hold still running, freeing its temporaries under the kernel.
    from pygpu.gpuarray import _bundled

    def hold_many(_: int) -> None:
        for _ in range(5000):
            _bundled.hold(None, (object(),))

    run_threads(hold_many, 8, switch_interval=1e-6)  # raises what any thread raised
    assert pygpu.cudaDeviceSynchronize() == 0
