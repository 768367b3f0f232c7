"""PyCUDA's ``pycuda.compyte.dtypes``: the registry mapping numpy dtypes to C type names.

There is one registry in pygpu, the one :func:`pygpu.tools.dtype_to_ctype` and
:func:`pygpu.tools.get_or_register_dtype` use (and generated kernels, ``parse_c_arg``, ...):
the functions here and :data:`TYPE_REGISTRY` are that registry, so a type registered through
either spelling is known to both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pygpu._driver import c_types as _c_types
from pygpu._kernelgen import arguments as _arguments
from pygpu.errors import TypeNameNotKnown

__all__ = [
    "TYPE_REGISTRY",
    "DTypeRegistry",
    "TypeNameNotKnown",
    "dtype_to_ctype",
    "fill_registry_with_c_types",
    "get_or_register_dtype",
    "parse_c_arg_backend",
    "register_dtype",
]


class DTypeRegistry:
    """PyCUDA's registry object. Every instance is a view of pygpu's one registry (pygpu's
    kernels and argument parsing consult only that one), so registering through any instance
    registers for all of pygpu."""

    def get_or_register_dtype(self, c_names: str | list[str], dtype: Any = None) -> np.dtype:
        """The dtype registered under the C name(s) ``c_names``; with ``dtype``, registers it
        under those names first. Unknown names without ``dtype`` raise :class:`TypeNameNotKnown`."""
        try:
            return _c_types.get_or_register_dtype(c_names, dtype)
        except ValueError as e:
            if dtype is None:
                raise TypeNameNotKnown(str(e)) from e
            raise

    def dtype_to_ctype(self, dtype: Any) -> str:
        """The C name of ``dtype`` (``"float"``, ``"unsigned int"``, a registered struct's name);
        ValueError for a dtype nothing is registered for."""
        return _c_types.dtype_to_ctype(dtype)

    def register_dtype(self, dtype: Any, c_names: str | list[str], alias_ok: bool = False) -> None:
        """The older spelling: registers ``dtype`` under ``c_names``."""
        _c_types.register_dtype(dtype, c_names, alias_ok)


#: The registry (PyCUDA's module-level instance; pygpu has only the one).
TYPE_REGISTRY = DTypeRegistry()


def get_or_register_dtype(c_names: str | list[str], dtype: Any = None) -> np.dtype:
    """:meth:`DTypeRegistry.get_or_register_dtype` of :data:`TYPE_REGISTRY`."""
    return TYPE_REGISTRY.get_or_register_dtype(c_names, dtype)


def dtype_to_ctype(dtype: Any) -> str:
    """:meth:`DTypeRegistry.dtype_to_ctype` of :data:`TYPE_REGISTRY`."""
    return TYPE_REGISTRY.dtype_to_ctype(dtype)


def register_dtype(dtype: Any, c_names: str | list[str], alias_ok: bool = False) -> None:
    """:meth:`DTypeRegistry.register_dtype` of :data:`TYPE_REGISTRY`."""
    TYPE_REGISTRY.register_dtype(dtype, c_names, alias_ok)


def fill_registry_with_c_types(reg: DTypeRegistry, respect_windows: bool, include_bool: bool = True) -> None:
    """Nothing to do: pygpu's registry starts out holding the C types (with ``long`` as wide as
    the platform's, ``bool`` included). Present for code written against PyCUDA's setup."""
    if not isinstance(reg, DTypeRegistry):
        raise TypeError(f"fill_registry_with_c_types expects a DTypeRegistry, not {type(reg).__name__}")
    del respect_windows, include_bool


def parse_c_arg_backend(c_arg: str, scalar_arg_factory: Any, vec_arg_factory: Any, name_to_dtype: Any = None) -> Any:
    """Parses one C declaration (``"float *x"``, ``"unsigned int n"``) and builds the argument
    with ``vec_arg_factory(dtype, name)`` for pointers, ``scalar_arg_factory(dtype, name)``
    otherwise. ``name_to_dtype`` (a C name to dtype function) is accepted and unused: pygpu's
    registry resolves the names."""
    del name_to_dtype
    parsed = _arguments.parse_c_arg(c_arg)
    factory = vec_arg_factory if isinstance(parsed, _arguments.VectorArg) else scalar_arg_factory
    return factory(parsed.dtype, parsed.name)
