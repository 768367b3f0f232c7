//! Streams and events, each call the driver API call that performs it.

use super::*;

impl Streams for CudaBackend {
    fn stream_create(&self, flags: u32) -> Result<StreamHandle> {
        self.ensure_context()?;
        if flags & STREAM_NON_BLOCKING != 0 {
            self.note_unordered_streams()?;
        }
        let mut s: CUstream = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuStreamCreate)(&mut s, flags) })?;
        self.block_cache.stream_opened();
        Ok(StreamHandle(s as usize))
    }

    unsafe fn stream_destroy(&self, s: StreamHandle) -> Result<()> {
        if activity::recording() {
            cupti::forget_streams();
        }
        // SAFETY: the caller hands over a live stream of ours.
        check(unsafe { (self.api.cuStreamDestroy_v2)(s.0 as CUstream) })?;
        self.block_cache.stream_closed();
        Ok(())
    }

    fn stream_synchronize(&self, s: StreamHandle) -> Result<()> {
        self.ensure_context()?;
        activity::noted(ActivityKind::Synchronize, s.0 as u64, 0, || {
            // SAFETY: the handle is one of ours (the Python layer keeps it alive).
            check(unsafe { (self.api.cuStreamSynchronize)(s.0 as CUstream) })
        })
    }

    fn stream_query(&self, s: StreamHandle) -> Result<bool> {
        self.ensure_context()?;
        // SAFETY: as above.
        match unsafe { (self.api.cuStreamQuery)(s.0 as CUstream) } {
            0 => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Cuda)),
        }
    }

    fn stream_wait_event(&self, s: StreamHandle, e: EventHandle) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: live handles of ours.
        check(unsafe { (self.api.cuStreamWaitEvent)(s.0 as CUstream, e.0 as CUevent, 0) })
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        self.ensure_context()?;
        let mut e: CUevent = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuEventCreate)(&mut e, flags) })?;
        Ok(EventHandle(e as usize))
    }

    unsafe fn event_destroy(&self, e: EventHandle) -> Result<()> {
        // SAFETY: the caller hands over a live event of ours.
        check(unsafe { (self.api.cuEventDestroy_v2)(e.0 as CUevent) })
    }

    fn event_record(&self, e: EventHandle, s: StreamHandle) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: live handles of ours.
        check(unsafe { (self.api.cuEventRecord)(e.0 as CUevent, s.0 as CUstream) })
    }

    fn event_synchronize(&self, e: EventHandle) -> Result<()> {
        // SAFETY: a live handle of ours.
        check(unsafe { (self.api.cuEventSynchronize)(e.0 as CUevent) })
    }

    fn event_query(&self, e: EventHandle) -> Result<bool> {
        // SAFETY: a live handle of ours.
        match unsafe { (self.api.cuEventQuery)(e.0 as CUevent) } {
            0 => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Cuda)),
        }
    }

    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let mut ms: f32 = 0.0;
        // SAFETY: valid out-pointer; live handles of ours.
        check(unsafe { (self.api.cuEventElapsedTime)(&mut ms, start.0 as CUevent, end.0 as CUevent) })?;
        Ok(ms)
    }
}
