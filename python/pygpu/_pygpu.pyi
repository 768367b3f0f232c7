# The compiled module's public surface, written by hand and checked by mypy.stubtest.
# Docstrings here are the API reference.

import enum
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Protocol, SupportsIndex, TypeAlias, TypeVar, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer, Self, disjoint_base

_T = TypeVar("_T")

# --- errors -----------------------------------------------------------------------

class CudaError(Exception):
    """A GPU runtime call failed: the exception base class, raised by the higher-level API.

    Not to be confused with :class:`cudaError`, the status *value* a low-level call returns.
    ``code`` is the raw status, ``name`` its symbolic name; ``repr`` is
    ``InvalidValueError('message', code=1, name='cudaErrorInvalidValue')``."""

    code: int
    name: str

class CudaMemoryError(CudaError, MemoryError):
    """The device (or pinned host memory) is out of memory."""

class InvalidValueError(CudaError, ValueError):
    """An argument was rejected by the runtime."""

class InvalidDeviceError(CudaError, ValueError):
    """No device has this ordinal."""

class NoDeviceError(CudaError):
    """The driver is present but sees no device."""

class InvalidHandleError(CudaError, ValueError):
    """A stream, event or other handle is not valid (released, or of another device)."""

class NotReadyError(CudaError):
    """Work is still pending."""

class LaunchError(CudaError):
    """A kernel launch failed or a kernel faulted."""

class ModuleError(CudaError):
    """A code object did not load, or has no kernel or global of that name."""

class BackendUnavailableError(CudaError, RuntimeError):
    """The requested backend cannot be used on this machine."""

class KernelArgumentWarning(UserWarning):
    """A kernel was launched with an array whose elements have the size but not the type of
    its pointer parameter's (an int32 array for a float*): the kernel reinterprets the bits.
    Make it an error with warnings.simplefilter("error", pygpu.KernelArgumentWarning)."""

@final
class cudaError:
    """The status of a low-level call: the raw integer code, its name and message.

    A value, not an exception (that is :class:`CudaError`): ``check()`` raises the matching
    ``CudaError`` subclass. Compares equal to its code (``err == 0``); ``repr`` is
    ``<cudaError: code=N>``."""
    def __new__(cls, code: int) -> Self: ...
    @property
    def code(self) -> int:
        """The raw status code (0: success)."""
    @property
    def name(self) -> str:
        """The code's symbolic name, e.g. ``cudaErrorInvalidValue``."""
    @property
    def message(self) -> str:
        """The backend's description of the code."""
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def check(self) -> None:
        """Raises the matching CudaError subclass unless this is success."""

class ErrorCode(enum.IntEnum):
    """The runtime's status codes by their CUDA names (``ErrorCode.cudaErrorInvalidValue == 1``),
    made from the compiled module's one table of codes; equal to the ints that ``CudaError.code``
    and ``cudaError.code`` hold. Home: ``pygpu.errors``."""

    cudaSuccess = 0
    cudaErrorInvalidValue = 1
    cudaErrorMemoryAllocation = 2
    cudaErrorInitializationError = 3
    cudaErrorCudartUnloading = 4
    cudaErrorProfilerDisabled = 5
    cudaErrorInvalidConfiguration = 9
    cudaErrorInvalidPitchValue = 12
    cudaErrorInvalidSymbol = 13
    cudaErrorInvalidDevicePointer = 17
    cudaErrorInvalidMemcpyDirection = 21
    cudaErrorStubLibrary = 34
    cudaErrorInsufficientDriver = 35
    cudaErrorCallRequiresNewerDriver = 36
    cudaErrorDevicesUnavailable = 46
    cudaErrorInvalidDeviceFunction = 98
    cudaErrorNoDevice = 100
    cudaErrorInvalidDevice = 101
    cudaErrorInvalidKernelImage = 200
    cudaErrorDeviceUninitialized = 201
    cudaErrorNoKernelImageForDevice = 209
    cudaErrorUnsupportedLimit = 215
    cudaErrorPeerAccessUnsupported = 217
    cudaErrorInvalidPtx = 218
    cudaErrorUnsupportedPtxVersion = 222
    cudaErrorInvalidSource = 300
    cudaErrorFileNotFound = 301
    cudaErrorInvalidResourceHandle = 400
    cudaErrorIllegalState = 401
    cudaErrorSymbolNotFound = 500
    cudaErrorNotReady = 600
    cudaErrorIllegalAddress = 700
    cudaErrorLaunchOutOfResources = 701
    cudaErrorLaunchTimeout = 702
    cudaErrorPeerAccessAlreadyEnabled = 704
    cudaErrorPeerAccessNotEnabled = 705
    cudaErrorContextIsDestroyed = 709
    cudaErrorAssert = 710
    cudaErrorHostMemoryAlreadyRegistered = 712
    cudaErrorHostMemoryNotRegistered = 713
    cudaErrorIllegalInstruction = 715
    cudaErrorMisalignedAddress = 716
    cudaErrorLaunchFailure = 719
    cudaErrorCooperativeLaunchTooLarge = 720
    cudaErrorNotPermitted = 800
    cudaErrorNotSupported = 801
    cudaErrorStreamCaptureUnsupported = 900
    cudaErrorStreamCaptureInvalidated = 901
    cudaErrorStreamCaptureUnmatched = 903
    cudaErrorStreamCaptureImplicit = 906
    cudaErrorTimeout = 909
    cudaErrorUnknown = 999

# --- backend and device -----------------------------------------------------------

def set_backend(name: str) -> None:
    """Chooses 'cuda', 'hip' or 'host' before the first GPU call."""

def backend() -> str:
    """The backend in use ('cuda', 'hip' or 'host'), starting it if needed."""
