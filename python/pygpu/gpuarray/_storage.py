"""The array's storage, the floor under GPUArray's mixins: ``ArrayFields``, their typed base
class (over the compiled ``pygpu._pygpu.ArrayStorage``, which holds the allocation, the offset of
element 0, the shape, strides and dtype), what ``gpudata`` may be (``DevicePointer``,
``as_allocation``), and how arrays are made without ``GPUArray.__init__``: ``make`` (from their
parts), ``plain_view`` and ``own_view`` (views), ``new_c`` and ``new_like`` (results).

``GPUArray`` itself is composed above the mixins (``_core``), which registers it here once
(``composed``): the floors below make plain arrays of ``array_class`` and tell a subclass's
arrays from plain ones by it, without importing upwards.

The subclass contract (docs/gpuarray.md, "Subclassing GPUArray") is kept in this module: a
result of an operation on a subclass's array comes from its ``_new_like_me`` (``new_like``), a
view or a re-typed result is an instance of its class made without ``__init__``, passed to its
``__array_finalize__`` (``own_view``, ``result_like``), as numpy does for ndarray subclasses.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import numpy as np

from pygpu._pygpu import ArrayStorage, DeviceAllocation, DLPackTensor, capabilities, get_device, pool_alloc
from pygpu.errors import CudaError
from pygpu.gpuarray._layout import FLAGS_CF, Flags, c_flags, c_strides
from pygpu.gpuarray._ordering import StreamOrder

__all__ = [
    "ArrayFields",
    "DevicePointer",
    "array_class",
    "as_allocation",
    "composed",
    "device_of",
    "make",
    "new_c",
    "new_like",
    "own_view",
    "plain",
    "plain_view",
    "result_like",
    "result_owner",
    "retyped",
]


class DevicePointer:
    """A device address ``int(base) + offset`` that keeps ``owner`` (and ``base``) alive.

    ``gpudata`` of a view that does not start at its allocation's beginning is one of
    these (PyCUDA gives a plain int there), as is ``gpudata`` of an array wrapped from
    another library. ``int()`` re-reads ``base``, so a freed allocation raises.
    """

    # A dict: its values are the attributes' docstrings (help(), inspect.getdoc, the API reference).
    __slots__ = {
        "base": "What ``int()`` reads the start address from (an allocation or an address), re-read each time.",
        "device": "The ordinal of the device holding the memory; None: ``base``'s, else the current device.",
        "offset": "Bytes added to ``base``'s address.",
        "owner": "The object that owns the memory, kept alive by this pointer (or None).",
    }

    def __init__(self, base: Any, offset: int = 0, owner: Any = None, device: int | None = None) -> None:
        self.base = base
        self.offset = offset
        self.owner = owner
        self.device = device

    def __int__(self) -> int:
        return int(self.base) + self.offset

    __index__ = __int__

    def __repr__(self) -> str:
        try:
            where = f"0x{int(self):x}"
        except CudaError:
            where = "(freed)"
        return f"<DevicePointer {where}>"


def device_of(alloc: Any) -> int:
    """The ordinal of the device holding an array's memory (its ``_alloc``)."""
    if isinstance(alloc, DeviceAllocation):
        return alloc.device
    if isinstance(alloc, DLPackTensor):
        return 0 if capabilities().host_memory else alloc.device_id
    if isinstance(alloc, DevicePointer):
        if alloc.device is not None:
            return alloc.device
        return device_of(alloc.base)
    return get_device()


def as_allocation(gpudata: Any) -> Any:
    """What an array keeps as its memory, from what PyCUDA code passes as ``gpudata``: an
    allocation, a DevicePointer or an imported tensor as it is; an address (an int, or an object
    with ``__int__``, kept alive) as a DevicePointer on the current device."""
    if isinstance(gpudata, (DeviceAllocation, DevicePointer, DLPackTensor)):
        return gpudata
    address = operator.index(gpudata) if isinstance(gpudata, (int, np.integer)) else gpudata
    return DevicePointer(address, 0, gpudata, get_device())


