"""Kernel parameters declared in C (``"float *x, int n"``) as Arguments, what generated kernels
are built from and what ``Function.prepare`` takes for them (PyCUDA's ``pycuda.tools.Argument``,
``VectorArg``, ``ScalarArg``, ``parse_c_arg``; ``pygpu.tools`` re-exports them)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pygpu._driver.c_types import dtype_of_ctype, dtype_to_ctype

__all__ = ["Argument", "ScalarArg", "VectorArg", "get_arg_type", "parse_c_arg", "parse_c_args"]


class Argument:
    """One parameter of a generated kernel: a numpy ``dtype`` and a C ``name``."""

    def __init__(self, dtype: Any, name: str) -> None:
        self.dtype = np.dtype(dtype)
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.dtype})"

    def declarator(self) -> str:
        """The parameter's C declaration in the kernel's signature, e.g. ``float *x``."""
        raise NotImplementedError

    @property
    def struct_char(self) -> str:
        """The ``struct`` character that ``Function.prepare`` takes for this parameter."""
        raise NotImplementedError


class VectorArg(Argument):
    """A pointer parameter (``T *name``): a GPUArray or device pointer at call time."""

    @property
    def struct_char(self) -> str:
        """``"P"``: a pointer."""
        return "P"

    def declarator(self) -> str:
        """``T *name``, T the C type of ``dtype``."""
        return f"{dtype_to_ctype(self.dtype)} *{self.name}"


class ScalarArg(Argument):
    """A by-value parameter (``T name``): a number or numpy scalar at call time."""

    def declarator(self) -> str:
        """``T name``, T the C type of ``dtype``."""
        return f"{dtype_to_ctype(self.dtype)} {self.name}"

    @property
    def struct_char(self) -> str:
        """The ``struct`` character of ``dtype`` (its ``dtype.char``)."""
        char: str = self.dtype.char
        return char


_DECLARATOR = re.compile(r"(\**)\s*([_a-zA-Z][_a-zA-Z0-9]*)\s*(\[\s*[0-9]*\s*\])*\s*$")
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


def parse_c_arg(c_arg: str) -> Argument:
    """``"float *x"`` -> ``VectorArg(float32, "x")``; ``"int n"`` -> ``ScalarArg(int32, "n")``.
    Raises ValueError for a declaration it cannot read or a C type it does not know."""
    if not isinstance(c_arg, str):
        raise TypeError(f"a C argument declaration is a str, not {type(c_arg).__name__}")
    text = _QUALIFIERS.sub(" ", c_arg)
    match = _DECLARATOR.search(text)
    if match is None:
        raise ValueError(f"could not parse the C declaration {c_arg.strip()!r}: expected e.g. 'float *x' or 'int n'")
    name = match.group(2)
    is_vector = bool(match.group(1)) or match.group(3) is not None
    ctype = " ".join(text[: match.start()].split())
    if not ctype:
        raise ValueError(
            f"the C declaration {c_arg.strip()!r} lacks a type or a name: write e.g. 'float *x' or 'int n'"
        )
    dtype = dtype_of_ctype(ctype)
    if dtype is None:
        raise ValueError(
            f"unknown C type {ctype!r} in {c_arg.strip()!r}: use a numeric type (float, double, int, ...), "
            "a pygpu.vec type (float3, ...) or a struct registered with pygpu.vec.register_struct"
        )
    return (VectorArg if is_vector else ScalarArg)(dtype, name)


def get_arg_type(c_arg: str) -> str:
    """The ``Function.prepare`` character of a C declaration ("P" for pointers)."""
    return parse_c_arg(c_arg).struct_char


def parse_c_args(arguments: str | list[Any]) -> list[Argument]:
    """A comma-separated declaration list (or a list of declarations/Arguments) as Arguments."""
    if isinstance(arguments, str):
        parts = [a for a in arguments.split(",")]
        if not arguments.strip():
            return []
        if any(not p.strip() for p in parts):
            raise ValueError(f"empty declaration in the argument list {arguments!r}")
        return [parse_c_arg(p) for p in parts]
    result: list[Argument] = []
    for a in arguments:
        result.append(a if isinstance(a, Argument) else parse_c_arg(a))
    return result
