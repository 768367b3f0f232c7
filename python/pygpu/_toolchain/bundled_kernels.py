"""The kernels that ship with pygpu (kernels/*.cu, built by kernels/build.sh), loaded for
the active backend."""

from __future__ import annotations

import functools
import os

from pygpu._driver.capability import device_capability
from pygpu._pygpu import Module, backend
from pygpu.errors import CudaError

# The package folder (this file is in pygpu/_toolchain/): the wheel ships the kernels there.
KERNELS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels")

_FATBIN_MAGIC = 0xBA55ED50
_FATBIN_ELF = 2  # an entry's kind: 1 is PTX, 2 a cubin


def native_cubin(fatbin: bytes, capability: tuple[int, int]) -> bytes | None:
    """The cubin of ``fatbin`` that runs natively on a GPU of ``capability``: sm_XY of the same
    major X with the highest Y up to the GPU's minor (a cubin runs on later minors of its major).
    None when there is none, or only a compressed one, which the driver alone unpacks.

    Why: the driver's load time follows the size of what it is given, not of the image it
    picks: on an H100, arith_f64's fatbin (sm_80 + sm_90 cubins) loaded in 0.88 ms, its sm_90
    cubin alone in 0.43 (bench/module_load.py), and that load is most of an operation's first
    call. The layout: a 16-byte header (magic, version, header size, size of the entries), then
    entries of a header (kind, version, header size, padded payload size, ..., the architecture
    as 10 * major + minor at byte 28) and a payload."""
    if len(fatbin) < 16 or int.from_bytes(fatbin[:4], "little") != _FATBIN_MAGIC:
        return None
    at = int.from_bytes(fatbin[6:8], "little")
    end = min(len(fatbin), at + int.from_bytes(fatbin[8:16], "little"))
    best: tuple[int, bytes] | None = None
    while at + 32 <= end:
        kind = int.from_bytes(fatbin[at : at + 2], "little")
        header = int.from_bytes(fatbin[at + 4 : at + 8], "little")
        payload = int.from_bytes(fatbin[at + 8 : at + 16], "little")
        arch = int.from_bytes(fatbin[at + 28 : at + 32], "little")
        if header < 32 or at + header + payload > end:
            return None  # not a layout this reads, or cut short: the driver's to judge
        image = fatbin[at + header : at + header + payload]
        runs_here = arch // 10 == capability[0] and arch % 10 <= capability[1]
        if kind == _FATBIN_ELF and runs_here and image[:4] == b"\x7fELF" and (best is None or arch > best[0]):
            best = (arch, image)
        at += header + payload
    return None if best is None else best[1]


def kernel_files(name: str) -> list[str]:
    """The bundled code objects for kernel source ``name``, best first, for this backend."""
    return [os.path.join(KERNELS_DIR, pattern.format(name)) for pattern in _KERNEL_FILES[backend()]]


# The bundled binaries' names by backend, best first: kernels/build.sh names them so. On cuda the
# fatbin has native sm_80/sm_90 code but needs a CUDA 13 driver; the PTX (ISA 8.0, compute_70)
# loads on any CUDA 12 or 13 driver and GPU.
_KERNEL_FILES = {"cuda": ("{}.fatbin", "{}.ptx"), "hip": ("{}.hsaco",), "host": ("lib{}.so",)}


def load_kernels(name: str) -> Module:
    """Loads bundled kernel source ``name`` (e.g. "burgers") for the active backend; its
    kernels know their parameters (``Function.parameters``) from the embedded source."""
    module = _load_kernels(name)
    module._set_declarations(functools.partial(_bundled_declaration, name))
    return module


def _bundled_declaration(module: str, kernel: str) -> object:
    from pygpu._toolchain import bundled_sources

    return bundled_sources.declaration(module, kernel)


def _load_kernels(name: str) -> Module:
    files = [f for f in kernel_files(name) if os.path.isfile(f)]
    if not files:
        # No prebuilt binary in this install (pip install from source, or a backend the wheel
        # was not built for): build it from the source embedded in the compiled module.
        from pygpu._toolchain import bundled_sources

        if bundled_sources.has_source(name):
            return Module(bundled_sources.build(name))
        names = os.listdir(KERNELS_DIR) if os.path.isdir(KERNELS_DIR) else []
        prebuilt = {n.split(".")[0].removeprefix("lib") for n in names if "." in n and n != "BUILD_INFO.txt"}
        available = sorted(prebuilt | set(bundled_sources.source_names()))
        raise FileNotFoundError(
            f"no bundled kernels named {name!r} for the {backend()} backend (available: {', '.join(available)})"
        )
    failures: list[CudaError] = []
    for path in files:
        try:
            if path.endswith(".fatbin"):
                with open(path, "rb") as f:
                    fatbin = f.read()
                # The device's own cubin where the fatbin has one, else the whole fatbin.
                return Module(native_cubin(fatbin, device_capability()) or fatbin)
            return Module.from_file(path)
        except CudaError as e:  # e.g. a CUDA 12 driver cannot read nvcc 13's cubins
            e.add_note(f"while loading {path}")
            failures.append(e)
    for earlier in failures[:-1]:
        failures[-1].add_note(f"also tried: {earlier}")
    raise failures[-1]
