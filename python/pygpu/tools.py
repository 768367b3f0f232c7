"""PyCUDA's ``pycuda.tools``: memory pools, C type names for numpy dtypes, C argument
parsing for generated kernels, device data for occupancy estimates, per-context memoizing
and the test helpers PyCUDA's own tests import."""

from __future__ import annotations

import functools
import gc
import os
import re
import struct
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from pygpu import driver
from pygpu._mempool import (
    DeviceMemoryPool,
    PageLockedMemoryPool,
    PooledDeviceAllocation,
    PooledHostAllocation,
    bitlog2,
)

__all__ = [
    "Argument",
    "DeviceData",
    "DeviceMemoryPool",
    "OccupancyRecord",
    "PageLockedMemoryPool",
    "PooledDeviceAllocation",
    "PooledHostAllocation",
    "ScalarArg",
    "VectorArg",
    "bitlog2",
    "clear_context_caches",
    "context_dependent_memoize",
    "dtype_to_ctype",
    "get_arg_type",
    "get_or_register_dtype",
    "init_cuda_context_fixture",
    "make_default_context",
    "mark_cuda_test",
    "parse_c_arg",
    "register_dtype",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def _platform_bits() -> int:
    return struct.calcsize("P") * 8


# ------------------------------------------------------------------------ contexts


def make_default_context(
    ctx_maker: Callable[[driver.Device], Any] | None = None,
) -> Any:
    """A context on ``$CUDA_DEVICE`` (or the device number in ``~/.cuda_device``), else on
    the first device where ``ctx_maker`` (default: ``Device.make_context``) succeeds."""
    maker: Callable[[driver.Device], Any] = ctx_maker or (lambda dev: dev.make_context())
    count = driver.Device.count()
    if count == 0:
        raise RuntimeError("no GPU device found: check the driver, or use PYGPU_BACKEND=host")
    chosen = os.environ.get("CUDA_DEVICE")
    if chosen is None:
        try:
            with open(os.path.join(os.path.expanduser("~"), ".cuda_device")) as f:
                chosen = f.read().strip()
        except OSError:
            chosen = None
    if chosen is not None:
        try:
            ordinal = int(chosen)
        except ValueError as e:
            raise TypeError(
                f"the device number (CUDA_DEVICE or ~/.cuda_device) must be an integer, not {chosen!r}"
            ) from e
        return maker(driver.Device(ordinal))
    errors = []
    for ordinal in range(count):
        try:
            return maker(driver.Device(ordinal))
        except driver.Error as e:
            errors.append(f"device {ordinal}: {e}")
    raise RuntimeError(f"make_default_context() could not make a context on any of {count} devices: {errors}")


_memoized: list[dict[Any, dict[Any, Any]]] = []


def _context_key() -> Any:
    from pygpu._pygpu import backend, cudaGetDevice

    return backend(), cudaGetDevice()[0]


def context_dependent_memoize(func: _F) -> _F:
    """Memoizes ``func`` per (backend, current device) and positional arguments; kernels
    built for one device are not reused on another. ``clear_context_caches()`` empties it."""
    per_context: dict[Any, dict[Any, Any]] = {}
    _memoized.append(per_context)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cache = per_context.setdefault(_context_key(), {})
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        try:
            return cache[key]
        except KeyError:
            result = cache[key] = func(*args, **kwargs)
            return result

    return wrapper  # type: ignore[return-value]


def clear_context_caches() -> None:
    """Forgets everything :func:`context_dependent_memoize` remembered."""
    for cache in _memoized:
        cache.clear()


# ------------------------------------------------------------------------ device data


def _ceil_to(value: float, multiple: int = 1) -> int:
    return int(-(-value // multiple)) * multiple


def _floor_to(value: float, multiple: int = 1) -> int:
    return int(value // multiple) * multiple


class DeviceData:
    """Limits of a device for occupancy estimates (PyCUDA's fields). The values are CUDA's
    per-block limits for compute capability 2.0 and later; pygpu reads only what its device
    properties carry (the warp size is 64 on the hip backend)."""

    def __init__(self, dev: driver.Device | None = None) -> None:
        from pygpu._pygpu import backend

        self.device = dev if dev is not None else driver.Context.get_device()
        self.max_threads = 1024
        self.warp_size = 64 if backend() == "hip" else 32
        self.warps_per_mp = 64 if self.device.compute_capability() >= (3, 0) else 48
        self.thread_blocks_per_mp = 16 if self.device.compute_capability() >= (3, 0) else 8
        self.registers = 65536
        self.shared_memory = 49152
        self.smem_granularity = 128
        self.register_allocation_unit = "warp"

    def align(self, nbytes: int, word_size: int = 4) -> int:
        """``nbytes`` rounded up to ``align_bytes(word_size)``."""
        return _ceil_to(nbytes, self.align_bytes(word_size))

    def align_dtype(self, elements: int, dtype_size: int) -> int:
        """``elements`` rounded up to the alignment, counted in elements of ``dtype_size`` bytes."""
        return _ceil_to(elements, self.align_words(dtype_size))

    def align_words(self, word_size: int) -> int:
        """The alignment for coalesced fetches, in words of ``word_size`` bytes."""
        return self.align_bytes(word_size) // word_size

    def align_bytes(self, word_size: int = 4) -> int:
        """The alignment in bytes for coalesced fetches of ``word_size``-byte words: 64 for 4,
        128 for 8 or 16; other sizes raise ValueError."""
        if word_size == 4:
            return 64
        if word_size in (8, 16):
            return 128
        raise ValueError(f"no alignment possible for fetches of size {word_size} (use 4, 8 or 16)")

    def coalesce(self, thread_count: int) -> int:
        """``thread_count`` rounded up to a multiple of 16 (a half-warp)."""
        return _ceil_to(thread_count, 16)

    @staticmethod
    def make_valid_tex_channel_count(size: int) -> int:
        """The smallest texture channel count (1, 2 or 4) that holds ``size`` channels."""
        for valid in (1, 2, 4):
            if size <= valid:
                return valid
        raise ValueError(f"no texture channel count holds {size} channels (1, 2 or 4)")


class OccupancyRecord:
    """Blocks per multiprocessor and occupancy of a launch of ``threads`` per block using
    ``shared_mem`` bytes and ``registers`` per thread; ``limited_by`` names the bound."""

    def __init__(self, devdata: DeviceData, threads: int, shared_mem: int = 0, registers: int = 0) -> None:
        if threads > devdata.max_threads:
            raise ValueError(f"too many threads: {threads} > {devdata.max_threads} per block")
        warps = _ceil_to(threads / devdata.warp_size)
        smem = _ceil_to(shared_mem, devdata.smem_granularity)
        regs = warps * devdata.warp_size * registers
        if regs > devdata.registers:
            raise ValueError(f"too many registers: {regs} > {devdata.registers} per block")
        if smem > devdata.shared_memory:
            raise ValueError(f"too much shared memory: {smem} > {devdata.shared_memory} bytes per block")
        limits = [
            (devdata.thread_blocks_per_mp, "device"),
            (_floor_to(devdata.warps_per_mp / warps), "warps"),
        ]
        if registers > 0:
            limits.append((_floor_to(devdata.registers / regs), "regs"))
        if shared_mem > 0:
            limits.append((_floor_to(devdata.shared_memory / smem), "smem"))
        self.tb_per_mp_limits = limits
        self.tb_per_mp, self.limited_by = min(limits)
        self.warps_per_mp = self.tb_per_mp * warps
        self.occupancy = self.warps_per_mp / devdata.warps_per_mp


# ------------------------------------------------------------------------ C types

_DTYPE_TO_CTYPE = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.bool_): "bool",
    np.dtype(np.float16): "__half",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.complex64): "pycuda::complex<float>",
    np.dtype(np.complex128): "pycuda::complex<double>",
}


def dtype_to_ctype(dtype: Any, with_fp_tex_hack: bool = False) -> str:
    """The C type name of a numpy dtype, as generated kernels spell it."""
    if dtype is None:
        raise ValueError("dtype may not be None")
    dt = np.dtype(dtype)
    if dt.kind in "iu" and dt.itemsize == 8:
        long = "long long" if sys.platform == "win32" or _platform_bits() != 64 else "long"
        return long if dt.kind == "i" else f"unsigned {long}"
    if with_fp_tex_hack and dt in (np.dtype(np.float32), np.dtype(np.float64)):
        return "fp_tex_float" if dt == np.float32 else "fp_tex_double"
    name = _DTYPE_TO_CTYPE.get(dt)
    if name is not None:
        return name
    from pygpu import vec

    name = vec.dtype_to_c_name(dt)
    if name is None:
        raise ValueError(
            f"unable to map dtype {dt!r} to a C type: register a struct dtype with pygpu.vec.register_struct"
        )
    return name


class Argument:
    """One parameter of a generated kernel: a numpy ``dtype`` and a C ``name``."""

    def __init__(self, dtype: Any, name: str) -> None:
        self.dtype = np.dtype(dtype)
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.dtype})"

    def declarator(self) -> str:
        """The parameter's C declaration in the kernel's signature, e.g. ``float *x``."""
        raise NotImplementedError

    @property
    def struct_char(self) -> str:
        """The ``struct`` character that ``Function.prepare`` takes for this parameter."""
        raise NotImplementedError


