"""pygpu: run GPU kernels from Python, with PyCUDA's API, on NVIDIA, AMD or the CPU.

Devices, streams, events, memory, arrays on the device (``GPUArray``) and your own CUDA C
kernels, compiled ahead of time or at run time (``pygpu.compiler.SourceModule``). Code written
for PyCUDA runs after renaming its imports (``import pygpu.gpuarray as gpuarray``,
``import pygpu.driver as cuda``); arrays go to CuPy, PyTorch and JAX without a copy.

Backends: ``cuda`` (NVIDIA; the default), ``hip`` (AMD) and ``host``, which runs the same
kernels on the CPU with no GPU at all. Choose with ``PYGPU_BACKEND=host`` (or ``cuda``,
``hip``) in the environment, or ``pygpu.set_backend("host")`` before the first GPU call.

Example (on any machine, with ``PYGPU_BACKEND=host``)::

    >>> import numpy as np
    >>> import pygpu.gpuarray as gpuarray
    >>> x = gpuarray.to_gpu(np.arange(4, dtype=np.float32))
    >>> (2 * x + 1).get()
    array([1., 3., 5., 7.], dtype=float32)
    >>> float(gpuarray.sum(x).get())
    6.0

Modules, as PyCUDA's: ``gpuarray``, ``driver``, ``compiler``, ``cumath``, ``curandom``,
``elementwise``, ``reduction``, ``scan``, ``tools``, ``characterize``, ``vec``; and pygpu's own
``nccl`` and ``mpi`` for several GPUs. The low-level calls keep PyGPU's names
(``cudaSetDevice``, ``cudaStream_t``, ``DeviceArray_float64``, ...) and return status objects;
everything above them raises ``CudaError`` subclasses. Documentation: ``scripts/docs.sh`` in a
clone builds the site (docs/ holds its pages).
"""

from __future__ import annotations

import importlib

# Not typing.TYPE_CHECKING: importing typing would double the time `import pygpu` takes.
TYPE_CHECKING = False

from pygpu._pygpu import (
    BackendUnavailableError,
    CudaError,
    CudaMemoryError,
    DeviceAllocation,
    DeviceArray_complex64,
    DeviceArray_complex128,
    DeviceArray_float32,
    DeviceArray_float64,
    DeviceArray_int16,
    DeviceArray_int32,
    DeviceArray_int64,
    DeviceArray_uint16,
    DeviceArray_uint32,
    DeviceArray_uint64,
    HostAllocation,
    MemoryPool,
    InvalidDeviceError,
    InvalidHandleError,
    Function,
    Graph,
    KernelParameter,
    GraphExec,
    InvalidValueError,
    KernelArgumentWarning,
    LaunchError,
    Module,
    ModuleError,
    NoDeviceError,
    NotReadyError,
    backend,
    cudaDeviceDisablePeerAccess,
    cudaDeviceEnablePeerAccess,
    cudaDeviceProp,
    cudaDeviceSynchronize,
    cudaError,
    cudaEvent_t,
    cudaEventDestroy,
    cudaEventElapsedTime,
    cudaEventQuery,
    cudaEventRecord,
    cudaEventSynchronize,
    cudaGetDevice,
    cudaGetDeviceCount,
    cudaGetErrorName,
    cudaGetErrorString,
    cudaGetLastError,
    cudaMemGetInfo,
    cudaMemcpyPeer,
    cudaMemcpyPeerAsync,
    cudaPeekAtLastError,
    cudaSetDevice,
    cudaStream_t,
    cudaStreamDestroy,
    cudaStreamQuery,
    cudaStreamSynchronize,
    cudaStreamWaitEvent,
    get_default_memory_pool,
    mem_alloc,
    mem_get_info,
    memcpy_dtod,
    memcpy_dtoh,
    memcpy_htod,
    memset_d8,
    memset_d16,
    memset_d32,
    pool_alloc,
    pointer_wrapper_complex64,
    pointer_wrapper_complex128,
    pointer_wrapper_float32,
    pointer_wrapper_float64,
    pointer_wrapper_int16,
    pointer_wrapper_int32,
    pointer_wrapper_int64,
    pointer_wrapper_uint16,
    pointer_wrapper_uint32,
    pointer_wrapper_uint64,
    set_backend,
)
from pygpu._kernels import load_kernels

if TYPE_CHECKING:
    from typing import Any

    from pygpu._multi_device import *  # noqa: F403
    from pygpu._pinned import *  # noqa: F403
    from pygpu.gpuarray import *  # noqa: F403

