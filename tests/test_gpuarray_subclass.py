"""GPUArray's subclass contract (docs/gpuarray.md, "Subclassing GPUArray"), as PyCUDA documents it,
PyCUDA-based libraries (reikna) rely on it and numpy's ndarray subclasses have it: attributes a
subclass sets after ``GPUArray.__init__``, results of operations made by ``_new_like_me`` and of
the subclass by numpy's priority rule, views of the subclass passed to ``__array_finalize__``,
``gpudata`` re-pointed by assignment; and the storage the compiled core reads."""

from __future__ import annotations

import collections.abc
import copy
from typing import Any

import numpy as np
import pytest

import pygpu.driver as drv
import pygpu.gpuarray as gpuarray
from pygpu import _pygpu, cumath


class Tagged(gpuarray.GPUArray):
    """A subclass with GPUArray's constructor: the default _new_like_me makes its results."""


class Labelled(gpuarray.GPUArray):
    """numpy's subclass pattern: an attribute set in __init__, given to views and re-typed results
    by __array_finalize__ (which records what it was called with)."""

    finalized: list[Any] = []

    def __init__(self, shape: Any, dtype: Any, label: str = "", **kwargs: Any) -> None:
        super().__init__(shape, dtype, **kwargs)
        self.label = label

    def __array_finalize__(self, obj: Any) -> None:
        Labelled.finalized.append(obj)
        self.label = getattr(obj, "label", "")

    def _new_like_me(self, dtype: Any = None, order: str = "C") -> Labelled:
        return type(self)(self.shape, self.dtype if dtype is None else dtype, label=self.label, order=order)


class Important(Labelled):
    """A subclass of a higher priority: it wins mixed operations, as numpy's rule has it."""

    __array_priority__ = 10.0


class ThreadArray(gpuarray.GPUArray):
    """reikna's pattern: its own constructor, attributes set after GPUArray.__init__ (nbytes
    among them), results through an overridden _new_like_me."""

    made: list[Any] = []

    def __init__(self, owner: str, shape: Any, dtype: Any, base_data: Any = None, offset: int = 0) -> None:
        gpudata = None if base_data is None else int(base_data) + offset
        gpuarray.GPUArray.__init__(self, shape, dtype, allocator=drv.mem_alloc, gpudata=gpudata)
        self.base_data = self.gpudata if base_data is None else base_data
        self.offset = offset
        # The size of the buffer, as reikna sets it: larger than the elements' bytes.
        self.nbytes = offset + self.size * self.dtype.itemsize + 64
        self.owner = owner

    def _new_like_me(self, dtype: Any = None) -> ThreadArray:  # type: ignore[override]
        # reikna's signature: no order.
        result = ThreadArray(self.owner, self.shape, self.dtype if dtype is None else dtype)
        ThreadArray.made.append(result)
        return result


def test_attributes_a_subclass_sets_stay_set() -> None:
    a = ThreadArray("t", (4,), np.float32)
    a.set(np.arange(4, dtype=np.float32))
    assert a.nbytes == 16 + 64 and a.owner == "t" and a.offset == 0
    assert a.mem_size == a.size == 4 and a.itemsize == 4
    # nbytes is reported, never used to size a copy: the copy moves the 16 bytes of elements.
    np.testing.assert_array_equal(a.copy().get(), np.arange(4))
    np.testing.assert_array_equal(a.get(), np.arange(4))


def test_plain_attributes_are_plain() -> None:
    a = gpuarray.zeros(3, np.float64)
    assert (a.nbytes, a.mem_size, a.itemsize) == (24, 3, 8)
    a.nbytes = 99
    assert a.nbytes == 99


def test_operations_on_a_subclass_go_through_new_like_me() -> None:
    ThreadArray.made.clear()
    a = ThreadArray("t", (5,), np.float32)
    a.set(np.arange(5, dtype=np.float32))
    results = [a + a, a * 2, 2 * a, -a, abs(a), a > 1, a.astype(np.float64), cumath.exp(a), a.reverse()]
    z = ThreadArray("t", (5,), np.complex64)
    z.set((np.arange(5) + 2j).astype(np.complex64))
    results.append(z.real)
    for r in results:
        assert isinstance(r, ThreadArray) and r.owner == "t"
    assert len(ThreadArray.made) == len(results)
    np.testing.assert_allclose(results[1].get(), 2 * np.arange(5))
    np.testing.assert_array_equal(results[5].get(), np.arange(5) > 1)
    assert results[6].dtype == np.float64
    np.testing.assert_allclose(results[7].get(), np.exp(np.arange(5, dtype=np.float32)), rtol=1e-6)
    np.testing.assert_array_equal(results[8].get(), np.arange(5)[::-1])
    np.testing.assert_array_equal(results[9].get(), np.arange(5, dtype=np.float32))