class VectorArg(Argument):
    """A pointer parameter (``T *name``): a GPUArray or device pointer at call time."""

    @property
    def struct_char(self) -> str:
        """``"P"``: a pointer."""
        return "P"

    def declarator(self) -> str:
        """``T *name``, T the C type of ``dtype``."""
        return f"{dtype_to_ctype(self.dtype)} *{self.name}"


class ScalarArg(Argument):
    """A by-value parameter (``T name``): a number or numpy scalar at call time."""

    def declarator(self) -> str:
        """``T name``, T the C type of ``dtype``."""
        return f"{dtype_to_ctype(self.dtype)} {self.name}"

    @property
    def struct_char(self) -> str:
        """The ``struct`` character of ``dtype`` (its ``dtype.char``)."""
        char: str = self.dtype.char
        return char


_DECLARATOR = re.compile(r"(\**)\s*([_a-zA-Z][_a-zA-Z0-9]*)\s*(\[\s*[0-9]*\s*\])*\s*$")
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")
_LONG = "long long" if sys.platform == "win32" else "long"

_CTYPE_TO_DTYPE = {
    "float": np.float32,
    "double": np.float64,
    "__half": np.float16,
    "half": np.float16,
    "pycuda::complex<float>": np.complex64,
    "pycuda::complex<double>": np.complex128,
    "pygpu::complex<float>": np.complex64,
    "pygpu::complex<double>": np.complex128,
    "int": np.int32,
    "signed int": np.int32,
    "signed": np.int32,
    "unsigned": np.uint32,
    "unsigned int": np.uint32,
    "long long": np.int64,
    "long long int": np.int64,
    "signed long long": np.int64,
    "unsigned long long": np.uint64,
    "unsigned long long int": np.uint64,
    "short": np.int16,
    "short int": np.int16,
    "signed short": np.int16,
    "unsigned short": np.uint16,
    "unsigned short int": np.uint16,
    "short unsigned int": np.uint16,
    "char": np.int8,
    "signed char": np.int8,
    "unsigned char": np.uint8,
    "bool": np.bool_,
    "int8_t": np.int8,
    "uint8_t": np.uint8,
    "int16_t": np.int16,
    "uint16_t": np.uint16,
    "int32_t": np.int32,
    "uint32_t": np.uint32,
    "int64_t": np.int64,
    "uint64_t": np.uint64,
    "size_t": np.uintp,
    "ptrdiff_t": np.intp,
}


