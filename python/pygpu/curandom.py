"""pycuda.curandom: random numbers in GPUArrays, from a counter-based generator bundled with
pygpu (Philox4x32-10, kernels/random.cu) instead of cuRAND.

The same seed gives the same bits on every backend (cuda, hip, host): uniform and integer
results are bit-identical everywhere; normal and log-normal ones go through the device's
``log``/``sin``/``cos``/``exp`` and may differ in the last bits between backends. The streams
are **not** cuRAND's: code that compared against cuRAND's exact numbers gets other (equally
distributed) numbers. PyCUDA's generator classes keep their names and common methods; all of
them draw from Philox (the Sobol-named ones too: they are not low-discrepancy sequences here).
"""

from __future__ import annotations

import math
import random as _random
from typing import Any

import numpy as np

# rand() seeds from numpy's global generator, as PyCUDA's does (np.random.seed makes it
# repeatable); numpy imports numpy.random lazily, which made the first rand() 10 ms slower.
import numpy.random  # noqa: F401

from pygpu.gpuarray import _bundled
from pygpu.gpuarray import GPUArray, empty, to_gpu
from pygpu.gpuarray._transfer import copy_into

__all__ = [
    "MRG32k3aRandomNumberGenerator",
    "PhiloxRandomNumberGenerator",
    "ScrambledSobol32RandomNumberGenerator",
    "ScrambledSobol64RandomNumberGenerator",
    "Sobol32RandomNumberGenerator",
    "Sobol64RandomNumberGenerator",
    "XORWOWRandomNumberGenerator",
    "get_curand_version",
    "rand",
    "seed_getter_uniform",
    "seed_getter_unique",
]

_SOURCE = "random"
# Results drawn from one Philox block (four 32-bit words) per dtype.
_PER_BLOCK = {"uint32": 4, "int32": 4, "float32": 4, "uint64": 2, "int64": 2, "float64": 2}
_POISSON_TYPES = ("uint32", "int32", "float32", "float64")
#: The largest Poisson mean: the kernel's work per element grows with it.
_MAX_POISSON_MEAN = float(2**20)


class CurandVersion(tuple[int, int, int]):
    """What ``get_curand_version()`` gives: a version tuple (PyCUDA's code compares it with
    ``>= (3, 2, 0)`` before using the generator classes, which pygpu has) whose text says that
    pygpu provides Philox4x32-10 rather than cuRAND."""

    def __str__(self) -> str:
        return (
            "no cuRAND: pygpu's bundled Philox4x32-10 generator with cuRAND's generator API "
            f"(level {'.'.join(map(str, self))}); the streams differ from cuRAND's"
        )


_VERSION = CurandVersion((11, 0, 0))


def get_curand_version() -> CurandVersion:
    """pygpu has no cuRAND; the returned version tuple stands for the generator API it
    provides on Philox4x32-10 (``str()`` of it says so)."""
    return _VERSION


