"""PyCUDA's ``pycuda.elementwise``: kernels generated from a C argument list and a C
statement run for every index ``i``.

    lin_comb = ElementwiseKernel("double a, double *x, double *y, double *z", "z[i] = a*x[i] + y[i]")
    lin_comb(5.0, x, y, z)                     # every i < x.size
    lin_comb(5.0, x, y, z, range=slice(0, 100, 2))

The source goes through :mod:`pygpu.compiler` (the same compilers and disk cache as
``SourceModule``); on the host backend it runs through the host C++ compiler. The loop
index ``i`` and the count ``n`` are 64-bit (``long long``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pygpu._pygpu import capabilities
from pygpu._driver.c_types import dtype_to_ctype
from pygpu._driver.context_caches import context_dependent_memoize
from pygpu._driver.devices import several_devices
from pygpu._kernelgen.arguments import Argument, ScalarArg, VectorArg
from pygpu._kernelgen.elementwise_module import elementwise_arguments, get_elwise_module, module_source
from pygpu._kernelgen.generated_kernel import (
    all_dtypes,
    check_sizes,
    compile_kernels,
    grid_for,
    in_c_order,
    index_range,
    launch_size,
    mixed_orders,
    pack_arguments,
    prepared_signature,
    release_copies,
)
from pygpu._kernelgen.linear_combination import get_linear_combination_kernel
from pygpu._pygpu import Function, get_device
from pygpu.gpuarray import GPUArray
from pygpu.gpuarray._storage import device_of

__all__ = [
    "ElementwiseKernel",
    "ScalarArg",
    "VectorArg",
    "get_elwise_kernel",
    "get_elwise_kernel_and_types",
    "get_elwise_module",
    "get_elwise_range_module",
    "get_abs_kernel",
    "get_arange_kernel",
    "get_axpbyz_kernel",
    "get_axpbz_kernel",
    "get_binary_func_kernel",
    "get_binary_func_scalar_kernel",
    "get_binary_minmax_kernel",
    "get_binary_op_kernel",
    "get_conj_kernel",
    "get_copy_kernel",
    "get_fill_kernel",
    "get_if_positive_kernel",
    "get_imag_kernel",
    "get_linear_combination_kernel",
    "get_pow_array_kernel",
    "get_pow_kernel",
    "get_rdivide_elwise_kernel",
    "get_real_kernel",
    "get_reverse_kernel",
    "get_scalar_op_kernel",
    "get_unary_func_kernel",
]

_BLOCK = 256
_HOST_BLOCK = 1  # the host runs a block's threads one after another: one thread per block loops fastest
# Scalar arguments the prepared call converts itself (anything else takes the checked path).
_NUMBERS = (int, float, complex, np.number)


def get_elwise_range_module(
    arguments: str | list[Any],
    operation: str,
    name: str = "kernel",
    keep: bool = False,
    options: list[str] | None = None,
    preamble: str = "",
    loop_prep: str = "",
    after_loop: str = "",
) -> Any:
    """As :func:`get_elwise_module` (the module holds both kernels; PyCUDA's name)."""
    return get_elwise_module(arguments, operation, name, keep, options, preamble, loop_prep, after_loop)


def get_elwise_kernel_and_types(
    arguments: str | list[Any],
    operation: str,
    name: str = "kernel",
    keep: bool = False,
    options: list[str] | None = None,
    use_range: bool = False,
    **kwargs: Any,
) -> tuple[Function, list[Argument]]:
    """(the kernel, its parsed arguments); the kernel takes the arguments, then ``long long n``
    (or ``start, stop, step`` with ``use_range``)."""
    parsed = elementwise_arguments(arguments)
    module = get_elwise_module(parsed, operation, name, keep, options, **kwargs)
    func = module.get_function(f"{name}_range" if use_range else name)
    # Prepared, as PyCUDA's: callers launch it with prepared_call/prepared_async_call straight away.
    signature = prepared_signature(parsed)
    if signature is not None:
        func.prepare([*signature, *([np.int64] * (3 if use_range else 1))])
    return func, parsed


def get_elwise_kernel(
    arguments: str | list[Any],
    operation: str,
    name: str = "kernel",
    keep: bool = False,
    options: list[str] | None = None,
    **kwargs: Any,
) -> Function:
    """The kernel only (see :func:`get_elwise_kernel_and_types`)."""
    return get_elwise_kernel_and_types(arguments, operation, name, keep, options, **kwargs)[0]


class ElementwiseKernel:
    """``operation`` (C statements using ``i``) for every index, over GPUArrays and scalars
    declared by ``arguments`` (``"float a, float *x"`` or a list of ``VectorArg``/``ScalarArg``).

    Called as ``kernel(*args, range=None, slice=None, stream=None)``: without ``range``/``slice``
    ``i`` runs over the size of the first array argument; ``range=slice(start, stop, step)``
    runs exactly those indices, ``slice=`` is clipped to the first array as Python slices are.
    """

    def __init__(
        self,
        arguments: str | list[Any],
        operation: str,
        name: str = "kernel",
        keep: bool = False,
        options: list[str] | None = None,
        preamble: str = "",
        loop_prep: str = "",
        after_loop: str = "",
    ) -> None:
        if not isinstance(operation, str):
            raise TypeError(f"operation must be a str of C statements, not {type(operation).__name__}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"kernel name {name!r} is not a C identifier")
        self.arguments = elementwise_arguments(arguments)
        if not any(isinstance(a, VectorArg) for a in self.arguments):
            raise ValueError("an ElementwiseKernel needs at least one array (pointer) argument to size its loop")
        self.name = name
        source = module_source(self.arguments, operation, name, preamble, loop_prep, after_loop)
        self.func, self.range_func = compile_kernels(
            source, [name, f"{name}_range"], options, keep, all_dtypes(self.arguments), preamble
        )
        # A repeated call on contiguous arrays checks them and launches the prepared kernel,
        # which packs the scalars: what the call decides is decided here, once.
        self._vectors = tuple((i, a.dtype) for i, a in enumerate(self.arguments) if isinstance(a, VectorArg))
        self._scalars = tuple(i for i, a in enumerate(self.arguments) if not isinstance(a, VectorArg))
        signature = prepared_signature(self.arguments)
        self._prepared = signature is not None
        if signature is not None:
            self.func.prepare([*signature, np.int64])

    def get_texref(self, name: str) -> Any:
        """Texture references were removed in CUDA 12: raises NotImplementedError (pass arrays
        as pointer arguments instead)."""
        raise NotImplementedError("texture references were removed in CUDA 12; pass arrays as pointer arguments")

    def _contiguous_size(self, args: tuple[Any, ...]) -> int | None:
        """The loop's length when ``args`` are numbers and contiguous GPUArrays of the declared
        dtypes on the current device, each at least as long as the first; None otherwise (the
        checked path decides)."""
        n = -1
        current = get_device() if several_devices() else None
        orders = 0  # bit 1: a C-only array seen, bit 2: a Fortran-only one (mixed: the checked path)
        for i, dtype in self._vectors:
            v = args[i]
            if v.__class__ is not GPUArray or v.dtype != dtype:
                return None
            if current is not None and device_of(v._alloc) != current:
                return None
            size = v.size
            if n < 0:
                n = size
            elif size < n:
                return None
            flags = v._flags or v.flags
            c, f = flags.c_contiguous, flags.f_contiguous
            if not (c or f) and size:
                return None
            if c != f:
                orders |= 1 if c else 2
        if orders == 3:
            return None
        for i in self._scalars:
            if not isinstance(args[i], _NUMBERS):
                return None
        return n

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        fast = self._prepared and len(args) == len(self.arguments) and (not kwargs or kwargs.keys() == {"stream"})
        if fast:
            n = self._contiguous_size(args)
            if n == 0:
                return
            if n is not None:
                block = _HOST_BLOCK if capabilities().kernels_on_cpu else _BLOCK
                try:
                    self.func.prepared_async_call(grid_for(n, block), (block, 1, 1), kwargs.get("stream"), *args, n)
                    return
                except (TypeError, OverflowError):
                    pass  # a scalar numpy converts differently, or a wrong one: the checked path says which
        range_ = kwargs.pop("range", None)
        slice_ = kwargs.pop("slice", None)
        stream = kwargs.pop("stream", None)
        if kwargs:
            raise TypeError(f"ElementwiseKernel got unknown keyword arguments: {', '.join(sorted(kwargs))}")
        what = f"ElementwiseKernel {self.name!r}"
        launch, vectors = pack_arguments(self.arguments, args, what)
        size = vectors[0].size
        if not mixed_orders(vectors):
            self._launch(launch, vectors, size, range_, slice_, stream, what)
            return
        # numpy pairs elements by index: Fortran arrays run as C-ordered copies, copied back.
        launch, copies = in_c_order(self.arguments, launch, vectors, what, stream)
        self._launch(launch, vectors, size, range_, slice_, stream, what)
        release_copies(copies, stream, write_back=True)

    def _launch(
        self, launch: list[Any], vectors: list[Any], size: int, range_: Any, slice_: Any, stream: Any, what: str
    ) -> None:
        block = _HOST_BLOCK if capabilities().kernels_on_cpu else _BLOCK
        if range_ is not None and slice_ is not None:
            raise TypeError("pass range= or slice=, not both")
        if range_ is None and slice_ is None:
            check_sizes(self.arguments, vectors, size, what)
            if size == 0:
                return
            self.func(*launch, np.int64(size), block=(block, 1, 1), grid=(launch_size(size, block), 1), stream=stream)
            return
        # range= runs exactly the indices asked for, slice= clipped to the first array; either
        # way every index must lie inside every array the kernel is given (ReductionKernel's
        # rule), since the operation reads and writes them at i.
        start, step, count = index_range(range_, slice_, size, what)
        if count:
            check_sizes(self.arguments, vectors, max(start, start + (count - 1) * step) + 1, what)
        if count == 1:
            step = 1  # a huge step past the one index would overflow the loop's i += threads * step
        stop = start + count * step
        if count == 0:
            return
        self.range_func(
            *launch,
            np.int64(start),
            np.int64(stop),
            np.int64(step),
            block=(block, 1, 1),
            grid=(launch_size(count, block), 1),
            stream=stream,
        )


# ------------------------------------------------------------------ PyCUDA's kernel getters
#
# PyCUDA's GPUArray builds its operators from these; client code calls them directly (for
# in-place operations: ``get_pow_kernel(x.dtype).prepared_async_call(x._grid, x._block, stream,
# p, x.gpudata, x.gpudata, x.mem_size)``). Each returns a prepared kernel taking the arguments
# listed, then the element count ``n``; memoized per device, as PyCUDA's.


def _ct(dtype: Any) -> str:
    return dtype_to_ctype(np.dtype(dtype))


def _preamble(*dtypes: Any) -> str:
    return "#include <pycuda-complex.hpp>" if any(np.dtype(d).kind == "c" for d in dtypes) else ""


def _kernel(arguments: str, operation: str, name: str, *dtypes: Any) -> Function:
    return get_elwise_kernel(arguments, operation, name, preamble=_preamble(*dtypes))


@context_dependent_memoize
def get_copy_kernel(dtype_dest: Any, dtype_src: Any) -> Function:
    """``dest, src, n``: ``dest[i] = src[i]`` (converted to ``dtype_dest``)."""
    return _kernel(
        f"{_ct(dtype_dest)} *dest, {_ct(dtype_src)} *src",
        f"dest[i] = ({_ct(dtype_dest)}) src[i]",
        "copy",
        dtype_dest,
        dtype_src,
    )


@context_dependent_memoize
def get_axpbyz_kernel(
    dtype_x: Any, dtype_y: Any, dtype_z: Any, x_is_scalar: bool = False, y_is_scalar: bool = False
) -> Function:
    """``a, x, b, y, z, n``: ``z[i] = a*x[i] + b*y[i]`` (``a`` of x's type, ``b`` of y's). With
    ``x_is_scalar``/``y_is_scalar`` that array holds one element, used for every ``i``."""
    tz = _ct(dtype_z)
    x = "x[0]" if x_is_scalar else "x[i]"
    y = "y[0]" if y_is_scalar else "y[i]"
    return _kernel(
        f"{_ct(dtype_x)} a, {_ct(dtype_x)} *x, {_ct(dtype_y)} b, {_ct(dtype_y)} *y, {tz} *z",
        f"z[i] = ({tz}) (a*{x}) + ({tz}) (b*{y})",
        "axpbyz",
        dtype_x,
        dtype_y,
        dtype_z,
    )


@context_dependent_memoize
def get_axpbz_kernel(dtype_x: Any, dtype_z: Any) -> Function:
    """``a, x, b, z, n``: ``z[i] = a*x[i] + b`` (``a`` and ``b`` of z's type)."""
    tz = _ct(dtype_z)
    return _kernel(
        f"{tz} a, {_ct(dtype_x)} *x, {tz} b, {tz} *z", f"z[i] = a * ({tz}) x[i] + b", "axpb", dtype_x, dtype_z
    )


@context_dependent_memoize
def get_binary_op_kernel(
    dtype_x: Any, dtype_y: Any, dtype_z: Any, operator: str, x_is_scalar: bool = False, y_is_scalar: bool = False
) -> Function:
    """``x, y, z, n``: ``z[i] = x[i] <operator> y[i]`` (``operator`` a C operator such as
    ``"+"``, ``"*"``); ``x_is_scalar``/``y_is_scalar`` as in :func:`get_axpbyz_kernel`."""
    x = "x[0]" if x_is_scalar else "x[i]"
    y = "y[0]" if y_is_scalar else "y[i]"
    return _kernel(
        f"{_ct(dtype_x)} *x, {_ct(dtype_y)} *y, {_ct(dtype_z)} *z",
        f"z[i] = {x} {operator} {y}",
        "binary_op",
        dtype_x,
        dtype_y,
        dtype_z,
    )


@context_dependent_memoize
def get_rdivide_elwise_kernel(dtype_x: Any, dtype_z: Any) -> Function:
    """``x, y, z, n``: ``z[i] = y / x[i]`` (``y`` a scalar of z's type)."""
    return _kernel(
        f"{_ct(dtype_x)} *x, {_ct(dtype_z)} y, {_ct(dtype_z)} *z", "z[i] = y / x[i]", "divide_r", dtype_x, dtype_z
    )


@context_dependent_memoize
def get_binary_func_kernel(func: str, dtype_x: Any, dtype_y: Any, dtype_z: Any) -> Function:
    """``x, y, z, n``: ``z[i] = func(x[i], y[i])`` for a C function name ``func``."""
    return _kernel(
        f"{_ct(dtype_x)} *x, {_ct(dtype_y)} *y, {_ct(dtype_z)} *z",
        f"z[i] = {func}(x[i], y[i])",
        f"{func}_kernel",
        dtype_x,
        dtype_y,
        dtype_z,
    )


@context_dependent_memoize
def get_binary_func_scalar_kernel(func: str, dtype_x: Any, dtype_y: Any, dtype_z: Any) -> Function:
    """``x, y, z, n``: ``z[i] = func(x[i], y)`` with ``y`` a scalar."""
    return _kernel(
        f"{_ct(dtype_x)} *x, {_ct(dtype_y)} y, {_ct(dtype_z)} *z",
        f"z[i] = {func}(x[i], y)",
        f"{func}_kernel",
        dtype_x,
        dtype_y,
        dtype_z,
    )


def get_binary_minmax_kernel(func: str, dtype_x: Any, dtype_y: Any, dtype_z: Any, use_scalar: bool) -> Function:
    """``x, y, z, n``: ``z[i]`` the larger (``func="max"``) or smaller (``"min"``) of ``x[i]``
    and ``y[i]`` (``y`` a scalar with ``use_scalar``); floating types through ``fmax``/``fmin``
    (``fmaxf``/``fminf`` when neither input is float64)."""
    if func not in ("max", "min"):
        raise ValueError(f"func must be 'max' or 'min', not {func!r}")
    kinds = [np.dtype(d) for d in (dtype_x, dtype_y, dtype_z)]
    if any(d.kind == "f" for d in kinds):
        func = "f" + func + ("" if np.dtype(np.float64) in kinds[:2] else "f")
    getter = get_binary_func_scalar_kernel if use_scalar else get_binary_func_kernel
    return getter(func, dtype_x, dtype_y, dtype_z)


@context_dependent_memoize
def get_fill_kernel(dtype: Any) -> Function:
    """``a, z, n``: ``z[i] = a``."""
    return _kernel(f"{_ct(dtype)} a, {_ct(dtype)} *z", "z[i] = a", "fill", dtype)


@context_dependent_memoize
def get_reverse_kernel(dtype: Any) -> Function:
    """``y, z, n``: ``z[i] = y[n-1-i]``."""
    # The operation reads n: declared among the arguments (get_elwise_module lets the caller pass it).
    t = _ct(dtype)
    func: Function = get_elwise_module(f"{t} *y, {t} *z, long long n", "z[i] = y[n-1-i]", "reverse").get_function(
        "reverse"
    )
    return func.prepare(["P", "P", np.int64])


@context_dependent_memoize
def get_real_kernel(dtype: Any, real_dtype: Any) -> Function:
    """``y, z, n``: ``z[i] = real(y[i])`` (``y`` complex, ``z`` of ``real_dtype``)."""
    return _kernel(f"{_ct(dtype)} *y, {_ct(real_dtype)} *z", "z[i] = real(y[i])", "real", dtype)


@context_dependent_memoize
def get_imag_kernel(dtype: Any, real_dtype: Any) -> Function:
    """``y, z, n``: ``z[i] = imag(y[i])``."""
    return _kernel(f"{_ct(dtype)} *y, {_ct(real_dtype)} *z", "z[i] = imag(y[i])", "imag", dtype)


@context_dependent_memoize
def get_conj_kernel(dtype: Any, conj_dtype: Any = None) -> Function:
    """``y, z, n``: ``z[i] = conj(y[i])`` (``z`` of ``conj_dtype``, default ``dtype``)."""
    out = dtype if conj_dtype is None else conj_dtype
    return _kernel(f"{_ct(dtype)} *y, {_ct(out)} *z", "z[i] = pycuda::conj(y[i])", "conj", dtype, out)


@context_dependent_memoize
def get_abs_kernel(dtype: Any, out_dtype: Any = None) -> Function:
    """``y, z, n``: ``z[i] = |y[i]|`` (the magnitude for complex; ``z`` of ``out_dtype``,
    default ``dtype``)."""
    dt = np.dtype(dtype)
    out = dt if out_dtype is None else np.dtype(out_dtype)
    if dt.kind == "c":
        op = "z[i] = abs(y[i])"
    elif dt.kind == "f":
        op = f"z[i] = {'fabsf' if dt == np.float32 else 'fabs'}(y[i])"
    elif dt.kind == "u" or dt.kind == "b":
        op = "z[i] = y[i]"
    else:
        op = "z[i] = y[i] < 0 ? -y[i] : y[i]"
    return _kernel(f"{_ct(dt)} *y, {_ct(out)} *z", op, "abs_kernel", dt, out)


@context_dependent_memoize
def get_arange_kernel(dtype: Any) -> Function:
    """``z, start, step, n``: ``z[i] = start + i*step``."""
    t = _ct(dtype)
    return _kernel(f"{t} *z, {t} start_, {t} step_", f"z[i] = start_ + (({t}) i) * step_", "arange", dtype)


def _pow_function(*dtypes: Any) -> str:
    kinds = [np.dtype(d) for d in dtypes]
    if any(d.kind == "c" for d in kinds):
        return "pycuda::pow"
    return "powf" if all(d in (np.dtype(np.float32),) or d.kind in "iub" and d.itemsize < 4 for d in kinds) else "pow"


@context_dependent_memoize
def get_pow_kernel(dtype: Any) -> Function:
    """``value, y, z, n``: ``z[i] = pow(y[i], value)`` (``value`` a scalar of ``dtype``)."""
    t = _ct(dtype)
    return _kernel(f"{t} value, {t} *y, {t} *z", f"z[i] = {_pow_function(dtype)}(y[i], value)", "pow_method", dtype)


@context_dependent_memoize
def get_pow_array_kernel(
    dtype_x: Any, dtype_y: Any, dtype_z: Any, is_base_array: bool = True, is_exp_array: bool = True
) -> Function:
    """``x, y, z, n``: ``z[i] = pow(x[i], y[i])``; a base (``is_base_array=False``) or
    exponent (``is_exp_array=False``) that is not an array is passed as a scalar."""
    x, xd = ("x[i]", "*x") if is_base_array else ("x", "x")
    y, yd = ("y[i]", "*y") if is_exp_array else ("y", "y")
    tz = _ct(dtype_z)
    func = _pow_function(dtype_x, dtype_y)
    return _kernel(
        f"{_ct(dtype_x)} {xd}, {_ct(dtype_y)} {yd}, {tz} *z",
        f"z[i] = ({tz}) {func}({x}, {y})",
        "pow_method",
        dtype_x,
        dtype_y,
        dtype_z,
    )


@context_dependent_memoize
def get_unary_func_kernel(func_name: str, in_dtype: Any, out_dtype: Any = None) -> Function:
    """``y, z, n``: ``z[i] = func_name(y[i])`` for a C function name (``"sqrtf"``, ...)."""
    out = in_dtype if out_dtype is None else out_dtype
    return _kernel(
        f"{_ct(in_dtype)} *y, {_ct(out)} *z", f"z[i] = {func_name}(y[i])", f"{func_name}_kernel", in_dtype, out
    )


@context_dependent_memoize
def get_if_positive_kernel(crit_dtype: Any, dtype: Any) -> Function:
    """``crit, then_, else_, result, n``: ``result[i] = crit[i] > 0 ? then_[i] : else_[i]``."""
    t = _ct(dtype)
    return _kernel(
        f"{_ct(crit_dtype)} *crit, {t} *then_, {t} *else_, {t} *result",
        "result[i] = crit[i] > 0 ? then_[i] : else_[i]",
        "if_positive",
        dtype,
    )


def get_scalar_op_kernel(dtype_x: Any, *args: Any) -> Function:
    """``x, a, y, n``: ``y[i] = x[i] <operator> a``. Called ``(dtype_x, dtype_a, dtype_y,
    operator)`` as current PyCUDA, or ``(dtype_x, dtype_y, operator)`` as older releases (then
    ``a`` has x's type)."""
    if len(args) == 3:
        dtype_a, dtype_y, operator = args
    elif len(args) == 2:
        (dtype_y, operator), dtype_a = args, dtype_x
    else:
        raise TypeError("get_scalar_op_kernel(dtype_x, dtype_a, dtype_y, operator) takes 4 arguments")
    return _scalar_op_kernel(dtype_x, dtype_a, dtype_y, operator)


@context_dependent_memoize
def _scalar_op_kernel(dtype_x: Any, dtype_a: Any, dtype_y: Any, operator: str) -> Function:
    return _kernel(
        f"{_ct(dtype_x)} *x, {_ct(dtype_a)} a, {_ct(dtype_y)} *y",
        f"y[i] = x[i] {operator} a",
        "scalarop_kernel",
        dtype_x,
        dtype_a,
        dtype_y,
    )
