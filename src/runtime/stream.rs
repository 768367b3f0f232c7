//! An owned stream. While it records a graph (stream capture) it collects the modules whose
//! kernels were launched on it, so that the graph keeps their code loaded, and the
//! allocations their arguments point into, so that a replay can check they still exist.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::context::Context;
use super::event::Event;
use super::graph::{AllocationUse, Graph};
use super::module::Module;
use super::owned::Owned;
use super::{DevicePtr, Error, KernelArgs, Result, StreamHandle, STREAM_NON_BLOCKING};

pub struct Stream {
    ctx: Arc<Context>,
    owned: Owned<StreamHandle>,
    flags: u32,
    /// What the launches of a capture use; None when not capturing.
    captured: Mutex<Option<Captured>>,
    /// Whether `captured` is Some, readable without its lock: launches outside a capture
    /// (nearly all) skip the lock.
    capturing: AtomicBool,
}

/// The modules and allocations that launches recorded into a graph use.
#[derive(Default)]
struct Captured {
    modules: Vec<Arc<Module>>,
    allocations: Vec<AllocationUse>,
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
        Ok(Stream {
            ctx: ctx.clone(),
            owned: Owned::new(ctx.backend(), handle),
            flags,
            captured: Mutex::new(None),
            capturing: AtomicBool::new(false),
        })
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

    fn captured(&self) -> MutexGuard<'_, Option<Captured>> {
        // Nothing that can panic runs under this lock; the Vec is whole either way.
        self.captured.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts recording this stream's work into a graph instead of running it.
    pub fn begin_capture(&self) -> Result<()> {
        let mut captured = self.captured();
        self.ctx.backend().stream_begin_capture(self.handle())?;
        *captured = Some(Captured::default());
        self.capturing.store(true, Ordering::Release);
        Ok(())
    }

    /// Stops recording; the graph keeps the modules of the kernels it launches.
    pub fn end_capture(&self) -> Result<Graph> {
        let mut captured = self.captured();
        let handle = self.ctx.backend().stream_end_capture(self.handle())?;
        let Captured { modules, allocations } = captured.take().unwrap_or_default();
        self.capturing.store(false, Ordering::Release);
        Ok(Graph::new(&self.ctx, handle, modules, allocations))
    }

    pub fn is_capturing(&self) -> Result<bool> {
        self.ctx.backend().stream_is_capturing(self.handle())
    }

    /// Called by a launch on this stream: a graph being recorded keeps `module` loaded and
    /// notes the allocations that the pointer-sized arguments point into.
    pub(crate) fn keep_while_captured(&self, module: &Arc<Module>, args: &KernelArgs) {
        // A capture begun on another thread while this launch runs may miss it either way:
        // the lock would not order the launch's driver call after begin_capture's.
        if !self.capturing.load(Ordering::Acquire) {
            return;
        }
        let mut captured = self.captured();
        let Some(kept) = captured.as_mut() else { return };
        if !kept.modules.iter().any(|m| Arc::ptr_eq(m, module)) {
            kept.modules.push(module.clone());
        }
        let backend = self.ctx.backend();
        for address in args.eight_byte_values() {
            if address == 0 || kept.allocations.iter().any(|u| u.address == address) {
                continue;
            }
            if let Some(identity) = backend.allocation_identity(address) {
                kept.allocations.push(AllocationUse { address, identity });
            }
        }
    }

    /// Destroys the stream now (pending work still completes) and returns the status.
    pub fn close(self) -> Result<()> {
        self.owned.close()
    }
}
