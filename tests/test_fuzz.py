"""Property-based tests (hypothesis): random shapes, dtypes, orders, indices, reshapes,
views and copies checked against numpy, and random invalid arguments to the public API,
each answered by an exception, never a crash. The number of cases run is printed at the
end of the session (conftest.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygpu
from conftest import count_fuzz_case
from conftest import GPUARRAY_DTYPES

DTYPES = GPUARRAY_DTYPES
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def host_arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=4)))
    values = np.arange(math.prod(shape)).reshape(shape)
    a = np.asarray((values % 2 == 1) if dtype == np.bool_ else values.astype(dtype))
    if dtype.kind == "c":
        a = np.asarray(a + 1j * a, dtype=dtype)
    return np.asfortranarray(a) if draw(st.booleans()) else a


@st.composite
def index_for(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    key: list[Any] = []
    dims = list(shape)
    used_ellipsis = False
    while dims:
        choice = draw(st.sampled_from(["int", "slice", "newaxis", "ellipsis", "stop"]))
        if choice == "stop" and not used_ellipsis:
            break  # after an Ellipsis the keys must cover the trailing axes exactly
        if choice == "newaxis":
            key.append(None)
            continue
        if choice == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            key.append(Ellipsis)
            keep = draw(st.integers(0, len(dims)))
            dims = dims[len(dims) - keep :]
            continue
        n = dims.pop(0)
        if choice == "int" and n > 0:
            key.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.none() | st.integers(-n - 2, n + 2))
            stop = draw(st.none() | st.integers(-n - 2, n + 2))
            step = draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3]))
            key.append(slice(start, stop, step))
    return tuple(key)


@FUZZ
@given(data=st.data())
def test_views_match_numpy(data: st.DataObject) -> None:
    count_fuzz_case()
    a = data.draw(host_arrays())
    key = data.draw(index_for(a.shape))
    g = pygpu.to_gpu(a)
    expected = a[key]
    view = g[key]
    assert view.shape == expected.shape and view.dtype == expected.dtype
    np.testing.assert_array_equal(view.get(), expected)
    # A view of a view, then a copy of it, still agree.
    if expected.ndim:
        np.testing.assert_array_equal(view[::-1].copy().get(), expected[::-1])


@FUZZ
@given(data=st.data())
def test_setitem_matches_numpy(data: st.DataObject) -> None:
    count_fuzz_case()
    a = data.draw(host_arrays())
    key = data.draw(index_for(a.shape))
    target = a[key]
    if target.size == 0:
        return
    g = pygpu.to_gpu(a)
    expected = a.copy()
    if data.draw(st.booleans()):
        value: Any = np.ones(1, a.dtype)[0]
    else:
        value = (np.arange(target.size).reshape(target.shape) % 3).astype(a.dtype)
    expected[key] = value
    g[key] = value
    np.testing.assert_array_equal(g.get(), expected)


@FUZZ
@given(data=st.data())
def test_reshape_transpose_ravel_match_numpy(data: st.DataObject) -> None:
    count_fuzz_case()
    a = data.draw(host_arrays())
    g = pygpu.to_gpu(a)
    np.testing.assert_array_equal(g.T.get(), a.T)
    np.testing.assert_array_equal(g.ravel().get(), a.ravel())
    order = data.draw(st.sampled_from(["C", "F"]))
    shape = data.draw(st.sampled_from([[a.size], [1, a.size], [a.size, 1], [-1]]))
    # PyCUDA's reshape re-reads a contiguous array's buffer with the strides of `order`.
    buffer = np.ravel(a, order="K")
    np.testing.assert_array_equal(g.reshape(shape, order=order).get(), buffer.reshape(shape, order=order))
    bad = a.size + 1
    with pytest.raises(ValueError):
        g.reshape(bad)


@FUZZ
@given(a=host_arrays(), stream=st.booleans())
def test_round_trip_and_copy(a: np.ndarray, stream: bool) -> None:
    count_fuzz_case()
    s = pygpu.cudaStream_t() if stream else None
    g = pygpu.to_gpu_async(a, stream=s) if stream else pygpu.to_gpu(a)
    c = g.copy()
    out = c.get()
    if s is not None:
        pygpu.cudaStreamSynchronize(s)
    np.testing.assert_array_equal(out, a)
    assert c.gpudata is not g.gpudata


# --- invalid arguments -------------------------------------------------------------

# Hostile argument values (also run under an address-space limit by
# test_reliability.test_public_functions_stay_within_an_address_space_limit).
WEIRD_VALUES: list[Any] = [
    None,
    -1,
    0,
    1,
    2**40,
    2**64,
    -(2**63),
    1e300,
    float("nan"),
    "x",
    b"\x00",
    [],
    [1, -2],
    (),
    (0, -1),
    object(),
    np.float64(1.5),
    np.int8(-1),
    np.zeros(3, np.int32),
    np.zeros((2, 0)),
    np.zeros(4)[::2],
    slice(None),
    Ellipsis,
    {},
    3j,
]
WEIRD = st.sampled_from(WEIRD_VALUES)


def call(f: Any, *args: Any) -> None:
    """Calls f; any Exception is an acceptable answer. A crash would end the test process."""
    try:
        f(*args)
    except Exception as e:  # noqa: BLE001
        assert str(e) or type(e).__name__  # every exception says something
    pygpu.cudaGetLastError()


LOW_LEVEL = [
    pygpu.cudaSetDevice,
    pygpu.cudaGetErrorName,
    pygpu.cudaGetErrorString,
    pygpu.cudaDeviceProp,
    pygpu.cudaStream_t,
    pygpu.cudaEvent_t,
    pygpu.mem_alloc,
    pygpu.memset_d8,
    pygpu.memset_d16,
    pygpu.memset_d32,
    pygpu.pagelocked_empty,
    pygpu.pagelocked_zeros,
    pygpu.DeviceArray_float64,
    pygpu.DeviceArray_int32,
    pygpu.pointer_wrapper_float64,
    pygpu.to_gpu,
    pygpu.empty,
    pygpu.zeros,
    pygpu.ones,
    pygpu.arange,
    pygpu.asarray,
    pygpu.from_dlpack,
    pygpu.GPUArray,
    pygpu.set_backend,
    pygpu.cudaStreamSynchronize,
    pygpu.cudaEventRecord,
    pygpu.cudaEventElapsedTime,
    pygpu.Module,
    pygpu.load_kernels,
    pygpu.driver.ArgumentHandler,
    pygpu.driver.In,
    pygpu.cudaError,
]


@settings(max_examples=600, deadline=None)
@given(f=st.sampled_from(LOW_LEVEL), args=st.lists(WEIRD, max_size=3))
def test_functions_reject_invalid_arguments(f: Any, args: list[Any]) -> None:
    count_fuzz_case()
    call(f, *args)


@settings(max_examples=600, deadline=None)
@given(
    method=st.sampled_from(
        [
            "get",
            "set",
            "fill",
            "view",
            "reshape",
            "squeeze",
            "transpose",
            "__getitem__",
            "__setitem__",
            "astype",
            "get_async",
            "set_async",
            "copy",
        ]
    ),
    args=st.lists(WEIRD, max_size=2),
)
def test_gpuarray_methods_reject_invalid_arguments(method: str, args: list[Any]) -> None:
    count_fuzz_case()
    g = pygpu.to_gpu(np.arange(12.0).reshape(3, 4))
    before = g.get()
    call(getattr(g, method), *args)
    if method not in ("set", "fill", "__setitem__", "set_async"):
        np.testing.assert_array_equal(g.get(), before)  # read-only methods changed nothing


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(["allocate", "to_device", "to_host", "device_data", "shape"]),
    args=st.lists(WEIRD, max_size=2),
)
def test_device_array_methods_reject_invalid_arguments(method: str, args: list[Any]) -> None:
    count_fuzz_case()
    host = np.arange(6.0)
    da = pygpu.DeviceArray_float64(host)
    if method != "allocate":
        da.allocate()
        da.to_device()
    call(getattr(da, method), *args)
    assert host.tolist() == list(np.arange(6.0))


@settings(max_examples=300, deadline=None)
@given(method=st.sampled_from(["get_function", "get_global"]), name=st.text(max_size=20))
def test_module_lookups_with_random_names(method: str, name: str) -> None:
    count_fuzz_case()
    call(getattr(pygpu.load_kernels("testing"), method), name)
