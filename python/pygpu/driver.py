"""The parts of ``pycuda.driver`` that array code touches, over pygpu's runtime calls.

``import pygpu.driver as cuda`` gives ``mem_alloc``, the ``memcpy_*``/``memset_*`` calls
(and their ``_async`` forms), ``mem_get_info``, ``pagelocked_*``, ``Stream``, ``Event``,
``Device``, ``Context`` and the ``In``/``Out``/``InOut`` argument wrappers.

Contexts are the devices' *primary* contexts (the CUDA runtime's, shared with CuPy,
PyTorch and C++ code in the process): ``Context.push``/``pop`` switch the current device
and restore the previous one from a per-thread stack; ``detach`` pops the context if it
is current and makes the object unusable. Nothing is ever destroyed.
"""

from __future__ import annotations

import enum
import operator
import threading
from typing import Any

from pygpu._pinned import pagelocked_empty, pagelocked_empty_like, pagelocked_zeros, pagelocked_zeros_like
from pygpu._pygpu import (
    ArgumentHandler,
    CudaError,
    cudaError,
    DeviceAllocation,
    HostAllocation,
    LaunchError,
    cudaDeviceProp,
    cudaDeviceSynchronize,
    cudaEvent_t,
    cudaEventElapsedTime,
    cudaEventQuery,
    cudaEventRecord,
    cudaEventSynchronize,
    cudaGetDevice,
    cudaGetDeviceCount,
    cudaSetDevice,
    cudaStream_t,
    cudaStreamQuery,
    cudaStreamSynchronize,
    cudaStreamWaitEvent,
    mem_alloc,
    mem_get_info,
    memcpy_dtod,
    memcpy_dtoh,
    memcpy_htod,
    memset_d8,
    memset_d16,
    memset_d32,
)

__all__ = [
    "CompileError",
    "Context",
    "Device",
    "DeviceAllocation",
    "Error",
    "Event",
    "HostAllocation",
    "In",
    "InOut",
    "LaunchError",
    "LogicError",
    "Out",
    "Stream",
    "device_attribute",
    "event_flags",
    "init",
    "mem_alloc",
    "mem_get_info",
    "memcpy_dtod",
    "memcpy_dtod_async",
    "memcpy_dtoh",
    "memcpy_dtoh_async",
    "memcpy_htod",
    "memcpy_htod_async",
    "memset_d8",
    "memset_d8_async",
    "memset_d16",
    "memset_d16_async",
    "memset_d32",
    "memset_d32_async",
    "pagelocked_empty",
    "pagelocked_empty_like",
    "pagelocked_zeros",
    "pagelocked_zeros_like",
]

#: PyCUDA's base exception: every runtime failure is a ``CudaError``.
Error = CudaError


class CompileError(Error):
    """Runtime compilation failed (``pygpu.compiler``); PyCUDA's ``driver.CompileError``.

    ``msg`` says what failed, ``command_line`` is the compiler invocation (a list), and
    ``stderr`` holds the compiler's log (``stdout`` what else it printed, if anything).
    """

    def __init__(self, msg: str, command_line: Any, stdout: str | None = None, stderr: str | None = None) -> None:
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
            command = self.command_line if isinstance(self.command_line, str) else " ".join(map(str, self.command_line))
            text += f"\n[command: {command}]"
        for label, output in (("stdout", self.stdout), ("log", self.stderr)):
            if output:
                text += f"\n[{label}]\n{output.rstrip()}"
        return text


class LogicError(RuntimeError):
    """The calls were made in an order that cannot work (e.g. ``Context.pop`` with an
    empty context stack)."""


def init(flags: int = 0) -> None:
    """Starts the backend (PyCUDA's ``cuda.init()``); calling it again is harmless."""
    if flags != 0:
        raise ValueError("init() flags must be 0")
    cudaGetDeviceCount()[1].check()


# ------------------------------------------------------------------------ memory


def memcpy_htod_async(dest: Any, src: Any, stream: Any = None) -> None:
    """Host-to-device copy enqueued on ``stream`` (asynchronous from page-locked memory)."""
    memcpy_htod(dest, src, stream)


