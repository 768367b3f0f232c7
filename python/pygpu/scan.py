"""PyCUDA's ``pycuda.scan``: prefix sums (scans) with any associative operator.

    cumsum = InclusiveScanKernel(np.int32, "a+b")
    cumsum(x)            # in place, as PyCUDA's; or cumsum(x, y) into y

Two kernels, any length, operators that need not commute: the array is cut into one
contiguous chunk per block; the first kernel reduces each chunk, the second scans each
chunk tile by tile (in shared memory) starting from the reduction of the chunks before it. On
the host backend a block is one thread that reduces, then scans, its chunk in one loop.
Inclusive scans need no neutral element; exclusive ones do (it is their first output).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pygpu.gpuarray import _bundled
from pygpu._kernelgen.generated_kernel import INDEX_TYPE, compile_kernels, kernels_on_cpu, layout_asserts, type_prelude
from pygpu._driver.c_types import dtype_to_ctype

__all__ = ["ExclusiveScanKernel", "InclusiveScanKernel"]

_BLOCK = 256
# Elements per chunk on the host, below which handing chunks to another core costs more than
# it saves.
_HOST_CHUNK = 1 << 15


def _source(ctype: str, scan_expr: str, name: str, preamble: str, block: int) -> str:
    # Values travel with a flag saying whether they hold anything: without a neutral element
    # an empty part of a chunk or tile must not take part in the combination.
    return f"""
{preamble}

__device__ __forceinline__ {ctype} pygpu_scan_op({ctype} a, {ctype} b)
{{
  return ({scan_expr});
}}

// Combines, in order, the flagged values of the block into value[0] (order kept: neighbours first).
__device__ void pygpu_block_reduce({ctype} *value, int *full)
{{
  for (unsigned int s = 1; s < {block}; s <<= 1) {{
    __syncthreads();
    const unsigned int t = threadIdx.x;
    if (t % (2 * s) == 0 && full[t + s]) {{
      value[t] = full[t] ? pygpu_scan_op(value[t], value[t + s]) : value[t + s];
      full[t] = 1;
    }}
  }}
  __syncthreads();
}}

extern "C" __global__ void {name}_chunk_sums(const {ctype} *in, {ctype} *sums, {INDEX_TYPE} n, {INDEX_TYPE} chunk)
{{
  __shared__ {ctype} value[{block}];
  __shared__ int full[{block}];
  const {INDEX_TYPE} begin = ({INDEX_TYPE})blockIdx.x * chunk;
  const {INDEX_TYPE} end = begin + chunk < n ? begin + chunk : n;
  // Each thread takes a contiguous piece of the chunk, so the order is kept.
  const {INDEX_TYPE} piece = (chunk + {block} - 1) / {block};
  const {INDEX_TYPE} lo = begin + threadIdx.x * piece;
  const {INDEX_TYPE} hi = lo + piece < end ? lo + piece : end;
  int have = 0;
  {ctype} acc;
  for ({INDEX_TYPE} i = lo; i < hi; ++i) {{
    acc = have ? pygpu_scan_op(acc, in[i]) : in[i];
    have = 1;
  }}
  if (have) value[threadIdx.x] = acc;
  full[threadIdx.x] = have;
  pygpu_block_reduce(value, full);
  if (threadIdx.x == 0) sums[blockIdx.x] = value[0];
}}

extern "C" __global__ void {name}_chunk_scan(const {ctype} *in, {ctype} *out, const {ctype} *sums,
    {INDEX_TYPE} n, {INDEX_TYPE} chunk, int exclusive, {ctype} neutral)
{{
  __shared__ {ctype} value[{block}];
  __shared__ int full[{block}];
  __shared__ {ctype} carry;
  __shared__ int have_carry;
  const unsigned int t = threadIdx.x;
  if (t == 0) {{
    // The chunks before this one, in order (there are at most as many chunks as threads).
    have_carry = 0;
    for (unsigned int c = 0; c < blockIdx.x; ++c) {{
      carry = have_carry ? pygpu_scan_op(carry, sums[c]) : sums[c];
      have_carry = 1;
    }}
  }}
  const {INDEX_TYPE} begin = ({INDEX_TYPE})blockIdx.x * chunk;
  const {INDEX_TYPE} end = begin + chunk < n ? begin + chunk : n;
  for ({INDEX_TYPE} base = begin; base < end; base += {block}) {{
    const {INDEX_TYPE} i = base + t;
    __syncthreads();
    full[t] = i < end;
    if (i < end) value[t] = in[i];
    // Inclusive scan of the tile (Hillis-Steele; values only flow to higher indices).
    for (unsigned int s = 1; s < {block}; s <<= 1) {{
      __syncthreads();
      {ctype} left;
      const int take = t >= s && full[t] && full[t - s];
      if (take) left = value[t - s];
      __syncthreads();
      if (take) value[t] = pygpu_scan_op(left, value[t]);
    }}
    __syncthreads();
    if (i < end) {{
      if (exclusive) {{
        {ctype} before;
        int have = have_carry;
        if (have) before = carry;
        if (t > 0) {{
          before = have ? pygpu_scan_op(before, value[t - 1]) : value[t - 1];
          have = 1;
        }}
        out[i] = have ? before : neutral;
      }} else {{
        out[i] = have_carry ? pygpu_scan_op(carry, value[t]) : value[t];
      }}
    }}
    __syncthreads();
    if (t == 0) {{
      const {INDEX_TYPE} last = (end - base < {block} ? end - base : {block}) - 1;
      carry = have_carry ? pygpu_scan_op(carry, value[last]) : value[last];
      have_carry = 1;
    }}
  }}
}}
"""


def _host_source(ctype: str, scan_expr: str, name: str, preamble: str) -> str:
    # The host backend runs a block's threads one after another on one core, where the tree and
    # the tiles above would only add barriers: its blocks have one thread, which folds (then
    # scans) its chunk in one loop. The same kernels, parameters and chunks as on a GPU.
    return f"""
{preamble}

