"""GPUArray's operators and elementwise methods, on the bundled precompiled kernels."""

from __future__ import annotations

__all__ = ["ArithmeticMixin"]


class ArithmeticMixin:
    __slots__ = ()
