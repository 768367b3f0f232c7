"""int64 against uint64 comparisons are exact, as numpy's own mixed loops (qQ->?, Qq->?): values
beyond 2**53 and negative int64s against uint64s above 2**63 compare as integers, not as float64."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pygpu.gpuarray as ga

COMPARISONS: list[Callable[[Any, Any], Any]] = [
    operator.eq,
    operator.ne,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
]

# Pairs that float64 gets wrong: 2**53 + 1 vs 2**53, 2**64 - 1 vs 2**63 - 1 and -1, equal large values.
U64 = np.array([2**53 + 1, 2**64 - 1, 2**63, 0, 5, 2**63 - 1, 2**64 - 1, 2**63 + 1], np.uint64)
I64 = np.array([2**53, 2**63 - 1, -1, -1, 5, 2**63 - 1, -(2**63), 2**63 - 1], np.int64)


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda f: f.__name__)
def test_int64_uint64_arrays_compare_exactly(op: Callable[[Any, Any], Any]) -> None:
    gu, gi = ga.to_gpu(U64), ga.to_gpu(I64)
    for got, want in ((op(gu, gi), op(U64, I64)), (op(gi, gu), op(I64, U64))):
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda f: f.__name__)
def test_int64_uint64_strided_and_numpy_scalars(op: Callable[[Any, Any], Any]) -> None:
    gu, gi = ga.to_gpu(U64), ga.to_gpu(I64)
    np.testing.assert_array_equal(op(gu[::-2], gi[1::2]).get(), op(U64[::-2], I64[1::2]))
    for scalar in (np.int64(-1), np.int64(2**63 - 1)):
        np.testing.assert_array_equal(op(gu, scalar).get(), op(U64, scalar))
        np.testing.assert_array_equal(op(scalar, gu).get(), op(scalar, U64))
    for scalar_u in (np.uint64(2**64 - 1), np.uint64(2**53 + 1)):
        np.testing.assert_array_equal(op(gi, scalar_u).get(), op(I64, scalar_u))


@pytest.mark.parametrize("narrow", ["int8", "int16", "int32"])
def test_narrow_signed_against_uint64(narrow: str) -> None:
    """numpy widens the signed operand to int64 and then compares exactly."""
    small = np.array([-1, 0, 5, -128, 7, 1, 100, -3], narrow)
    gs, gu = ga.to_gpu(small), ga.to_gpu(U64)
    for op in COMPARISONS:
        np.testing.assert_array_equal(op(gs, gu).get(), op(small, U64))
        np.testing.assert_array_equal(op(gu, gs).get(), op(U64, small))


def test_out_of_range_python_int_compares_by_value() -> None:
    """numpy 2 compares an integer array with any Python int by value (issue 27, class H):
    ``uint64_array < -1`` is all False, no wrap-around and no OverflowError."""
    g = ga.to_gpu(U64)
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        for scalar in (-1, 1 << 64):
            np.testing.assert_array_equal(op(g, scalar).get(), op(U64, scalar))
            np.testing.assert_array_equal(op(scalar, g).get(), op(scalar, U64))
