"""The current device's compute capability, asked once per device: what the compilers target
and which cubin of a bundled fatbin loads. Apart from ``devices`` (which imports contexts) so
that ``import pygpu``, which loads the bundled-kernel loader, stays light."""

from __future__ import annotations

from pygpu._driver.enums import device_attribute
from pygpu._pygpu import device_get_attribute, get_device

__all__ = ["device_capability"]

_capabilities: dict[int, tuple[int, int]] = {}


def device_capability() -> tuple[int, int]:
    """The current CUDA device's compute capability (two attribute queries, once per device:
    all of cudaDeviceProp costs more than a module load)."""
    device = get_device()
    if device not in _capabilities:
        _capabilities[device] = (
            device_get_attribute(int(device_attribute.COMPUTE_CAPABILITY_MAJOR), device),
            device_get_attribute(int(device_attribute.COMPUTE_CAPABILITY_MINOR), device),
        )
    return _capabilities[device]