def test_default_new_like_me_keeps_the_subclass() -> None:
    t = Tagged((2, 3), np.float64)
    t.fill(1.5)
    r = t * t
    assert type(r) is Tagged and r.shape == (2, 3)
    np.testing.assert_array_equal(r.get(), np.full((2, 3), 2.25))
    f = Tagged((2, 3), np.float32, order="F")
    like = f._new_like_me()
    assert type(like) is Tagged and like.strides == f.strides
    assert f._new_like_me(np.float64).flags.c_contiguous


def test_plain_arrays_stay_plain() -> None:
    a = gpuarray.to_gpu(np.arange(4.0))
    assert type(a + a) is gpuarray.GPUArray and type(cumath.sin(a)) is gpuarray.GPUArray


def test_views_of_a_subclass_are_of_the_subclass_on_its_memory() -> None:
    """As numpy's views of an ndarray subclass: made without __init__, then __array_finalize__."""
    a = Labelled((2, 3), np.int32, label="v")
    host = np.arange(6, dtype=np.int32).reshape(2, 3)
    a.set(host)
    first = a[:1]
    squeezed = first.squeeze()
    assert type(squeezed) is Labelled and squeezed.base is first and squeezed.get().tolist() == [0, 1, 2]
    views = {
        "a[1:]": (a[1:], host[1:]),
        "a[:, ::2]": (a[:, ::2], host[:, ::2]),
        "reshape": (a.reshape(3, 2), host.reshape(3, 2)),
        "ravel": (a.ravel(), host.ravel()),
        "T": (a.T, host.T),
        "transpose": (a.transpose(1, 0), host.transpose(1, 0)),
        "view": (a.view(np.uint32), host.view(np.uint32)),
    }
    for name, (view, want) in views.items():
        assert type(view) is Labelled and view.label == "v", name
        assert view.base is a and view.get().tolist() == want.tolist(), name
    assert int(a[1:].gpudata) == int(a.gpudata) + 12
    # A reshape that must copy (a strided view into another shape) is of the subclass too.
    copied = a[:, ::2].reshape(4)
    assert type(copied) is Labelled and copied.label == "v" and copied.get().tolist() == host[:, ::2].ravel().tolist()


def test_results_of_a_subclass_keep_it() -> None:
    a = Labelled((4,), np.float32, label="x")
    a.set(np.arange(4, dtype=np.float32))
    plain = gpuarray.to_gpu(np.ones(4, np.float32))
    results = {
        "x + y": a + plain,
        "y + x": plain + a,
        "x * 2": a * 2,
        "2 * x": 2 * a,
        "2 / x": 2 / (a + 1),
        "-x": -a,
        "abs": abs(a),
        "x > 1": a > 1,
        "copy": a.copy(),
        "astype": a.astype(np.float64),
        "fill": a.copy().fill(3),
        "cumath": cumath.sqrt(a),
        "maximum": gpuarray.maximum(plain, a),
    }
    for name, r in results.items():
        assert type(r) is Labelled and r.label == "x", name
    np.testing.assert_allclose(results["y + x"].get(), np.arange(4) + 1)
    np.testing.assert_allclose(results["2 / x"].get(), 2 / (np.arange(4) + 1), rtol=1e-6)
    assert results["astype"].dtype == np.float64 and results["fill"].get().tolist() == [3, 3, 3, 3]
    # get is a host copy: a numpy array, as numpy's would be.
    assert type(a.get()) is np.ndarray
    # Plain arrays stay plain (their results skip the subclass seam).
    assert type(plain + plain) is gpuarray.GPUArray and type(plain.copy()) is gpuarray.GPUArray


