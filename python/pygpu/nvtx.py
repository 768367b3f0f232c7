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

Outside a recording a range costs two clock reads. Where NVIDIA's ``nvtx`` package is installed
(``pip install nvtx``, or pygpu's ``nvtx`` extra; ``NVTX_DISABLE`` in the environment turns it
off), each range is also an NVTX range in the default domain, which Nsight Systems (``nsys
profile python script.py``) shows on the thread's row beside the kernels it launched.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pygpu import _pygpu

__all__ = ["range"]

F = TypeVar("F", bound=Callable[..., Any])

#: NVIDIA's nvtx module when it is installed and enabled (no NVTX_DISABLE), else None; looked up
#: on the first range (False: not yet).
_nvidia: Any = False


def _nvidia_nvtx() -> Any:
    global _nvidia
    if _nvidia is False:
        try:
            nvidia = importlib.import_module("nvtx")  # NVIDIA's package, not this module
        except ImportError:
            _nvidia = None
        else:
            _nvidia = nvidia if nvidia.enabled() else None
    return _nvidia


class range:  # noqa: N801 - NVTX's and CuPy's name for it
    """A named range: ``with range("step"):`` around code, or ``@range("step")`` on a
    function (each call one range). Ranges nest; each is recorded when it ends."""

    def __init__(self, message: str) -> None:
        if not isinstance(message, str):
            raise TypeError(f"a range's name is a str, not {type(message).__name__}")
        try:
            message.encode("utf-8")
        except UnicodeEncodeError as e:  # checked here, not when the range ends
            raise ValueError(f"a range's name must be text that UTF-8 can encode: {e}") from None
        self.message = message
        self._starts: list[int] = []

    def __enter__(self) -> range:
        nvidia = _nvidia_nvtx()
        if nvidia is not None:
            nvidia.push_range(self.message)
        self._starts.append(_pygpu.activity_clock_ns())
        return self

    def __exit__(self, *exc: object) -> None:
        start = self._starts.pop()
        _pygpu.activity_record_range(self.message, start, _pygpu.activity_clock_ns(), threading.get_native_id())
        nvidia = _nvidia_nvtx()
        if nvidia is not None:
            nvidia.pop_range()

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def ranged(*args: Any, **kwargs: Any) -> Any:
            with range(self.message):
                return func(*args, **kwargs)

        return ranged  # type: ignore[return-value]
