"""PyCUDA's ``pycuda.reduction``: a reduction generated from a map expression (over index
``i`` of the arguments) and a reduce expression (over ``a`` and ``b``).

    dot = ReductionKernel(np.float64, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                          arguments="const double *x, const double *y")
    dot(x, y).get()   # a 0-d GPUArray

Two kernels, any length: the first gives one partial result per block (a grid-stride loop
per thread, then a tree in shared memory), the second reduces the partials in one block.
The reduce expression must be associative and commutative (threads combine in any order).
``range=slice(start, stop, step)`` (or a ``range``) reduces over exactly those ``i``;
``slice=`` is clipped to the first array as Python slices are (PyCUDA's keywords).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pygpu._kernelgen.generated_kernel import (
    INDEX_TYPE,
    all_dtypes,
    check_sizes,
    compile_kernels,
    in_c_order,
    index_range,
    kernels_on_cpu,
    launch_size,
    layout_asserts,
    mixed_orders,
    pack_arguments,
    release_copies,
    type_prelude,
)
from pygpu._driver.c_types import dtype_to_ctype
from pygpu._kernelgen.arguments import VectorArg, parse_c_args

__all__ = ["ReductionKernel", "get_reduction_source"]

_BLOCK = 512
_HOST_BLOCK = 32


def _tree(out_type: str, block: int) -> str:
    """Reduces ``pygpu_acc`` of every thread of the block into ``pygpu_shared[0]`` (block a power of two)."""
    return f"""
  pygpu_shared[threadIdx.x] = pygpu_acc;
  __syncthreads();
  for (unsigned int pygpu_s = {block} / 2; pygpu_s > 0; pygpu_s >>= 1) {{
    if (threadIdx.x < pygpu_s)
      pygpu_shared[threadIdx.x] = pygpu_reduce_op(pygpu_shared[threadIdx.x], pygpu_shared[threadIdx.x + pygpu_s]);
    __syncthreads();
  }}
"""


def get_reduction_source(
    out_type: str,
    neutral: str,
    reduce_expr: str,
    map_expr: str,
    params: str,
    name: str,
    preamble: str,
    block: int,
) -> str:
    """The C source of the two kernels ``name_stage1`` and ``name_stage2``."""
    sep = ", " if params else ""
    return f"""
{preamble}

__device__ __forceinline__ {out_type} pygpu_reduce_op({out_type} a, {out_type} b)
{{
  return ({reduce_expr});
}}

extern "C" __global__ void {name}_stage1({params}{sep}{out_type} *pygpu_partial,
    {INDEX_TYPE} pygpu_start, {INDEX_TYPE} pygpu_step, {INDEX_TYPE} n)
{{
  __shared__ {out_type} pygpu_shared[{block}];
  const {INDEX_TYPE} pygpu_threads = ({INDEX_TYPE})blockDim.x * gridDim.x;
  {out_type} pygpu_acc = ({neutral});
  for ({INDEX_TYPE} pygpu_k = ({INDEX_TYPE})blockIdx.x * blockDim.x + threadIdx.x; pygpu_k < n; pygpu_k += pygpu_threads) {{
    const {INDEX_TYPE} i = pygpu_start + pygpu_k * pygpu_step;
    pygpu_acc = pygpu_reduce_op(pygpu_acc, ({map_expr}));
  }}
  {_tree(out_type, block)}
  if (threadIdx.x == 0) pygpu_partial[blockIdx.x] = pygpu_shared[0];
}}

