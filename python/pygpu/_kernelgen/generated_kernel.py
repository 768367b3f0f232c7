"""What the generated kernels (elementwise, reduction, scan) share: the C prelude for their
argument types, compiling (``SourceModule``) after checking the layout of registered structs, launch sizes, and checking the
arguments of a call against the declared ones."""

from __future__ import annotations

import operator
import os
from typing import Any

import numpy as np

from pygpu._pygpu import DeviceAllocation, backend as backend_name, capabilities
from pygpu._driver import vector_types
from pygpu._driver.c_types import dtype_to_ctype
from pygpu._driver.devices import check_devices
from pygpu._kernelgen.arguments import Argument, ScalarArg, VectorArg
from pygpu._pygpu import Function, cudaDeviceProp, get_device, mem_alloc, memcpy_dtoh
from pygpu._toolchain.source_module import SourceModule
from pygpu.gpuarray import _bundled
from pygpu.gpuarray._creation import empty
from pygpu.gpuarray._layout import extent
from pygpu.gpuarray._transfer import copy_into

__all__ = [
    "compile_kernels",
    "grid_for",
    "in_c_order",
    "index_range",
    "launch_size",
    "layout_asserts",
    "mixed_orders",
    "pack_arguments",
    "prepared_signature",
    "release_copies",
    "type_prelude",
]

# A 64-bit index type without any header (NVRTC has no standard headers).
INDEX_TYPE = "long long"

_sm_count: dict[tuple[str, int], int] = {}


_HALF_PRELUDE = """#if defined(__HIPCC__)
#include <hip/hip_fp16.h>
#else
#include <cuda_fp16.h>
#endif"""


def type_prelude(dtypes: list[np.dtype]) -> str:
    """What goes before the user's preamble: ``__half`` (the C type of float16: the toolkit's
    cuda_fp16.h, hip_fp16.h on HIP, pygpu's own on the host), PyCUDA's complex header and the C
    definitions of registered structs among ``dtypes``. PyCUDA's generated kernels include
    pycuda-complex.hpp whatever their types, so an operation may use ``pycuda::complex`` and its
    functions (``abs(z)``, ``exp(z)``, ...) on real arguments too (about 30 ms more for a host
    compile that misses the cache)."""
    parts = []
    if any(dt == np.float16 for dt in dtypes):
        parts.append(_HALF_PRELUDE)
    parts.append("#include <pycuda-complex.hpp>")
    structs = [dt for dt in dtypes if dt.fields is not None]
    if structs:
        parts.append(vector_types.struct_definitions(structs))
    return "\n".join(p for p in parts if p)


def layout_asserts(dtypes: list[np.dtype]) -> str:
    """What goes after the user's preamble (which may define the structs): their sizes checked."""
    return vector_types.layout_checks([dt for dt in dtypes if dt.fields is not None])


def compile_kernels(
    source: str,
    names: list[str],
    options: list[str] | None,
    keep: bool,
    dtypes: list[np.dtype] | None = None,
    preamble: str = "",
) -> list[Function]:
    """Compiles ``source`` (C++ linkage: kernels declare ``extern "C"`` themselves, so a
    preamble may hold templates) and returns its kernels ``names``, after checking that the
    structs among ``dtypes`` have numpy's layout in C."""
    for dt in dict.fromkeys(dtypes or []):
        if dt.fields is not None:
            check_field_offsets(dt, preamble)
    module = SourceModule(source, options=options, keep=keep, no_extern_c=True, include_dirs=package_include_dirs())
    return [module.get_function(name) for name in names]


_offsets_checked: set[tuple[Any, ...]] = set()


