"""PyCUDA's ``pycuda.gl`` (OpenGL interoperability) is not supported by pygpu: importing this
module raises ImportError, so that code with an OpenGL-less fallback (``try: import pycuda.gl
except ImportError: ...``) takes it, and code without one stops with a message saying what to
use instead."""

from __future__ import annotations

raise ImportError(
    "pygpu has no OpenGL interoperability (pycuda.gl, pycuda.gl.autoinit: RegisteredBuffer, "
    "RegisteredImage, graphics_map_flags): register and map the GL buffer or texture with the CUDA "
    "runtime yourself (cudaGraphicsGLRegisterBuffer / cudaGraphicsMapResources / "
    "cudaGraphicsResourceGetMappedPointer, e.g. from cuda-python's cuda.bindings.runtime) and hand "
    "the mapped device pointer to pygpu (GPUArray(shape, dtype, gpudata=ptr)), or copy the data "
    "through host memory",
    name=__name__,
)
