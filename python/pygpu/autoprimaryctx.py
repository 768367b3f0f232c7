"""``import pygpu.autoprimaryctx`` does what ``import pycuda.autoprimaryctx`` does: starts the
backend and makes the *primary* context of the default device current (``$CUDA_DEVICE``, else
``~/.cuda_device``, else the first device that works, as :func:`pygpu.tools.make_default_context`
chooses), instead of creating a new context as ``pycuda.autoinit`` does.

That is what code sharing the GPU with the CUDA runtime wants (TensorRT, PyTorch, CuPy): they all
use the primary context. In pygpu every context is the device's primary context, so this and
:mod:`pygpu.autoinit` differ only in how the device is chosen. ``device`` and ``context`` are
exposed; at exit the context is popped (the primary context itself lives on) and the
context-dependent caches are cleared.
"""

from __future__ import annotations

import atexit

from pygpu import driver as _driver
from pygpu import tools as _tools

__all__ = ["context", "device"]


def _retain_primary_context(dev: _driver.Device) -> _driver.Context:
    ctx = dev.retain_primary_context()
    ctx.push()
    return ctx


_driver.init()
context: _driver.Context = _tools.make_default_context(_retain_primary_context)
device: _driver.Device = context.get_device()


def _finish_up() -> None:
    if _driver.Context.get_current() is context:
        context.pop()
    _tools.clear_context_caches()


atexit.register(_finish_up)