def check_field_offsets(dtype: np.dtype, preamble: str = "") -> None:
    """Raises ValueError unless every field of the registered struct ``dtype`` lies at the
    same byte offset in C (as the device compiler lays it out) as in numpy. Runs a small
    kernel once per dtype, backend and device."""
    name = vector_types.dtype_to_c_name(dtype)
    if name is None or dtype.fields is None:
        return
    key = (dtype, name, preamble, backend_name(), get_device())
    if key in _offsets_checked:
        return
    fields = list(dtype.fields.items())
    body = "\n".join(
        f"  out[{k}] = (long long)((const char*)&p->{field} - (const char*)p);" for k, (field, _) in enumerate(fields)
    )
    source = (
        f"{vector_types.struct_definitions([dtype])}\n{preamble}\n"
        f'extern "C" __global__ void pygpu_field_offsets(const {name} *p, long long *out)\n{{\n{body}\n}}\n'
    )
    module = SourceModule(source, no_extern_c=True)
    probe = mem_alloc(dtype.itemsize)
    out = mem_alloc(8 * len(fields))
    module.get_function("pygpu_field_offsets")(probe, out, block=(1, 1, 1), grid=(1, 1))
    offsets = np.empty(len(fields), np.int64)
    memcpy_dtoh(offsets, out)
    for (field, info), c_offset in zip(fields, offsets, strict=True):
        if int(c_offset) != info[1]:
            raise ValueError(
                f"struct {name}: field {field} is at byte {int(c_offset)} in C but at byte {info[1]} in the numpy "
                f"dtype {dtype}: make the dtype match the C struct (padding, align=True)"
            )
    _offsets_checked.add(key)


def package_include_dirs() -> list[str]:
    """The package's include folder: pygpu_types.h (complex) and the pygpu_kernel.h it includes,
    shipped in the wheel."""
    return [os.path.join(os.path.dirname(os.path.dirname(__file__)), "include")]  # pygpu/include


