"""The steps of a cache hit that the GPU's 1 ms budget depends on, checked on any backend:
the device query asks only for the compute capability on cuda, and the driver's CUDA major
is asked once per process."""

from __future__ import annotations

import pytest
from pygpu import _pygpu
from pygpu._driver import capability
from pygpu._toolchain import source_module


def test_cuda_device_query_is_two_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def attribute(attr: int, device: int) -> int:
        asked.append(attr)
        return {75: 9, 76: 0}[attr]

    monkeypatch.setattr(source_module, "capabilities", lambda: _pygpu.capabilities("cuda"))
    monkeypatch.setattr(source_module, "_device_memo", {})
    monkeypatch.setattr(capability, "_capabilities", {})
    monkeypatch.setattr(capability, "device_get_attribute", attribute)
    monkeypatch.setattr(source_module, "cudaDeviceProp", lambda device: pytest.fail("all properties were queried"))
    assert source_module._device()[0] == (9, 0)
    assert source_module._device()[0] == (9, 0)
    assert asked == [75, 76], "memoized per device"


def test_driver_major_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def version() -> int:
        calls.append(1)
        return 12080

    monkeypatch.setattr(source_module, "_driver_major_memo", [])
    monkeypatch.setattr(source_module, "driver_get_version", version)
    assert source_module.driver_major() == 12
    assert source_module.driver_major() == 12
    assert calls == [1]