__device__ __forceinline__ {ctype} pygpu_scan_op({ctype} a, {ctype} b)
{{
  return ({scan_expr});
}}

extern "C" __global__ void {name}_chunk_sums(const {ctype} *in, {ctype} *sums, {INDEX_TYPE} n, {INDEX_TYPE} chunk)
{{
  const {INDEX_TYPE} begin = ({INDEX_TYPE})blockIdx.x * chunk;
  const {INDEX_TYPE} end = begin + chunk < n ? begin + chunk : n;
  if (threadIdx.x != 0 || begin >= end) return;
  {ctype} acc = in[begin];
  for ({INDEX_TYPE} i = begin + 1; i < end; ++i) acc = pygpu_scan_op(acc, in[i]);
  sums[blockIdx.x] = acc;
}}

extern "C" __global__ void {name}_chunk_scan(const {ctype} *in, {ctype} *out, const {ctype} *sums,
    {INDEX_TYPE} n, {INDEX_TYPE} chunk, int exclusive, {ctype} neutral)
{{
  const {INDEX_TYPE} begin = ({INDEX_TYPE})blockIdx.x * chunk;
  const {INDEX_TYPE} end = begin + chunk < n ? begin + chunk : n;
  if (threadIdx.x != 0 || begin >= end) return;
  // The chunks before this one, in order; then this chunk's elements in order (each read before
  // its own position is written: in place works).
  {INDEX_TYPE} i = begin;
  {ctype} carry;
  if (blockIdx.x > 0) {{
    carry = sums[0];
    for (unsigned int c = 1; c < blockIdx.x; ++c) carry = pygpu_scan_op(carry, sums[c]);
  }} else {{
    const {ctype} first = in[i];
    out[i] = exclusive ? neutral : first;
    carry = first;
    ++i;
  }}
  if (exclusive) {{
    for (; i < end; ++i) {{
      const {ctype} x = in[i];
      out[i] = carry;
      carry = pygpu_scan_op(carry, x);
    }}
  }} else {{
    for (; i < end; ++i) {{
      carry = pygpu_scan_op(carry, in[i]);
      out[i] = carry;
    }}
  }}
}}
"""


class _ScanKernel:
    _exclusive = False

    def __init__(
        self,
        dtype: Any,
        scan_expr: str,
        neutral: str | None = None,
        name_prefix: str = "scan",
        options: list[str] | None = None,
        preamble: str = "",
        devices: Any = None,
    ) -> None:
        del devices  # PyCUDA's argument; kernels are built for the current device
        self.dtype = np.dtype(dtype)
        if self._exclusive and neutral is None:
            raise ValueError("ExclusiveScanKernel needs neutral= (the first output, e.g. '0')")
        if not isinstance(name_prefix, str) or not name_prefix.isidentifier():
            raise ValueError(f"name_prefix {name_prefix!r} is not a C identifier")
        self.neutral = neutral
        self.name = name_prefix
        self._block = 1 if kernels_on_cpu() else _BLOCK
        ctype = dtype_to_ctype(self.dtype)
        prelude = f"{preamble}\n{layout_asserts([self.dtype])}"
        if self._block == 1:
            body = _host_source(ctype, scan_expr, name_prefix, prelude)
        else:
            body = _source(ctype, scan_expr, name_prefix, prelude, self._block)
        source = type_prelude([self.dtype]) + body
        if neutral is not None:
            # The neutral element is a C expression: evaluate it once, on the device.
            source += f'\nextern "C" __global__ void {name_prefix}_neutral({ctype} *out) {{ *out = ({neutral}); }}\n'
        names = [f"{name_prefix}_chunk_sums", f"{name_prefix}_chunk_scan"]
        if neutral is not None:
            names.append(f"{name_prefix}_neutral")
        funcs = compile_kernels(source, names, options, False, [self.dtype], preamble)
        self._sums, self._scan = funcs[0], funcs[1]
        self._neutral_value = self._evaluate_neutral(funcs[2]) if neutral is not None else np.zeros((), self.dtype)[()]

    def _evaluate_neutral(self, func: Any) -> Any:
        from pygpu import gpuarray

        out = gpuarray.empty((1,), self.dtype)
        func(out, block=(1, 1, 1), grid=(1, 1))
        return out.get()[0]

    def __call__(self, input_ary: Any, output_ary: Any = None, allocator: Any = None, stream: Any = None) -> Any:
        from pygpu import gpuarray

        kind = "ExclusiveScanKernel" if self._exclusive else "InclusiveScanKernel"
        if not hasattr(input_ary, "gpudata"):
            raise TypeError(f"{kind} takes a GPUArray, not {type(input_ary).__name__}")
        if output_ary is None:
            output_ary = input_ary
        # Element types are the launch's to check (docs/kernel_signatures.md): signedness aside (a
        # uint32 array through an int32 scan, as PyCUDA, which checks nothing, runs it), a
        # warning for another type of the same size, an error for another size.
        for what, a in (("input", input_ary), ("output", output_ary)):
            if a.size and not (a.flags.c_contiguous or a.flags.f_contiguous):
                raise ValueError(f"{kind}: the {what} array must be contiguous (pass .copy())")
        if output_ary.size != input_ary.size:
            raise ValueError(f"{kind}: output has {output_ary.size} elements, input {input_ary.size}")
        if getattr(output_ary, "_readonly", False):
            raise ValueError(f"{kind}: the output is read-only (assignment destination is read-only)")
        orders = [_memory_order(a) for a in (input_ary, output_ary)]
        if orders[0] != orders[1]:
            raise ValueError(
                f"{kind}: the input is in {orders[0]} order and the output in {orders[1]} order; a scan runs "
                "through memory, so both must be in one order (e.g. output_ary=gpuarray.empty_like(input_ary))"
            )
        n = input_ary.size
        if n == 0:
            return output_ary
        source = _unshared_input(input_ary, output_ary, stream)
        block = self._block
        if block == 1:
            chunks = max(1, min(_bundled.host_launch_shape()[1], n // _HOST_CHUNK))
        else:
            # At most one chunk per thread of a block: the scan kernel combines the chunk sums serially.
            chunks = max(1, min(block, -(-n // (block * 8))))
        chunk = -(-n // chunks)
        chunks = -(-n // chunk)
        sums = gpuarray.empty((chunks,), self.dtype, allocator=allocator or input_ary.allocator)
        self._sums(source, sums, np.int64(n), np.int64(chunk), block=(block, 1, 1), grid=(chunks, 1), stream=stream)
        self._scan(
            source,
            output_ary,
            sums,
            np.int64(n),
            np.int64(chunk),
            np.int32(self._exclusive),
            self._neutral_value,
            block=(block, 1, 1),
            grid=(chunks, 1),
            stream=stream,
        )
        if source is not input_ary:
            _bundled.hold(stream, (source,))
        return output_ary


def _unshared_input(input_ary: Any, output_ary: Any, stream: Any) -> Any:
    """The array to scan from: ``input_ary`` itself, or a copy of it (in the same memory order)
    when ``output_ary`` overlaps it without being the same elements: the scan writes chunk by
    chunk, and a write there would land on input that a later chunk or tile has not read yet
    (in place, each element is read before its own position is written)."""
    from pygpu import gpuarray
    from pygpu.gpuarray._transfer import copy_into

    nbytes = input_ary.size * input_ary.dtype.itemsize
    a, b = input_ary.ptr, output_ary.ptr
    if not (a < b + nbytes and b < a + nbytes):
        return input_ary
    if a == b and (input_ary.flags.c_contiguous, input_ary.flags.f_contiguous) == (
        output_ary.flags.c_contiguous,
        output_ary.flags.f_contiguous,
    ):
        return input_ary  # in place: the same elements, in the same order
    order = "F" if input_ary.flags.f_contiguous and not input_ary.flags.c_contiguous else "C"
    copy = gpuarray.empty(input_ary.shape, input_ary.dtype, allocator=input_ary.allocator, order=order)
    copy_into(copy, input_ary, stream)
    return copy


class InclusiveScanKernel(_ScanKernel):
    """``out[k] = in[0] op in[1] op ... op in[k]`` for the C expression ``scan_expr`` over
    ``a`` and ``b`` (associative); ``neutral`` may be left out."""


class ExclusiveScanKernel(_ScanKernel):
    """``out[0] = neutral``, ``out[k] = in[0] op ... op in[k-1]``; ``neutral`` is required."""

    _exclusive = True


def _memory_order(a: Any) -> str:
    """'Fortran' for an array contiguous only in Fortran order, else 'C'."""
    flags = a.flags
    return "Fortran" if flags.f_contiguous and not flags.c_contiguous else "C"
