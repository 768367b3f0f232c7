"""The source and module of an elementwise kernel (PyCUDA's ``get_elwise_module``): the user's
statement run for every index ``i`` of a grid-stride loop. ``pygpu.elementwise`` builds
ElementwiseKernel on it, ``linear_combination`` the fused ``a*x + b*y``."""

from __future__ import annotations

from typing import Any

from pygpu._kernelgen.arguments import Argument, VectorArg, parse_c_args
from pygpu._kernelgen.generated_kernel import INDEX_TYPE, package_include_dirs, all_dtypes, layout_asserts, type_prelude
from pygpu._toolchain.source_module import SourceModule

__all__ = ["elementwise_arguments", "get_elwise_module", "module_source"]


def _kernel_source(
    arguments: list[Argument], operation: str, name: str, loop_prep: str, after_loop: str, use_range: bool
) -> str:
    params = ", ".join([a.declarator() for a in arguments])
    if use_range:
        extra = f"{INDEX_TYPE} start, {INDEX_TYPE} stop, {INDEX_TYPE} step"
        loop = "for (i = start + first * step; (step < 0) ? (i > stop) : (i < stop); i += threads * step)"
        kname = f"{name}_range"
    else:
        # PyCUDA's get_elwise_module takes the count among the arguments (a scalar named n).
        extra = "" if any(a.name == "n" for a in arguments) else f"{INDEX_TYPE} n"
        loop = "for (i = first; i < n; i += threads)"
        kname = name
    sep = ", " if params and extra else ""
    return f"""
extern "C" __global__ void {kname}({params}{sep}{extra})
{{
  const {INDEX_TYPE} threads = ({INDEX_TYPE})blockDim.x * gridDim.x;
  const {INDEX_TYPE} first = ({INDEX_TYPE})blockIdx.x * blockDim.x + threadIdx.x;
  {INDEX_TYPE} i;
  (void)first;
  {loop_prep};
  {loop}
  {{
    {operation};
  }}
  {after_loop};
}}
"""


def module_source(
    arguments: list[Argument], operation: str, name: str, preamble: str, loop_prep: str, after_loop: str
) -> str:
    """The source of kernel ``name`` (``i`` from 0 to ``n``) and ``name_range`` (``start, stop, step``)."""
    return "\n".join(
        [
            type_prelude(all_dtypes(arguments)),
            preamble,
            layout_asserts(all_dtypes(arguments)),
            _kernel_source(arguments, operation, name, loop_prep, after_loop, False),
            _kernel_source(arguments, operation, name, loop_prep, after_loop, True),
        ]
    )


def elementwise_arguments(arguments: str | list[Any], count_declared: bool = False) -> list[Argument]:
    """The parsed argument list; ValueError for a name given twice or one the loop uses."""
    parsed = parse_c_args(arguments)
    names = [a.name for a in parsed]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"argument names must be unique: {', '.join(duplicates)} declared more than once")
    reserved = {"i", "n", "start", "stop", "step", "threads", "first"} & set(names)
    if count_declared and any(a.name == "n" and not isinstance(a, VectorArg) for a in parsed):
        reserved.discard("n")  # get_elwise_module: the caller passes the count, as PyCUDA's
    if reserved:
        raise ValueError(f"argument names {sorted(reserved)} are used by the generated loop: rename them")
    return parsed


def get_elwise_module(
    arguments: str | list[Any],
    operation: str,
    name: str = "kernel",
    keep: bool = False,
    options: list[str] | None = None,
    preamble: str = "",
    loop_prep: str = "",
    after_loop: str = "",
) -> Any:
    """The compiled module (a ``SourceModule``) holding kernel ``name`` and ``name_range``."""
    parsed = elementwise_arguments(arguments, count_declared=True)
    return SourceModule(
        module_source(parsed, operation, name, preamble, loop_prep, after_loop),
        options=options,
        keep=keep,
        no_extern_c=True,
        include_dirs=package_include_dirs(),
    )
