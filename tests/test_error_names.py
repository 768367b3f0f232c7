"""`cudaError` (the status value a low-level call returns) and `CudaError` (the exception)
differ only by case; their reprs tell them apart."""

from __future__ import annotations

import pytest

import pygpu


def test_status_value_and_exception_reprs_differ() -> None:
    status = pygpu.cudaError(1)
    assert repr(status) == "<cudaError: code=1>"
    with pytest.raises(pygpu.CudaError) as raised:
        status.check()
    text = repr(raised.value)
    assert text.startswith("InvalidValueError(")
    assert "code=1, name='cudaErrorInvalidValue'" in text
    assert repr(pygpu.CudaError("plain")) == "CudaError('plain', code=None, name=None)"
