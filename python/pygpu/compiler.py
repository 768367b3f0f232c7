"""Runtime compilation, PyCUDA's ``pycuda.compiler``: ``SourceModule(source)`` compiles CUDA
C and loads it as a :class:`pygpu.Module`, so compiled kernels are launched, prepared and
captured in graphs exactly as precompiled ones.

Compilers: NVRTC on the cuda backend (a cubin for the current device's sm_XY; PTX only
when NVRTC does not know the GPU), hiprtc on hip (a code object for the current device),
the system C++ compiler on host (``$CXX``, g++ or clang++). The ``nvcc`` argument is accepted
for compatibility and not used. ``DynamicModule`` and ``DynamicSourceModule`` link several
sources, binaries and libraries into one module.

Binaries are cached on disk (``cache_dir``, else ``$PYGPU_CACHE_DIR``, else
``~/.cache/pygpu``; ``cache_dir=False`` compiles every time) under a key covering the
source, the options, the contents of every header it includes from its include folders,
the compiler, the target architecture and pygpu's kernel header; and memoized in the
process, so compiling the same source again reads no file.

The CUDA toolkit's headers (``math_constants.h``, thrust, cub, libcu++), which nvcc sees by
itself, are found where they are installed and searched after the caller's folders.
"""

from __future__ import annotations

from pygpu.errors import CompileError
from pygpu._toolchain.dynamic_module import DynamicModule, DynamicSourceModule
from pygpu._toolchain.source_module import DEFAULT_NVCC_FLAGS, SourceModule, compile

__all__ = ["DEFAULT_NVCC_FLAGS", "CompileError", "DynamicModule", "DynamicSourceModule", "SourceModule", "compile"]