def test_the_operand_of_highest_priority_decides_the_result_class() -> None:
    """numpy's rule: the highest __array_priority__ wins, the first of equals; a plain array never."""
    x = Labelled((3,), np.float64, label="low")
    y = Important((3,), np.float64, label="high")
    z = Tagged((3,), np.float64)
    for a in (x, y, z):
        a.fill(1.0)
    assert type(x + y) is Important and type(y + x) is Important and (x + y).label == "high"
    assert type(x + z) is Labelled and type(z + x) is Tagged
    np.testing.assert_array_equal((x + y).get(), [2.0, 2.0, 2.0])


def test_a_0d_subclass_operand_re_types_the_result() -> None:
    """A 0-d operand stands for a scalar (PyCUDA): the result has the other's shape, and the 0-d
    subclass operand's class, made without __init__ and finalized from it (numpy wraps so)."""
    Labelled.finalized.clear()
    scalar = Labelled((), np.float32, label="s")
    scalar.fill(2.0)
    a = gpuarray.to_gpu(np.arange(3, dtype=np.float32))
    r = a * scalar
    assert type(r) is Labelled and r.shape == (3,) and r.label == "s" and Labelled.finalized == [scalar]
    np.testing.assert_array_equal(r.get(), [0.0, 2.0, 4.0])


def test_pygpus_own_work_on_a_subclass_uses_plain_views() -> None:
    """Reductions and fills view a subclass's array internally: those views are plain GPUArrays,
    so a subclass whose methods need what only its __init__ sets (reikna's) still works."""
    ThreadArray.made.clear()
    a = ThreadArray("t", (2, 3), np.float64)
    a.set(np.arange(6.0).reshape(2, 3))
    b = ThreadArray("t", (6,), np.float64)
    b.set(np.ones(6))
    assert float(gpuarray.dot(a, b).get()) == 15.0
    flags = ThreadArray("t", (4,), np.bool_)
    flags.set(np.array([True, False, True, True]))
    assert bool(gpuarray.min(flags).get()) is False and bool(gpuarray.max(flags).get()) is True
    vectors = ThreadArray("t", (3,), gpuarray.vec.float3)
    vectors.fill(np.array((1.0, 2.0, 3.0), gpuarray.vec.float3))
    assert vectors.get()["z"].tolist() == [3.0, 3.0, 3.0]
    assert ThreadArray.made == []


def test_copy_copy_shares_the_memory_and_the_attributes() -> None:
    a = Labelled((3,), np.float32, label="c")
    a.fill(1.0)
    b = copy.copy(a)
    assert type(b) is Labelled and b.label == "c" and b.ptr == a.ptr and b.get().tolist() == [1.0, 1.0, 1.0]


def test_the_storage_is_the_compiled_base() -> None:
    """GPUArray's memory and layout live in pygpu._pygpu.ArrayStorage, which launches and copies
    read directly: re-pointing it re-points them."""
    a = gpuarray.to_gpu(np.arange(4, dtype=np.float32))
    assert isinstance(a, _pygpu.ArrayStorage) and type(a).__mro__[-2] is _pygpu.ArrayStorage
    assert a.ptr == int(a._alloc) + a._offset
    other = drv.mem_alloc(16)
    drv.memcpy_htod(other, np.full(4, 5, np.float32))
    a._alloc, a._offset = other, 0
    host = np.empty(4, np.float32)
    drv.memcpy_dtoh(host, a)  # a copy call reads the storage
    assert host.tolist() == [5.0, 5.0, 5.0, 5.0]
    with pytest.raises(ValueError, match="non-contiguous"):
        drv.memcpy_dtoh(np.empty(2, np.float32), a[::2])


def test_a_subclass_that_skips_gpuarray_init_is_refused_clearly() -> None:
    class Hollow(gpuarray.GPUArray):
        def __init__(self) -> None:
            pass

    h = Hollow()
    with pytest.raises(ValueError, match=r"GPUArray.__init__\(self, shape, dtype"):
        drv.memcpy_htod(h, np.zeros(1, np.float32))


