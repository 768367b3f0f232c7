"""One error model: every exception class the package defines is pygpu.errors' (and the same
object where PyCUDA code finds it), status codes are named by ErrorCode, the package's layers
call raising compiled calls, and each PyGPU status-returning name is its raising call with the
failure returned as the status."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import pygpu
import pygpu.compiler
import pygpu.compyte.dtypes
import pygpu.driver
import pygpu.errors as errors
from pygpu import _pygpu
from pygpu.errors import ErrorCode

PACKAGE = Path(pygpu.__file__).resolve().parent


def _class_definitions() -> list[tuple[str, str]]:
    """(module file, class name) of every class statement in the package whose bases name an
    exception or warning."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef) and any(
                re.search(r"(Error|Exception|Warning)$", ast.unparse(base)) for base in node.bases
            ):
                found.append((str(path.relative_to(PACKAGE)), node.name))
    return found


def test_every_exception_class_is_defined_in_pygpu_errors() -> None:
    defined = _class_definitions()
    elsewhere = [(path, name) for path, name in defined if path != "errors.py"]
    assert not elsewhere, f"exception classes outside pygpu.errors: {elsewhere}"
    assert {name for _, name in defined} <= set(errors.__all__)


def test_the_tree_lists_every_class_once_with_its_bases() -> None:
    for name in errors.__all__:
        if name == "ErrorCode":
            continue
        cls = getattr(errors, name)
        assert issubclass(cls, (Exception, Warning)), name
        assert name in errors.__doc__, f"{name} is missing from pygpu.errors' tree"
    assert issubclass(errors.LogicError, RuntimeError)
    assert issubclass(errors.CompileError, errors.CudaError)
    assert issubclass(errors.NvrtcMissingError, errors.BackendUnavailableError)
    assert issubclass(errors.TypeNameNotKnown, RuntimeError) and issubclass(errors.TypeNameNotKnown, ValueError)
    assert issubclass(errors.CudaMemoryError, MemoryError) and issubclass(errors.InvalidDeviceError, ValueError)


def test_pycuda_places_hold_the_same_classes() -> None:
    import pygpu.gpuarray
    import pygpu.nccl

    assert pygpu.driver.LogicError is errors.LogicError
    assert pygpu.driver.CompileError is pygpu.compiler.CompileError is errors.CompileError
    assert pygpu.driver.Error is pygpu.driver.RuntimeError is pygpu.CudaError is errors.CudaError
    assert pygpu.driver.MemoryError is errors.CudaMemoryError
    assert pygpu.gpuarray.GPUArrayError is errors.GPUArrayError
    assert pygpu.compyte.dtypes.TypeNameNotKnown is errors.TypeNameNotKnown
    assert pygpu.nccl.NcclError is errors.NcclError and pygpu.nccl.NcclUnavailableError is errors.NcclUnavailableError
    for name in ("CudaError", "InvalidValueError", "KernelArgumentWarning", "BackendUnavailableError"):
        assert getattr(pygpu, name) is getattr(errors, name) is getattr(_pygpu, name)


def test_error_codes_are_named_from_the_one_table() -> None:
    assert ErrorCode.cudaSuccess == 0 and ErrorCode.cudaErrorInvalidValue == 1
    assert len(ErrorCode) > 40
    for code in ErrorCode:
        assert pygpu.cudaGetErrorName(code) == code.name
        assert pygpu.cudaError(code).name == code.name
    assert ErrorCode.__module__ == "pygpu.errors" and errors.ErrorCode is _pygpu.ErrorCode


def test_exception_codes_compare_with_error_code() -> None:
    with pytest.raises(errors.InvalidDeviceError) as raised:
        _pygpu.set_device(99)
    assert raised.value.code == ErrorCode.cudaErrorInvalidDevice
    assert ErrorCode[raised.value.name] is ErrorCode.cudaErrorInvalidDevice


def test_a_status_name_returns_what_its_raising_call_raises() -> None:
    assert _pygpu.cudaSetDevice(99) == ErrorCode.cudaErrorInvalidDevice
    assert _pygpu.cudaGetLastError() == ErrorCode.cudaErrorInvalidDevice
    value, status = _pygpu.cudaDeviceGetAttribute(1, 99)
    assert (value, status) == (0, ErrorCode.cudaErrorInvalidDevice)
    with pytest.raises(errors.InvalidDeviceError):
        _pygpu.device_get_attribute(1, 99)
    assert _pygpu.cudaGetDevice() == (_pygpu.get_device(), 0)
    assert _pygpu.cudaGetDeviceCount() == (_pygpu.get_device_count(), 0)
    assert _pygpu.cudaDeviceCanAccessPeer(0, 0) == (int(_pygpu.device_can_access_peer(0, 0)), 0)


def test_queries_answer_not_ready_as_a_status_and_false_as_a_raising_call() -> None:
    stream = _pygpu.cudaStream_t()
    event = _pygpu.cudaEvent_t()
    _pygpu.event_record(event, stream)
    _pygpu.stream_synchronize(stream)
    assert _pygpu.stream_query(stream) is True and _pygpu.cudaStreamQuery(stream) == 0
    assert _pygpu.event_query(event) is True and _pygpu.cudaEventQuery(event) == 0


def test_what_a_status_cannot_say_is_raised_by_both_forms() -> None:
    stream = _pygpu.cudaStream_t()
    stream.close()
    with pytest.raises(errors.InvalidHandleError, match="released"):
        _pygpu.cudaStreamSynchronize(stream)
    with pytest.raises(errors.InvalidHandleError, match="released"):
        _pygpu.stream_synchronize(stream)
    with pytest.raises(ValueError, match="flags must be 0"):
        _pygpu.cudaStreamWaitEvent(None, _pygpu.cudaEvent_t(), 1)


def test_the_package_calls_raising_calls() -> None:
    """The layers above the compiled module raise; they do not turn statuses into exceptions
    (``cudaError(code).check()`` remains only to make the runtime's exception for a known code)."""
    checks = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ".check()" in line and "cudaError(ErrorCode." not in line:
                checks.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not checks, "statuses turned into exceptions in Python:\n" + "\n".join(checks)
