"""What a kernel's C declaration says about its parameters, read from the source text that
``SourceModule`` compiles (and the bundled kernels' sources), so that launches can check and
convert their arguments (``Function.parameters``, docs/kernel_signatures.md).

The source is read as a compiler's first steps would, but only as far as parameter lists need:
comments and preprocessor lines are dropped, object-like ``#define``s of the source are
expanded (reikna's ``KERNEL`` and ``GLOBAL_MEM``, for instance), ``typedef``/``using`` aliases of
the source are followed. A ``__global__`` function declared in an ``#include``d file, a
templated kernel, or a kernel declared twice with different parameters gets no declaration:
its launches are then checked by parameter size alone, where the backend knows the sizes.

A parameter is described to the compiled ``Function`` as a tuple
``(name, c_type, kind, size, align, pointee)``:

- ``kind``: ``"i"``/``"u"`` (signed/unsigned integer), ``"b"`` (bool), ``"f"`` (floating),
  ``"c"`` (complex), ``"V"`` (a struct or vector type passed by value; ``size`` 0 where the
  declaration does not give it), ``"P"`` (a pointer), ``"?"`` (a type this reader cannot size:
  a template parameter, ``long double``, ...);
- ``pointee`` (pointers only): ``(kind, size, lanes)`` of the element type, ``kind`` ``"*"``
  for ``void``/``char``/struct/unknown elements, which any array may stand for.
"""

from __future__ import annotations

import functools
import re

__all__ = ["Declaration", "declaration", "declarations", "kernel_base_name", "lookup"]