def memcpy_dtoh_async(dest: Any, src: Any, stream: Any = None) -> None:
    """Device-to-host copy enqueued on ``stream``; with a page-locked ``dest`` it may still
    be running when this returns: synchronize the stream before reading ``dest``."""
    memcpy_dtoh(dest, src, stream)


def memcpy_dtod_async(dest: Any, src: Any, size: int | None = None, stream: Any = None) -> None:
    memcpy_dtod(dest, src, size, stream)


def memset_d8_async(dest: Any, data: int, count: int, stream: Any = None) -> None:
    memset_d8(dest, data, count, stream)


def memset_d16_async(dest: Any, data: int, count: int, stream: Any = None) -> None:
    memset_d16(dest, data, count, stream)


def memset_d32_async(dest: Any, data: int, count: int, stream: Any = None) -> None:
    memset_d32(dest, data, count, stream)


# ------------------------------------------------------------------------ streams, events


def _ready(status: cudaError) -> bool:
    """A query's answer: done (cudaSuccess), pending (cudaErrorNotReady), else raise."""
    if status == 600:
        return False
    status.check()
    return True


class Stream(cudaStream_t):
    """A stream (``cudaStream_t``); ``handle`` is the raw handle as an int."""

    def synchronize(self) -> None:
        cudaStreamSynchronize(self).check()

    def is_done(self) -> bool:
        return _ready(cudaStreamQuery(self))

    def wait_for_event(self, event: cudaEvent_t) -> None:
        cudaStreamWaitEvent(self, event).check()


class event_flags(enum.IntFlag):  # noqa: N801 - PyCUDA's name
    DEFAULT = 0
    BLOCKING_SYNC = 1
    DISABLE_TIMING = 2


class Event(cudaEvent_t):
    """An event (``cudaEvent_t``); methods return self where PyCUDA's do."""

    def record(self, stream: Any = None) -> Event:
        cudaEventRecord(self, stream).check()
        return self

    def synchronize(self) -> Event:
        cudaEventSynchronize(self).check()
        return self

    def query(self) -> bool:
        return _ready(cudaEventQuery(self))

    def time_since(self, event: cudaEvent_t) -> float:
        """Milliseconds from ``event`` to this event."""
        ms, status = cudaEventElapsedTime(event, self)
        status.check()
        return ms

    def time_till(self, event: cudaEvent_t) -> float:
        """Milliseconds from this event to ``event``."""
        ms, status = cudaEventElapsedTime(self, event)
        status.check()
        return ms


# ------------------------------------------------------------------------ devices


class device_attribute(enum.IntEnum):  # noqa: N801 - PyCUDA's name
    """The device attributes pygpu reads (CUDA's CUdevice_attribute numbers)."""

    MULTIPROCESSOR_COUNT = 16
    PCI_BUS_ID = 33
    PCI_DEVICE_ID = 34
    PCI_DOMAIN_ID = 50
    COMPUTE_CAPABILITY_MAJOR = 75
    COMPUTE_CAPABILITY_MINOR = 76


