"""Finding and loading libnccl at run time, for ``pygpu.nccl``: nothing is linked at build
time, so pygpu installs and imports without NCCL.

Searched in order: ``PYGPU_NCCL_LIBRARY`` (a path), the ``nvidia-nccl-cu13`` /
``nvidia-nccl-cu12`` wheels on ``sys.path`` (both install ``nvidia/nccl/lib/libnccl.so.2``),
then the system's loader (``libnccl.so.2``, as from Debian's or NVIDIA's packages). The
C signatures are NCCL 2's (nccl.h), stable since 2.0 except where noted.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from pygpu.errors import NcclUnavailableError

__all__ = [
    "ConfigStruct",
    "UNIQUE_ID_BYTES",
    "UniqueIdStruct",
    "library",
    "search_paths",
]

#: sizeof(ncclUniqueId): NCCL_UNIQUE_ID_BYTES.
UNIQUE_ID_BYTES = 128

_SONAME = "libnccl.so.2"


class UniqueIdStruct(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class ConfigStruct(ctypes.Structure):
    """The leading fields of ncclConfig_t (NCCL >= 2.14). NCCL copies as many bytes as ``size``
    says and keeps its defaults for the fields after them, so this prefix is a whole config."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", ctypes.c_uint),
        ("version", ctypes.c_uint),
        ("blocking", ctypes.c_int),
    ]

    @classmethod
    def non_blocking(cls) -> ConfigStruct:
        # NCCL_CONFIG_INITIALIZER's magic; version NCCL_VERSION(2, 14, 0), the first with `blocking`.
        return cls(ctypes.sizeof(cls), 0xCAFEBEEF, 21400, 0)


def search_paths() -> list[str]:
    """The candidate files, most specific first (the system's loader is tried after these)."""
    paths = []
    explicit = os.environ.get("PYGPU_NCCL_LIBRARY")
    if explicit:
        paths.append(explicit)
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "nvidia", "nccl", "lib", _SONAME)
        if os.path.isfile(candidate):
            paths.append(candidate)
    return paths


_loaded: list[Any] = []


def library() -> Any:
    """libnccl with its signatures declared, loaded once per process."""
    if _loaded:
        return _loaded[0]
    tried = []
    lib = None
    for path in [*search_paths(), _SONAME]:
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append(f"{path}: {e}")
    if lib is None:
        raise NcclUnavailableError(
            "pygpu.nccl needs NCCL, which was not found: pip install nvidia-nccl-cu13 (CUDA 13 driver) or "
            "nvidia-nccl-cu12, or install the system's libnccl2, or set PYGPU_NCCL_LIBRARY to libnccl.so.2. "
            "Tried: " + "; ".join(tried)
        )
    _declare(lib)
    _loaded.append(lib)
    return lib


def _declare(lib: Any) -> None:
    c_int, c_size_t, c_void_p, c_char_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p
    comm_p = ctypes.POINTER(c_void_p)
    signatures: dict[str, list[Any]] = {
        "ncclGetVersion": [ctypes.POINTER(c_int)],
        "ncclGetUniqueId": [ctypes.POINTER(UniqueIdStruct)],
        "ncclCommInitRank": [comm_p, c_int, UniqueIdStruct, c_int],
        "ncclCommInitAll": [comm_p, c_int, ctypes.POINTER(c_int)],
        "ncclCommDestroy": [c_void_p],
        "ncclCommAbort": [c_void_p],
        "ncclCommCount": [c_void_p, ctypes.POINTER(c_int)],
        "ncclCommCuDevice": [c_void_p, ctypes.POINTER(c_int)],
        "ncclCommUserRank": [c_void_p, ctypes.POINTER(c_int)],
        "ncclCommGetAsyncError": [c_void_p, ctypes.POINTER(c_int)],
        "ncclAllReduce": [c_void_p, c_void_p, c_size_t, c_int, c_int, c_void_p, c_void_p],
        "ncclBroadcast": [c_void_p, c_void_p, c_size_t, c_int, c_int, c_void_p, c_void_p],
        "ncclReduce": [c_void_p, c_void_p, c_size_t, c_int, c_int, c_int, c_void_p, c_void_p],
        "ncclAllGather": [c_void_p, c_void_p, c_size_t, c_int, c_void_p, c_void_p],
        "ncclReduceScatter": [c_void_p, c_void_p, c_size_t, c_int, c_int, c_void_p, c_void_p],
        "ncclSend": [c_void_p, c_size_t, c_int, c_int, c_void_p, c_void_p],
        "ncclRecv": [c_void_p, c_size_t, c_int, c_int, c_void_p, c_void_p],
        "ncclGroupStart": [],
        "ncclGroupEnd": [],
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = c_int
    lib.ncclGetErrorString.argtypes = [c_int]
    lib.ncclGetErrorString.restype = c_char_p
    # ncclGetLastError exists from NCCL 2.13: the detail of the last failure.
    if hasattr(lib, "ncclGetLastError"):
        lib.ncclGetLastError.argtypes = [c_void_p]
        lib.ncclGetLastError.restype = c_char_p
    # From NCCL 2.14: communicators whose calls return ncclInProgress instead of blocking.
    since_2_14: dict[str, list[Any]] = {
        "ncclCommInitRankConfig": [comm_p, c_int, UniqueIdStruct, c_int, ctypes.POINTER(ConfigStruct)],
        "ncclCommFinalize": [c_void_p],
    }
    for name, argtypes in since_2_14.items():
        if hasattr(lib, name):
            getattr(lib, name).argtypes = argtypes
            getattr(lib, name).restype = c_int
