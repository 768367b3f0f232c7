"""Stream ordering of an allocation: which stream wrote it last, and waiting for that.

Every allocation's views share one ``StreamOrder``. ``pending`` is False when no write is
outstanding, None when the last write went to the default stream, else its ``cudaStream_t``.
pygpu's own work on another stream waits for it with an event (never a device sync unless
the writer's stream has been closed meanwhile). Work captured into a graph cannot wait for work
outside the capture: see ``StreamOrder.before``.
"""

from __future__ import annotations

from typing import Any

from pygpu._pygpu import (
    cudaEvent_t,
    device_synchronize,
    event_record,
    stream_query,
    stream_synchronize,
    stream_wait_event,
)
from pygpu.errors import InvalidHandleError

__all__ = ["StreamOrder", "is_capturing"]


def is_capturing(stream: Any) -> bool:
    """Whether ``stream`` (a ``cudaStream_t``; None: the default stream) records into a graph;
    any other object is a TypeError that says what a stream argument takes."""
    if stream is None:
        return False
    try:
        return bool(stream.is_capturing)
    except AttributeError:
        raise TypeError(
            f"stream= takes a pygpu.driver.Stream (cudaStream_t) or None, not {type(stream).__name__}"
        ) from None


class StreamOrder:
    __slots__ = ("pending",)

    def __init__(self, pending: Any = False) -> None:
        self.pending = pending

    def __repr__(self) -> str:
        return f"<StreamOrder pending={self.pending!r}>"

    def before(self, stream: Any) -> None:
        """Makes work about to be issued on ``stream`` (None: the default stream) wait for
        the last write."""
        pending = self.pending
        if pending is False or pending is stream:
            return
        if stream is None:
            try:
                stream_synchronize(pending)
            except InvalidHandleError:
                # The writer's stream was closed: its work still completes; wait for the device.
                device_synchronize()
            self.pending = False
            return
        if is_capturing(stream):
            # Work outside a capture cannot be waited for inside it: recording on the legacy
            # stream is refused (906), an event of another stream makes an isolation error (905).
            # A graph launched on a blocking stream waits for the legacy stream's work anyway;
            # another stream's write is finished now, before it is captured.
            if pending is not None:
                stream_synchronize(pending)
                self.pending = False
            return
        event = cudaEvent_t(2)
        try:
            event_record(event, pending)
        except InvalidHandleError:
            device_synchronize()
            self.pending = False
            return
        stream_wait_event(stream, event)

    def wrote(self, stream: Any) -> None:
        """Records a write enqueued on ``stream``."""
        self.pending = stream

    def forget(self) -> None:
        """The last write is known to have completed."""
        self.pending = False

    def done(self) -> bool:
        """True (and forgets it) when the last write has completed."""
        pending = self.pending
        if pending is False:
            return True
        try:
            finished = stream_query(pending)
        except InvalidHandleError:
            device_synchronize()
            self.pending = False
            return True
        if finished:
            self.pending = False
        return finished
