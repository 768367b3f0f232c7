"""GPUArray's subclass contract, as PyCUDA documents it and PyCUDA-based libraries (reikna) rely
on: plain attributes a subclass sets after ``GPUArray.__init__``, results of operations made by
``_new_like_me``, views that are plain GPUArrays, ``gpudata`` re-pointed by assignment."""

from __future__ import annotations

import collections.abc
from typing import Any

import numpy as np
import pytest

import pygpu.driver as drv
import pygpu.gpuarray as gpuarray
from pygpu import cumath


class Tagged(gpuarray.GPUArray):
    """A subclass with GPUArray's constructor: the default _new_like_me makes its results."""


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


def test_views_of_a_subclass_are_plain_gpuarrays_on_its_memory() -> None:
    a = Tagged((6,), np.int32)
    a.set(np.arange(6, dtype=np.int32))
    view = a[2:]
    assert type(view) is gpuarray.GPUArray and view.base is a
    assert int(view.gpudata) == int(a.gpudata) + 8
    np.testing.assert_array_equal(view.get(), [2, 3, 4, 5])


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
