"""CUDA's vector types as numpy structured dtypes (PyCUDA's ``gpuarray.vec``):
``vec.float3`` is ``np.dtype([("x", f4), ("y", f4), ("z", f4)])``, ``vec.make_float3(1, 2, 3)``
a scalar of it that kernels take by value; GPUArrays of them pass as ``float3 *``.

Structs of your own: ``register_struct("my_t", dtype, c_decl)`` names a structured dtype so
generated kernels (ElementwiseKernel, ReductionKernel) accept ``my_t`` in their argument
lists; a kernel that uses it checks ``sizeof`` at compile time and every field's offset
once by a probe kernel, so a padding mismatch is an error, not garbage.
"""

from __future__ import annotations

from typing import Any

from pygpu._driver import vector_types as _vector_types
from pygpu._driver.vector_types import *  # noqa: F403

__all__ = list(_vector_types.__all__)


def __getattr__(name: str) -> Any:
    # The vector types are made in a loop; this tells type checkers they exist.
    raise AttributeError(f"module 'pygpu.vec' has no attribute {name!r}")
