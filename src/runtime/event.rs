//! An owned event.

use std::sync::Arc;

use super::context::Context;
use super::owned::Owned;
use super::{
    Error, EventHandle, Result, StreamHandle, EVENT_BLOCKING_SYNC, EVENT_DISABLE_TIMING, EVENT_INTERPROCESS,
    IPC_HANDLE_BYTES,
};

pub struct Event {
    ctx: Arc<Context>,
    owned: Owned<EventHandle>,
    flags: u32,
}

impl Event {
    /// flags: a combination of `EVENT_BLOCKING_SYNC`, `EVENT_DISABLE_TIMING` and
    /// `EVENT_INTERPROCESS` (which needs `EVENT_DISABLE_TIMING`, as in CUDA).
    pub fn new(ctx: &Arc<Context>, flags: u32) -> Result<Event> {
        if flags & !(EVENT_BLOCKING_SYNC | EVENT_DISABLE_TIMING | EVENT_INTERPROCESS) != 0 {
            return Err(Error::InvalidArgument(format!(
                "event flags must combine 1 (cudaEventBlockingSync), 2 (cudaEventDisableTiming) and 4 \
                 (cudaEventInterprocess), not {flags}"
            )));
        }
        if flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0 {
            return Err(Error::InvalidArgument(
                "an interprocess event cannot time: give INTERPROCESS together with DISABLE_TIMING (flags 6)".into(),
            ));
        }
        let handle = ctx.backend().event_create(flags)?;
        Ok(Event { ctx: ctx.clone(), owned: Owned::new(ctx.backend(), handle), flags })
    }

    /// Another process's event, from the bytes of its `ipc_handle()`, on `ctx`'s device.
    pub fn open_ipc(ctx: &Arc<Context>, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<Event> {
        let event = ctx.backend().ipc_open_event_handle(handle)?;
        let flags = EVENT_INTERPROCESS | EVENT_DISABLE_TIMING;
        Ok(Event { ctx: ctx.clone(), owned: Owned::new(ctx.backend(), event), flags })
    }

    /// The bytes another process opens this event with (`open_ipc`); needs `EVENT_INTERPROCESS`.
    pub fn ipc_handle(&self) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.ctx.backend().ipc_get_event_handle(self.handle())
    }

    pub fn handle(&self) -> EventHandle {
        self.owned.get()
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// Records the work submitted so far to `stream` (a pygpu stream's handle, the default
    /// stream, or a foreign stream's).
    pub fn record(&self, stream: StreamHandle) -> Result<()> {
        self.ctx.backend().event_record(self.handle(), stream)
    }

    pub fn synchronize(&self) -> Result<()> {
        self.ctx.backend().event_synchronize(self.handle())
    }

    /// True when the recorded work has completed.
    pub fn query(&self) -> Result<bool> {
        self.ctx.backend().event_query(self.handle())
    }

    /// Milliseconds from this event to `end`.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        self.ctx.backend().event_elapsed_ms(self.handle(), end.handle())
    }

    /// Destroys the event now and returns the status.
    pub fn close(self) -> Result<()> {
        self.owned.close()
    }
}
