"""The steps of a cache hit that the GPU's 1 ms budget depends on, checked on any backend:
the device query asks only for the compute capability on cuda, and the driver's CUDA major
is asked once per process."""

from __future__ import annotations

import pygpu
import pytest
from pygpu import _kernels, _pygpu, compiler


def test_cuda_device_query_is_two_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def attribute(attr: int, device: int) -> tuple[int, _pygpu.cudaError]:
        asked.append(attr)
        return {75: 9, 76: 0}[attr], _pygpu.cudaError(0)

    monkeypatch.setattr(pygpu, "backend", lambda: "cuda")
    monkeypatch.setattr(compiler, "_device_memo", {})
    monkeypatch.setattr(_kernels, "_capabilities", {})
    monkeypatch.setattr(_kernels, "cudaDeviceGetAttribute", attribute)
    monkeypatch.setattr(compiler, "cudaDeviceProp", lambda device: pytest.fail("all properties were queried"))
    assert compiler._device()[0] == (9, 0)
    assert compiler._device()[0] == (9, 0)
    assert asked == [75, 76], "memoized per device"


def test_driver_major_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def version() -> int:
        calls.append(1)
        return 12080

    monkeypatch.setattr(compiler, "_driver_major_memo", [])
    monkeypatch.setattr(pygpu.driver, "get_driver_version", version)
    assert compiler._driver_major() == 12
    assert compiler._driver_major() == 12
    assert calls == [1]
