"""Caches kept per context: what :func:`context_dependent_memoize` remembers (kernels built for
a device, mostly) is keyed by the backend and the current device, so nothing built for one
device is used on another; :func:`clear_context_caches` forgets it all. ``pygpu.tools``
re-exports both (PyCUDA's names)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pygpu._pygpu import backend, get_device

__all__ = ["clear_context_caches", "context_dependent_memoize"]

_F = TypeVar("_F", bound=Callable[..., Any])

_memoized: list[dict[Any, dict[Any, Any]]] = []


def _context_key() -> Any:
    return backend(), get_device()


def context_dependent_memoize(func: _F) -> _F:
    """Memoizes ``func`` per (backend, current device) and positional arguments; kernels
    built for one device are not reused on another. ``clear_context_caches()`` empties it."""
    per_context: dict[Any, dict[Any, Any]] = {}
    _memoized.append(per_context)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cache = per_context.setdefault(_context_key(), {})
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        try:
            return cache[key]
        except KeyError:
            result = cache[key] = func(*args, **kwargs)
            return result

    return wrapper  # type: ignore[return-value]


def clear_context_caches() -> None:
    """Forgets everything :func:`context_dependent_memoize` remembered."""
    for cache in _memoized:
        cache.clear()