@final
class Capabilities:
    """What the active backend can do, and how (``pygpu.capabilities()``); the same object on
    every call. The package reads it instead of comparing backend names."""

    @property
    def backend(self) -> str:
        """The backend's name: 'cuda', 'hip' or 'host'."""
    @property
    def compiler(self) -> str:
        """The run-time compiler of SourceModule: 'nvrtc', 'hiprtc' or 'c++' (the system C++
        compiler, which builds a kernels library for the host backend)."""
    @property
    def linker(self) -> str | None:
        """What DynamicModule links with: 'cuda' (the driver's JIT linker), 'c++' (the system
        linker, host objects and archives), or None where modules are not linked from parts."""
    @property
    def device_launch(self) -> bool:
        """Whether kernels can launch kernels (dynamic parallelism, with CUDA's device runtime)."""
    @property
    def host_memory(self) -> bool:
        """Whether device memory is ordinary host memory (numpy and MPI use it directly)."""
    @property
    def kernels_on_cpu(self) -> bool:
        """Whether kernels run on the CPU's cores, a block's threads one after another."""
    @property
    def warp_size(self) -> int:
        """Threads per warp (64 on the hip backend's GPUs)."""
    @property
    def collectives(self) -> str | None:
        """What carries pygpu.nccl's collectives: 'nccl', 'mpi', or None where they do not run."""
    @property
    def dlpack_device_type(self) -> int:
        """The DLPack device type of device memory (2: kDLCUDA, 10: kDLROCM, 1: kDLCPU)."""
    @property
    def dlpack_host_types(self) -> tuple[int, ...]:
        """The DLPack device types of host memory the backend uses without a copy."""
    @property
    def dlpack_default_stream(self) -> int:
        """The consumer stream a DLPack ``stream=None`` means (the default stream's handle)."""
    @property
    def cai_default_stream(self) -> int | None:
        """The CUDA Array Interface's number for the default stream, or None where the interface
        cannot name it (HIP's null stream is 0, which it forbids)."""
    @property
    def cuda_array_interface(self) -> bool:
        """Whether arrays offer ``__cuda_array_interface__`` (not where device memory is host memory)."""
    @property
    def activity_records(self) -> bool:
        """Whether ``pygpu.profile()`` records this backend's launches, copies, fills,
        allocations and synchronisations (the host backend's; CUDA's through CUPTI are to come)."""

# The activity recorder behind pygpu.profile() and pygpu.nvtx (pygpu.profiler reads it).

def activity_start(library: str | os.PathLike[str] | None = None) -> int:
    """Starts recording the active backend's launches, copies, fills, allocations and
    synchronisations, and returns the recording's number (for ``activity_stop``); raises where
    the backend does not record (see ``capabilities().activity_records``), where ``library``
    (CUPTI, on the cuda backend) cannot be used, or where a recording already runs."""

def activity_stop(
    token: int,
) -> tuple[list[tuple[str, str, int, int, int, int, tuple[int, int, int], tuple[int, int, int]]], int]:
    """Ends recording number ``token`` (after waiting for the current device, whose records of
    work still running would be missing): its records in the order they ended, and how many
    were dropped past the recorder's bound (1,048,576 records) or by the device's recorder;
    raises where that recording is not the one running."""

def activity_clock_ns() -> int:
    """Nanoseconds on the recorder's clock (monotonic, shared by every thread of the process)."""

def activity_record_range(name: str, start_ns: int, end_ns: int, thread: int) -> None:
    """Notes a named range (``pygpu.nvtx.range``) from ``start_ns`` to ``end_ns`` on the
    recorder's clock, on row ``thread``; nothing when no recording runs."""

def capabilities(backend: str | None = None) -> Capabilities:
    """What the active backend can do, and how; starts the backend if needed. With ``backend``
    ('cuda', 'hip' or 'host'), that backend's answers, without starting anything."""

# The raising calls: pygpu's own layers call these; the PyGPU names below (cudaSetDevice, ...)
# are the same calls returning their failure as a cudaError status.

def set_device(device: int) -> None:
    """Makes ``device`` (an ordinal from 0) the calling thread's current device."""

def get_device() -> int:
    """The calling thread's current device ordinal."""

def get_device_count() -> int:
    """How many devices the backend sees (the host backend: 1)."""

def device_synchronize() -> None:
    """Waits until every stream of the current device is idle; a failed kernel's error shows here."""

def device_get_attribute(attr: int, device: int) -> int:
    """A device attribute given by its CUdevice_attribute number."""

def driver_get_version() -> int:
    """The CUDA version the driver supports, as 1000 * major + 10 * minor."""

def device_get_limit(limit: int) -> int:
    """A resource limit (a CUlimit number) of the current device."""

def device_set_limit(limit: int, value: int) -> None:
    """Sets a resource limit (a CUlimit number) of the current device."""

def ctx_get_api_version() -> int:
    """The current context's API version (cuCtxGetApiVersion, 3020 on CUDA 12)."""

def device_get_cache_config() -> int:
    """The current device's preferred L1/shared split (a CUfunc_cache number)."""

def device_set_cache_config(config: int) -> None:
    """Sets the current device's preferred L1/shared split (a CUfunc_cache number)."""

def device_can_access_peer(device: int, peer: int) -> bool:
    """Whether ``device`` can address memory of ``peer`` directly."""

def device_enable_peer_access(peer_device: int, flags: int = 0) -> None:
    """Lets the current device address ``peer_device``'s memory directly (flags must be 0)."""

def device_disable_peer_access(peer_device: int) -> None:
    """Stops the current device addressing ``peer_device``'s memory directly."""

def memcpy_peer(dst: _DevicePointer, dst_device: int, src: _DevicePointer, src_device: int, count: int) -> None:
    """Copies ``count`` bytes from ``src`` on ``src_device`` to ``dst`` on ``dst_device``, waiting for it."""

def memcpy_peer_async(
    dst: _DevicePointer,
    dst_device: int,
    src: _DevicePointer,
    src_device: int,
    count: int,
    stream: cudaStream_t | None = None,
) -> None:
    """The same, ordered on ``stream`` (of the current device; None: the legacy default stream)."""

def stream_synchronize(stream: cudaStream_t | None = None) -> None:
    """Waits for the work queued on ``stream`` (None: the default stream)."""

def stream_query(stream: cudaStream_t | None = None) -> bool:
    """Whether the work queued on ``stream`` (None: the default stream) is done; never waits."""

def stream_wait_event(stream: cudaStream_t | None, event: cudaEvent_t, flags: int = 0) -> None:
    """Makes work queued on ``stream`` after this call wait until ``event`` completes, without
    blocking the host (flags must be 0)."""

def event_record(event: cudaEvent_t, stream: cudaStream_t | None = None) -> None:
    """Records ``event`` on ``stream`` (None: the default stream)."""

def event_synchronize(event: cudaEvent_t) -> None:
    """Waits until ``event`` has completed."""

def event_query(event: cudaEvent_t) -> bool:
    """Whether ``event`` has completed; never waits."""

def event_elapsed_time(start: cudaEvent_t, end: cudaEvent_t) -> float:
    """Milliseconds between two recorded events."""

def cudaSetDevice(device: int) -> cudaError: ...
def cudaGetDevice() -> tuple[int, cudaError]: ...
def cudaGetDeviceCount() -> tuple[int, cudaError]: ...
def cudaDeviceSynchronize() -> cudaError: ...
def cudaMemGetInfo() -> tuple[int, int, cudaError]:
    """(free, total, status) in bytes for the current device."""

