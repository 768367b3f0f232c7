"""Foreign streams enter through `stream_wait_event_raw`/`event_record_raw` only: values that
certainly are not a stream handle are refused with a ValueError before they reach the driver
(where a made-up handle would crash the process)."""

from __future__ import annotations

import pytest

import pygpu
from pygpu._pygpu import event_record_raw, stream_wait_event_raw


def test_host_backend_accepts_any_handle_and_checks_the_event() -> None:
    if pygpu.backend() != "host":
        pytest.skip("the host backend ignores the stream handle")
    event = pygpu.cudaEvent_t()
    event_record_raw(event, 12345)
    stream_wait_event_raw(12345, event)
    pygpu.cudaEventDestroy(event)
    with pytest.raises(pygpu.InvalidHandleError):
        stream_wait_event_raw(0, event)


@pytest.mark.gpu
@pytest.mark.parametrize("handle", [3, 12345, 0x10001, 0xDEAD])
def test_made_up_stream_handles_are_refused(handle: int) -> None:
    event = pygpu.cudaEvent_t()
    with pytest.raises(ValueError, match="is not a stream handle"):
        event_record_raw(event, handle)
    with pytest.raises(ValueError, match="is not a stream handle"):
        stream_wait_event_raw(handle, event)


@pytest.mark.gpu
def test_real_and_special_streams_are_accepted() -> None:
    stream = pygpu.cudaStream_t()
    event = pygpu.cudaEvent_t()
    event_record_raw(event, stream.handle)
    stream_wait_event_raw(stream.handle, event)
    stream_wait_event_raw(0, event)
    if pygpu.backend() == "cuda":
        stream_wait_event_raw(1, event)
        stream_wait_event_raw(2, event)
    assert pygpu.cudaStreamSynchronize(stream) == 0