def _long_dtype(unsigned: bool) -> Any:
    if _platform_bits() == 64 and sys.platform != "win32":
        return np.uint64 if unsigned else np.int64
    return np.uint32 if unsigned else np.int32


def parse_c_arg(c_arg: str) -> Argument:
    """``"float *x"`` -> ``VectorArg(float32, "x")``; ``"int n"`` -> ``ScalarArg(int32, "n")``.
    Raises ValueError for a declaration it cannot read or a C type it does not know."""
    if not isinstance(c_arg, str):
        raise TypeError(f"a C argument declaration is a str, not {type(c_arg).__name__}")
    text = _QUALIFIERS.sub(" ", c_arg)
    match = _DECLARATOR.search(text)
    if match is None:
        raise ValueError(f"could not parse the C declaration {c_arg.strip()!r}: expected e.g. 'float *x' or 'int n'")
    name = match.group(2)
    is_vector = bool(match.group(1)) or match.group(3) is not None
    ctype = " ".join(text[: match.start()].split())
    if not ctype:
        raise ValueError(
            f"the C declaration {c_arg.strip()!r} lacks a type or a name: write e.g. 'float *x' or 'int n'"
        )
    dtype: Any
    if ctype in ("long", "long int", "signed long", "signed long int"):
        dtype = _long_dtype(False)
    elif ctype in ("unsigned long", "unsigned long int", "long unsigned int"):
        dtype = _long_dtype(True)
    elif ctype in _CTYPE_TO_DTYPE:
        dtype = _CTYPE_TO_DTYPE[ctype]
    else:
        from pygpu import vec

        dtype = vec.c_name_to_dtype(ctype)
        if dtype is None:
            raise ValueError(
                f"unknown C type {ctype!r} in {c_arg.strip()!r}: use a numeric type (float, double, int, ...), "
                "a pygpu.vec type (float3, ...) or a struct registered with pygpu.vec.register_struct"
            )
    return (VectorArg if is_vector else ScalarArg)(dtype, name)