def cudaGetLastError() -> cudaError:
    """Returns and clears the last error of a runtime call on this thread."""

def cudaPeekAtLastError() -> cudaError:
    """Returns the last error without clearing it."""

def cudaGetErrorName(error: cudaError | int) -> str: ...
def cudaDeviceGetAttribute(attr: int, device: int) -> tuple[int, cudaError]:
    """(value, status) of the device attribute numbered ``attr`` (a CUdevice_attribute)."""

def device_attributes(device: int) -> dict[int, int]:
    """Every attribute the backend reports for ``device``, by CUdevice_attribute number; the
    others are left out and, unlike cudaDeviceGetAttribute, leave no last error."""

def cudaDeviceGetLimit(limit: int) -> tuple[int, cudaError]:
    """(value, status) of a resource limit (CUlimit number) of the current device."""

def cudaDeviceSetLimit(limit: int, value: int) -> cudaError: ...
def cudaDeviceGetCacheConfig() -> tuple[int, cudaError]:
    """(config, status): the current device's preferred L1/shared split (CUfunc_cache number)."""

def cudaDeviceSetCacheConfig(config: int) -> cudaError: ...
def cudaDeviceCanAccessPeer(device: int, peer: int) -> tuple[int, cudaError]:
    """(1 or 0, status): whether ``device`` can address memory of ``peer`` directly."""

def cudaDriverGetVersion() -> tuple[int, cudaError]:
    """(version, status): the CUDA version the driver supports, as 1000 * major + 10 * minor."""

def cudaGetErrorString(error: cudaError | int) -> str: ...
@final
class cudaDeviceProp:
    """A device's properties, read when constructed; CUDA's field names."""
    def __new__(cls, device: int) -> Self: ...
    @property
    def device(self) -> int:
        """The device ordinal."""
    @property
    def name(self) -> str:
        """The device's name."""
    @property
    def uuid(self) -> bytes:
        """The device's 16-byte UUID."""
    @property
    def pciBusID(self) -> int:
        """The PCI bus number."""
    @property
    def pciDeviceID(self) -> int:
        """The PCI device number."""
    @property
    def pciDomainID(self) -> int:
        """The PCI domain number."""
    @property
    def totalGlobalMem(self) -> int:
        """Global memory in bytes."""
    @property
    def major(self) -> int:
        """The compute capability's major number."""
    @property
    def minor(self) -> int:
        """The compute capability's minor number."""
    @property
    def multiProcessorCount(self) -> int:
        """The number of multiprocessors (SMs; CUs on AMD)."""
    @property
    def compute_capability(self) -> tuple[int, int]:
        """(major, minor)"""

# --- streams and events -----------------------------------------------------------

@disjoint_base
class cudaStream_t:
    """A stream of the current device, destroyed with the object or by ``close()``.

    flags: 0 (default) or 1 (cudaStreamNonBlocking)."""
    def __new__(cls, flags: int = 0) -> Self: ...
    @property
    def handle(self) -> int:
        """The raw handle (cudaStream_t as an integer), for passing to C/C++ code."""
    @property
    def device(self) -> int:
        """The ordinal of the device the stream belongs to."""
    @property
    def flags(self) -> int:
        """The flags the stream was created with: 0 or 1 (cudaStreamNonBlocking)."""
    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
    def __int__(self) -> int: ...
    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol: (0, handle)."""
    def close(self) -> None:
        """Destroys the stream now (pending work still completes); idempotent."""
    def begin_capture(self) -> None:
        """Starts recording this stream's launches and copies into a graph instead of running them."""
    def end_capture(self) -> Graph:
        """Stops recording and returns the graph, which keeps alive what ``keep_while_captured`` got."""
    @property
    def is_capturing(self) -> bool:
        """Whether the stream is recording into a graph (between ``begin_capture`` and ``end_capture``)."""
    def keep_while_captured(self, obj: object) -> bool:
        """While capturing, keeps ``obj`` alive as long as the graph being recorded and its
        instances (memory the captured work uses); False when not capturing."""

@disjoint_base
class cudaEvent_t:
    """An event; flags combine 1 (cudaEventBlockingSync), 2 (cudaEventDisableTiming) and 4
    (cudaEventInterprocess, only with 2). ``ipc_handle=`` opens another process's event instead,
    from the bytes of its ``ipc_handle()``."""
    def __new__(cls, flags: int = 0, ipc_handle: bytes | None = None) -> Self: ...
    def ipc_handle(self) -> bytes:
        """The 64 bytes another process opens this event with (cuIpcGetEventHandle); needs
        flags 6 (INTERPROCESS | DISABLE_TIMING)."""
    @property
    def handle(self) -> int:
        """The raw handle (cudaEvent_t as an integer), for passing to C/C++ code; raises once closed."""
    @property
    def flags(self) -> int:
        """The flags the event was created with (``event_flags``)."""
    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
    def __int__(self) -> int: ...
    def close(self) -> None:
        """Destroys the event now; idempotent."""

def cudaStreamSynchronize(stream: cudaStream_t | None = None) -> cudaError: ...
def cudaStreamQuery(stream: cudaStream_t | None = None) -> cudaError:
    """cudaSuccess when idle, cudaErrorNotReady (600) while work is pending."""

def cudaStreamWaitEvent(stream: cudaStream_t | None, event: cudaEvent_t, flags: int = 0) -> cudaError: ...
def cudaStreamDestroy(stream: cudaStream_t) -> cudaError: ...
def cudaEventRecord(event: cudaEvent_t, stream: cudaStream_t | None = None) -> cudaError: ...
def cudaEventSynchronize(event: cudaEvent_t) -> cudaError: ...
def cudaEventQuery(event: cudaEvent_t) -> cudaError: ...
def cudaEventElapsedTime(start: cudaEvent_t, end: cudaEvent_t) -> tuple[float, cudaError]:
    """(milliseconds, status) between two recorded events."""

def cudaEventDestroy(event: cudaEvent_t) -> cudaError: ...

# --- memory ---------------------------------------------------------------------

