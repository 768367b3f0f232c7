"""PyCUDA's ``Device`` and ``Context`` (re-exported by ``pygpu.driver``).

Contexts are the devices' *primary* contexts: ``Context.push``/``pop`` switch the current
device and restore the previous one from a per-thread stack.
"""

from __future__ import annotations

import operator
import threading

from pygpu._driver.enums import device_attribute, func_cache, shared_config
from pygpu._driver.enums import limit as _Limit
from pygpu._pygpu import (
    ctx_get_api_version,
    cudaDeviceProp,
    cudaError,
    device_attributes,
    device_can_access_peer,
    device_disable_peer_access,
    device_enable_peer_access,
    device_get_attribute,
    device_get_cache_config,
    device_get_limit,
    device_set_cache_config,
    device_set_limit,
    device_synchronize,
    get_device,
    get_device_count,
    set_device,
)
from pygpu.errors import ErrorCode, InvalidDeviceError, LogicError

__all__ = ["Context", "Device"]


class Device:
    """Device ``n`` (an ordinal of the active backend)."""

    def __init__(self, ordinal: int | str) -> None:
        count = Device.count()
        if isinstance(ordinal, str):
            if ":" not in ordinal:
                raise TypeError(
                    f"a device is its ordinal (an int) or its PCI bus id such as '0000:3b:00.0', not {ordinal!r}"
                )
            ordinal = Device._by_pci_bus_id(ordinal, count)
        try:
            ordinal = operator.index(ordinal)
        except TypeError as e:
            raise TypeError(f"a device ordinal is an int, not {type(ordinal).__name__}") from e
        if not 0 <= ordinal < count:
            # What the runtime says for a bad ordinal: the CudaError subclass of
            # cudaErrorInvalidDevice (101), which is also a ValueError.
            try:
                cudaError(ErrorCode.cudaErrorInvalidDevice).check()
            except InvalidDeviceError as e:
                e.add_note(f"no device {ordinal!r}: there are {count} device(s)")
                raise
        self.ordinal = ordinal

    @staticmethod
    def _by_pci_bus_id(bus_id: str, count: int) -> int:
        """PyCUDA's ``Device(pci_bus_id)``: the ordinal of the device at ``domain:bus:device.function``
        (hex, any case; the domain may be left out, as cuDeviceGetByPCIBusId allows)."""
        wanted = bus_id.strip().lower()
        if wanted.count(":") == 1:
            wanted = "0000:" + wanted
        for n in range(count):
            if Device(n).pci_bus_id() == wanted:
                return n
        raise ValueError(
            f"no device has the PCI bus id {bus_id!r}: the {count} device(s) have "
            f"{', '.join(Device(n).pci_bus_id() for n in range(count))}"
        )

    @staticmethod
    def count() -> int:
        """The number of devices the active backend sees (``cuDeviceGetCount``)."""
        return get_device_count()

    def _props(self) -> cudaDeviceProp:
        return cudaDeviceProp(self.ordinal)

    def name(self) -> str:
        """The device's name, e.g. ``"NVIDIA H100 80GB HBM3"``."""
        return self._props().name

    def compute_capability(self) -> tuple[int, int]:
        """(major, minor), e.g. ``(9, 0)`` for an H100: what ``arch="sm_90"`` targets."""
        return self._props().compute_capability

    def total_memory(self) -> int:
        """The device's global memory in bytes."""
        return self._props().totalGlobalMem

    def pci_bus_id(self) -> str:
        """``domain:bus:device.function`` in hex, e.g. ``0000:3b:00.0``."""
        p = self._props()
        return f"{p.pciDomainID:04x}:{p.pciBusID:02x}:{p.pciDeviceID:02x}.0"

    def get_attribute(self, attr: device_attribute | int) -> int:
        """The value of one ``device_attribute`` (``cuDeviceGetAttribute``)."""
        try:
            number = device_attribute(attr)
        except ValueError as e:
            raise ValueError(f"{attr!r} is not a device_attribute (CUDA 12 has numbers 1 to 143)") from e
        return device_get_attribute(int(number), self.ordinal)

    def get_attributes(self) -> dict[device_attribute, int]:
        """Every attribute the backend knows, keyed by ``device_attribute`` (PyCUDA leaves out
        the ones the driver does not report; so does this)."""
        known = {int(a) for a in device_attribute}
        return {device_attribute(n): v for n, v in device_attributes(self.ordinal).items() if n in known}

    def __getattr__(self, name: str) -> int:
        # PyCUDA's spellings dev.MAX_THREADS_PER_BLOCK and dev.max_threads_per_block for
        # dev.get_attribute(...).
        if (name.isupper() or name.islower()) and name.upper() in device_attribute.__members__:
            return self.get_attribute(device_attribute[name.upper()])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def can_access_peer(self, dev: Device) -> bool:
        """Whether this device can address memory of ``dev`` directly (never of itself)."""
        if not isinstance(dev, Device):
            raise TypeError(f"can_access_peer expects a Device, not {type(dev).__name__}")
        return device_can_access_peer(self.ordinal, dev.ordinal)

    def __enter__(self) -> Device:
        """``with pygpu.Device(n):`` makes device ``n`` current for everything that allocates or
        launches in the block, on this thread; the previous device is current again after it."""
        _device_stack.entries.append(get_device())
        set_device(self.ordinal)
        return self

    def __exit__(self, *exc_info: object) -> None:
        set_device(_device_stack.entries.pop())

    def make_context(self, flags: int = 0) -> Context:
        """The device's primary context, made current (pushed); pop or detach it later."""
        if flags != 0:
            raise ValueError("make_context flags other than 0 are not supported (primary contexts)")
        context = Context(self)
        context.push()
        return context

    def retain_primary_context(self) -> Context:
        """The device's primary context, not made current (``push()`` it to use it)."""
        return Context(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.ordinal == self.ordinal

    def __hash__(self) -> int:
        return hash(("pygpu.Device", self.ordinal))

    def __int__(self) -> int:
        return self.ordinal

    def __repr__(self) -> str:
        return f"<pygpu.driver.Device {self.ordinal}>"


class _ContextStack(threading.local):
    def __init__(self) -> None:
        self.entries: list[tuple[Context, int]] = []


_stack = _ContextStack()


class _DeviceStack(threading.local):
    def __init__(self) -> None:
        self.entries: list[int] = []


# The devices current before each `with Device(n):` block of this thread.
_device_stack = _DeviceStack()


class Context:
    """A device's primary context. ``push`` makes its device current (remembering the
    previous one), ``Context.pop`` restores it; the stack is per thread."""

    def __init__(self, device: Device | int) -> None:
        self.device = device if isinstance(device, Device) else Device(device)
        self._detached = False

    def push(self) -> None:
        """Makes this context's device current on this thread until ``Context.pop()``;
        raises LogicError once the context was detached."""
        if self._detached:
            raise LogicError("this context was detached and can no longer be pushed")
        previous = get_device()
        set_device(self.device.ordinal)
        _stack.entries.append((self, previous))

    @staticmethod
    def pop() -> None:
        """Makes the previously current device current again."""
        if not _stack.entries:
            raise LogicError("Context.pop: the context stack is empty")
        _context, previous = _stack.entries[-1]
        set_device(previous)
        _stack.entries.pop()

    @staticmethod
    def attach(flags: int = 0) -> Context:
        """The current device's (primary) context, as PyCUDA's ``Context.attach``: not pushed;
        ``detach()`` it when done."""
        if flags != 0:
            raise ValueError("attach flags must be 0")
        return Context(get_device())

    def detach(self) -> None:
        """Pops this context if it is current; afterwards it cannot be pushed again."""
        if self._detached:
            return
        entries = _stack.entries
        if entries and entries[-1][0] is self:
            Context.pop()
        elif any(c is self for c, _ in entries):
            raise LogicError("cannot detach a context that is on the stack below another one: pop that first")
        self._detached = True

    @staticmethod
    def synchronize() -> None:
        """Waits for all work of the current device."""
        device_synchronize()

    @staticmethod
    def get_limit(limit: _Limit | int) -> int:
        """A resource ``limit`` of the current device's context (``cuCtxGetLimit``)."""
        return device_get_limit(int(_Limit(limit)))

    @staticmethod
    def set_limit(limit: _Limit | int, value: int) -> None:
        """Sets a resource ``limit``, e.g. ``limit.MALLOC_HEAP_SIZE`` for in-kernel malloc. On
        the host backend the value is recorded and reported back but constrains nothing."""
        device_set_limit(int(_Limit(limit)), value)

    @staticmethod
    def get_cache_config() -> func_cache:
        """The current device's preferred split of L1 and shared memory."""
        return func_cache(device_get_cache_config())

    @staticmethod
    def set_cache_config(config: func_cache | int) -> None:
        """A preference (``func_cache``) the GPU may ignore; each kernel's own one wins."""
        device_set_cache_config(int(func_cache(config)))

    @staticmethod
    def get_shared_config() -> shared_config:
        """The shared-memory bank size (``shared_config``): always DEFAULT_BANK_SIZE, because
        since CUDA 12 the driver no longer lets it be configured (see ``set_shared_config``)."""
        Context.get_device()  # fails as the driver would when no device is usable
        return shared_config.DEFAULT_BANK_SIZE

    @staticmethod
    def set_shared_config(config: shared_config | int) -> None:
        """Accepts a ``shared_config`` value and changes nothing: CUDA 12 deprecated the bank
        size setting and its driver ignores it (all current GPUs have fixed 4-byte banks)."""
        try:
            shared_config(config)
        except ValueError as e:
            raise ValueError(
                f"{config!r} is not a shared_config: DEFAULT_BANK_SIZE (0), FOUR_BYTE_BANK_SIZE (1) or "
                "EIGHT_BYTE_BANK_SIZE (2)"
            ) from e

    @staticmethod
    def get_api_version() -> int:
        """The current context's API version (``cuCtxGetApiVersion``): 3020 with CUDA 12 (the
        context API has not changed since CUDA 3.2). Not the driver version: see get_driver_version."""
        return ctx_get_api_version()

    # Static, as PyCUDA's: they act on the current context (``ctx.enable_peer_access(peer)``
    # with ``ctx`` current, or ``Context.enable_peer_access(peer)``).
    @staticmethod
    def enable_peer_access(peer: Context | Device | int, flags: int = 0) -> None:
        """Lets the current device address ``peer``'s memory directly (one direction: make the
        peer current and call it again for the other). ``CudaError`` 704 when already enabled."""
        device_enable_peer_access(_ordinal(peer), flags)

    @staticmethod
    def disable_peer_access(peer: Context | Device | int, flags: int = 0) -> None:
        """Undoes ``enable_peer_access`` (``flags`` is PyCUDA's and must be 0)."""
        if flags != 0:
            raise ValueError("disable_peer_access flags must be 0")
        device_disable_peer_access(_ordinal(peer))

    @staticmethod
    def get_device() -> Device:
        """The current device."""
        return Device(get_device())

    @staticmethod
    def get_current() -> Context | None:
        """The context on top of this thread's stack, if any."""
        return _stack.entries[-1][0] if _stack.entries else None

    def __repr__(self) -> str:
        state = " (detached)" if self._detached else ""
        return f"<pygpu.driver.Context of device {self.device.ordinal}{state}>"


def _ordinal(peer: Context | Device | int) -> int:
    return peer.device.ordinal if isinstance(peer, Context) else int(peer)
