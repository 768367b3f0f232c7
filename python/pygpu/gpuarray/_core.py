"""``GPUArray`` itself: a typed view of device memory (an allocation, the byte offset of
element 0 in it, a shape, a dtype and byte strides, possibly negative or zero), its
attributes, indexing (``_indexing``) and the views (``reshape``, ``transpose``, ``view``...) that share
the allocation. Transfers, interop and arithmetic come from the mixins of the sibling
modules."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from pygpu._pygpu import (
    CudaError,
    DeviceAllocation,
    DLPackTensor,
    cudaGetDevice,
    pool_alloc,
)
from pygpu.gpuarray import _creation
from pygpu.gpuarray._arithmetic import ArithmeticMixin
from pygpu.gpuarray._dtypes import check_dtype
from pygpu.gpuarray._indexing import basic_index
from pygpu.gpuarray._interop import InteropMixin
from pygpu.gpuarray._launch_helpers import LaunchHelpersMixin
from pygpu.gpuarray._reductions import ReductionMixin
from pygpu.gpuarray._layout import (
    c_flags,
    Flags,
    c_strides,
    contiguity,
    extent,
    f_strides,
    nocopy_strides,
    shape_tuple,
)
from pygpu.gpuarray._ordering import StreamOrder
from pygpu.gpuarray._platform import platform
from pygpu.gpuarray._transfer import TransferMixin, copy_into

__all__ = [
    "DevicePointer",
    "GPUArray",
    "as_allocation",
    "broadcast_to",
    "copy_in_order",
    "device_of",
    "make",
    "new_c",
    "new_like",
]

_new = object.__new__


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
    if isinstance(alloc, DeviceAllocation):
        return alloc.device
    if isinstance(alloc, DLPackTensor):
        return 0 if platform().host_memory else alloc.device_id
    if isinstance(alloc, DevicePointer):
        if alloc.device is not None:
            return alloc.device
        return device_of(alloc.base)
    return cudaGetDevice()[0]


def new_c(shape: tuple[int, ...], dtype: np.dtype[Any], allocator: Any = None) -> GPUArray:
    """A new C-ordered array of a checked shape and dtype (results of operations), without
    GPUArray()'s argument parsing."""
    size = math.prod(shape)
    itemsize = dtype.itemsize
    strides = c_strides(shape, itemsize)
    alloc = (allocator or pool_alloc)(size * itemsize)
    return make(alloc, 0, shape, dtype, strides, size, None, allocator, StreamOrder(), False, c_flags(shape))


def new_like(a: GPUArray, dtype: np.dtype[Any], order: str = "C") -> GPUArray:
    """A new array of ``a``'s shape and ``dtype`` (in ``order``) for the result of an operation
    on ``a``.

    The subclass contract: a subclass of GPUArray gets its results from its own
    ``_new_like_me(dtype, order)``, as PyCUDA's operations do, so ``a + b`` of a subclass is of
    the subclass; a plain GPUArray gets a new array without that call.
    """
    if a.__class__ is GPUArray:
        if order == "C":
            return new_c(a.shape, dtype, a.allocator)
        return GPUArray(a.shape, dtype, a.allocator, order=order)
    # As PyCUDA calls it: the dtype alone (libraries override it with that signature: reikna's
    # takes no order), the order by keyword only where it is not C.
    result = a._new_like_me(dtype) if order == "C" else a._new_like_me(dtype, order=order)
    if not isinstance(result, GPUArray) or result.shape != a.shape or result.dtype != dtype:
        raise TypeError(
            f"{type(a).__name__}._new_like_me({dtype}) must return a GPUArray of shape {a.shape} and dtype "
            f"{dtype}, not {type(result).__name__}"
            + (f" of shape {result.shape} and dtype {result.dtype}" if isinstance(result, GPUArray) else "")
        )
    return result


