"""``GPUArray``: pycuda.gpuarray's typed device array, in Python over pygpu's compiled
primitives and bundled kernels, with zero-copy interop (CUDA Array Interface v3, DLPack).

A ``GPUArray`` is a view: a device allocation, a byte offset of element 0 inside it, a
shape, a dtype and byte strides (possibly negative or zero). Indexing, ``reshape``,
``transpose``, ``view`` ... return views sharing the allocation.

Ordering: every allocation remembers the stream of its last write (``_ordering``);
pygpu's own operations on another stream wait for it with an event, and exports tell
consumers about it (``__cuda_array_interface__['stream']``, ``__dlpack__(stream=...)``).

Modules, one per concept, in floors that import only downwards (pyproject.toml's
``gpuarray-floors`` contract): ``_dtypes`` (the dtype table), ``_layout`` (strides),
``_indexing`` (basic indexing), ``_ordering`` (streams); ``_storage`` (the array's fields over the
compiled ``ArrayStorage``, and how views and results are made: the subclass contract);
``_bundled`` and ``_elementwise`` (launching the bundled kernels); the mixins ``_arithmetic``
(operators and elementwise methods), ``_transfer`` (copies), ``_interop`` (CAI/DLPack exports),
``_reductions`` (sum, dot, min, max...), ``_launch_helpers``; ``_core`` (composes the class, its
views); and the functions over it: ``_creation`` (new arrays), ``_importing`` (``asarray``,
``from_dlpack``), ``_functions`` (elementwise module functions), ``_array_functions`` (arange,
concatenate, take... on the device), ``_pycuda_private``.

Use as ``import pygpu as gpuarray`` or ``from pygpu import gpuarray``.
"""

from __future__ import annotations

from pygpu._driver import vector_types as vec  # noqa: F401 - PyCUDA's gpuarray.vec (pygpu.vec's names)
from pygpu.gpuarray._core import GPUArray
from pygpu.gpuarray._creation import (
    empty,
    empty_like,
    ones,
    ones_like,
    to_gpu,
    to_gpu_async,
    zeros,
    zeros_like,
)
from pygpu.gpuarray._array_functions import (
    arange,
    concatenate,
    hstack,
    multi_put,
    multi_take,
    multi_take_put,
    reshape,
    stack,
    take,
    transpose,
    vstack,
)
from pygpu.gpuarray._functions import (
    if_positive,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    where,
)
from pygpu.gpuarray._importing import asarray, from_dlpack
from pygpu.gpuarray._storage import DevicePointer

# PyCUDA's private names that libraries call (not in __all__; `as` re-exports them).
from pygpu.gpuarray._pycuda_private import (
    _array_like_helper as _array_like_helper,
    _compact_strides as _compact_strides,
    _get_common_dtype as _get_common_dtype,
    _splay_backend as _splay_backend,
    splay,
)
from pygpu.gpuarray._transfer import memcpy_discontig as _memcpy_discontig  # noqa: F401
from pygpu.errors import GPUArrayError
from pygpu.gpuarray._reductions import (
    all,
    any,
    dot,
    max,
    min,
    subset_dot,
    subset_max,
    subset_min,
    subset_sum,
    sum,
    vdot,
)

__all__: list[str] = [
    "DevicePointer",
    "GPUArray",
    "GPUArrayError",
    "all",
    "any",
    "arange",
    "asarray",
    "concatenate",
    "dot",
    "empty",
    "empty_like",
    "from_dlpack",
    "hstack",
    "if_positive",
    "logical_and",
    "logical_not",
    "logical_or",
    "max",
    "maximum",
    "min",
    "minimum",
    "multi_put",
    "multi_take",
    "multi_take_put",
    "ones",
    "ones_like",
    "reshape",
    "splay",
    "stack",
    "subset_dot",
    "subset_max",
    "subset_min",
    "subset_sum",
    "sum",
    "take",
    "to_gpu",
    "to_gpu_async",
    "transpose",
    "vdot",
    "vstack",
    "where",
    "zeros",
    "zeros_like",
]