# numpy takes most of `import pygpu`'s time, so the names that need it load on first use.
# `import pygpu as gpuarray` serves PyCUDA code: every public name of pygpu.gpuarray is also
# pygpu's. The table is the submodules' __all__, written out because reading them would import
# numpy; tests/test_package.py checks that it matches them.
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "pygpu._multi_device": ("Device", "memcpy_peer", "memcpy_peer_async"),
    "pygpu._pinned": ("pagelocked_empty", "pagelocked_empty_like", "pagelocked_zeros", "pagelocked_zeros_like"),
    "pygpu.gpuarray": (
        "DevicePointer", "GPUArray", "GPUArrayError", "all", "any", "arange", "asarray", "concatenate", "dot", "empty",
        "empty_like", "from_dlpack", "hstack", "if_positive", "logical_and", "logical_not", "logical_or", "max",
        "maximum", "min", "minimum", "multi_put", "multi_take", "multi_take_put", "ones", "ones_like", "reshape",
        "splay", "stack", "subset_dot", "subset_max", "subset_min", "subset_sum", "sum", "take", "to_gpu",
        "to_gpu_async", "transpose", "vdot", "vstack", "where", "zeros", "zeros_like",
    ),
}  # fmt: skip
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}

# PyCUDA's module names, imported on first attribute access (``import pygpu; pygpu.cumath``)
# so that `import pygpu` stays fast.
_SUBMODULES = frozenset(
    [
        "characterize",
        "compiler",
        "cumath",
        "curandom",
        "driver",
        "elementwise",
        "gpuarray",
        "mpi",
        "nccl",
        "reduction",
        "scan",
        "tools",
        "vec",
    ]
)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"pygpu.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pygpu' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


__version__ = "0.1.0"

#: PyCUDA's version names (``pycuda.VERSION``, ...), answering with the PyCUDA release whose API
#: pygpu follows (``pygpu.pycuda_alias.PYCUDA_VERSION``): code that prints or compares them runs.
VERSION = (2026, 1)
VERSION_STATUS = ""
VERSION_TEXT = ".".join(str(part) for part in VERSION) + VERSION_STATUS

__all__ = [
    "VERSION",
    "VERSION_STATUS",
    "VERSION_TEXT",
    "BackendUnavailableError",
    "CudaError",
    "CudaMemoryError",
    "DeviceAllocation",
    "DeviceArray_complex64",
    "DeviceArray_complex128",
    "DeviceArray_float32",
    "DeviceArray_float64",
    "DeviceArray_int16",
    "DeviceArray_int32",
    "DeviceArray_int64",
    "DeviceArray_uint16",
    "DeviceArray_uint32",
    "DeviceArray_uint64",
    "HostAllocation",
    "MemoryPool",
    "InvalidDeviceError",
    "InvalidHandleError",
    "Function",
    "Graph",
    "KernelParameter",
    "GraphExec",
    "InvalidValueError",
    "KernelArgumentWarning",
    "LaunchError",
    "Module",
    "ModuleError",
    "NoDeviceError",
    "NotReadyError",
    "backend",
    "cudaDeviceDisablePeerAccess",
    "cudaDeviceEnablePeerAccess",
    "cudaDeviceProp",
    "cudaDeviceSynchronize",
    "cudaError",
    "cudaEvent_t",
    "cudaEventDestroy",
    "cudaEventElapsedTime",
    "cudaEventQuery",
    "cudaEventRecord",
    "cudaEventSynchronize",
    "cudaGetDevice",
    "cudaGetDeviceCount",
    "cudaGetErrorName",
    "cudaGetErrorString",
    "cudaGetLastError",
    "cudaMemGetInfo",
    "cudaMemcpyPeer",
    "cudaMemcpyPeerAsync",
    "cudaPeekAtLastError",
    "cudaSetDevice",
    "cudaStream_t",
    "cudaStreamDestroy",
    "cudaStreamQuery",
    "cudaStreamSynchronize",
    "cudaStreamWaitEvent",
    "get_default_memory_pool",
    "load_kernels",
    "mem_alloc",
    "mem_get_info",
    "memcpy_dtod",
    "memcpy_dtoh",
    "memcpy_htod",
    "memset_d8",
    "memset_d16",
    "memset_d32",
    "pool_alloc",
    "pointer_wrapper_complex64",
    "pointer_wrapper_complex128",
    "pointer_wrapper_float32",
    "pointer_wrapper_float64",
    "pointer_wrapper_int16",
    "pointer_wrapper_int32",
    "pointer_wrapper_int64",
    "pointer_wrapper_uint16",
    "pointer_wrapper_uint32",
    "pointer_wrapper_uint64",
    "set_backend",
]
__all__ += list(_LAZY)