class _DeviceSpan(Protocol):
    """A contiguous GPUArray: its ``ptr`` and ``nbytes`` (addresses otherwise come only by ``__index__``)."""
    @property
    def ptr(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

_DevicePointer: TypeAlias = "DeviceAllocation | SupportsIndex | _DeviceSpan"

@disjoint_base
class DeviceAllocation:
    """Device memory owned by Python: freed with the last reference, or by ``free()``.

    numpy takes it for its address on every backend (``np.intp(alloc) + offset``, as PyCUDA's):
    it exports no buffer."""
    def __new__(cls, nbytes: int) -> Self: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    @property
    def ptr(self) -> int:
        """The device address; raises once freed."""
    @property
    def nbytes(self) -> int:
        """The size in bytes."""
    @property
    def device(self) -> int:
        """The ordinal of the device the memory is on."""
    @property
    def freed(self) -> bool:
        """Whether the memory was released (by ``free()``)."""
    def free(self) -> None:
        """Releases the memory now; later use raises. Idempotent. Raises BufferError while a
        zero-copy export of the address (numpy array, DLPack tensor) is alive."""
    def _export(self) -> AllocationExport:
        """A lease that makes ``free()`` refuse until it is dropped (held by exports)."""

@disjoint_base
class ArrayStorage:
    """The memory and layout of a GPUArray: ``_alloc`` (what keeps the memory alive: an allocation, a
    ``DevicePointer`` or an imported tensor), ``_offset`` (bytes from its start to element 0), ``shape``,
    ``strides`` (bytes, may be negative or zero) and ``dtype``. ``GPUArray`` subclasses it; kernel
    launches and copies read an array's memory from these fields."""

    _alloc: Any
    """What keeps the memory alive: a DeviceAllocation, a DevicePointer or an imported tensor
    (``gpudata`` gives PyCUDA's view of it)."""
    _offset: int
    """Bytes from the start of ``_alloc`` to element 0, an int."""
    shape: tuple[int, ...]
    """The dimensions, a tuple of ints."""
    strides: tuple[int, ...]
    """Bytes from one element to the next along each axis, as numpy's (may be negative)."""
    dtype: np.dtype[Any]
    """The numpy dtype of the elements."""
    def __new__(cls, *args: Any, **kwargs: Any) -> Self: ...

@final
class AllocationExport:
    """One live zero-copy export of a DeviceAllocation: keeps it alive and ``free()`` refused."""
    @property
    def allocation(self) -> DeviceAllocation: ...

def allocation_extent(ptr: int) -> tuple[int, int] | None:
    """(start, bytes) of the allocation that holds address ``ptr``, where the backend knows one:
    on the host backend a live pygpu allocation (a pooled block's bytes as asked for; 0 for an
    idle pool block, memory already freed), page-locked or registered host memory; on CUDA the
    driver's allocation; None otherwise."""

def raw_memory_dtype(dtype: Any, what: str) -> np.dtype[Any]:
    """``dtype`` as a numpy dtype, refused with a TypeError when its items hold Python objects
    (``object``, or a structured dtype with an object field): memory that pygpu allocates, pools
    or copies as raw bytes would hand out stale or garbage bytes as ``PyObject*`` pointers, and a
    kernel or copy would overwrite them. The one check used by every constructor of arrays over
    such memory (``pagelocked_*``, ``aligned_*``, ``managed_*``, ``register_host_memory``,
    ``PageLockedMemoryPool.allocate``, GPUArray's dtypes); ``what`` names the caller in the message."""

def host_span_is_mapped(ptr: int, nbytes: int) -> bool | None:
    """Whether every page of host memory ``[ptr, ptr + nbytes)`` is mapped in this process
    (Linux; None elsewhere): refuses addresses that cannot be memory at all, not memory that
    belongs to someone else."""

def is_device_memory(ptr: int, nbytes: int) -> bool | None:
    """Whether ``[ptr, ptr + nbytes)`` lies inside one live pygpu allocation (or page-locked or
    registered host memory): a bool where the backend keeps a registry (host), None where it
    cannot tell (GPU backends)."""
@final
class HostAllocation:
    """Page-locked host memory exposing the buffer protocol (see pagelocked_empty).

    ``flags`` combine host_alloc_flags: PORTABLE (1), DEVICEMAP (2), WRITECOMBINED (4)."""
    def __new__(cls, nbytes: int, flags: int = 0) -> Self: ...
    @property
    def flags(self) -> int:
        """The ``host_alloc_flags`` it was allocated with."""
    def get_device_pointer(self) -> int:
        """The address kernels use for this (mapped) memory."""
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...
    @property
    def nbytes(self) -> int:
        """The size in bytes."""
    @property
    def ptr(self) -> int:
        """The host address (see ``get_device_pointer`` for the address kernels use)."""

@final
class RegisteredHostMemory:
    """A contiguous host buffer page-locked in place (cuMemHostRegister) until ``unregister()``
    or until this object goes away; exports the registered bytes as a buffer.

    ``flags`` combine mem_host_register_flags: PORTABLE (1), DEVICEMAP (2), IOMEMORY (4), READ_ONLY (8)."""
    def __new__(cls, base: Buffer | npt.NDArray[Any], flags: int = 0) -> Self: ...
    @property
    def base(self) -> Any:
        """The registered object."""
    @property
    def ptr(self) -> int:
        """The host address of the registered bytes."""
    @property
    def nbytes(self) -> int:
        """The size in bytes."""
    @property
    def flags(self) -> int:
        """The ``mem_host_register_flags`` it was registered with."""
    @property
    def registered(self) -> bool:
        """Whether the memory is still registered (False after ``unregister()``)."""
    def get_device_pointer(self) -> int:
        """The address kernels use for this memory."""
    def unregister(self) -> None:
        """Ends the registration now; idempotent."""
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...

def mem_get_ipc_handle(devptr: _DevicePointer) -> bytes:
    """The 64-byte interprocess handle of the allocation holding ``devptr`` (cuIpcGetMemHandle).
    Only ``mem_alloc`` memory can be shared, not the pool's (``pool_alloc``, GPUArray's default);
    on the host backend the allocation moves into shared memory (a memfd) at its address."""
@final
class IPCMemoryHandle:
    """Another process's allocation mapped into this one (cuIpcOpenMemHandle); ``int()`` is its
    address here. Unmapped by ``close()`` or when the object goes away."""
    def __new__(cls, handle: bytes, flags: int = 1) -> Self: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    @property
    def ptr(self) -> int:
        """The mapped memory's address in this process; raises once closed."""
    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
    def close(self) -> None:
        """Unmaps now; idempotent."""

def mem_alloc(nbytes: int) -> DeviceAllocation:
    """Allocates ``nbytes`` of device memory."""

def pool_alloc(nbytes: int) -> DeviceAllocation:
    """Allocates ``nbytes`` from the caching memory pool (what GPUArray uses): given back to the
    pool, ordered on the legacy default stream, when freed. Plain ``mem_alloc`` where
    ``PYGPU_MEMORY_POOL=0``."""
@final
class MemoryPool:
    """The process-wide caching device allocator that GPUArray allocates from (one pool over
    all devices; every instance controls the same pool)."""
    def used_bytes(self) -> int:
        """Bytes of live allocations from the pool."""
    def total_bytes(self) -> int:
        """Bytes the pool holds from the devices: in use plus cached for reuse."""
    def free_bytes(self) -> int:
        """Bytes cached for reuse: held, not in use."""
    def free_all_blocks(self) -> None:
        """Returns every cached block to the devices (waiting for the frees still queued)."""
    def set_limit(self, size: int) -> None:
        """Caps the bytes in use; an allocation past it raises CudaMemoryError. 0 removes the cap."""
    def get_limit(self) -> int:
        """The cap on bytes in use, 0 for none."""
    @property
    def enabled(self) -> bool:
        """False when PYGPU_MEMORY_POOL=0 turned pooling off."""

def get_default_memory_pool() -> MemoryPool:
    """The pool GPUArray allocates from."""

def mem_get_info() -> tuple[int, int]:
    """(free, total) bytes of the current device."""

def memcpy_htod(dest: _DevicePointer, src: Buffer | npt.NDArray[Any], stream: cudaStream_t | None = None) -> None:
    """Copies the whole C-contiguous host buffer ``src`` to ``dest``; asynchronous on ``stream``."""

def memcpy_dtoh(dest: Buffer | npt.NDArray[Any], src: _DevicePointer, stream: cudaStream_t | None = None) -> None:
    """Fills the whole C-contiguous writable host buffer ``dest`` from ``src``."""

def memcpy_dtod(
    dest: _DevicePointer, src: _DevicePointer, size: int | None = None, stream: cudaStream_t | None = None
) -> None:
    """Copies ``size`` bytes (default: the smaller allocation) between device addresses."""

def memset_d8(dest: _DevicePointer, value: int, count: int, stream: cudaStream_t | None = None) -> None: ...
def memset_d16(dest: _DevicePointer, value: int, count: int, stream: cudaStream_t | None = None) -> None: ...
def memset_d32(dest: _DevicePointer, value: int, count: int, stream: cudaStream_t | None = None) -> None: ...

# --- DeviceArray_<dtype> and pointer_wrapper_<dtype> ---------------------------------

class _PointerWrapper(Generic[_T]):
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def is_safe(self) -> bool:
        """True for host memory the wrapper keeps alive; only those can be read."""
    def get(self, index: int = 0) -> _T:
        """The element at ``index`` of a safe pointer; unsafe ones raise ValueError."""

class _DeviceArray(Generic[_T]):
    def allocate(self) -> cudaError:
        """Allocates the device side (once)."""
    def to_device(self, stream: cudaStream_t | None = None) -> cudaError: ...
    def to_host(self, stream: cudaStream_t | None = None) -> cudaError: ...
    def host_array(self) -> npt.NDArray[Any]:
        """The numpy array this object aliases (its host side)."""
    def size(self) -> int: ...
    def nbytes(self) -> int: ...
    def shape(self) -> list[int]: ...
    def strides(self) -> list[int]:
        """Byte strides of the C-contiguous device copy."""
    def allocated(self) -> bool:
        """Whether the device side exists (``allocate()`` was called)."""
    def last_status(self) -> cudaError:
        """The status of the last call that touched the device (``allocate``, ``to_device``, ``to_host``)."""

@final
class pointer_wrapper_int16(_PointerWrapper[int]):
    def __new__(cls, target: npt.NDArray[np.int16] | int) -> Self: ...

@final
class DeviceArray_int16(_DeviceArray[int]):
    def __new__(cls, source: npt.NDArray[np.int16] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_int16:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_int16: ...

@final
class pointer_wrapper_int32(_PointerWrapper[int]):
    def __new__(cls, target: npt.NDArray[np.int32] | int) -> Self: ...

@final
class DeviceArray_int32(_DeviceArray[int]):
    def __new__(cls, source: npt.NDArray[np.int32] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_int32:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_int32: ...

@final
class pointer_wrapper_int64(_PointerWrapper[int]):
    def __new__(cls, target: npt.NDArray[np.int64] | int) -> Self: ...

@final
class DeviceArray_int64(_DeviceArray[int]):
    def __new__(cls, source: npt.NDArray[np.int64] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_int64:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_int64: ...

@final
class pointer_wrapper_uint16(_PointerWrapper[int]):
    def __new__(cls, target: npt.NDArray[np.uint16] | int) -> Self: ...

@final
class DeviceArray_uint16(_DeviceArray[int]):
    def __new__(cls, source: npt.NDArray[np.uint16] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_uint16:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_uint16: ...

@final
class pointer_wrapper_uint32(_PointerWrapper[int]):
    def __new__(cls, target: npt.NDArray[np.uint32] | int) -> Self: ...

@final
class DeviceArray_uint32(_DeviceArray[int]):
    def __new__(cls, source: npt.NDArray[np.uint32] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_uint32:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_uint32: ...

@final
class pointer_wrapper_uint64(_PointerWrapper[int]):
    def __new__(cls, target: npt.NDArray[np.uint64] | int) -> Self: ...

@final
class DeviceArray_uint64(_DeviceArray[int]):
    def __new__(cls, source: npt.NDArray[np.uint64] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_uint64:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_uint64: ...

@final
class pointer_wrapper_float32(_PointerWrapper[float]):
    def __new__(cls, target: npt.NDArray[np.float32] | int) -> Self: ...

@final
class DeviceArray_float32(_DeviceArray[float]):
    def __new__(cls, source: npt.NDArray[np.float32] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_float32:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_float32: ...

@final
class pointer_wrapper_float64(_PointerWrapper[float]):
    def __new__(cls, target: npt.NDArray[np.float64] | int) -> Self: ...

@final
class DeviceArray_float64(_DeviceArray[float]):
    def __new__(cls, source: npt.NDArray[np.float64] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_float64:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_float64: ...

@final
class pointer_wrapper_complex64(_PointerWrapper[complex]):
    def __new__(cls, target: npt.NDArray[np.complex64] | int) -> Self: ...

@final
class DeviceArray_complex64(_DeviceArray[complex]):
    def __new__(cls, source: npt.NDArray[np.complex64] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_complex64:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_complex64: ...

@final
class pointer_wrapper_complex128(_PointerWrapper[complex]):
    def __new__(cls, target: npt.NDArray[np.complex128] | int) -> Self: ...

@final
class DeviceArray_complex128(_DeviceArray[complex]):
    def __new__(cls, source: npt.NDArray[np.complex128] | int | tuple[int, ...]) -> Self: ...
    def host_data(self) -> pointer_wrapper_complex128:
        """A safe pointer to the host array (``get(i)`` reads it); ValueError if not C-contiguous."""
    def device_data(self) -> pointer_wrapper_complex128: ...

# --- kernels ----------------------------------------------------------------------

@final
class Module:
    """A loaded code object: PTX, cubin or fatbin (CUDA), HSACO (HIP), a kernels shared
    library (host). Unloaded with the last reference: its functions, and graphs that captured
    one of them, keep it loaded."""
    def __new__(cls, image: bytes) -> Self: ...
    @staticmethod
    def from_file(path: str | os.PathLike[str]) -> Module: ...
    def get_function(self, name: str) -> Function:
        """The kernel named ``name`` as the code object exports it (a C++ kernel not declared
        ``extern "C"``: its mangled name); raises if there is none."""
    def _set_declarations(self, lookup: Callable[[str], Any]) -> None: ...
    def get_global(self, name: str) -> tuple[int, int]:
        """(device address, size in bytes) of a global variable."""
    def get_texref(self, name: str) -> None:
        """Texture references were removed in CUDA 12: raises NotImplementedError naming the replacement."""
    def get_surfref(self, name: str) -> None:
        """Surface references were removed in CUDA 12: raises NotImplementedError naming the replacement."""
    def close(self) -> None:
        """Releases the module now: its functions can no longer be launched; the code is
        unloaded once no Function or graph of it remains."""

@final
class KernelParameter:
    """One parameter of a kernel, as ``Function.parameters`` lists them: ``name`` and ``c_type``
    from the kernel's declaration (None where only the size is known), ``size`` in bytes."""
    @property
    def name(self) -> str | None:
        """The parameter's name in the kernel's declaration (None: unnamed, or only its size is known)."""
    @property
    def c_type(self) -> str | None:
        """Its C type as declared, e.g. ``"const float *"`` (None: only its size is known)."""
    @property
    def size(self) -> int | None:
        """Its size in bytes (None: neither the declaration nor the backend gives it)."""

@final
class Function:
    """A kernel, launched PyCUDA's way: ``f(*args, block=(x, y, z), grid=(x, y), stream=None, shared=0)``.

    Device arrays and allocations pass their pointer, numpy scalars their value,
    driver.In/Out/InOut (PyCUDA's ArgumentHandler protocol) stand for their device memory.
    Where the kernel's declaration is known (``parameters``: kernels of ``SourceModule`` and
    the bundled kernels), arguments may be given by parameter name, Python numbers become the
    parameters' C types, and arrays must match their pointers' element types
    (docs/kernel_signatures.md)."""
    def __call__(
        self,
        *args: Any,
        block: int | tuple[int, ...],
        grid: int | tuple[int, ...] | None = None,
        stream: cudaStream_t | None = None,
        shared: int = 0,
        texrefs: Iterable[Any] | None = None,
        time_kernel: bool = False,
        **kwargs: Any,
    ) -> float | None:
        """Launches; with ``time_kernel=True`` (PyCUDA's; no ``stream``) waits for the device
        before and after and returns the seconds between, else returns None."""
    def prepare(self, arg_types: str | Iterable[Any] | None = None, texrefs: Iterable[Any] | None = None) -> Self:
        """Declares parameter types: struct characters such as "PiPd" ("12s" a 12-byte struct),
        or numpy types, a structured dtype being a struct by value (its C layout checked).
        Without ``arg_types``, the types of the kernel's declaration (``parameters``)."""
    @property
    def parameters(self) -> tuple[KernelParameter, ...] | None:
        """The kernel's parameters, from its declaration where pygpu read it, else their sizes
        alone where the backend reports them; None where neither is known."""
    def _declare(self, described: list[tuple[str | None, str, str, int, int, tuple[str, int, int] | None]]) -> bool: ...
    def prepared_call(
        self, grid: int | tuple[int, ...], block: int | tuple[int, ...], *args: Any, shared_size: int = 0
    ) -> None:
        """Launches on the default stream with the argument types given to prepare()."""
    def prepared_async_call(
        self,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        stream: cudaStream_t | None,
        *args: Any,
        shared_size: int = 0,
    ) -> None:
        """Launches on `stream` (None: the default stream) with the argument types given to prepare()."""
    @property
    def name(self) -> str:
        """The kernel's name in the module."""
    def get_attribute(self, attr: int) -> int:
        """The value of a function_attribute (CUfunction_attribute number)."""
    def set_attribute(self, attr: int, value: int) -> None:
        """Sets a settable function_attribute, e.g. MAX_DYNAMIC_SHARED_SIZE_BYTES."""
    def set_cache_config(self, config: int) -> None:
        """The preferred L1/shared split (a func_cache value); a hint."""
    def set_shared_config(self, config: int) -> None:
        """Accepts a shared_config value; CUDA 12's driver ignores bank sizes, so nothing changes."""
    def prepared_timed_call(
        self, grid: int | tuple[int, ...], block: int | tuple[int, ...], *args: Any, shared_size: int = 0
    ) -> Callable[[], float]:
        """Launches as prepared_call between two events; the callable returned waits for the
        launch and gives its duration in seconds."""
    @property
    def num_regs(self) -> int:
        """Registers each thread uses (``function_attribute.NUM_REGS``): what limits occupancy."""
    @property
    def shared_size_bytes(self) -> int:
        """Bytes of statically allocated shared memory per block (``SHARED_SIZE_BYTES``)."""
    @property
    def local_size_bytes(self) -> int:
        """Bytes of local memory per thread (``LOCAL_SIZE_BYTES``): register spills show up here."""
    @property
    def const_size_bytes(self) -> int:
        """Bytes of constant memory the kernel uses (``CONST_SIZE_BYTES``)."""
    @property
    def max_threads_per_block(self) -> int:
        """The most threads a block of this kernel may have (``MAX_THREADS_PER_BLOCK``); 0 where the
        backend does not report it. Launches with larger blocks raise."""
    def max_potential_block_size(self, dynamic_shared_bytes: int = 0, block_size_limit: int = 0) -> tuple[int, int]:
        """(minimum grid size, block size) that maximise occupancy."""
    def __getattr__(self, name: str) -> int:
        """PyCUDA's spelling of the other ``function_attribute``s: ``f.ptx_version`` is
        ``f.get_attribute(function_attribute.PTX_VERSION)``."""

@final
class Graph:
    """A graph: recorded by stream capture (``cudaStream_t.end_capture()``) or built node by node
    from ``Graph()``; it and its instances keep the kernels' modules loaded and the objects its
    nodes use alive. ``dependencies`` of every ``add_*_node``: nodes of this graph to run after."""
    def __init__(self) -> None:
        """An empty graph on the current device, to build with the ``add_*_node`` methods."""
    def add_kernel_node(
        self,
        func: Function,
        *args: object,
        block: Sequence[int] | int,
        grid: Sequence[int] | int | None = None,
        shared: int = 0,
        dependencies: Iterable[GraphNode] | None = None,
        **kwargs: object,
    ) -> GraphNode:
        """A launch of ``func`` with ``args`` (as ``func(*args, block=, grid=, shared=)`` takes
        them; keyword arguments by parameter name where the kernel's declaration is known). The
        arrays passed are kept alive with the graph; In/Out/InOut are refused."""
    def add_memcpy_node(
        self, dst: object, src: object, nbytes: int | None = None, dependencies: Iterable[GraphNode] | None = None
    ) -> GraphNode:
        """A copy of ``nbytes`` (default: the smaller allocation) between device memory
        (DeviceAllocation, GPUArray or an int address; page-locked host memory through its device
        pointer)."""
    def add_memset_node(
        self,
        dst: object,
        value: int,
        count: int,
        element_size: int = 1,
        dependencies: Iterable[GraphNode] | None = None,
    ) -> GraphNode:
        """Sets ``count`` elements of ``element_size`` bytes (1, 2 or 4) at ``dst`` to ``value``."""
    def add_event_record_node(self, event: cudaEvent_t, dependencies: Iterable[GraphNode] | None = None) -> GraphNode:
        """Records ``event`` when the dependencies are done."""
    def add_event_wait_node(self, event: cudaEvent_t, dependencies: Iterable[GraphNode] | None = None) -> GraphNode:
        """Waits for ``event`` (recorded elsewhere) before the nodes that depend on this one."""
    def add_child_graph_node(self, child: Graph, dependencies: Iterable[GraphNode] | None = None) -> GraphNode:
        """A copy of ``child``'s nodes, run as one node (later changes to ``child`` do not reach it)."""
    def add_empty_node(self, dependencies: Iterable[GraphNode] | None = None) -> GraphNode:
        """A node that does nothing: one node to depend on for many."""
    def add_while_node(self, body: Graph, flag: object, dependencies: Iterable[GraphNode] | None = None) -> GraphNode:
        """Runs a copy of ``body`` again and again while the int32 at ``flag`` (device memory) is
        nonzero, read on the device before each turn; on CUDA a conditional node (driver for CUDA
        12.3+), so the loop runs without Python."""
    def add_if_node(self, body: Graph, flag: object, dependencies: Iterable[GraphNode] | None = None) -> GraphNode:
        """Runs a copy of ``body`` once if the int32 at ``flag`` is nonzero when the node is reached."""
    @property
    def node_count(self) -> int:
        """How many nodes the ``add_*_node`` methods added (0 for a captured graph)."""
    def instantiate(self) -> GraphExec:
        """An executable instance, launchable many times; later additions to this graph do not change it."""

@final
class GraphNode:
    """A node of a Graph (what its ``add_*_node`` methods return): for ``dependencies=`` and for
    ``GraphExec.set_*_node_params``."""
    @property
    def kind(self) -> str:
        """ "kernel", "memcpy", "memset", "event record", "event wait", "child graph", "empty",
        "while" or "if"."""

@final
class GraphExec:
    """An executable instance of a Graph: ``launch`` replays it; ``set_*_node_params`` change a
    kernel's arguments, a copy's or a memset's range between launches."""
    def launch(self, stream: cudaStream_t | None = None) -> None:
        """Replays the graph on ``stream`` (None: the default stream)."""
    def set_kernel_node_params(
        self,
        node: GraphNode,
        func: Function,
        *args: object,
        block: Sequence[int] | int | None = None,
        grid: Sequence[int] | int | None = None,
        shared: int | None = None,
        **kwargs: object,
    ) -> None:
        """New arguments for a kernel node from the next launch on (its kernel stays ``func``);
        ``block``/``grid``/``shared`` None: as the node was added."""
    def set_memcpy_node_params(self, node: GraphNode, dst: object, src: object, nbytes: int | None = None) -> None:
        """A memcpy node's new destination, source and size."""
    def set_memset_node_params(
        self, node: GraphNode, dst: object, value: int, count: int, element_size: int = 1
    ) -> None:
        """A memset node's new destination, value and count."""

# --- runtime compilers (NVRTC, hiprtc): used by pygpu.compiler ----------------------

def rtc_version(kind: str, library: str | os.PathLike[str]) -> tuple[int, int]:
    """(major, minor) of the runtime compiler library (``kind`` "nvrtc" or "hiprtc")."""

def rtc_supported_archs(library: str | os.PathLike[str]) -> list[int]:
    """The sm_XY numbers (as XY) that the NVRTC at ``library`` compiles cubins for."""

def rtc_compile(
    kind: str, library: str | os.PathLike[str], source: str, name: str, options: list[str], output: str
) -> tuple[bytes | None, str]:
    """Compiles ``source`` to ``output`` ("cubin", "ptx" or "code"): (binary, or None when
    the compiler rejected the source or an option; the compiler's log)."""

# --- interop: DLPack capsules and foreign streams ------------------------------------

def dlpack_capsule(
    owner: object,
    ptr: int,
    shape: Iterable[int],
    strides: Iterable[int],
    dtype_code: int,
    dtype_bits: int,
    device_type: int,
    device_id: int,
    versioned: bool,
    readonly: bool = False,
    copied: bool = False,
) -> Any:
    """A DLPack capsule ("dltensor_versioned" 1.0 when ``versioned``, else legacy "dltensor")
    for the memory at ``ptr``, kept alive by ``owner``. ``strides`` are in elements.
    A read-only array cannot be exported as a legacy capsule (BufferError)."""

def dlpack_from_capsule(capsule: Any) -> DLPackTensor:
    """Consumes a DLPack capsule (renaming it "used_..."); the tensor owns the producer's
    memory reference from then on. A consumed capsule raises ValueError."""
@final
class DLPackTensor:
    """A tensor taken from a DLPack capsule; ``int()`` is the address of element 0."""
    @property
    def ptr(self) -> int: ...
    @property
    def data(self) -> int:
        """The DLTensor's ``data`` pointer (before ``byte_offset``): what the producer allocated."""
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]:
        """In bytes (C-contiguous ones when the producer gave none)."""
    @property
    def dtype(self) -> tuple[int, int, int]:
        """(code, bits, lanes) of the DLDataType."""
    @property
    def device(self) -> tuple[int, int]:
        """(device_type, device_id)"""
    @property
    def device_id(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def version(self) -> tuple[int, int] | None:
        """(major, minor) of a versioned capsule, None for a legacy one."""

def stream_wait_event_raw(stream_handle: int, event: cudaEvent_t) -> None:
    """Makes a foreign stream (raw handle; 1/2 are CUDA's legacy/per-thread default
    streams) wait for ``event``. A no-op check of the event on the host backend.

    The handle is trusted: it must be a live stream of the current device, made by another
    library (CuPy, PyTorch, ...). Values that cannot be a stream handle raise ValueError;
    a stale or foreign pointer cannot be detected and is undefined behaviour."""

def event_record_raw(event: cudaEvent_t, stream_handle: int) -> None:
    """Records ``event`` on a foreign stream given by its raw handle (trusted, as for
    ``stream_wait_event_raw``)."""

# --- pitched copies (pygpu.driver.Memcpy2D/Memcpy3D) ---------------------------------

_PitchedSide = tuple[str, Any, int, int, int, int, int]

def memcpy_pitched(
    dst: _PitchedSide,
    src: _PitchedSide,
    width_in_bytes: int,
    height: int,
    depth: int = 1,
    stream: cudaStream_t | None = None,
) -> None:
    """Copies ``depth`` slices of ``height`` rows of ``width_in_bytes`` bytes (cuMemcpy2D/3D).
    Each side is ("host" or "device", buffer or pointer, x_in_bytes, y, z, pitch, slice height)."""

# --- several devices (src/python/peer.rs) ----------------------------------------

def cudaDeviceEnablePeerAccess(peer_device: int, flags: int = 0) -> cudaError:
    """Lets the current device address ``peer_device``'s memory directly (flags must be 0)."""

def cudaDeviceDisablePeerAccess(peer_device: int) -> cudaError: ...
def cudaMemcpyPeer(dst: _DevicePointer, dst_device: int, src: _DevicePointer, src_device: int, count: int) -> cudaError:
    """Copies ``count`` bytes from ``src`` on ``src_device`` to ``dst`` on ``dst_device``."""

def cudaMemcpyPeerAsync(
    dst: _DevicePointer,
    dst_device: int,
    src: _DevicePointer,
    src_device: int,
    count: int,
    stream: cudaStream_t | None = None,
) -> cudaError:
    """The same, ordered on ``stream`` (a stream of the current device)."""

# --- PyCUDA's memory pools (pygpu.tools) ----------------------------------------

@final
class DeviceMemoryPool:
    """Device memory held for reuse (PyCUDA's ``pycuda.tools.DeviceMemoryPool``), on the device
    current when the pool was made. Requests are rounded up to a size class; freed blocks are
    held for the next request of their class. Out of memory, the held blocks are freed and the
    allocation tried once more."""
    def __new__(cls) -> Self: ...
    def allocate(self, size: int) -> PooledDeviceAllocation:
        """``size`` bytes: a held block when one fits (pass ``pool.allocate`` as an allocator)."""
    def __call__(self, size: int) -> PooledDeviceAllocation: ...
    @property
    def held_blocks(self) -> int: ...
    @property
    def active_blocks(self) -> int: ...
    @property
    def managed_bytes(self) -> int:
        """Bytes held from the device: active and held blocks, whole size classes."""
    @property
    def active_bytes(self) -> int: ...
    @property
    def device(self) -> int: ...
    @staticmethod
    def bin_number(size: int) -> int:
        """The size class of a request of ``size`` bytes."""
    @staticmethod
    def alloc_size(bin_nr: int) -> int:
        """The bytes a block of size class ``bin_nr`` holds."""
    def free_held(self) -> None:
        """Frees the held blocks."""
    def stop_holding(self) -> None:
        """Frees the held blocks, and from now on each block as it is freed."""

@final
class PooledDeviceAllocation(DeviceAllocation):
    """A block of a DeviceMemoryPool, usable wherever a DeviceAllocation is; ``free()`` (or
    its last reference going) gives it back to the pool."""

@final
class PageLockedMemoryPool:
    """Page-locked host memory held for reuse (PyCUDA's ``pycuda.tools.PageLockedMemoryPool``);
    ``allocator`` (a ``pygpu.tools.PageLockedAllocator``) gives the ``host_alloc_flags`` of every
    block."""
    def __new__(cls, allocator: Any = None) -> Self: ...
    def allocate(self, shape: int | Iterable[int], dtype: Any, order: str = "C") -> npt.NDArray[Any]:
        """An uninitialised numpy array in pooled page-locked memory; its block goes back to the
        pool with the array's last view."""
    @property
    def held_blocks(self) -> int: ...
    @property
    def active_blocks(self) -> int: ...
    @property
    def managed_bytes(self) -> int: ...
    @property
    def active_bytes(self) -> int: ...
    @staticmethod
    def bin_number(size: int) -> int: ...
    @staticmethod
    def alloc_size(bin_nr: int) -> int: ...
    def free_held(self) -> None: ...
    def stop_holding(self) -> None: ...

@final
class PooledHostAllocation:
    """A block of a PageLockedMemoryPool (the base of the arrays it hands out)."""
    @property
    def ptr(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def get_device_pointer(self) -> int:
        """The address kernels use for the block (a pool whose allocator has DEVICEMAP)."""
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...

# --- bundled kernel sources (pygpu._toolchain.bundled_sources) -----------------------------------

def bundled_kernel_sources() -> list[tuple[str, str]]:
    """(file name, contents) of every kernels/*.cu and kernels/*.h embedded at build time."""

# --- managed memory (pygpu.driver.managed_*) -------------------------------------------

def cuCtxGetApiVersion() -> tuple[int, cudaError]:
    """(version, status): the current context's API version (cuCtxGetApiVersion)."""
@final
class ManagedAllocation:
    """Managed memory (cuMemAllocManaged): one address for the host and kernels; the base of
    the numpy arrays of pygpu.driver.managed_*. ``mem_flags`` is mem_attach_flags GLOBAL (1;
    0 means GLOBAL) or HOST (2). Released with its last reference."""
    def __new__(cls, nbytes: int, mem_flags: int = 1) -> Self: ...
    def get_device_pointer(self) -> int: ...
    @property
    def ptr(self) -> int:
        """The address, valid in kernels and on the host alike; raises once freed."""
    @property
    def nbytes(self) -> int:
        """The size in bytes."""
    def attach(self, mem_flags: int, stream: cudaStream_t | None = None) -> None:
        """Which streams may access the memory: GLOBAL, HOST, or SINGLE (only ``stream``)."""
    def free(self) -> None:
        """Ends this object's use now; the memory goes with the last array viewing it."""
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...
