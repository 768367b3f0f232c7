"""``import pygpu.autoinit`` does what ``import pycuda.autoinit`` does: starts the
backend and makes device 0 current. ``device`` and ``context`` are exposed; the context
is popped at exit."""

from __future__ import annotations

import atexit

from pygpu import driver as _driver

_driver.init()
device = _driver.Device(0)
context = device.make_context()


def _finish_up() -> None:
    if _driver.Context.get_current() is context:
        context.pop()


atexit.register(_finish_up)

__all__ = ["context", "device"]
