"""pygpu: light, fast GPU control from Python around the kernels you already have.

Low-level calls keep PyGPU's names (``cudaSetDevice``, ``cudaStream_t``,
``DeviceArray_float64``, ...) and return status objects; everything above them raises
``CudaError`` subclasses. Choose the backend with ``PYGPU_BACKEND`` (``cuda``, ``hip``,
``host``) or ``set_backend`` before the first GPU call.
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
    InvalidDeviceError,
    InvalidHandleError,
    ArgumentHandler,
    Function,
    Graph,
    GraphExec,
    InvalidValueError,
    LaunchError,
    Module,
    ModuleError,
    NoDeviceError,
    NotReadyError,
    backend,
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
    cudaPeekAtLastError,
    cudaSetDevice,
    cudaStream_t,
    cudaStreamDestroy,
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

    from pygpu._pinned import pagelocked_empty, pagelocked_empty_like, pagelocked_zeros, pagelocked_zeros_like
    from pygpu.gpuarray import (
        GPUArray,
        arange,
        asarray,
        empty,
        empty_like,
        from_dlpack,
        if_positive,
        logical_and,
        logical_not,
        logical_or,
        maximum,
        minimum,
        ones,
        ones_like,
        to_gpu,
        to_gpu_async,
        where,
        zeros,
        zeros_like,
    )

# numpy takes most of `import pygpu`'s time; the parts that need it load on first use.
_LAZY = {
    **dict.fromkeys(["pagelocked_empty", "pagelocked_empty_like", "pagelocked_zeros", "pagelocked_zeros_like"], "pygpu._pinned"),
    **dict.fromkeys(
        ["GPUArray", "arange", "asarray", "empty", "empty_like", "from_dlpack", "if_positive", "logical_and",
         "logical_not", "logical_or", "maximum", "minimum", "ones", "ones_like", "to_gpu", "to_gpu_async", "where",
         "zeros", "zeros_like"],
        "pygpu.gpuarray",
    ),
}


# PyCUDA's module names, imported on first attribute access (``import pygpu; pygpu.gpuarray``)
# so that `import pygpu` stays fast.
_SUBMODULES = frozenset(
    ["characterize", "cumath", "curandom", "driver", "elementwise", "gpuarray", "reduction", "scan", "tools", "vec"]
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

__all__ = [
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
    "InvalidDeviceError",
    "InvalidHandleError",
    "ArgumentHandler",
    "Function",
    "Graph",
    "GraphExec",
    "InvalidValueError",
    "LaunchError",
    "Module",
    "ModuleError",
    "NoDeviceError",
    "NotReadyError",
    "backend",
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
    "cudaPeekAtLastError",
    "cudaSetDevice",
    "cudaStream_t",
    "cudaStreamDestroy",
    "cudaStreamQuery",
    "cudaStreamSynchronize",
    "cudaStreamWaitEvent",
    "load_kernels",
    "mem_alloc",
    "mem_get_info",
    "memcpy_dtod",
    "memcpy_dtoh",
    "memcpy_htod",
    "memset_d8",
    "memset_d16",
    "memset_d32",
    "pagelocked_empty",
    "pagelocked_empty_like",
    "pagelocked_zeros",
    "pagelocked_zeros_like",
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
    "GPUArray",
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "from_dlpack",
    "if_positive",
    "logical_and",
    "logical_not",
    "logical_or",
    "maximum",
    "minimum",
    "ones",
    "ones_like",
    "to_gpu",
    "to_gpu_async",
    "where",
    "zeros",
    "zeros_like",
]