def as_allocation(gpudata: Any) -> Any:
    """What an array keeps as its memory, from what PyCUDA code passes as ``gpudata``: an
    allocation, a DevicePointer or an imported tensor as it is; an address (an int, or an object
    with ``__int__``, kept alive) as a DevicePointer on the current device."""
    if isinstance(gpudata, (DeviceAllocation, DevicePointer, DLPackTensor)):
        return gpudata
    address = operator.index(gpudata) if isinstance(gpudata, (int, np.integer)) else gpudata
    return DevicePointer(address, 0, gpudata, cudaGetDevice()[0])


def make(
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
) -> GPUArray:
    """A GPUArray from its parts, without checks (for views and new arrays)."""
    a: GPUArray = _new(GPUArray)
    a.shape = shape
    a.dtype = dtype
    a.strides = strides
    a.size = a.mem_size = size
    a.itemsize = itemsize = dtype.itemsize
    a.nbytes = size * itemsize
    a.allocator = allocator
    a.base = base
    a._alloc = alloc
    a._offset = offset
    a._order = order
    a._flags = flags
    a._readonly = readonly
    return a


class GPUArray(TransferMixin, InteropMixin, ArithmeticMixin, ReductionMixin, LaunchHelpersMixin):
    """A typed n-dimensional array in device memory (pycuda.gpuarray.GPUArray).

    ``GPUArray(shape, dtype, allocator=None, base=None, gpudata=None, strides=None,
    order="C")`` allocates (with ``allocator(nbytes)``, default ``pool_alloc``, the caching memory pool) unless
    ``gpudata`` (a DeviceAllocation or an int-convertible address) is given;
    ``GPUArray(ndarray)`` copies a host array to the device, as PyGPU's did.
    """

    # A dict: its values are the public attributes' docstrings (help(), inspect.getdoc, the API
    # reference).
    __slots__ = {
        "__weakref__": None,
        "_alloc": None,
        "_flags": None,
        "_offset": None,
        "_order": None,
        "_readonly": None,
        "allocator": "The allocator of arrays made from this one (``allocator(nbytes)``; None: the memory pool).",
        "base": "The array this one is a view of, or None where it owns its memory (as numpy's ``base``).",
        "dtype": "The numpy dtype of the elements.",
        "itemsize": "Bytes per element (``dtype.itemsize``).",
        "mem_size": "The number of elements (PyCUDA's name; the same as ``size``).",
        "nbytes": "Bytes of the elements, ``size * itemsize`` (a subclass may set another value).",
        "shape": "The dimensions, a tuple of ints.",
        "size": "The number of elements.",
        "strides": "Bytes from one element to the next along each axis, as numpy's (may be negative).",
    }
    # The fields' types are declared once, in _fields.ArrayFields (which the mixins share).
    # As in PyCUDA, shape, dtype, strides, size, mem_size, itemsize, nbytes, allocator, base and
    # gpudata are plain attributes a subclass may set after GPUArray.__init__; pygpu's own code
    # reads the memory from _alloc and _offset (which setting gpudata re-points) and counts bytes
    # as size * dtype.itemsize, so an nbytes a subclass sets (reikna: its buffer's size) is
    # reported, never used to size a copy.

    def __init__(
        self,
        shape: Any,
        dtype: Any = None,
        allocator: Any = None,
        base: Any = None,
        gpudata: Any = None,
        strides: Any = None,
        order: str = "C",
    ) -> None:
        if isinstance(shape, np.ndarray) and dtype is None:
            src = _creation.to_gpu(shape, allocator)
            for name in GPUArray.__slots__:
                if name != "__weakref__":
                    setattr(self, name, getattr(src, name))
            return
        dims = shape_tuple(shape)
        dt = check_dtype(np.float64 if dtype is None else dtype)
        size = math.prod(dims)
        itemsize = dt.itemsize
        if size * itemsize >= 1 << 63:
            raise ValueError(f"array is too big: shape {dims} of {dt}")
        if strides is None:
            if order == "C":
                st = c_strides(dims, itemsize)
            elif order == "F":
                st = f_strides(dims, itemsize)
            else:
                raise ValueError(f"order must be 'C' or 'F', not {order!r}")
        else:
            st = tuple(operator.index(s) for s in strides)
            if len(st) != len(dims):
                raise ValueError(f"strides {st} do not match the {len(dims)} dimensions of shape {dims}")
        lo, hi = extent(dims, st, itemsize) if size else (0, 0)
        offset = 0
        if gpudata is None:
            alloc = (allocator or pool_alloc)(hi - lo)
            offset = -lo
        else:
            if isinstance(gpudata, DeviceAllocation) and (lo < 0 or hi > gpudata.nbytes):
                raise ValueError(
                    f"shape {dims} with strides {st} needs bytes [{lo}, {hi}) but gpudata holds {gpudata.nbytes}"
                )
            alloc = as_allocation(gpudata)
        self.shape = dims
        self.dtype = dt
        self.strides = st
        self.size = self.mem_size = size
        self.itemsize = itemsize
        self.nbytes = size * itemsize
        self.allocator = allocator
        self.base = base
        self._alloc = alloc
        self._offset = offset
        self._order = StreamOrder()
        self._flags = None
        self._readonly = False

    # ---------------------------------------------------------------- attributes

    @property
    def gpudata(self) -> Any:
        """The allocation (``int()`` gives its address); for a view not starting at its
        allocation's beginning, a ``DevicePointer`` to element 0."""
        if self._offset == 0:
            a = self._alloc
            if isinstance(a, DevicePointer) and a.owner is not None and a.offset == 0 and a.base is a.owner:
                return a.owner
            return a
        return DevicePointer(self._alloc, self._offset, self._alloc)

    @gpudata.setter
    def gpudata(self, value: Any) -> None:
        # PyCUDA code re-points an array by assigning gpudata (an allocation or an address).
        self._alloc = as_allocation(value)
        self._offset = 0

    @property
    def ptr(self) -> int:
        """The device address of element 0."""
        return int(self._alloc) + self._offset

    @property
    def ndim(self) -> int:
        """The number of dimensions, ``len(shape)``."""
        return len(self.shape)

    @property
    def flags(self) -> Flags:
        """The layout flags ``c_contiguous``, ``f_contiguous`` and ``forc``, as numpy's ``ndarray.flags``."""
        f = self._flags
        if f is None:
            f = self._flags = contiguity(self.shape, self.strides, self.dtype.itemsize)
        return f

    @property
    def device(self) -> int:
        """The ordinal of the device holding the memory."""
        return device_of(self._alloc)

    def copy_to(self, device: Any, stream: Any = None) -> GPUArray:
        """A C-ordered copy on ``device`` (an ordinal or a ``Device``), copied between the devices
        without a trip through the host (pygpu's own; PyCUDA has only ``memcpy_peer``)."""
        from pygpu._multi_device import copy_to_device

        return copy_to_device(self, device, stream)

    @property
    def T(self) -> GPUArray:
        """A view with the axes reversed, as numpy's ``.T`` (no copy)."""
        return self.transpose()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # No __iter__, as PyCUDA's GPUArray has none: `for row in a` goes through __getitem__, and
    # a GPUArray is not a collections.abc.Iterable (libraries tell arrays from lists so).

    def _scalar(self) -> Any:
        if self.size != 1:
            raise ValueError(
                f"the truth value (or scalar value) of an array with {self.size} elements is ambiguous: "
                "only an array of exactly one element converts to a scalar"
            )
        return self.get().reshape(())[()]

    def __bool__(self) -> bool:
        return bool(self._scalar())

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __repr__(self) -> str:
        return repr(self.get())

    def __str__(self) -> str:
        return str(self.get())

    # ---------------------------------------------------------------- views

    def _new_like_me(self, dtype: Any = None, order: str = "C") -> GPUArray:
        """A new array like this one for an operation's result, of ``dtype`` (default: this
        array's): ``type(self)(shape, dtype, allocator=..., strides=..., order=...)``, keeping the
        strides of a contiguous array when the dtype is the same, as PyCUDA's does. A subclass
        whose constructor takes other arguments overrides it; every operation on a subclass
        (operators, comparisons, ``astype``, ``cumath``) makes its result here."""
        dt = self.dtype if dtype is None else np.dtype(dtype)
        strides = self.strides if dt == self.dtype and self.flags.forc else None
        return self.__class__(self.shape, dt, allocator=self.allocator, strides=strides, order=order)

    def _view(
        self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype | None = None
    ) -> GPUArray:
        return make(
            self._alloc,
            offset,
            shape,
            dtype or self.dtype,
            strides,
            math.prod(shape),
            self,
            self.allocator,
            self._order,
            self._readonly,
        )

    def __getitem__(self, key: Any) -> GPUArray:
        return self._view(*basic_index(self._offset, self.shape, self.strides, key))

    def __setitem__(self, key: Any, value: Any) -> None:
        if self._readonly:
            raise ValueError("assignment destination is read-only")
        view = self if key is Ellipsis else self[key]
        if isinstance(value, GPUArray):
            if value.dtype != view.dtype:
                value = value.astype(view.dtype)
            if value.shape != view.shape:
                value = broadcast_to(value, view.shape)
            copy_into(view, value, None)
        elif isinstance(value, (int, float, complex, bool, np.generic)):
            view.fill(value)
        else:
            staged = np.empty(view.shape, view.dtype)
            staged[...] = value
            view.set(staged)

    def reshape(self, *shape: Any, order: str = "C") -> GPUArray:
        """A view with the new shape when the layout allows it, otherwise a copy.

        As PyCUDA's: a contiguous (C or Fortran) array is re-read from the same buffer with
        the strides of ``order``, so ``reshape(..., order="F")`` of a C array (and
        ``order="C"`` of a Fortran array) gives other values than numpy's, which reorders.
        """
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        if order not in ("C", "F", "A"):
            raise ValueError(f"order must be 'C', 'F' or 'A', not {order!r}")
        dims = list(shape)
        try:
            dims = [operator.index(d) for d in dims]
        except TypeError as e:
            raise TypeError(f"a shape is a sequence of ints, not {shape!r}") from e
        unknown = [i for i, d in enumerate(dims) if d == -1]
        if len(unknown) > 1:
            raise ValueError("can only specify one unknown dimension")
        if any(d < -1 for d in dims):
            raise ValueError(f"negative dimensions are not allowed: {tuple(dims)}")
        if unknown:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"cannot reshape array of size {self.size} into shape {tuple(shape)}")
            dims[unknown[0]] = self.size // known
        new_shape = tuple(dims)
        if math.prod(new_shape) != self.size:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {new_shape}")
        if order == "A":
            order = "F" if self.flags.f_contiguous and not self.flags.c_contiguous else "C"
        flags = self.flags
        if self.size and (flags.c_contiguous or flags.f_contiguous):
            itemsize = self.dtype.itemsize
            strides = c_strides(new_shape, itemsize) if order == "C" else f_strides(new_shape, itemsize)
            return self._view(self._offset, new_shape, strides)
        return self._reordered(new_shape, order)

    def _reordered(self, new_shape: tuple[int, ...], order: str) -> GPUArray:
        """numpy's reshape: the elements in ``order``, a view where the layout allows it."""
        if new_shape == self.shape:
            return self._view(self._offset, self.shape, self.strides)
        itemsize = self.dtype.itemsize
        if self.size == 0:
            strides = c_strides(new_shape, itemsize) if order == "C" else f_strides(new_shape, itemsize)
            return self._view(self._offset, new_shape, strides)
        nocopy = nocopy_strides(self.shape, self.strides, new_shape, itemsize, order == "F")
        if nocopy is None:
            source = copy_in_order(self, order)
            strides = c_strides(new_shape, itemsize) if order == "C" else f_strides(new_shape, itemsize)
            return source._view(source._offset, new_shape, strides)
        return self._view(self._offset, new_shape, tuple(nocopy))

    def ravel(self, order: str = "C") -> GPUArray:
        """The elements in ``order`` as a 1-D array (numpy's ravel: a Fortran array is reordered)."""
        if order == "A":
            order = "F" if self.flags.f_contiguous and not self.flags.c_contiguous else "C"
        if order not in ("C", "F"):
            raise ValueError(f"order must be 'C', 'F' or 'A', not {order!r}")
        return self._reordered((self.size,), order)

    def squeeze(self, axis: Any = None) -> GPUArray:
        """A view without the axes of length 1 (only those in ``axis`` where given), as
        ``numpy.squeeze``; ValueError for a named axis longer than 1."""
        ndim = len(self.shape)
        if axis is None:
            keep = [i for i, d in enumerate(self.shape) if d != 1]
        else:
            axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
            norm = set()
            for a in axes:
                a = operator.index(a)
                if not -ndim <= a < ndim:
                    raise np.exceptions.AxisError(a, ndim)
                a %= ndim
                if self.shape[a] != 1:
                    raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
                norm.add(a)
            keep = [i for i in range(ndim) if i not in norm]
        return self._view(self._offset, tuple(self.shape[i] for i in keep), tuple(self.strides[i] for i in keep))

    def transpose(self, *axes: Any, **kwargs: Any) -> GPUArray:
        """A view with the axes permuted: ``transpose(1, 0)``, ``transpose((1, 0))`` or
        PyCUDA's ``transpose(axes=(1, 0))``; reversed by default."""
        if kwargs:
            if set(kwargs) != {"axes"} or axes:
                raise TypeError("transpose() takes the axes either as arguments or as axes=, nothing else")
            axes = (kwargs["axes"],)
        ndim = len(self.shape)
        if not axes or (len(axes) == 1 and axes[0] is None):
            perm = tuple(range(ndim - 1, -1, -1))
        else:
            if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
                axes = tuple(axes[0])
            if len(axes) != ndim:
                raise ValueError("axes don't match array")
            perm_list = []
            for a in axes:
                a = operator.index(a)
                if not -ndim <= a < ndim:
                    raise np.exceptions.AxisError(a, ndim)
                perm_list.append(a % ndim)
            if len(set(perm_list)) != ndim:
                raise ValueError("repeated axis in transpose")
            perm = tuple(perm_list)
        return self._view(self._offset, tuple(self.shape[i] for i in perm), tuple(self.strides[i] for i in perm))

    def view(self, dtype: Any = None) -> GPUArray:
        """The same memory seen with another dtype (numpy's rules for the last axis)."""
        if dtype is None:
            return self._view(self._offset, self.shape, self.strides)
        dt = check_dtype(dtype)
        old = self.dtype.itemsize
        new = dt.itemsize
        if new == old:
            return self._view(self._offset, self.shape, self.strides, dt)
        if not self.shape:
            raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
        last, last_stride = self.shape[-1], self.strides[-1]
        # An empty array has no elements to misread: numpy takes it whatever its strides.
        if last != 1 and last_stride != old and self.size:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        if (last * old) % new:
            raise ValueError(
                f"When changing to a {'larger' if new > old else 'smaller'} dtype, its size must be a divisor of "
                "the total size in bytes of the last axis of the array."
            )
        shape = self.shape[:-1] + ((last * old) // new,)
        strides = self.strides[:-1] + (new,)
        return self._view(self._offset, shape, strides, dt)


def copy_in_order(src: GPUArray, order: str) -> GPUArray:
    result = GPUArray(src.shape, src.dtype, src.allocator, order=order)
    copy_into(result, src, None)
    return result


def broadcast_to(a: GPUArray, shape: tuple[int, ...]) -> GPUArray:
    """A view of ``a`` with numpy's broadcasting to ``shape`` (stride 0 along new axes)."""
    if len(a.shape) > len(shape):
        raise ValueError(f"could not broadcast input array from shape {a.shape} into shape {shape}")
    pad = len(shape) - len(a.shape)
    strides = []
    for i, d in enumerate(shape):
        if i < pad:
            strides.append(0)
            continue
        ad, s = a.shape[i - pad], a.strides[i - pad]
        if ad == d:
            strides.append(s)
        elif ad == 1:
            strides.append(0)
        else:
            raise ValueError(f"could not broadcast input array from shape {a.shape} into shape {shape}")
    return a._view(a._offset, tuple(shape), tuple(strides))