class Device:
    """Device ``n`` (an ordinal of the active backend)."""

    def __init__(self, ordinal: int) -> None:
        count = Device.count()
        try:
            ordinal = operator.index(ordinal)
        except TypeError as e:
            raise TypeError(f"a device ordinal is an int, not {type(ordinal).__name__}") from e
        if not 0 <= ordinal < count:
            raise ValueError(f"no device {ordinal!r}: there are {count} device(s)")
        self.ordinal = ordinal

    @staticmethod
    def count() -> int:
        n, status = cudaGetDeviceCount()
        status.check()
        return n

    def _props(self) -> cudaDeviceProp:
        return cudaDeviceProp(self.ordinal)

    def name(self) -> str:
        return self._props().name

    def compute_capability(self) -> tuple[int, int]:
        return self._props().compute_capability

    def total_memory(self) -> int:
        return self._props().totalGlobalMem

    def pci_bus_id(self) -> str:
        """``domain:bus:device.function`` in hex, e.g. ``0000:3b:00.0``."""
        p = self._props()
        return f"{p.pciDomainID:04x}:{p.pciBusID:02x}:{p.pciDeviceID:02x}.0"

    def get_attributes(self) -> dict[device_attribute, int]:
        p = self._props()
        return {
            device_attribute.MULTIPROCESSOR_COUNT: p.multiProcessorCount,
            device_attribute.PCI_BUS_ID: p.pciBusID,
            device_attribute.PCI_DEVICE_ID: p.pciDeviceID,
            device_attribute.PCI_DOMAIN_ID: p.pciDomainID,
            device_attribute.COMPUTE_CAPABILITY_MAJOR: p.major,
            device_attribute.COMPUTE_CAPABILITY_MINOR: p.minor,
        }

    def get_attribute(self, attr: device_attribute) -> int:
        attributes = self.get_attributes()
        try:
            return attributes[device_attribute(attr)]
        except (KeyError, ValueError) as e:
            raise ValueError(f"device attribute {attr!r} is not available through pygpu") from e

    def make_context(self, flags: int = 0) -> Context:
        """The device's primary context, made current (pushed); pop or detach it later."""
        if flags != 0:
            raise ValueError("make_context flags other than 0 are not supported (primary contexts)")
        context = Context(self)
        context.push()
        return context

    def retain_primary_context(self) -> Context:
        return Context(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.ordinal == self.ordinal

    def __hash__(self) -> int:
        return hash(("pygpu.Device", self.ordinal))

    def __int__(self) -> int:
        return self.ordinal

    def __repr__(self) -> str:
        return f"<pygpu.driver.Device {self.ordinal}>"


class _ContextStack(threading.local):
    def __init__(self) -> None:
        self.entries: list[tuple[Context, int]] = []


_stack = _ContextStack()


def _current_device() -> int:
    device, status = cudaGetDevice()
    status.check()
    return device


class Context:
    """A device's primary context. ``push`` makes its device current (remembering the
    previous one), ``Context.pop`` restores it; the stack is per thread."""

    def __init__(self, device: Device | int) -> None:
        self.device = device if isinstance(device, Device) else Device(device)
        self._detached = False

    def push(self) -> None:
        if self._detached:
            raise LogicError("this context was detached and can no longer be pushed")
        previous = _current_device()
        cudaSetDevice(self.device.ordinal).check()
        _stack.entries.append((self, previous))

    @staticmethod
    def pop() -> None:
        """Makes the previously current device current again."""
        if not _stack.entries:
            raise LogicError("Context.pop: the context stack is empty")
        _context, previous = _stack.entries[-1]
        cudaSetDevice(previous).check()
        _stack.entries.pop()

    def detach(self) -> None:
        """Pops this context if it is current; afterwards it cannot be pushed again."""
        if self._detached:
            return
        entries = _stack.entries
        if entries and entries[-1][0] is self:
            Context.pop()
        elif any(c is self for c, _ in entries):
            raise LogicError("cannot detach a context that is on the stack below another one: pop that first")
        self._detached = True

    @staticmethod
    def synchronize() -> None:
        """Waits for all work of the current device."""
        cudaDeviceSynchronize().check()

    @staticmethod
    def get_device() -> Device:
        """The current device."""
        return Device(_current_device())

    @staticmethod
    def get_current() -> Context | None:
        """The context on top of this thread's stack, if any."""
        return _stack.entries[-1][0] if _stack.entries else None

    def __repr__(self) -> str:
        state = " (detached)" if self._detached else ""
        return f"<pygpu.driver.Context of device {self.device.ordinal}{state}>"


# ------------------------------------------------------------------------ kernel arguments


class In(ArgumentHandler):
    """A host array copied to the device before the launch."""

    def __new__(cls, array: Any) -> In:
        return super().__new__(cls, array, "in")


class Out(ArgumentHandler):
    """A host array filled from the device after the launch."""

    def __new__(cls, array: Any) -> Out:
        return super().__new__(cls, array, "out")


class InOut(ArgumentHandler):
    """A host array copied in before and back after the launch."""

    def __new__(cls, array: Any) -> InOut:
        return super().__new__(cls, array, "inout")