def get_or_register_dtype(c_names: str | list[str], dtype: Any = None) -> np.dtype:
    """The dtype registered for the C type name(s) ``c_names``; with ``dtype``, registers it
    under those names first (structured dtypes through :func:`pygpu.vec.register_struct`)."""
    from pygpu import vec

    names = [c_names] if isinstance(c_names, str) else list(c_names)
    if not names:
        raise ValueError("get_or_register_dtype needs at least one C type name")
    if dtype is None:
        for name in names:
            found = _CTYPE_TO_DTYPE.get(name)
            known = np.dtype(found) if found is not None else vec.c_name_to_dtype(name)
            if known is not None:
                return known
        raise ValueError(f"C type {names[0]!r} is not registered: pass its dtype")
    dt: np.dtype = np.dtype(dtype)
    for name in names:
        if dt.fields is not None:
            vec.register_struct(name, dt)
        else:
            known_type = _CTYPE_TO_DTYPE.get(name)
            if known_type is not None and np.dtype(known_type) != dt:
                raise ValueError(f"C type {name!r} is already registered as {np.dtype(known_type)}, not {dt}")
            _CTYPE_TO_DTYPE[name] = dt.type
    return dt


def register_dtype(dtype: Any, c_names: str | list[str], alias_ok: bool = False) -> None:
    """PyCUDA's older spelling of :func:`get_or_register_dtype` (arguments swapped)."""
    del alias_ok
    get_or_register_dtype(c_names, dtype)


def get_arg_type(c_arg: str) -> str:
    """The ``Function.prepare`` character of a C declaration ("P" for pointers)."""
    return parse_c_arg(c_arg).struct_char


def parse_c_args(arguments: str | list[Any]) -> list[Argument]:
    """A comma-separated declaration list (or a list of declarations/Arguments) as Arguments."""
    if isinstance(arguments, str):
        parts = [a for a in arguments.split(",")]
        if not arguments.strip():
            return []
        if any(not p.strip() for p in parts):
            raise ValueError(f"empty declaration in the argument list {arguments!r}")
        return [parse_c_arg(p) for p in parts]
    result: list[Argument] = []
    for a in arguments:
        result.append(a if isinstance(a, Argument) else parse_c_arg(a))
    return result


# ------------------------------------------------------------------------ test helpers


def mark_cuda_test(inner_f: _F) -> _F:
    """Decorates a test: runs it with a context pushed on the default device (PyCUDA's
    helper); with pygpu the device's primary context is always there, so this pushes it,
    runs, pops, and clears the context caches."""

    @functools.wraps(inner_f)
    def f(*args: Any, **kwargs: Any) -> Any:
        ctx = make_default_context()
        try:
            return inner_f(*args, **kwargs)
        finally:
            ctx.pop()
            clear_context_caches()
            gc.collect()

    return f  # type: ignore[return-value]


def init_cuda_context_fixture() -> Iterator[None]:
    """A generator for a pytest fixture (PyCUDA's; use ``yield from init_cuda_context_fixture()``):
    a context current during the test, popped after it, context caches cleared."""
    ctx = make_default_context()
    yield
    ctx.pop()
    clear_context_caches()
    gc.collect()
