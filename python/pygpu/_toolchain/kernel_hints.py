"""Why ``get_function(name)`` finds no kernel ``name`` in a module compiled from a source, said
in words the user can act on: the kernel is a template (no instance of it has that name), has
C++ linkage (its name in the module is mangled), or lives in a namespace; or the source has no
``__global__`` function of that name at all (then the ones it has are listed).

Read from the source text (comments and strings removed), so it works on every backend and
costs nothing until a lookup has failed. ``missing_kernel_hint`` is what callers use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["missing_kernel_hint"]

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
# Tokens that open and close scopes, and the ones that name what a scope is.
_SCOPE = re.compile(r'\bnamespace\s+([A-Za-z_][\w:]*)?\s*\{|\bextern\s*"C"\s*\{|\{|\}')
_KERNEL = re.compile(r"\b__global__\b[^;{}()]*?\b([A-Za-z_]\w*)\s*\(")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^()]*\)")
_TEMPLATE_HEAD = re.compile(r"\btemplate\s*<(?:[^<>]|<[^<>]*>)*>\s*(?:[A-Za-z_]\w*\s+)*$")


@dataclass
class _Kernel:
    name: str
    namespaces: list[str]
    c_linkage: bool
    template: bool


def _blank_comments_and_strings(source: str) -> str:
    # Strings become "" (an extern "C" keeps its quotes), comments spaces: positions stay.
    def blank(m: re.Match[str]) -> str:
        text = m.group(0)
        if text == '"C"':
            return text
        return " " * len(text)

    text = _COMMENT_OR_STRING.sub(blank, source)
    return _LAUNCH_BOUNDS.sub(lambda m: " " * len(m.group(0)), text)


def _kernels(source: str, no_extern_c: bool) -> list[_Kernel]:
    """The ``__global__`` functions of the source, with their namespaces and linkage."""
    text = _blank_comments_and_strings(source)
    events = sorted(
        [(m.start(), "scope", m) for m in _SCOPE.finditer(text)]
        + [(m.start(), "kernel", m) for m in _KERNEL.finditer(text)],
        key=lambda e: e[0],
    )
    # Each open scope: ("namespace", name), ("extern-c", "") or ("block", "").
    stack: list[tuple[str, str]] = []
    found: list[_Kernel] = []
    for start, kind, m in events:
        if kind == "kernel":
            head = text[max(0, start - 400) : start]
            template = _TEMPLATE_HEAD.search(head) is not None
            c_linkage = (not no_extern_c) or any(k == "extern-c" for k, _ in stack)
            c_linkage = c_linkage or re.search(r'extern\s*"C"\s*(?:[A-Za-z_]\w*\s+)*$', head) is not None
            namespaces = [n for k, n in stack if k == "namespace"]
            found.append(_Kernel(m.group(1), namespaces, c_linkage, template))
            continue
        token = m.group(0)
        if token == "}":
            if stack:
                stack.pop()
        elif token.startswith("namespace"):
            stack.append(("namespace", m.group(1) or "(anonymous)"))
        elif token.startswith("extern"):
            stack.append(("extern-c", ""))
        else:
            stack.append(("block", ""))
    return found


def missing_kernel_hint(source: str, name: str, no_extern_c: bool) -> str | None:
    """Why a module compiled from ``source`` (with ``no_extern_c`` as given to SourceModule)
    has no kernel named ``name``, or None when the source says nothing about it (the caller
    keeps its own message)."""
    kernels = _kernels(source, no_extern_c)
    short = name.rsplit("::", 1)[-1]
    same = [k for k in kernels if k.name == short]
    if not same:
        names = sorted({"::".join([*k.namespaces, k.name]) for k in kernels})
        listed = ", ".join(names) if names else "none"
        return f"the source defines no __global__ function named {name!r} (its kernels: {listed})"
    k = same[0]
    qualified = "::".join([*k.namespaces, k.name])
    if k.template:
        return (
            f"kernel {name!r} is a template: a module holds only its instances, under C++ mangled names. "
            f"Instantiate it (e.g. `template __global__ void {k.name}<float>(float *);`), compile with "
            'no_extern_c=True and look the instance up by its mangled name; or add an extern "C" '
            f"kernel that calls {k.name}<...> and look that one up"
        )
    if not k.c_linkage:
        where = f" in namespace {'::'.join(k.namespaces)}" if k.namespaces else ""
        return (
            f"kernel {qualified!r} is declared{where} with C++ linkage (no_extern_c=True), so its name in "
            f'the module is mangled: declare it extern "C" to look it up as {k.name!r}, or look it up by '
            "its mangled name"
        )
    if k.namespaces and name != k.name:
        return f"kernel {qualified!r} has C linkage: its name in the module is {k.name!r}, without the namespace"
    return None
