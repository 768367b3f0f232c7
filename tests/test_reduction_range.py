"""ReductionKernel's range= and slice= keywords (PyCUDA's): the map expression runs over
exactly the indices of the range, or of the slice clipped to the first array, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from pygpu import gpuarray
from pygpu.reduction import ReductionKernel


@pytest.fixture(scope="module")
def total() -> ReductionKernel:
    return ReductionKernel(np.float64, "0", "a+b", arguments="const double *in", name="range_total")


@pytest.fixture(scope="module")
def weighted() -> ReductionKernel:
    # i itself enters the result, so an index off by one or in the wrong order shows.
    return ReductionKernel(
        np.float64, "0", "a+b", "x[i] * (double)(i + 1)", arguments="const double *x", name="range_weighted"
    )


# Lengths around the host block (32) and the one-block limit, with odd steps both ways.
RANGES = [
    (0, 1, 1),
    (3, 40, 1),
    (0, 100, 7),
    (99, -1, -3),
    (5, 5, 1),
    (50, 10, -1),
    (1, 5001, 2),
    (4999, 0, -5),
]


@pytest.mark.parametrize(("start", "stop", "step"), RANGES)
def test_range_reduces_exactly_those_indices(
    total: ReductionKernel, weighted: ReductionKernel, start: int, stop: int, step: int
) -> None:
    x = np.random.default_rng(start + 1000 * abs(step)).standard_normal(5001)
    gx = gpuarray.to_gpu(x)
    idx = np.arange(start, stop, step)
    np.testing.assert_allclose(total(gx, range=slice(start, stop, step)).get(), x[idx].sum(), atol=1e-9)
    np.testing.assert_allclose(
        weighted(gx, range=range(start, stop, step)).get(), (x[idx] * (idx + 1)).sum(), atol=1e-7
    )


@pytest.mark.parametrize(
    "sl", [slice(None), slice(10, None), slice(None, -7), slice(-100, None, 3), slice(None, None, -1), slice(3, 2)]
)
def test_slice_is_clipped_like_python(total: ReductionKernel, weighted: ReductionKernel, sl: slice) -> None:
    x = np.arange(1, 2001, dtype=np.float64)
    gx = gpuarray.to_gpu(x)
    idx = np.arange(2000)[sl]
    assert total(gx, slice=sl).get() == x[sl].sum()
    assert weighted(gx, slice=sl).get() == (x[sl] * (idx + 1)).sum()
    assert total(gx, slice=slice(0, 10**9)).get() == x.sum()


def test_range_default_start_and_step(total: ReductionKernel) -> None:
    x = np.arange(100, dtype=np.float64)
    assert total(gpuarray.to_gpu(x), range=slice(None, 10)).get() == x[:10].sum()


def test_range_with_out_and_stream(total: ReductionKernel) -> None:
    x = np.arange(3000, dtype=np.float64)
    out = gpuarray.zeros((), np.float64)
    assert total(gpuarray.to_gpu(x), range=slice(100, 200), out=out) is out
    assert out.get() == x[100:200].sum()


def test_range_and_slice_errors(total: ReductionKernel) -> None:
    gx = gpuarray.to_gpu(np.ones(10))
    with pytest.raises(TypeError, match="not both"):
        total(gx, range=slice(0, 2), slice=slice(0, 2))
    with pytest.raises(TypeError, match="slice= takes a slice"):
        total(gx, slice=(0, 2))
    with pytest.raises(TypeError, match="range= takes"):
        total(gx, range=5)
    with pytest.raises(ValueError, match="needs a stop"):
        total(gx, range=slice(0, None))
    with pytest.raises(ValueError, match="step cannot be zero"):
        total(gx, range=slice(0, 5, 0))
    with pytest.raises(IndexError, match="index 10, outside"):
        total(gx, range=slice(0, 11))
    with pytest.raises(IndexError, match="index -1, outside"):
        total(gx, range=slice(-1, 5))
    with pytest.raises(IndexError, match="index 12, outside"):
        total(gx, range=slice(12, 0, -2))
    # An empty range is the neutral element, wherever it points.
    assert total(gx, range=slice(50, 50)).get() == 0