#: ``(name, c_type, kind, size, align, pointee)``, see the module docstring.
Declaration = tuple[str | None, str, str, int, int, tuple[str, int, int] | None]

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*)$", re.M)
_DIRECTIVE = re.compile(r"^[ \t]*#[^\n]*$", re.M)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_TYPEDEF = re.compile(r"\btypedef\s+([^;{}()\[\]]+?)\s+([A-Za-z_]\w*)\s*;")
_USING = re.compile(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([^;{}()\[\]]+?)\s*;")
_COMPLEX = re.compile(r"^(?:(?:\w+::)*)complex<(float|double)>$")
_VECTOR = re.compile(r"^(u?char|u?short|u?int|u?long|u?longlong|float|double)([1-4])$")

# Words that qualify a parameter's type without changing what the caller passes.
_QUALIFIERS = frozenset(
    "const volatile __restrict__ __restrict restrict register struct class union enum typename "
    "__grid_constant__ __align__".split()
)
# Words that may stand between __global__ and the kernel's name.
_DECLARATION_WORDS = frozenset(
    "void extern static inline __inline__ __forceinline__ __noinline__ __host__ __device__ "
    "__launch_bounds__ __maxnreg__ __cluster_dims__ __attribute__ __declspec".split()
)
# Integer, floating and other scalar spellings on LP64 platforms (Linux, where pygpu runs):
# (kind, size).
_SCALARS: dict[str, tuple[str, int]] = {
    "char": ("i", 1),
    "signed char": ("i", 1),
    "unsigned char": ("u", 1),
    "short": ("i", 2),
    "unsigned short": ("u", 2),
    "int": ("i", 4),
    "unsigned int": ("u", 4),
    "long": ("i", 8),
    "unsigned long": ("u", 8),
    "long long": ("i", 8),
    "unsigned long long": ("u", 8),
    "bool": ("b", 1),
    "float": ("f", 4),
    "double": ("f", 8),
    "half": ("f", 2),
    "__half": ("f", 2),
    "size_t": ("u", 8),
    "ssize_t": ("i", 8),
    "ptrdiff_t": ("i", 8),
    "intptr_t": ("i", 8),
    "uintptr_t": ("u", 8),
    "uint": ("u", 4),
    "ushort": ("u", 2),
    "ulong": ("u", 8),
    **{f"int{8 * n}_t": ("i", n) for n in (1, 2, 4, 8)},
    **{f"uint{8 * n}_t": ("u", n) for n in (1, 2, 4, 8)},
}
# CUDA's vector base names -> (kind, size) of one lane.
_VECTOR_BASES = {
    "char": ("i", 1),
    "uchar": ("u", 1),
    "short": ("i", 2),
    "ushort": ("u", 2),
    "int": ("i", 4),
    "uint": ("u", 4),
    "long": ("i", 8),
    "ulong": ("u", 8),
    "longlong": ("i", 8),
    "ulonglong": ("u", 8),
    "float": ("f", 4),
    "double": ("f", 8),
}
_INTEGER_WORDS = frozenset({"int", "char", "short", "long", "signed", "unsigned"})
# Element types any array may stand for: raw bytes and untyped memory.
_ANY_POINTEE = frozenset({"void", "char", "signed char", "unsigned char"})


def _strip(source: str) -> str:
    """The source without comments, with string literals blanked and continuation lines joined."""
    source = source.replace("\\\n", " ")
    source = _STRING.sub('""', source)
    return _COMMENT.sub(" ", source)


def _expand(text: str, macros: dict[str, str]) -> str:
    """Object-like macros expanded, a few rounds deep (a macro naming itself stops there)."""
    if not macros:
        return text
    for _ in range(8):
        changed = False

        def substitute(m: re.Match[str]) -> str:
            nonlocal changed
            word = m.group(0)
            replacement = macros.get(word)
            if replacement is None or replacement == word:
                return word
            changed = True
            return replacement

        text = _IDENTIFIER.sub(substitute, text)
        if not changed:
            break
    return text


def _aliases(text: str) -> dict[str, str]:
    """``typedef``s and ``using`` aliases of simple types (no function or array types)."""
    aliases = {name: target for target, name in _TYPEDEF.findall(text)}
    aliases.update(_USING.findall(text))
    return {name: " ".join(target.split()) for name, target in aliases.items() if name != target.split()[-1]}


def _closing(text: str, start: int, opening: str, closing: str) -> int:
    """The index of the bracket closing the one at ``start``, -1 when it is not closed."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_parameters(text: str) -> list[str]:
    """A parameter list split at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _canonical(words: list[str]) -> str:
    """``unsigned``/``signed``/``int`` spellings in one form: ``unsigned long int`` -> ``unsigned long``."""
    if not words or not set(words) <= {"unsigned", "signed", "short", "long", "int", "char"}:
        return " ".join(words)
    unsigned = "unsigned" in words
    core = [w for w in words if w not in ("unsigned", "signed")]
    if core != ["int"] and "int" in core:
        core.remove("int")
    base = " ".join(core) or "int"
    if base == "char" and "signed" in words:
        return "signed char"
    return f"unsigned {base}" if unsigned else base


def _resolve(words: list[str], aliases: dict[str, str], depth: int = 0) -> tuple[list[str], int]:
    """The type's words with aliases followed, and the pointer levels the aliases add."""
    name = " ".join(words)
    if len(words) == 1 and name in aliases and depth < 16:
        target = aliases[name]
        pointers = target.count("*")
        inner = [w for w in re.findall(r"[A-Za-z_][\w:<>]*|<[^>]*>", target.replace("*", " ")) if w not in _QUALIFIERS]
        resolved, more = _resolve(_joined(inner), aliases, depth + 1)
        return resolved, pointers + more
    return words, 0


def _joined(words: list[str]) -> list[str]:
    """Template arguments glued to their template's name: ``complex`` ``<float>`` -> ``complex<float>``."""
    out: list[str] = []
    for w in words:
        if w.startswith("<") and out:
            out[-1] += w.replace(" ", "")
        else:
            out.append(w)
    return out


def _element(type_name: str) -> tuple[str, int, int, int] | None:
    """(kind, size of one lane, lanes, alignment) of a type by value, None when unknown."""
    if type_name in _SCALARS:
        kind, size = _SCALARS[type_name]
        return kind, size, 1, size
    m = _COMPLEX.match(type_name)
    if m:
        size = 4 if m.group(1) == "float" else 8
        return "c", 2 * size, 1, size
    m = _VECTOR.match(type_name)
    if m:
        kind, size = _VECTOR_BASES[m.group(1)]
        lanes = int(m.group(2))
        # CUDA aligns 1-, 2- and 4-lane vectors to their size (at most 16), 3-lane ones to a lane.
        return kind, size, lanes, size if lanes == 3 else min(16, size * lanes)
    return None


def _parameter(text: str, aliases: dict[str, str]) -> Declaration:
    """One parameter's declaration from its text, e.g. ``const float * __restrict__ x``."""
    text = text.split("=", 1)[0]
    tokens = re.findall(r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|<[^()]*>|\*|&|\[[^\]]*\]", text)
    arrays = sum(1 for t in tokens if t.startswith("["))
    tokens = _joined([t.replace(" ", "") for t in tokens if not t.startswith("[")])
    type_words = [t for t in tokens if t not in ("*", "&") and t not in _QUALIFIERS]
    name = None
    # The last word names the parameter unless the type would be incomplete without it
    # (``unsigned``, ``float``: an unnamed parameter).
    if len(type_words) >= 2 and type_words[-1] not in _INTEGER_WORDS and tokens[-1] == type_words[-1]:
        name = type_words.pop()
        tokens = tokens[:-1]
    c_type = " ".join(tokens) + " *" * arrays
    c_type = re.sub(r"(?<![*\s])\*", " *", re.sub(r"\s*\*\s*", "*", c_type)).strip()
    if "&" in tokens or not type_words:
        return name, c_type, "?", 0, 0, None
    resolved, pointers = _resolve(type_words, aliases)
    pointers += tokens.count("*") + arrays
    type_name = _canonical(resolved)
    element = _element(type_name)
    if pointers:
        if pointers > 1 or type_name in _ANY_POINTEE or element is None:
            return name, c_type, "P", 8, 8, ("*", 0, 1)
        return name, c_type, "P", 8, 8, element[:3]
    if element is None:
        # A struct or other type by value: its size comes from the backend, where known.
        return name, c_type, ("?" if "<" in type_name else "V"), 0, 0, None
    kind, size, lanes, align = element
    if lanes > 1:
        return name, c_type, "V", size * lanes, align, element[:3]
    return name, c_type, kind, size, align, None


def _template_before(text: str, at: int) -> bool:
    """Whether the declaration that ``__global__`` at ``at`` belongs to begins with ``template``."""
    start = max(text.rfind(";", 0, at), text.rfind("}", 0, at), text.rfind("{", 0, at))
    return re.search(r"\btemplate\b", text[start + 1 : at]) is not None


@functools.lru_cache(maxsize=256)
def declarations(source: str) -> dict[str, tuple[Declaration, ...]]:
    """The parameters of every non-template ``__global__`` function the source declares, by
    the function's unqualified name. A name declared with two different parameter lists
    (overloads, or ``#if`` branches) is left out."""
    text = _strip(source)
    macros = {name: value.strip() for name, value in _DEFINE.findall(text)}
    text = _expand(_DIRECTIVE.sub(" ", text), macros)
    aliases = _aliases(text)
    found: dict[str, tuple[Declaration, ...] | None] = {}
    for m in re.finditer(r"\b__global__\b", text):
        if _template_before(text, m.start()):
            continue
        i = m.end()
        name = None
        while True:
            w = _IDENTIFIER.search(text, i)
            if w is None:
                break
            if w.group(0) in _DECLARATION_WORDS:
                i = w.end()
                # Skip an attribute's arguments: __launch_bounds__(256, 2), __attribute__((...)).
                rest = text[i:].lstrip()
                if rest.startswith("("):
                    close = _closing(text, text.index("(", i), "(", ")")
                    if close < 0:
                        break
                    i = close + 1
                continue
            after = text[w.end() :].lstrip()
            if after.startswith("("):
                name = w
            elif after.startswith("::"):
                i = w.end()
                continue
            break
        if name is None:
            continue
        opening = text.index("(", name.end())
        closing = _closing(text, opening, "(", ")")
        if closing < 0:
            continue
        inner = text[opening + 1 : closing].strip()
        parts = [] if inner in ("", "void") else _split_parameters(inner)
        params = tuple(_parameter(p, aliases) for p in parts)
        key = name.group(0)
        if key in found and found[key] != params:
            found[key] = None
        else:
            found[key] = params
    return {k: v for k, v in found.items() if v is not None}


def kernel_base_name(name: str) -> str:
    """A kernel's unqualified name from the name ``get_function`` was given: itself, or the
    function's own name in an Itanium-mangled one (``_Z5twicePfi`` -> ``twice``,
    ``_ZN2ns5scaleEPf`` -> ``scale``)."""
    if not name.startswith("_Z"):
        return name
    i = 2
    nested = name.startswith("N", i)
    i += 1 if nested else 0
    if name.startswith("L", i):
        i += 1
    last = name
    while i < len(name) and name[i] in "KVr":
        i += 1
    while i < len(name) and name[i].isdigit():
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        length = int(name[i:j])
        last = name[j : j + length]
        i = j + length
        if not nested:
            break
    return last


def lookup(source: str) -> functools.partial[tuple[Declaration, ...] | None]:
    """What ``Module._set_declarations`` takes for a module compiled from ``source``: a
    callable giving a kernel's declaration by the name ``get_function`` was given. The source
    is read on the first look-up, not when the module is loaded."""
    return functools.partial(declaration, source)


def declaration(source: str, name: str) -> tuple[Declaration, ...] | None:
    """The parameters of the kernel ``get_function(name)`` finds, as ``source`` declares them."""
    return declarations(source).get(kernel_base_name(name))