class ArrayFields(ArrayStorage):
    """The fields every GPUArray has, typed for the mixins that GPUArray is composed of (the
    compiled base holds the memory and layout; GPUArray's ``__slots__`` the rest), and, for the
    type checker, the members that other modules define."""

    __slots__ = ()

    # numpy's priority of a class in operations mixing subclasses (``result_owner``).
    __array_priority__: ClassVar[float]

    size: int
    mem_size: int
    itemsize: int
    nbytes: int
    allocator: Any
    base: Any
    _order: StreamOrder
    _flags: Flags | None
    _readonly: bool

    @property
    def ptr(self) -> int:
        """The device address of element 0."""
        return int(self._alloc) + self._offset

    if TYPE_CHECKING:

        @property
        def flags(self) -> Flags: ...
        @property
        def device(self) -> int: ...
        @property
        def ndim(self) -> int: ...
        @property
        def gpudata(self) -> Any: ...
        def get(self, ary: Any = None, pagelocked: bool = False, async_: bool = False, stream: Any = None) -> Any: ...
        def set(self, ary: Any, async_: bool = False, stream: Any = None) -> None: ...
        def copy(self, stream: Any = None) -> Self: ...
        def fill(self, value: Any, stream: Any = None) -> Self: ...
        def astype(self, dtype: Any, stream: Any = None) -> Self: ...
        def reshape(self, *shape: Any, order: str = "C") -> Self: ...
        def view(self, dtype: Any = None) -> Self: ...
        def _new_like_me(self, dtype: Any = None, order: str = "C") -> Self: ...
        def _view(
            self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any] | None = None
        ) -> ArrayFields: ...
        def __array_finalize__(self, obj: ArrayFields) -> None: ...
        def __getitem__(self, key: Any) -> Self: ...


A = TypeVar("A", bound=ArrayFields)

array_class: type[ArrayFields]
"""GPUArray, registered by ``composed`` when ``_core`` has composed it."""


def composed(cls: type[A]) -> type[A]:
    """Registers ``cls`` (GPUArray) as the class of the arrays pygpu makes for itself (a class
    decorator, used once)."""
    global array_class
    array_class = cls
    return cls


_new = ArrayStorage.__new__


def make(
    cls: type[A],
    alloc: Any,
    offset: int,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    strides: tuple[int, ...],
    size: int,
    base: Any,
    allocator: Any,
    order: StreamOrder,
    readonly: bool = False,
    flags: Flags | None = None,
) -> A:
    """An array of ``cls`` from its parts, without checks and without ``cls.__init__`` (or a
    ``__new__`` of its own): how views and results are made, as numpy makes the views of an
    ndarray subclass."""
    a: A = _new(cls)
    a._alloc = alloc
    a._offset = offset
    a.shape = shape
    a.dtype = dtype
    a.strides = strides
    a.size = a.mem_size = size
    a.itemsize = itemsize = dtype.itemsize
    a.nbytes = size * itemsize
    a.allocator = allocator
    a.base = base
    a._order = order
    a._flags = flags
    a._readonly = readonly
    return a


def plain_view(
    a: ArrayFields, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any] | None = None
) -> ArrayFields:
    """A plain GPUArray viewing ``a``'s memory (``base`` is ``a``): what pygpu's own code works
    on, so that a subclass's overrides run only for what its user asked."""
    return make(
        array_class,
        a._alloc,
        offset,
        shape,
        dtype or a.dtype,
        strides,
        math.prod(shape),
        a,
        a.allocator,
        a._order,
        a._readonly,
    )


def own_view(
    a: A, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any] | None = None
) -> A:
    """A view of ``a``'s memory of ``a``'s own class, as numpy's views of a subclass are (see
    ``retyped``): what the view methods give."""
    return retyped(plain_view(a, offset, shape, strides, dtype), a)


def retyped(a: ArrayFields, owner: A) -> A:
    """``a`` (a plain array) as an instance of ``owner``'s class: ``a`` itself where that is
    GPUArray, else an array of its memory and layout made without ``__init__`` and then passed
    ``owner`` in ``__array_finalize__`` (a subclass copies its attributes there)."""
    if owner.__class__ is array_class:
        return a  # type: ignore[return-value]
    result = make(
        owner.__class__,
        a._alloc,
        a._offset,
        a.shape,
        a.dtype,
        a.strides,
        a.size,
        a.base,
        a.allocator,
        a._order,
        a._readonly,
        a._flags,
    )
    result.__array_finalize__(owner)
    return result