def launch_size(n: int, block: int) -> int:
    """Blocks for a grid-stride loop over ``n`` items: enough to fill the device, no more."""
    backend = backend_name()
    device = get_device()
    key = (backend, device)
    on_cpu = capabilities().kernels_on_cpu
    if key not in _sm_count:
        _sm_count[key] = 1 if on_cpu else cudaDeviceProp(device).multiProcessorCount
    cap = 4 if on_cpu else _sm_count[key] * 32
    return max(1, min(-(-n // block), cap))


# (backend, n, block) -> the grid of a grid-stride launch (whose size changes speed, never results).
_grids: dict[tuple[str, int, int], tuple[int, int]] = {}
# On the host a launch of several blocks hands them to a thread pool, which costs more than
# one thread's loop over this many simple elements (about 13 us against 1 us for 1,000 here).
_HOST_ITEMS_PER_BLOCK = 1 << 14


def grid_for(n: int, block: int) -> tuple[int, int]:
    """The grid of a grid-stride launch over ``n`` items, computed once per size."""
    backend = backend_name()
    key = (backend, n, block)
    grid = _grids.get(key)
    if grid is None:
        if len(_grids) > 4096:
            _grids.clear()
        blocks = launch_size(n, block)
        if capabilities().kernels_on_cpu:
            blocks = max(1, min(blocks, n // _HOST_ITEMS_PER_BLOCK))
        grid = _grids[key] = (blocks, 1)
    return grid


# Scalar types that Function.prepare packs as numpy converts them from Python numbers
# (bool, float16 and structs stay on pack_arguments' path, which checks them exactly).
_PREPARED_CHARS = frozenset("bBhHiIlLqQfdFD")


def prepared_signature(arguments: list[Argument]) -> list[Any] | None:
    """The ``Function.prepare`` types of ``arguments`` (a pointer for each array), or None
    when a scalar's type is not one prepare() takes."""
    types: list[Any] = []
    for a in arguments:
        if isinstance(a, VectorArg):
            types.append("P")
        elif a.dtype.fields is None and a.dtype.char in _PREPARED_CHARS:
            types.append(a.dtype)
        else:
            return None
    return types


def kernels_on_cpu() -> bool:
    """Whether kernels run on the CPU (a block's threads one after another): one thread per
    block loops fastest there."""
    return capabilities().kernels_on_cpu


def scalar_value(arg: ScalarArg, value: Any, index: int) -> Any:
    """``value`` as a numpy scalar of the declared type (struct values must match exactly)."""
    dt = arg.dtype
    if dt.fields is not None:
        if isinstance(value, np.ndarray) and value.shape == ():
            value = value[()]
        if not isinstance(value, np.void) or value.dtype != dt:
            got = getattr(value, "dtype", type(value).__name__)
            raise TypeError(f"argument {index} ({arg.name}) must be a scalar of the struct dtype {dt}, got {got}")
        return value
    if isinstance(value, DeviceAllocation) or hasattr(value, "gpudata"):
        raise TypeError(f"argument {index} ({arg.name}) is declared as a scalar {dtype_to_ctype(dt)}, got an array")
    if value is None or isinstance(value, (str, bytes)):
        # numpy would turn None into NaN and parse a string: a number is meant, so say so.
        raise TypeError(
            f"argument {index} ({arg.name}) is declared as a scalar {dtype_to_ctype(dt)}: pass a number, "
            f"not {type(value).__name__} {value!r}"
        )
    try:
        return dt.type(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"argument {index} ({arg.name}): {value!r} is not a {dtype_to_ctype(dt)}: {e}") from e


def pack_arguments(arguments: list[Argument], args: tuple[Any, ...], what: str) -> tuple[list[Any], list[Any]]:
    """(the launch's arguments, the GPUArrays passed for the vector arguments), after checking
    the count, that vector arguments are arrays, and their contiguity."""
    if len(args) != len(arguments):
        declared = ", ".join(a.declarator() for a in arguments)
        raise TypeError(f"{what} takes {len(arguments)} arguments ({declared}), got {len(args)}")
    launch: list[Any] = []
    vectors: list[Any] = []
    for index, (arg, value) in enumerate(zip(arguments, args, strict=True)):
        if isinstance(arg, VectorArg):
            dtype = getattr(value, "dtype", None)
            if dtype is None or not hasattr(value, "gpudata"):
                raise TypeError(
                    f"argument {index} ({arg.name}) is declared as {arg.declarator()}: pass a GPUArray, "
                    f"not {type(value).__name__}"
                )
            # The element type is the launch's to check, as for any kernel (docs/kernel_signatures.md:
            # signedness aside, char* over any array, a warning for another type of the same size):
            # PyCUDA checks nothing here, and its word-count ReductionKernel reads uint8 text as char*.
            if value.size and not (value.flags.c_contiguous or value.flags.f_contiguous):
                raise ValueError(
                    f"argument {index} ({arg.name}): a generated kernel needs contiguous arrays; "
                    "pass a contiguous copy (.copy())"
                )
            vectors.append(value)
            launch.append(value)
        else:
            launch.append(scalar_value(arg, value, index))  # type: ignore[arg-type]
    check_devices(vectors)
    return launch, vectors


def all_dtypes(arguments: list[Argument], *extra: Any) -> list[np.dtype]:
    return [a.dtype for a in arguments] + [np.dtype(e) for e in extra]


def check_sizes(arguments: list[Argument], vectors: list[Any], n: int, what: str) -> None:
    """Every array must hold the ``n`` elements the kernel indexes."""
    names = [a.name for a in arguments if isinstance(a, VectorArg)]
    for name, v in zip(names, vectors, strict=True):
        if v.size < n:
            raise ValueError(
                f"{what}: array {name} has {v.size} elements but the kernel runs over {n} "
                f"(the size of {names[0]}); pass arrays of at least that size"
            )


def index_range(range_: Any, slice_: Any, size: int, what: str) -> tuple[int, int, int]:
    """(first index, step, count) of the indices a call reduces over: all of the first
    array's, ``range=`` exactly (each index inside the first array), or ``slice=`` clipped."""
    if range_ is not None and slice_ is not None:
        raise TypeError(f"{what}: pass range= or slice=, not both")
    if slice_ is not None:
        if not isinstance(slice_, slice):
            raise TypeError(f"{what}: slice= takes a slice, not {type(slice_).__name__}")
        start, stop, step = slice_.indices(size)
        return start, step, len(range(start, stop, step))
    if range_ is None:
        return 0, 1, size
    if not isinstance(range_, (slice, range)):
        raise TypeError(f"{what}: range= takes a slice or range, not {type(range_).__name__}")
    if range_.stop is None:
        raise ValueError(f"{what}: range= needs a stop")
    start = 0 if range_.start is None else operator.index(range_.start)
    step = 1 if range_.step is None else operator.index(range_.step)
    if step == 0:
        raise ValueError(f"{what}: range= step cannot be zero")
    indices = range(start, operator.index(range_.stop), step)
    if indices:
        low, high = min(indices[0], indices[-1]), max(indices[0], indices[-1])
        if low < 0 or high >= size:
            raise IndexError(
                f"{what}: range={range_!r} reaches index {low if low < 0 else high}, outside the first "
                f"array (size {size}); use slice= to clip to the array"
            )
    return start, step, len(indices)


def _order(v: Any) -> str:
    """The order an array is contiguous in when it is only one: C or F; an empty string for one
    contiguous in both or neither (1-D, one element, empty: memory order is index order)."""
    flags = v.flags
    if flags.c_contiguous == flags.f_contiguous:
        return ""
    return "C" if flags.c_contiguous else "F"


def mixed_orders(vectors: list[Any]) -> bool:
    """Whether ``vectors`` hold both a C-only and a Fortran-only contiguous array: then the
    generated loop's ``x[i]`` (memory order) would pair elements of different indices."""
    orders = {_order(v) for v in vectors}
    return "C" in orders and "F" in orders


def in_c_order(
    arguments: list[Argument], launch: list[Any], vectors: list[Any], what: str, stream: Any
) -> tuple[list[Any], list[tuple[Any, Any]]]:
    """(the launch arguments with each Fortran-only array replaced by a C-ordered copy, the
    (original, copy) pairs for :func:`release_copies`): a kernel given C and Fortran arrays of
    one shape then pairs elements as numpy does (by index, not by memory position). ValueError
    when a Fortran array shares memory with another argument, where a copy (and copying it
    back) would change what the kernel sees."""

    def span(v: Any) -> tuple[int, int]:
        if not v.size:
            return (0, 0)
        lo, hi = extent(v.shape, v.strides, v.dtype.itemsize)
        return (v.ptr + lo, v.ptr + hi)

    names = [a.name for a in arguments if isinstance(a, VectorArg)]
    spans = [span(v) for v in vectors]
    copies: dict[int, Any] = {}
    for k, v in enumerate(vectors):
        if _order(v) != "F":
            continue
        lo, hi = spans[k]
        for j, w in enumerate(vectors):
            if j != k and w is not v and spans[j][0] < hi and lo < spans[j][1]:
                raise ValueError(
                    f"{what}: array {names[k]} is in Fortran order and array {names[j]} in another order, "
                    f"and they share memory: the kernel indexes memory by i, so pass arrays of one order "
                    f"(e.g. {names[k]}.copy(order='C'))"
                )
        if id(v) not in copies:
            copies[id(v)] = _c_copy(v, stream)
    by_id = {id(v): v for v in vectors}
    new_launch = [copies.get(id(x), x) if id(x) in by_id else x for x in launch]
    return new_launch, [(by_id[i], c) for i, c in copies.items()]


def _c_copy(v: Any, stream: Any) -> Any:
    out = empty(v.shape, v.dtype, allocator=v.allocator)
    copy_into(out, v, stream)
    return out


def release_copies(pairs: list[tuple[Any, Any]], stream: Any, write_back: bool) -> None:
    """After the launch: copies each C-ordered stand-in of :func:`in_c_order` back into its
    Fortran original when ``write_back``, and keeps the stand-ins alive until the device is done
    with them."""
    if write_back:
        for original, copy in pairs:
            copy_into(original, copy, stream)
    _bundled.hold(stream, tuple(c for _, c in pairs))
