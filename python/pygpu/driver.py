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
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pygpu._driver_enums import (
    ctx_flags,
    device_attribute,
    func_cache,
    function_attribute,
    host_alloc_flags,
    ipc_mem_flags,
    jit_option,
    limit,
    mem_host_register_flags,
    shared_config,
)
from pygpu._memcpy import Memcpy2D, Memcpy3D, mem_alloc_pitch, memset_d2d8, memset_d2d16, memset_d2d32
from pygpu._pinned import (
    aligned_empty,
    aligned_empty_like,
    aligned_zeros,
    aligned_zeros_like,
    pagelocked_empty,
    pagelocked_empty_like,
    pagelocked_zeros,
    pagelocked_zeros_like,
)
from pygpu._pygpu import (
    ArgumentHandler,
    CudaError,
    DeviceAllocation,
    HostAllocation,
    LaunchError,
    Module,
    IPCMemoryHandle,
    RegisteredHostMemory,
    cudaDeviceCanAccessPeer,
    cudaDeviceGetAttribute,
    cudaDeviceGetCacheConfig,
    cudaDeviceGetLimit,
    cudaDeviceProp,
    cudaDeviceSetCacheConfig,
    cudaDeviceSetLimit,
    cudaDeviceSynchronize,
    cudaDriverGetVersion,
    device_attributes,
    cudaError,
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
    mem_get_ipc_handle,
    memcpy_htod,
    memset_d8,
    memset_d16,
    memset_d32,
)
from pygpu._texrefs import (
    SurfaceReference,
    TextureReference,
    bind_array_to_texref,
    gpuarray_to_array,
    make_multichannel_2d_array,
    matrix_to_array,
    matrix_to_texref,
    np_to_array,
)

__all__ = [
    "CompileError",
    "Context",
    "Device",
    "DeviceAllocation",
    "Error",
    "Event",
    "HostAllocation",
    "IPCMemoryHandle",
    "In",
    "InOut",
    "LaunchError",
    "LogicError",
    "Memcpy2D",
    "Memcpy3D",
    "Module",
    "Out",
    "PointerHolderBase",
    "RegisteredHostMemory",
    "Stream",
    "SurfaceReference",
    "TextureReference",
    "aligned_empty",
    "aligned_empty_like",
    "aligned_zeros",
    "aligned_zeros_like",
    "bind_array_to_texref",
    "ctx_flags",
    "device_attribute",
    "event_flags",
    "from_device",
    "from_device_like",
    "func_cache",
    "function_attribute",
    "get_driver_version",
    "get_version",
    "gpuarray_to_array",
    "host_alloc_flags",
    "init",
    "ipc_mem_flags",
    "jit_option",
    "limit",
    "make_multichannel_2d_array",
    "matrix_to_array",
    "matrix_to_texref",
    "mem_alloc",
    "mem_alloc_like",
    "mem_alloc_pitch",
    "mem_get_info",
    "mem_get_ipc_handle",
    "mem_host_register_flags",
    "memcpy_dtod",
    "memcpy_dtod_async",
    "memcpy_dtoh",
    "memcpy_dtoh_async",
    "memcpy_htod",
    "memcpy_htod_async",
    "memset_d2d8",
    "memset_d2d16",
    "memset_d2d32",
    "memset_d8",
    "memset_d8_async",
    "memset_d16",
    "memset_d16_async",
    "memset_d32",
    "memset_d32_async",
    "module_from_buffer",
    "module_from_file",
    "np_to_array",
    "pagelocked_empty",
    "pagelocked_empty_like",
    "pagelocked_zeros",
    "pagelocked_zeros_like",
    "register_host_memory",
    "shared_config",
    "to_device",
]

#: The ``limit`` enumeration, under a name that ``Context.get_limit``'s parameter does not shadow.
_Limit = limit

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


#: The CUDA version whose driver API pygpu's cuda backend was built against: the
#: ``cuda-12080`` bindings feature in Cargo.toml (tests/test_driver_surface.py checks they agree).
_BUILT_AGAINST_CUDA = (12, 8, 0)