def plain(a: A) -> A | ArrayFields:
    """``a`` if it is a plain GPUArray, else a plain view of all of it (see ``plain_view``)."""
    if a.__class__ is array_class:
        return a
    return plain_view(a, a._offset, a.shape, a.strides)


def new_c(shape: tuple[int, ...], dtype: np.dtype[Any], allocator: Any = None) -> ArrayFields:
    """A new plain C-ordered array of a checked shape and dtype (results and temporaries of
    operations), without GPUArray()'s argument parsing."""
    if not shape:  # a reduction's result: its layout needs no working out
        alloc = (allocator or pool_alloc)(dtype.itemsize)
        return make(array_class, alloc, 0, (), dtype, (), 1, None, allocator, StreamOrder(), False, FLAGS_CF)
    size = math.prod(shape)
    itemsize = dtype.itemsize
    strides = c_strides(shape, itemsize)
    alloc = (allocator or pool_alloc)(size * itemsize)
    return make(
        array_class, alloc, 0, shape, dtype, strides, size, None, allocator, StreamOrder(), False, c_flags(shape)
    )


def new_like(a: A, dtype: np.dtype[Any], order: str = "C") -> A:
    """A new array of ``a``'s shape and ``dtype`` (in ``order``) for the result of an operation
    on ``a``, of ``a``'s class.

    A subclass gets its results from its own ``_new_like_me(dtype, order)``, as PyCUDA's
    operations do, so ``a + b`` of a subclass is of the subclass; a plain GPUArray gets a new
    array without that call.
    """
    if a.__class__ is array_class:
        if order == "C":
            return new_c(a.shape, dtype, a.allocator)  # type: ignore[return-value]
        return array_class(a.shape, dtype, a.allocator, order=order)
    # As PyCUDA calls it: the dtype alone (libraries override it with that signature: reikna's
    # takes no order), the order by keyword only where it is not C.
    result = a._new_like_me(dtype) if order == "C" else a._new_like_me(dtype, order=order)
    if not isinstance(result, ArrayFields) or result.shape != a.shape or result.dtype != dtype:
        raise TypeError(
            f"{type(a).__name__}._new_like_me({dtype}) must return a GPUArray of shape {a.shape} and dtype "
            f"{dtype}, not {type(result).__name__}"
            + (f" of shape {result.shape} and dtype {result.dtype}" if isinstance(result, ArrayFields) else "")
        )
    return result


def result_owner(*operands: Any) -> ArrayFields | None:
    """The operand whose class the result of an operation has, by numpy's rule for ndarray
    subclasses: among the operands of a subclass of GPUArray, the one of the highest
    ``__array_priority__`` (the first of equals); None when every array operand is a plain GPUArray
    (the result is one too)."""
    owner = None
    for x in operands:
        cls = x.__class__
        if cls is array_class or not isinstance(x, ArrayFields):
            continue
        if owner is None or cls.__array_priority__ > owner.__class__.__array_priority__:
            owner = x
    return owner


def result_like(
    owner: ArrayFields | None, shape: tuple[int, ...], dtype: np.dtype[Any], allocator: Any, order: str = "C"
) -> ArrayFields:
    """A new array of ``shape`` and ``dtype`` for an operation's result, of ``owner``'s class
    (``result_owner``): from ``owner._new_like_me`` where ``owner`` has the result's shape, else a
    new array re-typed as ``owner``'s class (its ``__array_finalize__`` given ``owner``), as numpy
    wraps the result of a ufunc; a plain C-ordered array when ``owner`` is None."""
    if owner is not None and owner.shape == shape:
        return new_like(owner, dtype, order)
    if order == "C" or owner is not None:
        result = new_c(shape, dtype, allocator)
    else:
        result = array_class(shape, dtype, allocator, order=order)
    return result if owner is None else retyped(result, owner)
