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
``nccl`` and ``mpi`` for several GPUs, ``graphs`` (device-side loops, step graphs with
parameters), ``pygpu.profile()`` (a per-kernel table, a trace
file and a timeline) and ``nvtx`` for named ranges in it. The low-level calls keep PyGPU's names
(``cudaSetDevice``, ``cudaStream_t``, ``DeviceArray_float64``, ...) and return status objects;
everything above them raises from one exception tree, listed in ``pygpu.errors``.
``pygpu.capabilities()`` says what the active backend can do (its compiler, linker, memory...).
Documentation: ``scripts/docs.sh`` in a clone builds the site (docs/ holds its pages).
"""

from __future__ import annotations

import importlib

# Not typing.TYPE_CHECKING: importing typing would double the time `import pygpu` takes.
TYPE_CHECKING = False

from pygpu import _pygpu
from pygpu._toolchain.bundled_kernels import load_kernels

if TYPE_CHECKING:
    from typing import Any

    from pygpu import gpuarray as _gpuarray
    from pygpu._driver import devices as _devices
    from pygpu._driver import pinned as _pinned
    from pygpu._driver.devices import *  # noqa: F403
    from pygpu._driver.pinned import *  # noqa: F403
    from pygpu.gpuarray import *  # noqa: F403
    from pygpu import profiler as _profiler
    from pygpu.profiler import *  # noqa: F403

    # pygpu offers those of the compiled module's names that __all__ lists; memcpy_peer and
    # memcpy_peer_async are pygpu._driver.devices' (above), which take Contexts and Devices too.
    from pygpu._pygpu import *  # type: ignore[assignment]  # noqa: F403

__version__ = "0.1.0"

#: PyCUDA's version names (``pycuda.VERSION``, ...), answering with the PyCUDA release whose API
#: pygpu follows (``pygpu.pycuda_alias.PYCUDA_VERSION``): code that prints or compares them runs.
VERSION = (2026, 1)
VERSION_STATUS = ""
VERSION_TEXT = ".".join(str(part) for part in VERSION) + VERSION_STATUS

# pygpu's names: its own, then PyGPU's low-level API from the compiled module (bound below from
# this list, their one writing), then (for type checkers here, at run time on first use) the
# public names of _LAZY_MODULES.
__all__: list[str] = [
    "VERSION",
    "VERSION_STATUS",
    "VERSION_TEXT",
    "load_kernels",
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
    "GraphNode",
    "InvalidValueError",
    "KernelArgumentWarning",
    "LaunchError",
    "Module",
    "ModuleError",
    "NoDeviceError",
    "NotReadyError",
    "backend",
    "capabilities",
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
globals().update((name, getattr(_pygpu, name)) for name in __all__ if name not in globals())

# numpy takes most of `import pygpu`'s time, so these modules' public names load on first use.
# `import pygpu as gpuarray` serves PyCUDA code: every public name of pygpu.gpuarray is also
# pygpu's. Lightest first: a name is looked for in each module in turn, imported as needed.
_LAZY_MODULES = ("pygpu._driver.devices", "pygpu._driver.pinned", "pygpu.profiler", "pygpu.gpuarray")
_OWN_NAMES = tuple(__all__)
if TYPE_CHECKING:
    __all__ += _devices.__all__
    __all__ += _pinned.__all__
    __all__ += _profiler.__all__
    __all__ += _gpuarray.__all__
else:
    # At run time __all__ completes on first use (__getattr__), the lazy modules' names with it.
    del __all__

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
        "graphs",
        "mpi",
        "nccl",
        "nvtx",
        "profiler",
        "reduction",
        "scan",
        "tools",
        "vec",
    ]
)


def _lazy_names() -> list[str]:
    return [name for module in _LAZY_MODULES for name in importlib.import_module(module).__all__]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"pygpu.{name}")
    if name == "__all__":
        names = globals()["__all__"] = [*_OWN_NAMES, *_lazy_names()]
        return names
    if not name.startswith("_"):  # private and special names are never lazy: probing them loads nothing
        for module_name in _LAZY_MODULES:
            module = importlib.import_module(module_name)
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'pygpu' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_lazy_names()) | _SUBMODULES)
