"""Which bundled module file holds each kernel of the sources that are split by dtype.

kernels/arith.cu, cast.cu, cumath.cu and reduce.cu instantiate one kernel per operation and dtype
(hundreds each). Built whole, arith's fatbin was 4.3 MB and reduce's 5.6 MB, and a first ``a + b``
or ``gpuarray.sum`` paid for loading all of it (9.9 ms over a warm call on an H100). They are built
instead as one module per dtype ("part"): ``arith_f64`` holds every arith kernel whose name ends
in ``_f64``, so a first call loads one module of a few hundred KB (685 KB at most), and only the
dtypes a program uses.

This table is the one definition of the parts: kernels/build.sh and kernels/selfcheck.py run this
file as a script (standard library only, no pygpu import) and ``pygpu.gpuarray._bundled`` maps kernel
names to module names through ``module_name``.
"""

from __future__ import annotations

import sys

__all__ = ["PARTS", "module_name", "part_source"]

_SHORT = ("b1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64", "c64", "c128")
_NUMPY = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
#: source -> {part: the kernel-name suffixes (after the last "_") that module <source>_<part> holds}.
#: A source not listed here is built and loaded whole. Every part costs a compiler run per
#: backend and about 20 KB of the wheel (deflate finds less to share in small files), so the
#: dtypes a first call most often uses get their own part and the rarer ones share one.
PARTS: dict[str, dict[str, tuple[str, ...]]] = {
    "arith": {s: (s,) for s in _SHORT},
    # cast_<from>_<to> by target dtype; the five copy_x<bytes> kernels (copies, fills) together.
    "cast": {
        "b1": ("b1",),
        "int8_16": ("i8", "u8", "i16", "u16"),
        "int32": ("i32", "u32"),
        "int64": ("i64", "u64"),
        "f16": ("f16",),
        "f32": ("f32",),
        "f64": ("f64",),
        "complex": ("c64", "c128"),
        "copy": ("x1", "x2", "x4", "x8", "x16"),
    },
    # Only fmod exists for integers: one small module for all of them.
    "cumath": {**{s: (s,) for s in ("f16", "f32", "f64", "c64", "c128")}, "int": _SHORT[1:9]},
    # reduce_<op>_<dtype>[_<result dtype>] by its last dtype (the result's where there is one).
    # Each is large (bool's any/all also serve every 1-byte dtype): no two share a module. The
    # float ones, the most used, are split once more: sum and dot (whose second stage is a sum)
    # apart from min, max, any and all, so that a first sum or max loads half as much.
    "reduce": {
        **{s: (s,) for s in _NUMPY},
        **{f"{s}_cmp": tuple(f"{op}_{s}" for op in ("min", "max", "any", "all")) for s in ("float32", "float64")},
    },
}

_PART_OF = {
    source: {suffix: part for part, suffixes in parts.items() for suffix in suffixes} for source, parts in PARTS.items()
}


def module_name(source: str, kernel: str) -> str | None:
    """The module that holds ``kernel`` of kernels/<source>.cu: ``source`` itself when the source
    is not split, else ``<source>_<part>``; None when no part holds that suffix (no such kernel).
    The part's key is the name's last "_" suffix, or ``<operation>_<suffix>`` (the name's second
    word, e.g. ``max_float64`` for ``reduce_max_float64``) where a part lists that."""
    parts = _PART_OF.get(source)
    if parts is None:
        return source
    words = kernel.split("_")
    part = parts.get(f"{words[1]}_{words[-1]}") if len(words) > 2 else None
    part = part or parts.get(words[-1])
    return None if part is None else f"{source}_{part}"


def part_source(module: str) -> str | None:
    """The C++ source of part ``module`` (e.g. ``arith_f64``): kernels/<source>.cu with only that
    part's kernels kept (kernels/pygpu_parts.h); None when ``module`` is not a part."""
    source, _, part = module.partition("_")
    suffixes = PARTS.get(source, {}).get(part)
    if suffixes is None:
        return None
    lines = [
        f"// Generated: the {module} part of {source}.cu (python/pygpu/_toolchain/kernel_parts.py).",
        "#define PYGPU_PARTS",
    ]
    lines += [f"#define PYGPU_PART_{suffix} ~, 1" for suffix in suffixes]
    lines.append(f'#include "{source}.cu"')
    return "\n".join(lines) + "\n"


def _main(argv: list[str]) -> int:
    """``python3 kernel_parts.py SOURCE``: one line per module of SOURCE, ``<module> <suffix>...``
    (just ``SOURCE`` when it is not split); ``--part MODULE``: that part's source."""
    if len(argv) == 2 and argv[0] == "--part":
        text = part_source(argv[1])
        if text is None:
            print(f"kernel_parts.py: {argv[1]} is not a part", file=sys.stderr)
            return 2
        print(text, end="")
        return 0
    if len(argv) != 1:
        print("usage: kernel_parts.py SOURCE | --part MODULE", file=sys.stderr)
        return 2
    source = argv[0]
    for part, suffixes in PARTS.get(source, {}).items():
        print(f"{source}_{part}", *suffixes)
    if source not in PARTS:
        print(source)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
