"""PyCUDA's ``Stream`` and ``Event`` (re-exported by ``pygpu.driver``): the runtime's stream
and event handles with PyCUDA's methods."""

from __future__ import annotations

import enum
from typing import Any

from pygpu._pygpu import (
    cudaError,
    cudaEvent_t,
    cudaEventElapsedTime,
    cudaEventQuery,
    cudaEventRecord,
    cudaEventSynchronize,
    cudaStream_t,
    cudaStreamQuery,
    cudaStreamSynchronize,
    cudaStreamWaitEvent,
)

__all__ = ["Event", "Stream", "event_flags"]


def _ready(status: cudaError) -> bool:
    """A query's answer: done (cudaSuccess), pending (cudaErrorNotReady), else raise."""
    if status == 600:
        return False
    status.check()
    return True


class Stream(cudaStream_t):
    """A stream (``cudaStream_t``); ``handle`` is the raw handle as an int."""

    def synchronize(self) -> None:
        """Waits until all work queued on this stream is done."""
        cudaStreamSynchronize(self).check()

    def is_done(self) -> bool:
        """Whether all work queued on this stream is done, without waiting."""
        return _ready(cudaStreamQuery(self))

    def wait_for_event(self, event: cudaEvent_t) -> None:
        """Makes work queued on this stream after now wait until ``event`` completes; the host
        does not wait."""
        cudaStreamWaitEvent(self, event).check()


class event_flags(enum.IntFlag):  # noqa: N801 - PyCUDA's name
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
        cudaEventRecord(self, stream).check()
        return self

    def synchronize(self) -> Event:
        """Waits until the event's recorded work is done. Returns self."""
        cudaEventSynchronize(self).check()
        return self

    def query(self) -> bool:
        """Whether the event has completed, without waiting."""
        return _ready(cudaEventQuery(self))

    def time_since(self, event: cudaEvent_t) -> float:
        """Milliseconds from ``event`` to this event."""
        ms, status = cudaEventElapsedTime(event, self)
        status.check()
        return ms

    @staticmethod
    def from_ipc_handle(handle: bytes) -> Event:
        """Another process's event, from the bytes of its ``ipc_handle()`` (made with
        ``event_flags.INTERPROCESS | event_flags.DISABLE_TIMING``)."""
        return Event(ipc_handle=handle)

    def time_till(self, event: cudaEvent_t) -> float:
        """Milliseconds from this event to ``event``."""
        ms, status = cudaEventElapsedTime(self, event)
        status.check()
        return ms
