"""PyCUDA's ``elementwise.get_linear_combination_kernel``: ``z[i] = a0*x0[i] + a1*x1[i] + ...``
where each coefficient is either a scalar passed at the call or a "GPU scalar" (element 0 of
a GPUArray, read on the device, so a result computed there never travels to the host).

PyCUDA reads GPU scalars through texture references, which CUDA 12 removed. Here the kernel
takes each GPU scalar as a pointer instead; the list returned in the place of PyCUDA's texture
references holds one :class:`GPUScalarSlot` per GPU scalar, and
``gpu_scalar.bind_to_texref_ext(slot)`` records the array whose element 0 the next calls read,
so PyCUDA's calling code runs unchanged::

    kernel, slots = get_linear_combination_kernel(((True, f4, f4), (False, f4, f4)), f4)
    a.bind_to_texref_ext(slots[0])
    kernel.prepared_call(x._grid, x._block, x.gpudata, b, y.gpudata, z.gpudata, x.size)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from pygpu._driver.c_types import dtype_to_ctype
from pygpu._driver.context_caches import context_dependent_memoize
from pygpu._kernelgen.arguments import Argument, ScalarArg, VectorArg
from pygpu._kernelgen.elementwise_module import get_elwise_module
from pygpu.gpuarray import GPUArray

if TYPE_CHECKING:
    from pygpu._pygpu import Function

__all__ = ["GPUScalarSlot", "LinearCombinationKernel", "get_linear_combination_kernel"]


class GPUScalarSlot:
    """Where a GPU-scalar coefficient comes from (PyCUDA's texture reference of
    ``get_linear_combination_kernel``): bind a GPUArray with ``ary.bind_to_texref_ext(slot)``
    (or ``slot.bind_gpuarray(ary)``); calls read its element 0. The slot keeps the array alive."""

    def __init__(self, index: int, dtype: np.dtype[Any]) -> None:
        self.index = index
        self.dtype = dtype
        self.array: GPUArray | None = None

    def bind_gpuarray(self, ary: GPUArray) -> None:
        if not isinstance(ary, GPUArray):
            raise TypeError(f"GPU scalar {self.index}: bind a GPUArray, not {type(ary).__name__}")
        if ary.dtype != self.dtype:
            raise TypeError(
                f"GPU scalar {self.index} was declared {self.dtype}, the array bound is {ary.dtype}: "
                f"bind ary.astype({self.dtype.name!r}) or declare the summand with that dtype"
            )
        if ary.size < 1:
            raise ValueError(f"GPU scalar {self.index}: the array bound is empty; it needs at least one element")
        self.array = ary

    def pointer(self) -> int:
        if self.array is None:
            raise RuntimeError(
                f"GPU scalar {self.index} has no array bound: call gpu_scalar.bind_to_texref_ext(texrefs[{self.index}]) "
                "before launching the linear-combination kernel"
            )
        return int(self.array.ptr)

    def __repr__(self) -> str:
        return f"GPUScalarSlot(index={self.index}, dtype={self.dtype}, bound={self.array is not None})"


class LinearCombinationKernel:
    """The prepared kernel of :func:`get_linear_combination_kernel`. Its calls take PyCUDA's
    arguments: for each summand ``x_i`` (a GPU scalar) or ``a_i, x_i`` (a scalar and an array),
    then ``z`` and the element count; the GPU scalars' pointers come from their slots."""

    def __init__(self, function: Function, slots: list[GPUScalarSlot], gpu_scalar: list[bool]) -> None:
        self.function = function
        self.slots = slots
        self._gpu_scalar = gpu_scalar
        self._user_arg_count = sum(1 if g else 2 for g in gpu_scalar) + 2

    def _arguments(self, args: tuple[Any, ...]) -> list[Any]:
        if len(args) != self._user_arg_count:
            raise TypeError(
                f"the linear-combination kernel takes {self._user_arg_count} arguments (for each summand x_i, "
                f"or a_i, x_i when its coefficient is not a GPU scalar; then z and n), got {len(args)}"
            )
        full: list[Any] = []
        pos = 0
        slots = iter(self.slots)
        for is_gpu_scalar in self._gpu_scalar:
            if is_gpu_scalar:
                full += [next(slots).pointer(), args[pos]]
                pos += 1
            else:
                full += [args[pos], args[pos + 1]]
                pos += 2
        full += [args[pos], args[pos + 1]]
        return full

    def prepared_call(self, grid: Any, block: Any, *args: Any, shared_size: int = 0) -> None:
        self.function.prepared_call(grid, block, *self._arguments(args), shared_size=shared_size)

    def prepared_async_call(self, grid: Any, block: Any, stream: Any, *args: Any, shared_size: int = 0) -> None:
        self.function.prepared_async_call(grid, block, stream, *self._arguments(args), shared_size=shared_size)

    def prepared_timed_call(self, grid: Any, block: Any, *args: Any, shared_size: int = 0) -> Callable[[], float]:
        return self.function.prepared_timed_call(grid, block, *self._arguments(args), shared_size=shared_size)


