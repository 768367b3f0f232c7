"""The parts of ``pycuda.driver`` that array code touches, over pygpu's runtime calls.

``import pygpu.driver as cuda`` gives ``mem_alloc``, the ``memcpy_*``/``memset_*`` calls
(and their ``_async`` forms), ``mem_get_info``, ``pagelocked_*``, ``Stream``, ``Event``,
``Device``, ``Context``, managed memory (``managed_*``) and the ``In``/``Out``/``InOut``
argument wrappers.

Contexts are the devices' *primary* contexts (the CUDA runtime's, shared with CuPy,
PyTorch and C++ code in the process): ``Context.push``/``pop`` switch the current device
and restore the previous one from a per-thread stack; ``detach`` pops the context if it
is current and makes the object unusable. Nothing is ever destroyed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pygpu._driver.contexts import Context, Device
from pygpu._driver.enums import (
    TR_DEFAULT,
    TRSA_OVERRIDE_FORMAT,
    TRSF_NORMALIZED_COORDINATES,
    TRSF_READ_AS_INTEGER,
    address_mode,
    array3d_flags,
    array_cubemap_face,
    array_format,
    compute_mode,
    ctx_flags,
    device_attribute,
    filter_mode,
    func_cache,
    function_attribute,
    graphics_register_flags,
    host_alloc_flags,
    ipc_mem_flags,
    jit_fallback,
    jit_input_type,
    jit_option,
    jit_target,
    limit,
    mem_attach_flags,
    mem_host_register_flags,
    memory_type,
    pointer_attribute,
    profiler_output_mode,
    shared_config,
)
from pygpu._driver.managed import managed_empty, managed_empty_like, managed_zeros, managed_zeros_like
from pygpu._driver.devices import memcpy_peer, memcpy_peer_async
from pygpu._driver.memcpy import Memcpy2D, Memcpy3D, mem_alloc_pitch, memset_d2d8, memset_d2d16, memset_d2d32
from pygpu._driver.pinned import (
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
    DeviceAllocation,
    Function,
    HostAllocation,
    ManagedAllocation,
    Module,
    IPCMemoryHandle,
    RegisteredHostMemory,
    driver_get_version,
    get_device_count,
    mem_alloc,
    mem_get_info,
    memcpy_dtod,
    memcpy_dtoh,
    mem_get_ipc_handle,
    memcpy_htod,
    memset_d8,
    memset_d16,
    memset_d32,
    raw_memory_dtype,
)
from pygpu._driver.streams import Event, Stream, event_flags
from pygpu._toolchain import source_module
from pygpu.errors import CompileError, CudaError, CudaMemoryError, LaunchError, LogicError
from pygpu._driver.texrefs import (
    Array,
    ArrayDescriptor,
    ArrayDescriptor3D,
    SurfaceReference,
    TextureReference,
    bind_array_to_texref,
    gpuarray_to_array,
    make_multichannel_2d_array,
    matrix_to_array,
    matrix_to_texref,
    memcpy_atoa,
    memcpy_atod,
    memcpy_atoh,
    memcpy_dtoa,
    memcpy_htoa,
    np_to_array,
)

__all__ = [
    "ArgumentHandler",
    "Array",
    "ArrayDescriptor",
    "ArrayDescriptor3D",
    "CUDA_DEBUGGING",
    "CompileError",
    "Context",
    "Device",
    "DeviceAllocation",
    "Error",
    "Event",
    "Function",
    "HostAllocation",
    "IPCMemoryHandle",
    "In",
    "InOut",
    "LaunchError",
    "LogicError",
    "ManagedAllocation",
    "Memcpy2D",
    "Memcpy3D",
    "MemoryError",
    "Module",
    "Out",
    "PagelockedHostAllocation",
    "PointerHolderBase",
    "RegisteredHostMemory",
    "RuntimeError",
    "Stream",
    "SurfaceReference",
    "TRSA_OVERRIDE_FORMAT",
    "TRSF_NORMALIZED_COORDINATES",
    "TRSF_READ_AS_INTEGER",
    "TR_DEFAULT",
    "TextureReference",
    "address_mode",
    "aligned_empty",
    "aligned_empty_like",
    "aligned_zeros",
    "aligned_zeros_like",
    "array3d_flags",
    "array_cubemap_face",
    "array_format",
    "bind_array_to_texref",
    "compute_mode",
    "ctx_flags",
    "device_attribute",
    "event_flags",
    "filter_mode",
    "from_device",
    "from_device_like",
    "func_cache",
    "function_attribute",
    "get_driver_version",
    "get_version",
    "gpuarray_to_array",
    "graphics_register_flags",
    "host_alloc_flags",
    "init",
    "ipc_mem_flags",
    "jit_fallback",
    "jit_input_type",
    "jit_option",
    "jit_target",
    "limit",
    "make_multichannel_2d_array",
    "managed_empty",
    "managed_empty_like",
    "managed_zeros",
    "managed_zeros_like",
    "matrix_to_array",
    "matrix_to_texref",
    "mem_alloc",
    "mem_alloc_like",
    "mem_alloc_pitch",
    "mem_attach_flags",
    "mem_get_info",
    "mem_get_ipc_handle",
    "mem_host_register_flags",
    "memcpy_atoa",
    "memcpy_atod",
    "memcpy_atoh",
    "memcpy_dtoa",
    "memcpy_dtod",
    "memcpy_dtod_async",
    "memcpy_dtoh",
    "memcpy_dtoh_async",
    "memcpy_htoa",
    "memcpy_htod",
    "memcpy_htod_async",
    "memcpy_peer",
    "memcpy_peer_async",
    "memory_type",
    "memset_d16",
    "memset_d16_async",
    "memset_d2d16",
    "memset_d2d16_async",
    "memset_d2d32",
    "memset_d2d32_async",
    "memset_d2d8",
    "memset_d2d8_async",
    "memset_d32",
    "memset_d32_async",
    "memset_d8",
    "memset_d8_async",
    "module_from_buffer",
    "module_from_file",
    "np_to_array",
    "pagelocked_empty",
    "pagelocked_empty_like",
    "pagelocked_zeros",
    "pagelocked_zeros_like",
    "pointer_attribute",
    "profiler_output_mode",
    "register_host_memory",
    "set_debugging",
    "shared_config",
    "to_device",
]

#: PyCUDA's base exception: every runtime failure is a ``CudaError``.
Error = CudaError


#: Whether kernels compile for debugging (PyCUDA's; :func:`set_debugging` sets it).
CUDA_DEBUGGING = False


def set_debugging(flag: bool = True) -> None:
    """From now on every ``SourceModule`` compiles with device debug information (``-G``; the
    host backend has none), keeps its files and skips the kernel cache, as PyCUDA's; ``python
    -m pygpu.debug script.py`` runs a script so (for ``cuda-gdb``)."""
    global CUDA_DEBUGGING
    CUDA_DEBUGGING = bool(flag)
    source_module.debugging = CUDA_DEBUGGING


def init(flags: int = 0) -> None:
    """Starts the backend (PyCUDA's ``cuda.init()``); calling it again is harmless."""
    if flags != 0:
        raise ValueError("init() flags must be 0")
    get_device_count()


#: The CUDA version whose driver API pygpu's cuda backend was built against: the
#: ``cuda-12080`` bindings feature in Cargo.toml (tests/test_driver_surface.py checks they agree).
_BUILT_AGAINST_CUDA = (12, 8, 0)


def get_version() -> tuple[int, int, int]:
    """The CUDA version pygpu was built against, as ``(major, minor, revision)``."""
    return _BUILT_AGAINST_CUDA


def get_driver_version() -> int:
    """The CUDA version the driver supports, as CUDA encodes it (``12080`` for 12.8). On
    HIP it is HIP's driver version; on the host backend the version it follows (get_version)."""
    return driver_get_version()


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
    raw_memory_dtype(ary.dtype, "register_host_memory")
    registered = RegisteredHostMemory(ary, int(mem_host_register_flags(flags)))
    order: Literal["C", "F"] = "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    # numpy's stubs predate PEP 688 buffers; passing the registration makes it the array's base.
    return np.ndarray(ary.shape, ary.dtype, buffer=registered, order=order)  # type: ignore[arg-type]


class PointerHolderBase:
    """Base class for objects that stand for device memory they do not own (PyCUDA's
    ``PointerHolderBase``): subclasses implement ``get_pointer()``, and instances are then
    accepted wherever a device pointer is (kernel arguments, ``memcpy_*``, ``int()``)."""

    def get_pointer(self) -> int:
        """The device address this object stands for; subclasses must override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_pointer() returning the device address")

    @property
    def ptr(self) -> int:
        """``get_pointer()`` as an int (what ``int()`` and kernel arguments use)."""
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
    """Device-to-device copy of ``size`` bytes (default: all of ``src``) enqueued on ``stream``."""
    memcpy_dtod(dest, src, size, stream)


def memset_d8_async(dest: Any, data: int, count: int, stream: Any = None) -> None:
    """Sets ``count`` bytes at ``dest`` to ``data``, enqueued on ``stream``."""
    memset_d8(dest, data, count, stream)


def memset_d16_async(dest: Any, data: int, count: int, stream: Any = None) -> None:
    """Sets ``count`` 16-bit words at ``dest`` to ``data``, enqueued on ``stream``."""
    memset_d16(dest, data, count, stream)


def memset_d32_async(dest: Any, data: int, count: int, stream: Any = None) -> None:
    """Sets ``count`` 32-bit words at ``dest`` to ``data``, enqueued on ``stream``."""
    memset_d32(dest, data, count, stream)


def memset_d2d8_async(dest: Any, pitch: int, value: int, width: int, height: int, stream: Any = None) -> None:
    """Sets a pitched 2-D region of ``height`` rows of ``width`` bytes to ``value``, on ``stream``."""
    memset_d2d8(dest, pitch, value, width, height, stream)


def memset_d2d16_async(dest: Any, pitch: int, value: int, width: int, height: int, stream: Any = None) -> None:
    """Sets a pitched 2-D region of ``height`` rows of ``width`` 16-bit words to ``value``, on ``stream``."""
    memset_d2d16(dest, pitch, value, width, height, stream)


def memset_d2d32_async(dest: Any, pitch: int, value: int, width: int, height: int, stream: Any = None) -> None:
    """Sets a pitched 2-D region of ``height`` rows of ``width`` 32-bit words to ``value``, on ``stream``."""
    memset_d2d32(dest, pitch, value, width, height, stream)


# ------------------------------------------------------------------------ kernel arguments


class ArgumentHandler:
    """A kernel argument that stands for host memory (PyCUDA's protocol, which ``In``, ``Out``
    and ``InOut`` follow and libraries extend).

    A launch passes ``int(get_device_alloc())`` for it, calls ``pre_call(stream)`` before the
    kernel starts and ``post_call(stream)`` after it was launched (``stream``: the launch's, or
    None). A subclass may set its own state in ``__init__`` without calling this one, as long as
    ``get_device_alloc`` works.
    """

    def __init__(self, array: Any) -> None:
        self.array = array
        self.dev_alloc: DeviceAllocation | None = None

    def get_device_alloc(self) -> Any:
        """The device memory the kernel gets (allocated on first use, ``array.nbytes`` bytes)."""
        if self.dev_alloc is None:
            self.dev_alloc = mem_alloc_like(self.array)
        return self.dev_alloc

    def pre_call(self, stream: Any) -> None:
        """Runs before the launch."""

    def post_call(self, stream: Any) -> None:
        """Runs once the kernel is launched on ``stream``."""


def _host_buffer(array: Any, writable: bool) -> Any:
    """``array`` once checked to be a C-contiguous host buffer (writable for ``Out``)."""
    try:
        view = memoryview(array)
    except TypeError as e:
        raise TypeError(f"In/Out/InOut take a host array (a buffer such as numpy's), not {type(array).__name__}") from e
    # numpy's own dtype where there is one: a padded struct's buffer format does not round-trip.
    dtype = array.dtype if isinstance(array, np.ndarray) else np.asarray(view).dtype
    raw_memory_dtype(dtype, "In/Out/InOut (a kernel must not see or overwrite object pointers)")
    if not view.c_contiguous:
        raise ValueError("In/Out/InOut take a C-contiguous host array: pass numpy.ascontiguousarray(a)")
    if writable and view.readonly:
        raise ValueError("Out/InOut write the kernel's results into the array, and this one is read-only")
    return array


class In(ArgumentHandler):
    """A host array copied to the device before the launch."""

    def __init__(self, array: Any) -> None:
        super().__init__(_host_buffer(array, writable=False))

    def pre_call(self, stream: Any) -> None:
        """Copies the array to the device (in order before the launch on ``stream``)."""
        if memoryview(self.array).nbytes:
            memcpy_htod(self.get_device_alloc(), self.array, stream)


class Out(ArgumentHandler):
    """A host array filled from the device after the launch."""

    def __init__(self, array: Any) -> None:
        super().__init__(_host_buffer(array, writable=True))

    def post_call(self, stream: Any) -> None:
        """Waits for the launch and copies the device memory back into the array."""
        if memoryview(self.array).nbytes:
            if stream is not None:
                stream.synchronize()
            memcpy_dtoh(self.array, self.get_device_alloc())


class InOut(In, Out):
    """A host array copied in before and back after the launch."""

    def __init__(self, array: Any) -> None:
        ArgumentHandler.__init__(self, _host_buffer(array, writable=True))


# ------------------------------------------------------------------------ PyCUDA's other names

#: Out of device (or page-locked) memory: PyCUDA's ``driver.MemoryError``, also a ``MemoryError``.
MemoryError = CudaMemoryError  # noqa: A001 - PyCUDA's name, in this module's namespace only
#: PyCUDA's ``driver.RuntimeError``: here every runtime failure (``CudaError``) is one.
RuntimeError = CudaError  # noqa: A001 - PyCUDA's name, in this module's namespace only
#: The type of ``pagelocked_*(...).base``, as PyCUDA names it.
PagelockedHostAllocation = HostAllocation