def _launch_fill(data: GPUArray, kind: str, seed: int, offset: int, stream: Any, *extra: Any) -> int:
    """Fills contiguous ``data`` from Philox blocks ``offset...``; returns the blocks used."""
    name = data.dtype.name
    n = data.size
    if n == 0:
        return 0
    per_block = _PER_BLOCK[name]
    if kind == "bits":
        kernel, signature = ("philox_uint32", "PqQQ") if per_block == 4 else ("philox_uint64", "PqQQ")
    elif kind == "uniform":
        kernel, signature = f"philox_uniform_{name}", "PqQQ"
    else:
        kernel = f"philox_normal_{name}"
        signature = "PqQQffi" if name == "float32" else "PqQQddi"
    f = _bundled.function(_SOURCE, kernel, signature)
    blocks = -(-n // per_block)
    _bundled.read_on(stream, data)
    _bundled.launch(
        f,
        _bundled.grid_for(blocks),
        _bundled.BLOCK,
        stream,
        data.ptr,
        n,
        seed & (2**64 - 1),
        offset & (2**64 - 1),
        *extra,
    )
    data._order.wrote(stream)
    return blocks


def _fill(
    data: Any,
    kind: str,
    seed: int,
    offset: int,
    stream: Any,
    mean: float = 0.0,
    stddev: float = 1.0,
    lognormal: bool = False,
) -> int:
    """Fills any GPUArray ``data`` (complex as pairs of floats, non-contiguous through a
    contiguous temporary); returns the Philox blocks used."""
    if not isinstance(data, GPUArray):
        raise TypeError(f"data must be a GPUArray, not {type(data).__name__}")
    if data._readonly:
        raise ValueError("assignment destination is read-only")
    dt = data.dtype
    allowed = {
        "bits": ("uint32", "int32", "uint64", "int64"),
        "uniform": ("float32", "float64"),
        "normal": ("float32", "float64", "complex64", "complex128"),
    }[kind]
    if dt.name not in allowed:
        what = {"bits": "integer", "uniform": "uniform", "normal": "normal"}[kind]
        raise TypeError(f"{what} random numbers of {dt} are not supported: use one of {', '.join(allowed)}")
    if not data.flags.c_contiguous:
        tmp = empty(data.shape, dt, allocator=data.allocator)
        used = _fill(tmp, kind, seed, offset, stream, mean, stddev, lognormal)
        copy_into(data, tmp, stream)
        return used
    target = data
    if dt.kind == "c":
        real = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        target = data.reshape(data.size).view(real) if data.ndim != 1 else data.view(real)
    extra: tuple[Any, ...] = ()
    if kind == "normal":
        extra = (mean, stddev, int(lognormal))
    return _launch_fill(target, kind, seed, offset, stream, *extra)


def rand(shape: Any, dtype: Any = np.float32, stream: Any = None) -> GPUArray:
    """Uniform numbers in [0, 1) (float32/float64), or random 32-bit integers (int32/uint32),
    of a new array; seeded from numpy's global generator, as PyCUDA's ``rand`` is."""
    dt = np.dtype(dtype)
    result = empty(shape, dt)
    kind = "uniform" if dt.kind == "f" else "bits"
    if dt.name not in ("float32", "float64", "int32", "uint32"):
        raise TypeError(f"rand supports float32, float64, int32 and uint32, not {dt}")
    _fill(result, kind, int(np.random.randint(0, 2**31 - 1)), 0, stream)
    return result


def seed_getter_uniform(n: int) -> GPUArray:
    """n copies of one random int32 seed (PyCUDA's seed getter)."""
    return to_gpu(np.full(n, _random.randint(0, 2**31 - 1), np.int32))


def seed_getter_unique(n: int) -> GPUArray:
    """n random int32 seeds (PyCUDA's seed getter)."""
    return to_gpu(np.random.randint(0, 2**31 - 1, n).astype(np.int32))


def _seed_value(seed: Any) -> int:
    """An explicit seed as the generator's 64-bit key: an integer in [0, 2**64), as numpy's
    seeding takes non-negative integers (a float, a string or a negative number is refused
    rather than rounded or wrapped; a wider one would lose bits, and two seeds would collide)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer in [0, 2**64), not {type(seed).__name__} {seed!r}")
    value = int(seed)
    if not 0 <= value < 1 << 64:
        raise ValueError(f"seed must be an integer in [0, 2**64) (the generator's 64-bit key), not {value}")
    return value


def _getter_seed(seeds: Any) -> int:
    """The first seed a PyCUDA-style seed getter returned (a GPUArray or array of integers), as
    the bits of its integer type: cuRAND's seeds are unsigned, and PyCUDA's getters give int32."""
    values = np.asarray(seeds.get() if isinstance(seeds, GPUArray) else seeds)
    if values.size == 0 or values.dtype.kind not in "iu":
        raise TypeError(f"seed_getter must return integer seeds, not an array of {values.dtype} of size {values.size}")
    first = values.ravel()[:1]
    return int(first.view(np.dtype(f"u{first.dtype.itemsize}"))[0])


def _count(value: Any, what: str) -> int:
    """A non-negative integer count of Philox blocks (an offset or a skip)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be a non-negative integer (Philox blocks), not {type(value).__name__} {value!r}")
    if value < 0 or value >= 1 << 64:
        raise ValueError(f"{what} must be a non-negative integer below 2**64 (Philox blocks), not {value}")
    return int(value)


def _real(value: Any, what: str) -> float:
    """``value`` as a float, refusing what is not a real number (None, strings, complex)."""
    if isinstance(value, (str, bytes)) or value is None or isinstance(value, (complex, np.complexfloating)):
        raise TypeError(f"{what} must be a real number, not {type(value).__name__} {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be a real number, not {type(value).__name__} {value!r}") from e


class PhiloxRandomNumberGenerator:
    """Random numbers from Philox4x32-10 with a 64-bit ``seed``; each call continues the
    stream where the last one stopped (``offset`` counts Philox blocks of four 32-bit words).

    ``seed_getter`` (PyCUDA's form: a function of a count returning a GPUArray of seeds) is
    asked for one seed when ``seed`` is not given; by default the seed is random.
    """

    def __init__(self, seed_getter: Any = None, offset: int = 0, *, seed: int | None = None) -> None:
        if seed is None:
            getter = seed_getter if seed_getter is not None else seed_getter_uniform
            if not callable(getter):
                raise TypeError(
                    f"seed_getter must be a function of a count returning seeds (seed_getter_uniform), not "
                    f"{type(getter).__name__}; pass an integer seed as seed="
                )
            self.seed = _getter_seed(getter(1))
        else:
            self.seed = _seed_value(seed)
        self.offset = _count(offset, "offset")

    def _advance(self, blocks: int) -> None:
        self.offset += blocks

    def call_skip_ahead(self, i: int, stream: Any = None) -> None:
        """Skips ``i`` Philox blocks of the stream (``i >= 0``)."""
        self.offset += _count(i, "call_skip_ahead's count")

    def fill_uniform(self, data: GPUArray, stream: Any = None) -> None:
        """Uniform numbers in [0, 1) (float types) or random bits (integer types)."""
        kind = "uniform" if data.dtype.kind == "f" else "bits"
        self._advance(_fill(data, kind, self.seed, self.offset, stream))

    def gen_uniform(self, shape: Any, dtype: Any, stream: Any = None) -> GPUArray:
        """A new array of ``shape`` and ``dtype`` filled as ``fill_uniform`` does."""
        result = empty(shape, dtype)
        self.fill_uniform(result, stream)
        return result

    def fill_normal(self, data: GPUArray, stream: Any = None) -> None:
        """Standard normal numbers (complex: both parts standard normal)."""
        self._advance(_fill(data, "normal", self.seed, self.offset, stream))

    def gen_normal(self, shape: Any, dtype: Any, stream: Any = None) -> GPUArray:
        """A new array of ``shape`` and ``dtype`` filled as ``fill_normal`` does."""
        result = empty(shape, dtype)
        self.fill_normal(result, stream)
        return result

    def fill_log_normal(self, data: GPUArray, mean: float, stddev: float, stream: Any = None) -> None:
        """exp() of normal numbers with the given mean and standard deviation."""
        if data.dtype.kind != "f":
            raise TypeError(f"log-normal random numbers of {data.dtype} are not supported: use float32 or float64")
        mean, stddev = _real(mean, "mean"), _real(stddev, "stddev")
        if not math.isfinite(mean):
            raise ValueError(f"fill_log_normal: mean must be finite, not {mean}")
        if not (math.isfinite(stddev) and stddev >= 0):
            raise ValueError(f"fill_log_normal: stddev (sigma) must be finite and >= 0, as numpy's, not {stddev}")
        self._advance(_fill(data, "normal", self.seed, self.offset, stream, mean, stddev, True))

    def gen_log_normal(self, shape: Any, dtype: Any, mean: float, stddev: float, stream: Any = None) -> GPUArray:
        """A new array of ``shape`` and ``dtype`` filled as ``fill_log_normal`` does."""
        result = empty(shape, dtype)
        self.fill_log_normal(result, mean, stddev, stream)
        return result

    def fill_poisson(self, data: GPUArray, lambda_value: float | None = None, stream: Any = None) -> None:
        """Poisson numbers of mean ``lambda_value``, or (None) of each element's own value as
        its mean, as PyCUDA's; 0 <= mean <= 2^20 (the cost grows with the mean)."""
        if not isinstance(data, GPUArray):
            raise TypeError(f"data must be a GPUArray, not {type(data).__name__}")
        if data.dtype.name not in _POISSON_TYPES:
            raise TypeError(
                f"Poisson random numbers of {data.dtype} are not supported: use one of {', '.join(_POISSON_TYPES)}"
            )
        if data.size == 0:
            return
        per_element = lambda_value is None
        if per_element:
            from pygpu.gpuarray import max as device_max
            from pygpu.gpuarray import min as device_min

            highest, lowest = float(device_max(data, stream).get()), float(device_min(data, stream).get())
            if not (0 <= lowest and highest <= _MAX_POISSON_MEAN):
                raise ValueError(
                    f"fill_poisson: the element means lie in [{lowest}, {highest}]; they must lie "
                    f"in [0, {_MAX_POISSON_MEAN}]"
                )
        elif not 0 <= _real(lambda_value, "fill_poisson's lambda_value") <= _MAX_POISSON_MEAN:
            raise ValueError(f"fill_poisson: lambda_value must lie in [0, {_MAX_POISSON_MEAN}], not {lambda_value}")
        target = data if data.flags.c_contiguous else data.copy(stream)
        f = _bundled.function(_SOURCE, f"philox_poisson_{data.dtype.name}", "PqQQdi")
        _bundled.read_on(stream, target)
        _bundled.launch(
            f,
            _bundled.grid_for(data.size),
            _bundled.BLOCK,
            stream,
            target.ptr,
            data.size,
            self.seed,
            self.offset & (2**64 - 1),
            0.0 if per_element else float(lambda_value),  # type: ignore[arg-type]
            int(per_element),
            keep=(target,) if target is not data else (),
        )
        target._order.wrote(stream)
        if target is not data:
            copy_into(data, target, stream)
        self._advance(data.size)

    def gen_poisson(self, shape: Any, dtype: Any, lambda_value: float, stream: Any = None) -> GPUArray:
        """A new array of Poisson numbers of mean ``lambda_value`` (a number: a new array holds no
        per-element means; for those, fill_poisson(data) with the means in data)."""
        if lambda_value is None:
            raise TypeError(
                "gen_poisson needs a lambda_value (the mean): a new array has no per-element means to use; "
                "for those, call fill_poisson(data) on an array holding them"
            )
        _real(lambda_value, "gen_poisson's lambda_value")
        result = empty(shape, dtype)
        self.fill_poisson(result, lambda_value, stream)
        return result


class XORWOWRandomNumberGenerator(PhiloxRandomNumberGenerator):
    """PyCUDA's XORWOW generator's interface, on Philox4x32-10 (other numbers than cuRAND's)."""


class MRG32k3aRandomNumberGenerator(PhiloxRandomNumberGenerator):
    """PyCUDA's MRG32k3a generator's interface, on Philox4x32-10 (other numbers than cuRAND's)."""


class _SobolNamed(PhiloxRandomNumberGenerator):
    # PyCUDA's Sobol classes take direction (and scramble) vectors, not seeds: accepted and
    # unused, with a fixed seed so that a generator built the same way repeats its numbers.
    def __init__(self, dir_vector: Any = None, offset: int = 0, *args: Any, **kwargs: Any) -> None:
        super().__init__(offset=kwargs.pop("offset", offset), seed=0x50B01)


class Sobol32RandomNumberGenerator(_SobolNamed):
    """PyCUDA's Sobol32 interface; pseudo-random Philox numbers, not a Sobol sequence."""


class ScrambledSobol32RandomNumberGenerator(_SobolNamed):
    """PyCUDA's scrambled Sobol32 interface; pseudo-random Philox numbers, not a Sobol sequence."""


class Sobol64RandomNumberGenerator(_SobolNamed):
    """PyCUDA's Sobol64 interface; pseudo-random Philox numbers, not a Sobol sequence."""


class ScrambledSobol64RandomNumberGenerator(_SobolNamed):
    """PyCUDA's scrambled Sobol64 interface; pseudo-random Philox numbers, not a Sobol sequence."""