def get_linear_combination_kernel(
    summand_descriptors: Any, dtype_z: Any
) -> tuple[LinearCombinationKernel, list[GPUScalarSlot]]:
    """``(kernel, slots)`` for ``z[i] = sum of a_j * x_j[i]``, one summand per descriptor
    ``(is_gpu_scalar, scalar_dtype, vector_dtype)``; ``slots`` (PyCUDA's texture references)
    holds one :class:`GPUScalarSlot` per GPU-scalar summand, in order. Arithmetic follows C's
    promotions of the declared types, as PyCUDA's kernel; the result is converted to ``dtype_z``.
    Memoized per device (``tools.context_dependent_memoize``), as PyCUDA's: the same
    descriptors give the same kernel and slots."""
    descriptors = []
    for d in summand_descriptors:
        if not isinstance(d, (tuple, list)) or len(d) != 3:
            raise TypeError(f"each summand descriptor is (is_gpu_scalar, scalar_dtype, vector_dtype), not {d!r}")
        descriptors.append((bool(d[0]), np.dtype(d[1]), np.dtype(d[2])))
    if not descriptors:
        raise ValueError("get_linear_combination_kernel needs at least one summand")
    return _build(tuple(descriptors), np.dtype(dtype_z))


@context_dependent_memoize
def _build(
    descriptors: tuple[tuple[bool, np.dtype[Any], np.dtype[Any]], ...], z_dtype: np.dtype[Any]
) -> tuple[LinearCombinationKernel, list[GPUScalarSlot]]:
    args: list[Argument] = []
    loop_prep: list[str] = []
    summands: list[str] = []
    slots: list[GPUScalarSlot] = []
    for i, (is_gpu_scalar, scalar_dtype, vector_dtype) in enumerate(descriptors):
        if is_gpu_scalar:
            # Read once per thread, before the loop: the value cannot change during the launch.
            args.append(VectorArg(scalar_dtype, f"a{i}_ptr"))
            loop_prep.append(f"const {dtype_to_ctype(scalar_dtype)} a{i} = *a{i}_ptr")
            slots.append(GPUScalarSlot(i, scalar_dtype))
        else:
            args.append(ScalarArg(scalar_dtype, f"a{i}"))
        args.append(VectorArg(vector_dtype, f"x{i}"))
        summands.append(f"a{i}*x{i}[i]")
    args.append(VectorArg(z_dtype, "z"))
    complex_involved = any(dt.kind == "c" for d in descriptors for dt in d[1:]) or z_dtype.kind == "c"
    module = get_elwise_module(
        args,
        f"z[i] = ({dtype_to_ctype(z_dtype)})({' + '.join(summands)})",
        "linear_combination",
        preamble="#include <pygpu-complex.hpp>" if complex_involved else "",
        loop_prep=";\n".join(loop_prep),
    )
    function = module.get_function("linear_combination")
    function.prepare(["P" if isinstance(a, VectorArg) else a.dtype for a in args] + [np.int64])
    return LinearCombinationKernel(function, slots, [d[0] for d in descriptors]), slots
