"""Several devices in one process.

The current device is per thread (``cudaSetDevice``, ``with pygpu.Device(n):``) and
everything that allocates or launches uses it. An array, stream or kernel belongs to the
device it was made on and is refused while another device is current: an operation runs on
the current device with all its arrays there. Moving data between devices is explicit:
``memcpy_peer`` (PyCUDA's), or ``GPUArray.copy_to(device)``, which gives a C-ordered copy
on the other device without a trip through the host.
"""

from __future__ import annotations

import operator
from typing import Any

from pygpu._driver.contexts import Context, Device
from pygpu._pygpu import DeviceAllocation, get_device, get_device_count
from pygpu._pygpu import memcpy_peer as _memcpy_peer
from pygpu._pygpu import memcpy_peer_async as _memcpy_peer_async
from pygpu.errors import BackendUnavailableError, CudaError

__all__ = ["Device", "memcpy_peer", "memcpy_peer_async"]

_device_count: list[int] = []


def several_devices() -> bool:
    """Whether arrays can be on different devices at all (asked once per process: the
    backend and its devices are fixed once chosen)."""
    if not _device_count:
        try:
            count = get_device_count()
        except BackendUnavailableError:
            raise
        except CudaError:
            count = 1  # a backend that cannot count its devices uses one; its next call says why
        _device_count.append(count)
    return _device_count[0] > 1


def current_device() -> int:
    """The current device, without a driver call where there is only one."""
    return get_device() if several_devices() else 0


def check_devices(arrays: Any) -> None:
    """Refuses arrays that are not all on the current device, naming the devices involved."""
    if not several_devices():
        return
    current = get_device()
    # Objects of other libraries may name their device otherwise (or not at all): not judged here.
    devices = {d for d in (getattr(a, "device", None) for a in arrays) if isinstance(d, int)}
    if devices <= {current}:
        return
    elsewhere = sorted(devices - {current})
    names = ", ".join(map(str, elsewhere))
    raise ValueError(
        f"arrays on device {names} used while device {current} is current: an operation runs on the current "
        f"device with all its arrays there; run it inside `with pygpu.Device({elsewhere[0]}):`, or copy the "
        f"arrays over with a.copy_to({current})"
    )


def ordinal_of(device: Any, what: str) -> int:
    """The ordinal of a Device, a Context or an int; TypeError naming ``what`` otherwise."""
    if isinstance(device, Device):
        return device.ordinal
    if isinstance(device, Context):
        return device.device.ordinal
    try:
        return operator.index(device)
    except TypeError as e:
        raise TypeError(f"{what} is a Device, a Context or an ordinal, not {type(device).__name__}") from e


def _device_of(pointer: Any, context: Any, what: str) -> int:
    """The device a pointer argument names: its context's if given, else the allocation's own,
    else the current device (as PyCUDA takes the current context)."""
    if context is not None:
        return ordinal_of(context, what)
    if isinstance(pointer, DeviceAllocation):
        return pointer.device
    device = getattr(pointer, "device", None)
    if isinstance(device, int):
        return device
    return current_device()


def memcpy_peer(dest: Any, src: Any, size: int, dest_context: Any = None, src_context: Any = None) -> None:
    """Copies ``size`` bytes from ``src`` to ``dest`` across devices (``cuMemcpyPeer``).

    A context (or Device, or ordinal) says which device a pointer is on; by default an
    allocation's own device, else the current one. No peer access is needed (the driver
    stages the copy where the devices cannot reach each other)."""
    dst_device = _device_of(dest, dest_context, "dest_context")
    src_device = _device_of(src, src_context, "src_context")
    _memcpy_peer(dest, dst_device, src, src_device, size)


def memcpy_peer_async(
    dest: Any, src: Any, size: int, dest_context: Any = None, src_context: Any = None, stream: Any = None
) -> None:
    """``memcpy_peer`` ordered on ``stream`` (a stream of the current device; None: the
    legacy default stream)."""
    dst_device = _device_of(dest, dest_context, "dest_context")
    src_device = _device_of(src, src_context, "src_context")
    _memcpy_peer_async(dest, dst_device, src, src_device, size, stream)
