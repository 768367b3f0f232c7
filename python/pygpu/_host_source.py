"""Turns a CUDA C source into one that g++ builds for the host backend (with
``-include pygpu_kernel.h``, see kernels/README.md, "Compiling CUDA C for the host").

The header makes almost all of CUDA C build as it is; this module does the two things a header
cannot: it spells ``extern __shared__ T name[];`` (memory sized at launch, which no C++
declaration can name) as ``PYGPU_DYNAMIC_SHARED(T, name);``, and it appends the
``PYGPU_EXPORT`` lines that make the ``__global__`` functions launchable and the ``__device__``
/ ``__constant__`` variables findable by name.
"""

from __future__ import annotations

import os
import re

__all__ = ["INCLUDE_DIR", "host_source"]

INCLUDE_DIR = os.path.join(os.path.dirname(__file__), "include")
"""The folder holding pygpu_kernel.h and pygpu_host/ (pass it to g++ with -I)."""

_ALIGN = r"__align__\s*\((?:[^()]|\([^()]*\))*\)"
_DYNAMIC_SHARED = re.compile(
    rf"\bextern\s+(?:{_ALIGN}\s*)?__shared__\s+(?:{_ALIGN}\s*)?(?P<type>[^;\[\]]*?)\s*(?:{_ALIGN}\s*)?"
    rf"(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;"
)
# A __global__ function that is not a template: `__global__ void name(` with extern "C",
# __launch_bounds__(...) and the like in any order.
_KERNEL = re.compile(
    r"(?<![\w>])__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?P<name>[A-Za-z_]\w*)\s*\("
)
_TEMPLATE_KERNEL = re.compile(r"template\s*<[^{;]*>\s*(?:extern\s+\"C\"\s*)?__global__")
_GLOBAL_VARIABLE = re.compile(
    r"^[ \t]*(?:extern\s+\"C\"\s+)?(?:__device__|__constant__)\s+(?!.*\()[^;=]*?\b(?P<name>[A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=[^;]*)?;",
    re.MULTILINE,
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _kernel_names(code: str) -> list[str]:
    names: list[str] = []
    for match in _KERNEL.finditer(code):
        # A template's __global__ comes after `template <...>`: it has no single symbol to export.
        before = code[max(0, match.start() - 300) : match.start() + len("__global__")]
        if _TEMPLATE_KERNEL.search(before) and before.rstrip().endswith("__global__"):
            continue
        if match["name"] not in names:
            names.append(match["name"])
    return names


def host_source(source: str) -> str:
    """``source`` rewritten for g++ with pygpu_kernel.h force-included: dynamic shared memory
    declarations spelt as the header wants them, then one PYGPU_EXPORT line per non-template
    ``__global__`` function and one PYGPU_EXPORT_GLOBAL line per namespace-scope ``__device__``
    or ``__constant__`` variable. Works with or without an ``extern "C" { }`` around the source."""
    rewritten = _DYNAMIC_SHARED.sub(lambda m: f"PYGPU_DYNAMIC_SHARED({m['type']}, {m['name']});", source)
    code = _COMMENT.sub(" ", rewritten)
    lines = [f"PYGPU_EXPORT({name})" for name in _kernel_names(code)]
    lines += [f"PYGPU_EXPORT_GLOBAL({m['name']})" for m in _GLOBAL_VARIABLE.finditer(code)]
    return rewritten + "\n// Added for the host backend:\n" + "\n".join(lines) + "\n"
