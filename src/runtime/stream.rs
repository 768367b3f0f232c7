//! An owned stream. Recording its work into a graph (stream capture: `begin_capture`,
//! `end_capture`) is graph.rs's, which keeps the stream's `Capture` record.

use std::sync::Arc;

use super::context::Context;
use super::event::Event;
use super::graph::Capture;
use super::owned::Owned;
use super::{DevicePtr, Error, Result, StreamHandle, STREAM_NON_BLOCKING};

pub struct Stream {
    ctx: Arc<Context>,
    owned: Owned<StreamHandle>,
    flags: u32,
    /// What the launches of a capture on this stream use (graph.rs).
    pub(super) capture: Capture,
}

impl Stream {
    /// flags: 0 or `STREAM_NON_BLOCKING`.
    pub fn new(ctx: &Arc<Context>, flags: u32) -> Result<Stream> {
        if flags > STREAM_NON_BLOCKING {
            return Err(Error::InvalidArgument(format!(
                "stream flags must be 0 (cudaStreamDefault) or 1 (cudaStreamNonBlocking), not {flags}"
            )));
        }
        let handle = ctx.backend().stream_create(flags)?;
        Ok(Stream { ctx: ctx.clone(), owned: Owned::new(ctx.backend(), handle), flags, capture: Capture::default() })
    }

    pub fn handle(&self) -> StreamHandle {
        self.owned.get()
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn flags(&self) -> u32 {
        self.flags
    }

    pub fn synchronize(&self) -> Result<()> {
        self.ctx.backend().stream_synchronize(self.handle())
    }

    /// True when all work on the stream has completed.
    pub fn query(&self) -> Result<bool> {
        self.ctx.backend().stream_query(self.handle())
    }

    /// Later work on this stream waits for `event`'s last recorded work.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        self.ctx.backend().stream_wait_event(self.handle(), event.handle())
    }

    /// Queues a device-to-device copy of `bytes` on this stream (addresses are checked by
    /// the backend).
    pub fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<()> {
        self.ctx.backend().memcpy_dtod(dst, src, bytes, Some(self.handle()))
    }

    /// Destroys the stream now (pending work still completes) and returns the status.
    pub fn close(self) -> Result<()> {
        self.owned.close()
    }
}
