//! Streams and events on the host backend: work runs when it is enqueued, so a stream is
//! always idle when asked, and an event holds the time it was recorded.

use super::*;

impl Streams for HostBackend {
    fn stream_create(&self, _flags: u32) -> Result<StreamHandle> {
        let id = self.new_handle();
        let device = CURRENT_DEVICE.with(|d| d.get());
        self.state().streams.insert(id, device);
        Ok(StreamHandle(id))
    }

    unsafe fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
        let mut state = self.state();
        // A capture in progress ends with its stream (CUDA invalidates it likewise).
        state.capturing.remove(&stream.0);
        state.stream_order.remove(&stream.0);
        match state.streams.remove(&stream.0) {
            Some(_) => Ok(()),
            None => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        }
    }

    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
        self.check_not_capturing(stream)?;
        // Its work has already run, but for another thread's launch in progress, which
        // stream_query reports and Python's synchronize waits out by polling it (without the
        // GIL, which that launch's Ctrl-C check may need: no lock is waited for here). A
        // recording notes where the program waited, taking no time.
        if activity::recording() {
            activity::record_since(ActivityKind::Synchronize, activity::clock_ns(), stream.0 as u64, 0);
        }
        Ok(())
    }

    fn stream_query(&self, stream: StreamHandle) -> Result<bool> {
        self.check_not_capturing(stream)?;
        // Work runs as it is enqueued: only another thread's launch or replay may still be
        // running, holding the stream's lock (a poisoned lock is free).
        let order = self.state().stream_order.get(&stream.0).cloned();
        Ok(order.is_none_or(|lock| !matches!(lock.try_lock(), Err(std::sync::TryLockError::WouldBlock))))
    }

    fn stream_wait_event(&self, stream: StreamHandle, event: EventHandle) -> Result<()> {
        let state = self.state();
        self.check_stream(&state, Some(stream))?;
        if !state.events.contains_key(&event.0) {
            return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
        }
        Ok(())
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        let id = self.new_handle();
        self.state().events.insert(id, EventState { flags, recorded_at: None });
        Ok(EventHandle(id))
    }

    unsafe fn event_destroy(&self, event: EventHandle) -> Result<()> {
        match self.state().events.remove(&event.0) {
            Some(_) => Ok(()),
            None => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        }
    }

    fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()> {
        let mut state = self.state();
        self.check_stream(&state, Some(stream))?;
        let ev = state.events.get_mut(&event.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        // Work before the record has already run (streams execute at enqueue time).
        ev.recorded_at = Some(Instant::now());
        Ok(())
    }

    fn event_synchronize(&self, event: EventHandle) -> Result<()> {
        self.event_query(event).map(|_| ())
    }

    fn event_query(&self, event: EventHandle) -> Result<bool> {
        match self.state().events.get(&event.0) {
            Some(_) => Ok(true),
            None => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        }
    }

    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let state = self.state();
        let time = |ev: EventHandle| -> Result<Instant> {
            let ev = state.events.get(&ev.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
            if ev.flags & EVENT_DISABLE_TIMING != 0 {
                return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
            }
            // As in CUDA: timing an event that was never recorded is an invalid handle.
            ev.recorded_at.ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))
        };
        let (t0, t1) = (time(start)?, time(end)?);
        let ms = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        Ok(ms as f32)
    }
}

impl HostBackend {
    /// A live stream that is not capturing: waiting for or querying a capturing stream is an
    /// error on a GPU (its work is being recorded, not run), and so it is here.
    fn check_not_capturing(&self, stream: StreamHandle) -> Result<()> {
        let state = self.state();
        self.check_stream(&state, Some(stream))?;
        if state.capturing.contains_key(&stream.0) {
            return Err(Self::err(CAPTURE_UNSUPPORTED));
        }
        Ok(())
    }
}
