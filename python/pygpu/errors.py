"""Every exception and warning pygpu raises, in one tree, and the status codes by name.

The classes of a failed runtime call are made by the compiled module (they are raised from
Rust); the others are defined here. Every module of the package takes them from here, and the
PyCUDA places re-export them (``pygpu.driver.LogicError``, ``pygpu.compiler.CompileError``,
``pygpu.gpuarray.GPUArrayError``, ``pygpu.compyte.dtypes.TypeNameNotKnown``, ``pygpu.nccl``'s,
and ``pygpu.CudaError`` with its subclasses)::

    Exception
    +-- CudaError                     a runtime call failed: .code (see ErrorCode), .name
    |   +-- CudaMemoryError           also a MemoryError
    |   +-- InvalidValueError         also a ValueError
    |   +-- InvalidDeviceError        also a ValueError
    |   +-- InvalidHandleError        also a ValueError
    |   +-- NoDeviceError
    |   +-- NotReadyError
    |   +-- LaunchError
    |   +-- ModuleError
    |   +-- BackendUnavailableError   also a RuntimeError
    |   |   +-- NvrtcMissingError
    |   +-- CompileError              .code -1: the compiler's log is in .stderr
    +-- LogicError                    a RuntimeError: calls made in an order that cannot work
    +-- GPUArrayError                 a ValueError: wrong shape or layout for an operation
    +-- TypeNameNotKnown              a RuntimeError and ValueError: no dtype has this C name
    +-- NcclUnavailableError          a RuntimeError: no usable libnccl
    +-- NcclError                     a RuntimeError: .code is the ncclResult_t
    +-- CacheUnwritableError          an OSError: the compile cache's folder
    +-- ComputedIncludeError          internal: SourceModule then compiles without the cache
    Warning
    +-- KernelArgumentWarning         a UserWarning: an array reinterpreted by a kernel
    +-- HostStandardWarning           a UserWarning: the host compiler raised the C++ standard

``pygpu.driver`` also has PyCUDA's other names for these: ``Error`` and ``RuntimeError`` are
``CudaError``, ``MemoryError`` is ``CudaMemoryError``.

The status value the low-level calls return (``cudaSetDevice(0) -> <cudaError: code=0>``) is
not an exception: it is :class:`pygpu.cudaError`, and ``check()`` raises the matching class.
:class:`ErrorCode` names its codes: ``err.code == ErrorCode.cudaErrorInvalidDevice``,
``ErrorCode[status.name]``.
"""

from __future__ import annotations

from pygpu._pygpu import (
    BackendUnavailableError,
    CudaError,
    CudaMemoryError,
    ErrorCode,
    InvalidDeviceError,
    InvalidHandleError,
    InvalidValueError,
    KernelArgumentWarning,
    LaunchError,
    ModuleError,
    NoDeviceError,
    NotReadyError,
)

__all__ = [
    "BackendUnavailableError",
    "CacheUnwritableError",
    "CompileError",
    "ComputedIncludeError",
    "CudaError",
    "CudaMemoryError",
    "ErrorCode",
    "GPUArrayError",
    "HostStandardWarning",
    "InvalidDeviceError",
    "InvalidHandleError",
    "InvalidValueError",
    "KernelArgumentWarning",
    "LaunchError",
    "LogicError",
    "ModuleError",
    "NcclError",
    "NcclUnavailableError",
    "NoDeviceError",
    "NotReadyError",
    "NvrtcMissingError",
    "TypeNameNotKnown",
]


class NvrtcMissingError(BackendUnavailableError):
    """No runtime compiler library was found."""


class CompileError(CudaError):
    """Runtime compilation failed (``pygpu.compiler``); PyCUDA's ``driver.CompileError``.

    ``msg`` says what failed, ``command_line`` is the compiler invocation (a list), and
    ``stderr`` holds the compiler's log (``stdout`` what else it printed, if anything).
    """

    def __init__(self, msg: str, command_line: object, stdout: str | None = None, stderr: str | None = None) -> None:
        self.msg = msg
        self.command_line = command_line
        self.stdout = stdout
        self.stderr = stderr
        self.log = stderr or ""
        self.code = -1  # no runtime status: the compiler rejected the source or options
        self.name = "CompileError"
        super().__init__(msg, command_line, stdout, stderr)

    def __str__(self) -> str:
        text = self.msg
        if self.command_line:
            line = self.command_line
            command = " ".join(str(part) for part in line) if isinstance(line, (list, tuple)) else str(line)
            text += f"\n[command: {command}]"
        for label, output in (("stdout", self.stdout), ("log", self.stderr)):
            if output:
                text += f"\n[{label}]\n{output.rstrip()}"
        return text


class LogicError(RuntimeError):
    """The calls were made in an order that cannot work (e.g. ``Context.pop`` with an
    empty context stack)."""


class GPUArrayError(ValueError):
    """PyCUDA's error for an array of the wrong shape or layout for an operation."""


class TypeNameNotKnown(RuntimeError, ValueError):
    """A C type name no dtype is registered under (PyCUDA's class is a RuntimeError; this one is
    also the ValueError that :func:`pygpu.tools.get_or_register_dtype` raises)."""


class NcclUnavailableError(RuntimeError):
    """No usable libnccl: the message lists where it was looked for and how to install it."""


class NcclError(RuntimeError):
    """An NCCL call failed; ``code`` is its ncclResult_t."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class CacheUnwritableError(OSError):
    """The cache folder cannot be created or written."""


class ComputedIncludeError(Exception):
    """The source (or a header it includes) names a header through a macro (``#include NAME``):
    which file that is depends on the macros, so no key built from the text can cover it."""


class HostStandardWarning(UserWarning):
    """The host backend compiled with a newer C++ standard than the options asked for
    (pygpu's host kernel header needs C++11)."""