def test_a_view_made_from_an_address_and_offset() -> None:
    """reikna's __getitem__: a new subclass instance on ``int(base) + offset``."""
    base = ThreadArray("t", (8,), np.float64)
    base.set(np.arange(8.0))
    view = ThreadArray("t", (3,), np.float64, base_data=base.base_data, offset=16)
    np.testing.assert_array_equal(view.get(), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal((view * 10).get(), [20.0, 30.0, 40.0])


def test_assigning_gpudata_repoints_the_array() -> None:
    a = gpuarray.zeros(4, np.float32)
    other = gpuarray.to_gpu(np.arange(4, dtype=np.float32))
    a.gpudata = int(other.gpudata)
    np.testing.assert_array_equal(a.get(), np.arange(4))
    allocation = drv.mem_alloc(16)
    drv.memcpy_htod(allocation, np.full(4, 7, np.float32))
    a.gpudata = allocation
    assert a.gpudata is allocation and a.ptr == int(allocation)
    np.testing.assert_array_equal(a.get(), np.full(4, 7))


def test_new_like_me_must_give_the_result_it_is_asked_for() -> None:
    class Broken(gpuarray.GPUArray):
        def _new_like_me(self, dtype: Any = None, order: str = "C") -> Any:
            return gpuarray.zeros(1, np.float32)

    b = Broken((3,), np.float32)
    with pytest.raises(TypeError, match=r"_new_like_me\(float32\) must return a GPUArray of shape \(3,\)"):
        b + b


def test_not_an_iterable_but_rows_iterate() -> None:
    a = Tagged((2, 2), np.float64)
    a.set(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert not isinstance(a, collections.abc.Iterable)
    assert [r.get().tolist() for r in a] == [[1.0, 2.0], [3.0, 4.0]]


def test_memcpy_discontig_between_any_layouts() -> None:
    host = np.arange(12.0).reshape(3, 4)
    dev = gpuarray.to_gpu(host)
    strided = gpuarray.zeros((3, 2), np.float64)
    gpuarray._memcpy_discontig(strided, dev[:, ::2])
    np.testing.assert_array_equal(strided.get(), host[:, ::2])
    out = np.zeros((4, 3))
    gpuarray._memcpy_discontig(out, dev.T)
    np.testing.assert_array_equal(out, host.T)
    back = gpuarray.zeros((4, 3), np.float64)
    gpuarray._memcpy_discontig(back, host.T)
    np.testing.assert_array_equal(back.get(), host.T)
    with pytest.raises(ValueError, match="shape"):
        gpuarray._memcpy_discontig(back, dev)


@pytest.mark.parametrize("n", [1, 31, 32, 1000, 10**6, 10**9])
def test_splay_covers_n_with_warp_multiples(n: int) -> None:
    (blocks, one), (threads, y, z) = gpuarray.splay(n)
    assert one == y == z == 1 and threads % 32 == 0 and threads <= 128
    # Every element has a thread, or the grid strides over the rest (blocks at their cap).
    assert blocks * threads >= n or blocks == 8 * drv.Context.get_device().multiprocessor_count


def test_private_layout_helpers() -> None:
    f = gpuarray.GPUArray((2, 3), np.float32, order="F")
    assert gpuarray._compact_strides(f) == (4, 8)
    assert gpuarray._compact_strides(f[:, ::2]) == (8, 4)
    assert gpuarray._array_like_helper(f, None, "K") == (np.dtype(np.float32), "F", None)
    assert gpuarray._array_like_helper(f, np.int8, "C")[:2] == (np.dtype(np.int8), "C")
    assert gpuarray._get_common_dtype(f, 2.0) == np.float32
    assert gpuarray._get_common_dtype(f, np.zeros(1, np.float64)) == np.float64
    assert issubclass(gpuarray.GPUArrayError, ValueError)


def test_real_and_imag_of_a_subclass_keep_it_and_the_order() -> None:
    z = Tagged((2, 3), np.complex64, order="F")
    values = (np.arange(6) + 1j * np.arange(6, 12)).reshape(2, 3).astype(np.complex64)
    z.set(np.asfortranarray(values))
    re, im = z.real, z.imag
    assert type(re) is Tagged and type(im) is Tagged and re.dtype == np.float32
    assert re.flags.f_contiguous and not re.flags.c_contiguous
    np.testing.assert_array_equal(re.get(), values.real)
    np.testing.assert_array_equal(im.get(), values.imag)
