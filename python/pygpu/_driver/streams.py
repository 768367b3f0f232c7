"""PyCUDA's ``Stream`` and ``Event`` (re-exported by ``pygpu.driver``): the runtime's stream
and event handles with PyCUDA's methods."""

from __future__ import annotations

import enum
from typing import Any

from pygpu._driver.enums import NamedEnum
from pygpu._pygpu import (
    cudaEvent_t,
    cudaStream_t,
    event_elapsed_time,
    event_query,
    event_record,
    event_synchronize,
    stream_query,
    stream_synchronize,
    stream_wait_event,
)

__all__ = ["Event", "Stream", "event_flags"]


class Stream(cudaStream_t):
    """A stream (``cudaStream_t``); ``handle`` is the raw handle as an int."""

    def synchronize(self) -> None:
        """Waits until all work queued on this stream is done."""
        stream_synchronize(self)

    def is_done(self) -> bool:
        """Whether all work queued on this stream is done, without waiting."""
        return stream_query(self)

    def wait_for_event(self, event: cudaEvent_t) -> None:
        """Makes work queued on this stream after now wait until ``event`` completes; the host
        does not wait."""
        stream_wait_event(self, event)


class event_flags(NamedEnum, enum.IntFlag):  # noqa: N801 - PyCUDA's name
    """Flags of ``Event(flags)`` (cuEventCreate's): ``DISABLE_TIMING`` makes recording cheaper."""

    DEFAULT = 0
    BLOCKING_SYNC = 1
    DISABLE_TIMING = 2
    INTERPROCESS = 4


class Event(cudaEvent_t):
    """An event (``cudaEvent_t``); methods return self where PyCUDA's do."""

    def record(self, stream: Any = None) -> Event:
        """Records this event on ``stream`` (None: the default stream): it completes once the
        work queued there before it is done. Returns self."""
        event_record(self, stream)
        return self

    def synchronize(self) -> Event:
        """Waits until the event's recorded work is done. Returns self."""
        event_synchronize(self)
        return self

    def query(self) -> bool:
        """Whether the event has completed, without waiting."""
        return event_query(self)

    def time_since(self, event: cudaEvent_t) -> float:
        """Milliseconds from ``event`` to this event."""
        return event_elapsed_time(event, self)

    @staticmethod
    def from_ipc_handle(handle: bytes) -> Event:
        """Another process's event, from the bytes of its ``ipc_handle()`` (made with
        ``event_flags.INTERPROCESS | event_flags.DISABLE_TIMING``)."""
        return Event(ipc_handle=handle)

    def time_till(self, event: cudaEvent_t) -> float:
        """Milliseconds from this event to ``event``."""
        return event_elapsed_time(self, event)