extern "C" __global__ void {name}_stage2(const {out_type} *pygpu_partial, {out_type} *pygpu_result, {INDEX_TYPE} n)
{{
  __shared__ {out_type} pygpu_shared[{block}];
  {out_type} pygpu_acc = ({neutral});
  for ({INDEX_TYPE} i = threadIdx.x; i < n; i += blockDim.x)
    pygpu_acc = pygpu_reduce_op(pygpu_acc, pygpu_partial[i]);
  {_tree(out_type, block)}
  if (threadIdx.x == 0) *pygpu_result = pygpu_shared[0];
}}
"""


def _complex_neutral(dtype: np.dtype, neutral: str) -> str:
    """A numeric neutral of a complex reduction as an explicit complex value: "0" becomes 0 + 0i."""
    if dtype.kind != "c":
        return neutral
    try:
        float(neutral.rstrip("fF"))
    except ValueError:
        return neutral
    real = "float" if dtype == np.complex64 else "double"
    return f"pygpu::make_complex(({real})({neutral}), ({real})0)"


#: Names of the generated stage-1 kernel that arguments cannot take: the index ``i`` that
#: ``map_expr`` reads (PyCUDA's too) and the count ``n``; its other names begin with ``pygpu_``.
_GENERATED_NAMES = frozenset({"i", "n"})


class ReductionKernel:
    """``reduce_expr`` (over ``a`` and ``b``, starting from ``neutral``) applied to
    ``map_expr`` (over index ``i`` of ``arguments``; default ``in[i]``) for every ``i``
    below the size of the first array argument (or in ``range=``/``slice=``); the result is
    a 0-d GPUArray of ``dtype_out``. Called as
    ``kernel(*args, stream=None, out=None, allocator=None, range=None, slice=None)``."""

    def __init__(
        self,
        dtype_out: Any,
        neutral: str,
        reduce_expr: str,
        map_expr: str | None = None,
        arguments: str | list[Any] | None = None,
        name: str = "reduce_kernel",
        keep: bool = False,
        options: list[str] | None = None,
        preamble: str = "",
        allocator: Any = None,
    ) -> None:
        if arguments is None:
            raise ValueError("ReductionKernel needs arguments= (e.g. 'const float *in')")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"kernel name {name!r} is not a C identifier")
        self.dtype_out = np.dtype(dtype_out)
        self.arguments = parse_c_args(arguments)
        if not any(isinstance(a, VectorArg) for a in self.arguments):
            raise ValueError("a ReductionKernel needs at least one array (pointer) argument to size the reduction")
        names = [a.name for a in self.arguments]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"argument names must be unique: {', '.join(duplicates)} declared more than once")
        # The generated kernel's own names: an argument of the same name would be shadowed by
        # the loop's index (map_expr reading the wrong value) or clash with the count.
        reserved = sorted(n for n in names if n in _GENERATED_NAMES or n.startswith("pygpu_"))
        if reserved:
            raise ValueError(f"argument names {reserved} are used by the generated kernels: rename them")
        if map_expr is None:
            if "in" not in names:
                raise ValueError("without map_expr, the arguments must include an array named 'in'")
            map_expr = "in[i]"
        self.name = name
        self.allocator = allocator
        self._block = _HOST_BLOCK if kernels_on_cpu() else _BLOCK
        out_type = dtype_to_ctype(self.dtype_out)
        neutral = _complex_neutral(self.dtype_out, str(neutral))
        params = ", ".join(a.declarator() for a in self.arguments)
        dtypes = all_dtypes(self.arguments, self.dtype_out)
        source = type_prelude(dtypes) + get_reduction_source(
            out_type, neutral, reduce_expr, map_expr, params, name, f"{preamble}\n{layout_asserts(dtypes)}", self._block
        )
        self.stage1, self.stage2 = compile_kernels(
            source,
            [f"{name}_stage1", f"{name}_stage2"],
            options,
            keep,
            all_dtypes(self.arguments, self.dtype_out),
            preamble,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        stream = kwargs.pop("stream", None)
        out = kwargs.pop("out", None)
        allocator = kwargs.pop("allocator", None) or self.allocator
        range_ = kwargs.pop("range", None)
        slice_ = kwargs.pop("slice", None)
        if kwargs:
            raise TypeError(f"ReductionKernel got unknown keyword arguments: {', '.join(sorted(kwargs))}")
        what = f"ReductionKernel {self.name!r}"
        launch, vectors = pack_arguments(self.arguments, args, what)
        copies: list[Any] = []
        if mixed_orders(vectors):
            # numpy pairs elements by index: Fortran operands are read through C-ordered copies
            # (a reduction reads its arrays; nothing is copied back).
            launch, copies = in_c_order(self.arguments, launch, vectors, what, stream)
        try:
            return self._reduce(launch, vectors, range_, slice_, stream, out, allocator, what)
        finally:
            release_copies(copies, stream, write_back=False)

    def _reduce(
        self,
        launch: list[Any],
        vectors: list[Any],
        range_: Any,
        slice_: Any,
        stream: Any,
        out: Any,
        allocator: Any,
        what: str,
    ) -> Any:
        from pygpu import gpuarray

        start, step, n = index_range(range_, slice_, vectors[0].size, what)
        if n:
            check_sizes(self.arguments, vectors, max(start, start + (n - 1) * step) + 1, what)
        if out is None:
            out = gpuarray.empty((), self.dtype_out, allocator=allocator)
        elif getattr(out, "dtype", None) != self.dtype_out or getattr(out, "size", 0) != 1:
            raise ValueError(f"{what}: out= must be a GPUArray of one {self.dtype_out} element")
        elif getattr(out, "_readonly", False):
            raise ValueError(f"{what}: out= is read-only (assignment destination is read-only)")
        block = self._block
        blocks = launch_size(n, block) if n else 0
        indices = (np.int64(start), np.int64(step), np.int64(n))
        if blocks == 1:
            # One block reduces everything: its partial is the result (no second launch, and
            # one allocation, as PyCUDA's single-stage case).
            self.stage1(*launch, out, *indices, block=(block, 1, 1), grid=(1, 1), stream=stream)
            return out
        if blocks:
            partial = gpuarray.empty((blocks,), self.dtype_out, allocator=allocator)
            self.stage1(*launch, partial, *indices, block=(block, 1, 1), grid=(blocks, 1), stream=stream)
        else:
            partial = out  # not read: stage 2 over no partials writes the neutral element
        self.stage2(partial, out, np.int64(blocks), block=(block, 1, 1), grid=(1, 1), stream=stream)
        return out
