"""The kernels that ship with pygpu (kernels/*.cu, built by kernels/build.sh), loaded for
the active backend."""

from __future__ import annotations

import os

from pygpu._pygpu import CudaError, Module, backend

KERNELS_DIR = os.path.join(os.path.dirname(__file__), "kernels")


def kernel_files(name: str) -> list[str]:
    """The bundled code objects for kernel source ``name``, best first, for this backend."""
    kind = backend()
    if kind == "host":
        candidates = [f"lib{name}.so"]
    elif kind == "hip":
        candidates = [f"{name}.hsaco"]
    else:
        # The fatbin has native sm_80/sm_90 code but needs a CUDA 13 driver; the PTX
        # (ISA 8.0, compute_70) loads on any CUDA 12 or 13 driver and GPU.
        candidates = [f"{name}.fatbin", f"{name}.ptx"]
    return [os.path.join(KERNELS_DIR, c) for c in candidates]


def load_kernels(name: str) -> Module:
    """Loads bundled kernel source ``name`` (e.g. "burgers") for the active backend."""
    files = [f for f in kernel_files(name) if os.path.isfile(f)]
    if not files:
        # No prebuilt binary in this install (pip install from source, or a backend the wheel
        # was not built for): build it from the source embedded in the compiled module.
        from pygpu import _bundled_sources

        if _bundled_sources.has_source(name):
            return Module(_bundled_sources.build(name))
        names = os.listdir(KERNELS_DIR) if os.path.isdir(KERNELS_DIR) else []
        prebuilt = {n.split(".")[0].removeprefix("lib") for n in names if "." in n and n != "BUILD_INFO.txt"}
        available = sorted(prebuilt | set(_bundled_sources.source_names()))
        raise FileNotFoundError(
            f"no bundled kernels named {name!r} for the {backend()} backend (available: {', '.join(available)})"
        )
    failures: list[CudaError] = []
    for path in files:
        try:
            return Module.from_file(path)
        except CudaError as e:  # e.g. a CUDA 12 driver cannot read the fatbin's PTX 9.0
            e.add_note(f"while loading {path}")
            failures.append(e)
    for earlier in failures[:-1]:
        failures[-1].add_note(f"also tried: {earlier}")
    raise failures[-1]
