//! Streams and events, each call the HIP runtime call that performs it.

use super::*;

impl Streams for HipBackend {
    fn stream_create(&self, flags: u32) -> Result<StreamHandle> {
        let mut s: hipStream_t = null_mut();
        // SAFETY: valid out-pointer; hipStreamNonBlocking is 0x1 like STREAM_NON_BLOCKING.
        check(unsafe { hipStreamCreateWithFlags(&mut s, flags) })?;
        Ok(StreamHandle(s as usize))
    }

    unsafe fn stream_destroy(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the caller hands over a live stream of ours.
        check(unsafe { hipStreamDestroy(s.0 as hipStream_t) })
    }

    fn stream_synchronize(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the handle is one of ours (the Python layer keeps it alive) or null.
        check(unsafe { hipStreamSynchronize(s.0 as hipStream_t) })
    }

    fn stream_query(&self, s: StreamHandle) -> Result<bool> {
        // SAFETY: as above.
        match unsafe { hipStreamQuery(s.0 as hipStream_t) } {
            0 => Ok(true),
            HIP_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Hip)),
        }
    }

    fn stream_wait_event(&self, s: StreamHandle, e: EventHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipStreamWaitEvent(s.0 as hipStream_t, e.0 as hipEvent_t, 0) })
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        let mut e: hipEvent_t = null_mut();
        // SAFETY: valid out-pointer; hipEventBlockingSync/DisableTiming have CUDA's values.
        check(unsafe { hipEventCreateWithFlags(&mut e, flags) })?;
        Ok(EventHandle(e as usize))
    }

    unsafe fn event_destroy(&self, e: EventHandle) -> Result<()> {
        // SAFETY: the caller hands over a live event of ours.
        check(unsafe { hipEventDestroy(e.0 as hipEvent_t) })
    }

    fn event_record(&self, e: EventHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipEventRecord(e.0 as hipEvent_t, s.0 as hipStream_t) })
    }

    fn event_synchronize(&self, e: EventHandle) -> Result<()> {
        // SAFETY: a live handle of ours.
        check(unsafe { hipEventSynchronize(e.0 as hipEvent_t) })
    }

    fn event_query(&self, e: EventHandle) -> Result<bool> {
        // SAFETY: a live handle of ours.
        match unsafe { hipEventQuery(e.0 as hipEvent_t) } {
            0 => Ok(true),
            HIP_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Hip)),
        }
    }

    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let mut ms: f32 = 0.0;
        // SAFETY: valid out-pointer; live handles of ours.
        check(unsafe { hipEventElapsedTime(&mut ms, start.0 as hipEvent_t, end.0 as hipEvent_t) })?;
        Ok(ms)
    }
}