def get_version() -> tuple[int, int, int]:
    """The CUDA version pygpu was built against, as ``(major, minor, revision)``."""
    return _BUILT_AGAINST_CUDA


def get_driver_version() -> int:
    """The CUDA version the driver supports, as CUDA encodes it (``12080`` for 12.8). On
    HIP it is HIP's driver version; on the host backend the version it follows (get_version)."""
    version, status = cudaDriverGetVersion()
    status.check()
    return version


# ------------------------------------------------------------------------ modules


def module_from_file(filename: str | os.PathLike[str]) -> Module:
    """Loads a code object from a file: a cubin, fatbin or PTX (CUDA), a code object (HIP),
    a kernels shared library (host)."""
    return Module.from_file(filename)


def module_from_buffer(
    buffer: Any,
    options: Sequence[tuple[jit_option, Any]] | None = None,
    message_handler: Callable[[bool, str, str], Any] | None = None,
) -> Module:
    """Loads a code object held in memory (``bytes``, a numpy array, any buffer).

    ``message_handler(success, info_log, error_log)`` is called once the load succeeded or
    failed, as in PyCUDA. JIT ``options`` only tune the driver's compilation of PTX; pygpu
    loads the image as it is and refuses options rather than ignore them: compile with the
    wanted flags instead (``SourceModule(options=...)`` or nvcc)."""
    if options:
        for option in options:
            if not (isinstance(option, tuple) and len(option) == 2):
                raise TypeError(f"options are (jit_option, value) pairs, got {option!r}")
            jit_option(option[0])
        raise ValueError(
            "module_from_buffer: JIT options are not supported by pygpu; pass the flags to the compiler "
            "(SourceModule(options=...) or nvcc) and load the compiled binary without options"
        )
    try:
        image = bytes(memoryview(buffer).cast("B")) if not isinstance(buffer, bytes) else buffer
    except TypeError as e:
        raise TypeError(f"module_from_buffer expects bytes or another buffer, not {type(buffer).__name__}") from e
    try:
        module = Module(image)
    except CudaError as e:
        if message_handler is not None:
            message_handler(False, "", str(e))
        raise
    if message_handler is not None:
        message_handler(True, "", "")
    return module


# ------------------------------------------------------------------------ memory


def mem_alloc_like(ary: npt.NDArray[Any]) -> DeviceAllocation:
    """A device allocation of ``ary.nbytes`` bytes."""
    return mem_alloc(ary.nbytes)


def to_device(bf: Any) -> DeviceAllocation:
    """A new device allocation holding a copy of the C-contiguous host buffer ``bf``."""
    nbytes = memoryview(bf).nbytes
    allocation = mem_alloc(nbytes)
    if nbytes:
        memcpy_htod(allocation, bf)
    return allocation


def from_device(devptr: Any, shape: Any, dtype: npt.DTypeLike, order: str = "C") -> npt.NDArray[Any]:
    """A new numpy array of ``shape``/``dtype``/``order`` filled from the device address ``devptr``."""
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    result: npt.NDArray[Any] = np.empty(shape, dtype, order="F" if order == "F" else "C")
    if result.nbytes:
        # The copy fills the array's memory in its own order; a flat byte view of it is C-contiguous.
        memcpy_dtoh(result.reshape(-1, order="A").view(np.uint8), devptr)
    return result


