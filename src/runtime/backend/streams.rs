//! Streams (ordered queues of work) and the events that mark points in them.

use crate::runtime::{EventHandle, Result, StreamHandle};

/// Stream creation flag: the stream does not synchronize with the legacy default stream.
pub const STREAM_NON_BLOCKING: u32 = 0x1;
/// Event creation flags, numbered as in the CUDA runtime.
pub const EVENT_BLOCKING_SYNC: u32 = 0x1;
pub const EVENT_DISABLE_TIMING: u32 = 0x2;
/// The event can be shared with other processes (`ipc_get_event_handle`); needs DISABLE_TIMING.
pub const EVENT_INTERPROCESS: u32 = 0x4;

pub trait Streams {
    fn stream_create(&self, flags: u32) -> Result<StreamHandle>;
    /// # Safety
    /// `stream` is live and nothing uses it afterwards.
    unsafe fn stream_destroy(&self, stream: StreamHandle) -> Result<()>;
    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()>;
    /// Ok(true) when all work on the stream has completed.
    fn stream_query(&self, stream: StreamHandle) -> Result<bool>;
    fn stream_wait_event(&self, stream: StreamHandle, event: EventHandle) -> Result<()>;

    fn event_create(&self, flags: u32) -> Result<EventHandle>;
    /// # Safety
    /// `event` is live and nothing uses it afterwards.
    unsafe fn event_destroy(&self, event: EventHandle) -> Result<()>;
    fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()>;
    fn event_synchronize(&self, event: EventHandle) -> Result<()>;
    fn event_query(&self, event: EventHandle) -> Result<bool>;
    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32>;
}
