"""PyCUDA's ``pycuda.tools``: memory pools, C type names for numpy dtypes, C argument
parsing for generated kernels, device data for occupancy estimates, per-context memoizing
and the test helpers PyCUDA's own tests import."""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar


from pygpu import driver
from pygpu._driver.c_types import dtype_to_ctype, get_or_register_dtype, register_dtype
from pygpu._driver.context_caches import clear_context_caches, context_dependent_memoize
from pygpu._driver.mempool import (
    DeviceMemoryPool,
    PageLockedAllocator,
    PageLockedMemoryPool,
    PooledDeviceAllocation,
    PooledHostAllocation,
    bitlog2,
)
from pygpu._kernelgen.arguments import Argument, ScalarArg, VectorArg, get_arg_type, parse_c_arg
from pygpu._kernelgen.arguments import parse_c_args as parse_c_args  # pygpu's own, not in PyCUDA's __all__

__all__ = [
    "Argument",
    "DeviceData",
    "DeviceMemoryPool",
    "OccupancyRecord",
    "PageLockedAllocator",
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
    "get_default_device",
    "get_or_register_dtype",
    "init_cuda_context_fixture",
    "make_default_context",
    "mark_cuda_test",
    "parse_c_arg",
    "register_dtype",
]

_F = TypeVar("_F", bound=Callable[..., Any])


# ------------------------------------------------------------------------ contexts


def _chosen_device() -> int | None:
    """The device number in ``$CUDA_DEVICE``, else in ``~/.cuda_device``; None if neither says."""
    chosen = os.environ.get("CUDA_DEVICE")
    if chosen is None:
        try:
            with open(os.path.join(os.path.expanduser("~"), ".cuda_device")) as f:
                chosen = f.read().strip()
        except OSError:
            return None
    try:
        return int(chosen)
    except ValueError as e:
        raise TypeError(f"the device number (CUDA_DEVICE or ~/.cuda_device) must be an integer, not {chosen!r}") from e


def make_default_context(
    ctx_maker: Callable[[driver.Device], Any] | None = None,
) -> Any:
    """A context on ``$CUDA_DEVICE`` (or the device number in ``~/.cuda_device``), else on
    the first device where ``ctx_maker`` (default: ``Device.make_context``) succeeds."""
    maker: Callable[[driver.Device], Any] = ctx_maker or (lambda dev: dev.make_context())
    count = driver.Device.count()
    if count == 0:
        raise RuntimeError("no GPU device found: check the driver, or use PYGPU_BACKEND=host")
    chosen = _chosen_device()
    if chosen is not None:
        return maker(driver.Device(chosen))
    errors = []
    for ordinal in range(count):
        try:
            return maker(driver.Device(ordinal))
        except driver.Error as e:
            errors.append(f"device {ordinal}: {e}")
    raise RuntimeError(f"make_default_context() could not make a context on any of {count} devices: {errors}")


def get_default_device(default: int = 0) -> driver.Device:
    """Deprecated in PyCUDA (a DeprecationWarning; use :func:`make_default_context`): the device
    numbered ``$CUDA_DEVICE``, else the number in ``~/.cuda_device``, else ``default``."""
    import warnings

    warnings.warn(
        "get_default_device() is deprecated; use make_default_context() instead", DeprecationWarning, stacklevel=2
    )
    chosen = _chosen_device()
    return driver.Device(default if chosen is None else chosen)


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
        from pygpu._pygpu import capabilities

        self.device = dev if dev is not None else driver.Context.get_device()
        self.max_threads = 1024
        self.warp_size = capabilities().warp_size
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
