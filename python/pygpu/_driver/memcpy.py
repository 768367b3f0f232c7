"""Pitched memory: ``mem_alloc_pitch``, the 2-D/3-D copies ``Memcpy2D``/``Memcpy3D`` and the 2-D
memsets, with PyCUDA's attribute names.

A copy is checked in full before any byte moves: the pitches must hold the width, and the last
byte touched must lie inside the host buffer or the ``DeviceAllocation`` (a plain integer address
is checked by the backend). The copy itself is the backend's: ``cuMemcpy2D``/``cuMemcpy3D`` on
CUDA, row by row with linear copies on HIP and the host backend.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import numpy.typing as npt

from pygpu._pygpu import (
    DeviceAllocation,
    cudaStream_t,
    mem_alloc,
    memcpy_pitched,
    memset_d8,
    memset_d16,
    memset_d32,
)

__all__ = [
    "Memcpy2D",
    "Memcpy3D",
    "mem_alloc_pitch",
    "memset_d2d8",
    "memset_d2d16",
    "memset_d2d32",
]

#: The pitch granularity of ``cuMemAllocPitch`` on current NVIDIA GPUs (a multiple of
#: ``TEXTURE_PITCH_ALIGNMENT``), which keeps every row aligned for coalesced access.
PITCH_ALIGNMENT = 512
#: ``CU_DEVICE_ATTRIBUTE_MAX_PITCH``: the largest pitch a copy or allocation may use.
MAX_PITCH = 2**31 - 1


def _count(name: str, value: Any) -> int:
    try:
        n = operator.index(value)
    except TypeError as e:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from e
    if n < 0:
        raise ValueError(f"{name} cannot be negative (got {n})")
    return n


def mem_alloc_pitch(width: int, height: int, access_size: int) -> tuple[DeviceAllocation, int]:
    """Allocates ``height`` rows of at least ``width`` bytes each, every row starting at a
    multiple of the pitch; returns ``(allocation, pitch)``. ``access_size`` (4, 8 or 16) is
    the size of the elements the kernels read, as in ``cuMemAllocPitch``."""
    width, height = _count("width", width), _count("height", height)
    if access_size not in (4, 8, 16):
        raise ValueError(f"access_size must be 4, 8 or 16 bytes (the element size kernels read), not {access_size!r}")
    if width == 0 or height == 0:
        raise ValueError(f"mem_alloc_pitch needs a positive width and height (got {width} x {height})")
    pitch = -(-width // PITCH_ALIGNMENT) * PITCH_ALIGNMENT
    if pitch > MAX_PITCH:
        raise ValueError(f"a row of {width} bytes exceeds the largest pitch a GPU allows ({MAX_PITCH} bytes)")
    return mem_alloc(pitch * height), pitch


def _memset_2d(dest: Any, pitch: int, value: int, width: int, height: int, size: int, stream: Any) -> None:
    pitch, width, height = _count("pitch", pitch), _count("width", width), _count("height", height)
    if width * size > pitch and height > 1:
        raise ValueError(f"a row of {width} elements of {size} bytes does not fit in the pitch of {pitch} bytes")
    if pitch % size:
        raise ValueError(f"the pitch ({pitch}) must be a multiple of the element size ({size})")
    fill = {1: memset_d8, 2: memset_d16, 4: memset_d32}[size]
    base = int(dest)
    if isinstance(dest, DeviceAllocation) and height and width:
        end = (height - 1) * pitch + width * size
        if end > dest.nbytes:
            raise ValueError(f"the {height} rows of pitch {pitch} need {end} bytes; the allocation has {dest.nbytes}")
    if pitch == width * size:
        fill(base, value, width * height, stream)
        return
    for row in range(height):
        fill(base + row * pitch, value, width, stream)


def memset_d2d8(dest: Any, pitch: int, value: int, width: int, height: int, stream: Any = None) -> None:
    """Sets ``width`` bytes of each of ``height`` rows, ``pitch`` bytes apart, to ``value``."""
    _memset_2d(dest, pitch, value, width, height, 1, stream)


def memset_d2d16(dest: Any, pitch: int, value: int, width: int, height: int, stream: Any = None) -> None:
    """Sets ``width`` 16-bit words of each of ``height`` rows, ``pitch`` bytes apart."""
    _memset_2d(dest, pitch, value, width, height, 2, stream)


def memset_d2d32(dest: Any, pitch: int, value: int, width: int, height: int, stream: Any = None) -> None:
    """Sets ``width`` 32-bit words of each of ``height`` rows, ``pitch`` bytes apart."""
    _memset_2d(dest, pitch, value, width, height, 4, stream)


class _Side:
    """One end of a copy: host bytes (a flat uint8 view of the caller's buffer) or a device address."""

    def __init__(self) -> None:
        self.host: npt.NDArray[np.uint8] | None = None
        self.device: int | None = None
        self.capacity: int | None = None

    def set_host(self, buffer: Any, writable: bool, what: str) -> None:
        try:
            view = memoryview(buffer)
        except TypeError as e:
            raise TypeError(f"{what}: expected a host buffer such as a numpy array, got {type(buffer).__name__}") from e
        if writable and view.readonly:
            raise ValueError(f"{what}: the destination host buffer is read-only")
        if not view.c_contiguous:
            raise ValueError(f"{what}: the host buffer must be C-contiguous: pass numpy.ascontiguousarray(a)")
        flat = np.frombuffer(view.cast("B"), dtype=np.uint8) if view.nbytes else np.empty(0, np.uint8)
        self.host, self.device, self.capacity = flat, None, view.nbytes

    def set_device(self, pointer: Any, what: str) -> None:
        if isinstance(pointer, DeviceAllocation):
            self.device, self.capacity = pointer.ptr, pointer.nbytes
        else:
            if isinstance(pointer, (float, complex)) or not hasattr(pointer, "__int__"):
                raise TypeError(
                    f"{what}: expected a device pointer (DeviceAllocation or int), got {type(pointer).__name__}"
                )
            self.device = int(pointer)
            if self.device < 0:
                raise ValueError(f"{what}: a device address cannot be negative")
            self.capacity = None
        self.host = None

    def spec(self, x: int, y: int, z: int, pitch: int, height: int) -> tuple[str, Any, int, int, int, int, int]:
        """The side as memcpy_pitched takes it."""
        target = self.host if self.host is not None else self.device
        return ("host" if self.host is not None else "device", target, x, y, z, pitch, height)

    def kind(self, what: str) -> str:
        if self.host is not None:
            return "host"
        if self.device is not None:
            return "device"
        raise ValueError(f"{what} was not set: call set_{what}_host or set_{what}_device first")


def _array_unsupported(*_args: Any) -> None:
    """CUDA arrays (``pycuda.driver.Array``) are not supported: raises NotImplementedError (copy
    to linear device memory with ``set_src_device``/``set_dst_device`` instead)."""
    raise NotImplementedError(
        "CUDA arrays (pycuda.driver.Array) are not supported by pygpu: copy to linear device memory "
        "(set_src_device/set_dst_device with mem_alloc or mem_alloc_pitch) instead"
    )


class _PitchedCopy:
    """What Memcpy2D and Memcpy3D share: the two sides, their offsets and pitches, the extent."""

    def __init__(self) -> None:
        self._src = _Side()
        self._dst = _Side()
        self.src_x_in_bytes = 0
        self.src_y = 0
        self.src_pitch = 0
        self.dst_x_in_bytes = 0
        self.dst_y = 0
        self.dst_pitch = 0
        self.width_in_bytes = 0
        self.height = 0

    def set_src_host(self, buffer: Any) -> None:
        """Copies from a host buffer (a numpy array or anything exporting the buffer protocol)."""
        self._src.set_host(buffer, False, "src")

    def set_src_device(self, pointer: Any) -> None:
        """Copies from device memory: a DeviceAllocation or an address."""
        self._src.set_device(pointer, "src")

    def set_src_unified(self, pointer: Any) -> None:
        """A unified (managed or device) address: treated as device memory."""
        self._src.set_device(pointer, "src")

    def set_dst_host(self, buffer: Any) -> None:
        """Copies into a writable host buffer (a numpy array or anything exporting the buffer protocol)."""
        self._dst.set_host(buffer, True, "dst")

    def set_dst_device(self, pointer: Any) -> None:
        """Copies into device memory: a DeviceAllocation or an address."""
        self._dst.set_device(pointer, "dst")

    def set_dst_unified(self, pointer: Any) -> None:
        """A unified (managed or device) address: treated as device memory."""
        self._dst.set_device(pointer, "dst")

    set_src_array = _array_unsupported
    set_dst_array = _array_unsupported

    def _run(self, depth: int, src: tuple[int, int], dst: tuple[int, int], stream: cudaStream_t | None) -> None:
        """Copies ``depth`` slices; ``src``/``dst`` are (first slice, rows per slice)."""
        width = _count("width_in_bytes", self.width_in_bytes)
        height = _count("height", self.height)
        depth = _count("depth", depth)
        self._src.kind("src")
        self._dst.kind("dst")
        (src_z, src_height), (dst_z, dst_height) = src, dst
        src_rows = self._rows("src", self._src, self.src_x_in_bytes, self.src_y, self.src_pitch, src_height, src_z)
        dst_rows = self._rows("dst", self._dst, self.dst_x_in_bytes, self.dst_y, self.dst_pitch, dst_height, dst_z)
        if width == 0 or height == 0 or depth == 0:
            return
        for name, side, (first, pitch, slab) in (("src", self._src, src_rows), ("dst", self._dst, dst_rows)):
            if pitch < width:
                raise ValueError(f"{name}_pitch ({pitch}) is smaller than width_in_bytes ({width}): set {name}_pitch")
            if depth > 1 and slab < height * pitch:
                raise ValueError(f"{name}_height must be at least height ({height}) for a copy of depth {depth}")
            if pitch > MAX_PITCH:
                raise ValueError(f"{name}_pitch ({pitch}) exceeds the largest pitch a GPU allows ({MAX_PITCH})")
            end = first + (depth - 1) * slab + (height - 1) * pitch + width
            if side.capacity is not None and end > side.capacity:
                raise ValueError(
                    f"the copy reaches byte {end} of the {name} buffer, which has {side.capacity} bytes: "
                    f"check {name}_x_in_bytes, {name}_y, {name}_pitch, width_in_bytes, height"
                )
        memcpy_pitched(
            self._dst.spec(self.dst_x_in_bytes, self.dst_y, dst_z, dst_rows[1], dst_height),
            self._src.spec(self.src_x_in_bytes, self.src_y, src_z, src_rows[1], src_height),
            width,
            height,
            depth,
            stream,
        )

    @staticmethod
    def _rows(name: str, side: _Side, x: int, y: int, pitch: int, slab_height: int, z: int) -> tuple[int, int, int]:
        """(offset of the first byte, pitch, bytes between slices)."""
        x, y, z = _count(f"{name}_x_in_bytes", x), _count(f"{name}_y", y), _count(f"{name}_z", z)
        pitch, slab_height = _count(f"{name}_pitch", pitch), _count(f"{name}_height", slab_height)
        slab = pitch * slab_height
        return x + y * pitch + z * slab, pitch, slab


def _stream_argument(stream: Any, what: str) -> cudaStream_t | None:
    if stream is None or isinstance(stream, bool):
        return None
    if not isinstance(stream, cudaStream_t):
        raise TypeError(f"{what}: expected a Stream (or aligned=True/False), got {type(stream).__name__}")
    return stream


class Memcpy2D(_PitchedCopy):
    """A 2-D copy of ``height`` rows of ``width_in_bytes`` bytes between host and device memory
    (``cuMemcpy2D``). Set a source and a destination with ``set_src_host``/``set_src_device`` and
    ``set_dst_host``/``set_dst_device``, their offsets (``src_x_in_bytes``, ``src_y``) and pitches
    (``src_pitch``, ``dst_pitch``), then call it: ``copy()``, ``copy(aligned=False)`` or, on a stream,
    ``copy(stream)``."""

    def __call__(self, stream: Any = None, aligned: bool = True) -> None:
        # aligned=False only allows a slower path on a GPU for misaligned device-to-device
        # copies; the copies here are correct either way.
        del aligned
        self._run(1, (0, 0), (0, 0), _stream_argument(stream, "Memcpy2D"))


class Memcpy3D(_PitchedCopy):
    """A 3-D copy of ``depth`` slices of ``height`` rows of ``width_in_bytes`` bytes
    (``cuMemcpy3D``): as Memcpy2D, plus ``src_z``/``dst_z`` (the first slice) and
    ``src_height``/``dst_height`` (rows per slice in each buffer; 0 means ``height``). ``src_lod``/``dst_lod``
    (mipmap levels of CUDA arrays) must stay 0."""

    def __init__(self) -> None:
        super().__init__()
        self.src_z = 0
        self.src_lod = 0
        self.src_height = 0
        self.dst_z = 0
        self.dst_lod = 0
        self.dst_height = 0
        self.depth = 0

    def __call__(self, stream: Any = None) -> None:
        if self.src_lod or self.dst_lod:
            raise ValueError(
                "src_lod/dst_lod select mipmap levels of CUDA arrays, which pygpu does not have: set them to 0"
            )
        height = _count("height", self.height)
        src_height = _count("src_height", self.src_height) or height
        dst_height = _count("dst_height", self.dst_height) or height
        self._run(self.depth, (self.src_z, src_height), (self.dst_z, dst_height), _stream_argument(stream, "Memcpy3D"))
