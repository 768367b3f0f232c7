"""``GPUArray`` itself, composed here of the mixins of the floor below (transfers, interop,
arithmetic, reductions, launch helpers) over its storage (``_storage``: an allocation, the byte
offset of element 0 in it, a shape, a dtype and byte strides, possibly negative or zero): its
constructor, attributes, indexing (``_indexing``) and the views (``reshape``, ``transpose``,
``view``...) that share the allocation."""

from __future__ import annotations

import math
import operator
from typing import Any, Self

import numpy as np

from pygpu._pygpu import DeviceAllocation, pool_alloc
from pygpu.gpuarray._arithmetic import ArithmeticMixin
from pygpu.gpuarray._dtypes import check_dtype, host_array
from pygpu.gpuarray._indexing import basic_index
from pygpu.gpuarray._interop import InteropMixin
from pygpu.gpuarray._launch_helpers import LaunchHelpersMixin
from pygpu.gpuarray._reductions import ReductionMixin
from pygpu.gpuarray._layout import (
    Flags,
    c_strides,
    contiguity,
    extent,
    f_strides,
    nocopy_strides,
    shape_tuple,
)
from pygpu.gpuarray._ordering import StreamOrder
from pygpu.gpuarray._storage import (
    ArrayFields,
    DevicePointer,
    as_allocation,
    composed,
    device_of,
    make,
    own_view,
    plain_view,
    retyped,
)
from pygpu.gpuarray._transfer import TransferMixin, copy_in_order, copy_into, copy_to_device

__all__ = ["GPUArray", "broadcast_to"]


