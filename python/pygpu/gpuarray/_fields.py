"""What GPUArray's mixins (_transfer, _interop, _arithmetic) may use of the array: its slots,
and for the type checker the members other modules define."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pygpu.gpuarray._core import GPUArray
    from pygpu.gpuarray._layout import Flags
    from pygpu.gpuarray._ordering import StreamOrder

__all__ = ["ArrayFields"]


class ArrayFields:
    __slots__ = ()

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    strides: tuple[int, ...]
    size: int
    mem_size: int
    itemsize: int
    nbytes: int
    allocator: Any
    base: Any
    _alloc: Any
    _offset: int
    _order: StreamOrder
    _flags: Flags | None
    _readonly: bool

    if TYPE_CHECKING:

        @property
        def ptr(self) -> int: ...
        @property
        def flags(self) -> Flags: ...
        @property
        def device(self) -> int: ...
        def get(self, ary: Any = None, pagelocked: bool = False, async_: bool = False, stream: Any = None) -> Any: ...
        def set(self, ary: Any, async_: bool = False, stream: Any = None) -> None: ...
        def copy(self, stream: Any = None) -> GPUArray: ...
        def fill(self, value: Any, stream: Any = None) -> GPUArray: ...
        def astype(self, dtype: Any, stream: Any = None) -> GPUArray: ...
        def _new_like_me(self, dtype: Any = None, order: str = "C") -> GPUArray: ...
        def _view(
            self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any] | None = None
        ) -> GPUArray: ...
        def __getitem__(self, key: Any) -> GPUArray: ...
