"""What differs between pygpu's backends, as far as GPUArray is concerned, in one place:
the rest of the package asks ``platform()`` instead of testing the backend's name."""

from __future__ import annotations

from typing import NamedTuple

from pygpu._pygpu import backend as _backend_name

__all__ = ["KDL_CPU", "KDL_CUDA", "KDL_CUDA_HOST", "KDL_ROCM", "KDL_ROCM_HOST", "Platform", "platform"]

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ROCM, KDL_ROCM_HOST = 1, 2, 3, 10, 11


class Platform(NamedTuple):
    #: 'cuda', 'hip' or 'host'.
    name: str
    #: Device memory is ordinary host memory (numpy can view it, DLPack calls it kDLCPU).
    host_memory: bool
    #: The DLPack device type of device memory.
    dlpack_device_type: int
    #: DLPack device types of host memory that this backend can use without a copy.
    dlpack_host_types: tuple[int, ...]
    #: The consumer stream a DLPack ``stream=None`` means (the default stream's handle).
    dlpack_default_stream: int
    #: The stream number the CUDA Array Interface uses for the default stream, or None
    #: when the interface cannot name it (HIP's null stream is 0, which it forbids).
    cai_default_stream: int | None
    #: Whether the CUDA Array Interface is offered at all.
    cuda_array_interface: bool


_PLATFORMS = {
    "cuda": Platform("cuda", False, KDL_CUDA, (), 1, 1, True),
    "hip": Platform("hip", False, KDL_ROCM, (), 0, None, True),
    "host": Platform("host", True, KDL_CPU, (KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST), 0, None, False),
}
_current: list[Platform] = []


def platform() -> Platform:
    """The active backend's platform (starts the backend on first use)."""
    if _current:
        return _current[0]
    p = _PLATFORMS[_backend_name()]
    _current.append(p)
    return p