@composed
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
        "_flags": None,
        "_order": None,
        "_readonly": None,
        "allocator": "The allocator of arrays made from this one (``allocator(nbytes)``; None: the memory pool).",
        "base": "The array this one is a view of, or None where it owns its memory (as numpy's ``base``).",
        "itemsize": "Bytes per element (``dtype.itemsize``).",
        "mem_size": "The number of elements (PyCUDA's name; the same as ``size``).",
        "nbytes": "Bytes of the elements, ``size * itemsize`` (a subclass may set another value).",
        "size": "The number of elements.",
    }
    # shape, dtype, strides and the memory (_alloc, _offset) live in the compiled base,
    # pygpu._pygpu.ArrayStorage, where launches and copies read them; the fields' types are declared
    # once, in _storage.ArrayFields (which the mixins share). As in PyCUDA, shape, dtype, strides,
    # size, mem_size, itemsize, nbytes, allocator, base and gpudata are attributes a subclass may
    # set after GPUArray.__init__ (setting gpudata re-points _alloc and _offset); pygpu counts bytes
    # as size * dtype.itemsize, so an nbytes a subclass sets (reikna: its buffer's size) is
    # reported, never used to size a copy.

    # numpy's rule for operations mixing ndarray subclasses (``_storage.result_owner``): the
    # result has the class of the operand of the highest priority; a subclass raises it to win.
    __array_priority__ = 0.0

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
            # A copy of a host array, in its order (as to_gpu makes it).
            ary = host_array(shape)
            order = "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
            GPUArray.__init__(self, ary.shape, ary.dtype, allocator, order=order)
            self.set(ary)
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
        return copy_to_device(self, device, stream)  # type: ignore[return-value]

    @property
    def T(self) -> Self:
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

    # ---------------------------------------------------------------- the subclass contract

    def _new_like_me(self, dtype: Any = None, order: str = "C") -> Self:
        """A new array like this one for an operation's result, of ``dtype`` (default: this
        array's): ``type(self)(shape, dtype, allocator=..., strides=..., order=...)``, keeping the
        strides of a contiguous array when the dtype is the same, as PyCUDA's does. A subclass
        whose constructor takes other arguments overrides it; every operation whose result has a
        subclass's class (operators, comparisons, ``copy``, ``astype``, ``cumath``) makes it here."""
        dt = self.dtype if dtype is None else np.dtype(dtype)
        strides = self.strides if dt == self.dtype and self.flags.forc else None
        return self.__class__(self.shape, dt, allocator=self.allocator, strides=strides, order=order)

    def __array_finalize__(self, obj: ArrayFields) -> None:
        """Called, as numpy calls it on ndarray subclasses, on an array of a subclass that was made
        without ``__init__`` (a view, or a result of a subclass's operand that cannot come from its
        ``_new_like_me``), with the array it came from: a subclass that sets attributes in
        ``__init__`` copies them from ``obj`` here. GPUArray's does nothing."""

    def __copy__(self) -> Self:
        """``copy.copy``: another array object over the same memory (with a subclass's attributes)."""
        result = make(
            self.__class__,
            self._alloc,
            self._offset,
            self.shape,
            self.dtype,
            self.strides,
            self.size,
            self.base,
            self.allocator,
            self._order,
            self._readonly,
            self._flags,
        )
        state = getattr(self, "__dict__", None)
        if state:
            result.__dict__.update(state)
        return result

    # ---------------------------------------------------------------- views

    def _view(
        self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype | None = None
    ) -> GPUArray:
        """A plain GPUArray viewing this array's memory: pygpu's own code works on these
        (``_storage.plain_view``); the view methods below give views of the array's own class."""
        return plain_view(self, offset, shape, strides, dtype)  # type: ignore[return-value]

    def __getitem__(self, key: Any) -> Self:
        return own_view(self, *basic_index(self._offset, self.shape, self.strides, key))

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

    def reshape(self, *shape: Any, order: str = "C") -> Self:
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
            return own_view(self, self._offset, new_shape, strides)
        return self._reordered(new_shape, order)

    def _reordered(self, new_shape: tuple[int, ...], order: str) -> Self:
        """numpy's reshape: the elements in ``order``, a view where the layout allows it."""
        if new_shape == self.shape:
            return own_view(self, self._offset, self.shape, self.strides)
        itemsize = self.dtype.itemsize
        if self.size == 0:
            strides = c_strides(new_shape, itemsize) if order == "C" else f_strides(new_shape, itemsize)
            return own_view(self, self._offset, new_shape, strides)
        nocopy = nocopy_strides(self.shape, self.strides, new_shape, itemsize, order == "F")
        if nocopy is None:
            source = copy_in_order(self, order)
            strides = c_strides(new_shape, itemsize) if order == "C" else f_strides(new_shape, itemsize)
            return retyped(plain_view(source, 0, new_shape, strides), self)
        return own_view(self, self._offset, new_shape, tuple(nocopy))

    def ravel(self, order: str = "C") -> Self:
        """The elements in ``order`` as a 1-D array (numpy's ravel: a Fortran array is reordered)."""
        if order == "A":
            order = "F" if self.flags.f_contiguous and not self.flags.c_contiguous else "C"
        if order not in ("C", "F"):
            raise ValueError(f"order must be 'C', 'F' or 'A', not {order!r}")
        return self._reordered((self.size,), order)

    def squeeze(self, axis: Any = None) -> Self:
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
        return own_view(self, self._offset, tuple(self.shape[i] for i in keep), tuple(self.strides[i] for i in keep))

    def transpose(self, *axes: Any, **kwargs: Any) -> Self:
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
        return own_view(self, self._offset, tuple(self.shape[i] for i in perm), tuple(self.strides[i] for i in perm))

    def view(self, dtype: Any = None) -> Self:
        """The same memory seen with another dtype (numpy's rules for the last axis)."""
        if dtype is None:
            return own_view(self, self._offset, self.shape, self.strides)
        dt = check_dtype(dtype)
        old = self.dtype.itemsize
        new = dt.itemsize
        if new == old:
            return own_view(self, self._offset, self.shape, self.strides, dt)
        if not self.shape:
            raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
        if new == 0:
            raise ValueError(f"Changing the dtype to a 0 size dtype ({dt}) is not supported")
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
        return own_view(self, self._offset, shape, strides, dt)


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
