"""Named ranges in a profile: ``pygpu.nvtx.range("step")`` as a context manager or a
decorator marks where a part of the program ran, on the clock of ``pygpu.profile()``'s
records, so the trace and the plot show each kernel under the step that launched it::

    >>> import pygpu
    >>> import pygpu.nvtx as nvtx
    >>> with pygpu.profile() as p:
    ...     with nvtx.range("setup"):
    ...         pass
    >>> [(a.kind, a.name) for a in p.activities]
    [('range', 'setup')]

Outside a recording a range costs two clock reads. (On CUDA, pygpu's ranges do not yet reach
NVIDIA's NVTX library, so Nsight Systems does not show them.)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pygpu import _pygpu

__all__ = ["range"]

F = TypeVar("F", bound=Callable[..., Any])


class range:  # noqa: N801 - NVTX's and CuPy's name for it
    """A named range: ``with range("step"):`` around code, or ``@range("step")`` on a
    function (each call one range). Ranges nest; each is recorded when it ends."""

    def __init__(self, message: str) -> None:
        if not isinstance(message, str):
            raise TypeError(f"a range's name is a str, not {type(message).__name__}")
        self.message = message
        self._starts: list[int] = []

    def __enter__(self) -> range:
        self._starts.append(_pygpu.activity_clock_ns())
        return self

    def __exit__(self, *exc: object) -> None:
        start = self._starts.pop()
        _pygpu.activity_record_range(self.message, start, _pygpu.activity_clock_ns(), threading.get_native_id())

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def ranged(*args: Any, **kwargs: Any) -> Any:
            with range(self.message):
                return func(*args, **kwargs)

        return ranged  # type: ignore[return-value]