def from_device_like(devptr: Any, other_ary: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """As ``from_device``, with the shape, dtype and memory order of ``other_ary``."""
    order = "F" if other_ary.flags.f_contiguous and not other_ary.flags.c_contiguous else "C"
    return from_device(devptr, other_ary.shape, other_ary.dtype, order)


def register_host_memory(ary: npt.NDArray[Any], flags: int = 0) -> npt.NDArray[Any]:
    """Page-locks the memory of the contiguous array ``ary`` in place (``cuMemHostRegister``)
    and returns an array sharing it, as PyCUDA does: its ``base`` is the ``RegisteredHostMemory``
    (whose ``base`` is ``ary``), and the memory stays registered while that array lives.
    ``flags`` combine ``mem_host_register_flags``."""
    if not isinstance(ary, np.ndarray):
        raise TypeError(f"register_host_memory expects a numpy array, not {type(ary).__name__}")
    registered = RegisteredHostMemory(ary, int(mem_host_register_flags(flags)))
    order: Literal["C", "F"] = "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    # numpy's stubs predate PEP 688 buffers; passing the registration makes it the array's base.
    return np.ndarray(ary.shape, ary.dtype, buffer=registered, order=order)  # type: ignore[arg-type]


class PointerHolderBase:
    """Base class for objects that stand for device memory they do not own (PyCUDA's
    ``PointerHolderBase``): subclasses implement ``get_pointer()``, and instances are then
    accepted wherever a device pointer is (kernel arguments, ``memcpy_*``, ``int()``)."""

    def get_pointer(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement get_pointer() returning the device address")

    @property
    def ptr(self) -> int:
        return int(self.get_pointer())

    def __int__(self) -> int:
        return self.ptr

    def __index__(self) -> int:
        return self.ptr


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

    def get_attribute(self, attr: device_attribute | int) -> int:
        """The value of one ``device_attribute`` (``cuDeviceGetAttribute``)."""
        try:
            number = device_attribute(attr)
        except ValueError as e:
            raise ValueError(f"{attr!r} is not a device_attribute (CUDA 12 has numbers 1 to 143)") from e
        value, status = cudaDeviceGetAttribute(int(number), self.ordinal)
        status.check()
        return value

    def get_attributes(self) -> dict[device_attribute, int]:
        """Every attribute the backend knows, keyed by ``device_attribute`` (PyCUDA leaves out
        the ones the driver does not report; so does this)."""
        known = {int(a) for a in device_attribute}
        return {device_attribute(n): v for n, v in device_attributes(self.ordinal).items() if n in known}

    def __getattr__(self, name: str) -> int:
        # PyCUDA's spelling dev.MAX_THREADS_PER_BLOCK for dev.get_attribute(...).
        if name.isupper() and name in device_attribute.__members__:
            return self.get_attribute(device_attribute[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def can_access_peer(self, dev: Device) -> bool:
        """Whether this device can address memory of ``dev`` directly (never of itself)."""
        if not isinstance(dev, Device):
            raise TypeError(f"can_access_peer expects a Device, not {type(dev).__name__}")
        can, status = cudaDeviceCanAccessPeer(self.ordinal, dev.ordinal)
        status.check()
        return bool(can)

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

    @staticmethod
    def attach(flags: int = 0) -> Context:
        """The current device's (primary) context, as PyCUDA's ``Context.attach``: not pushed;
        ``detach()`` it when done."""
        if flags != 0:
            raise ValueError("attach flags must be 0")
        return Context(_current_device())

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
    def get_limit(limit: _Limit | int) -> int:
        """A resource ``limit`` of the current device's context (``cuCtxGetLimit``)."""
        value, status = cudaDeviceGetLimit(int(_Limit(limit)))
        status.check()
        return value

    @staticmethod
    def set_limit(limit: _Limit | int, value: int) -> None:
        """Sets a resource ``limit``, e.g. ``limit.MALLOC_HEAP_SIZE`` for in-kernel malloc. On
        the host backend the value is recorded and reported back but constrains nothing."""
        cudaDeviceSetLimit(int(_Limit(limit)), value).check()

    @staticmethod
    def get_cache_config() -> func_cache:
        """The current device's preferred split of L1 and shared memory."""
        config, status = cudaDeviceGetCacheConfig()
        status.check()
        return func_cache(config)

    @staticmethod
    def set_cache_config(config: func_cache | int) -> None:
        """A preference (``func_cache``) the GPU may ignore; each kernel's own one wins."""
        cudaDeviceSetCacheConfig(int(func_cache(config))).check()

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
