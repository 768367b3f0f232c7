"""pycuda.cumath: elementwise math functions of GPUArrays, on the bundled kernels."""

from __future__ import annotations

__all__: list[str] = []
