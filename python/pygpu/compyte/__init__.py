"""PyCUDA's ``pycuda.compyte``: the helpers PyCUDA shares with PyOpenCL, which PyCUDA clients
import directly (``from pycuda.compyte.dtypes import dtype_to_ctype``; ``from
pycuda.compyte.array import f_contiguous_strides, ...``). See :mod:`pygpu.compyte.dtypes` and
:mod:`pygpu.compyte.array`.
"""

from __future__ import annotations

__all__: list[str] = []
