//! Stream capture and the graphs it records, all of it here (as in cudarc's safe layer):
//! `Stream::begin_capture`/`end_capture`/`is_capturing`; the `Capture` record a stream keeps
//! while it captures, of the modules whose kernels were launched on it (the graph keeps their
//! code loaded) and the allocations their arguments point into; `Graph` and its executable
//! instances, `GraphExec`, which hold those modules, and which check before each replay that
//! the allocations still exist: a GPU would otherwise read and write freed (or reused) memory.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::context::Context;
use super::error::CUDA_ERROR_INVALID_VALUE;
use super::module::Module;
use super::owned::Owned;
use super::stream::Stream;
use super::{DevicePtr, Error, GraphExecHandle, GraphHandle, KernelArgs, Result, StreamHandle};

/// What a stream's capture has recorded; kept in the `Stream`.
#[derive(Default)]
pub(crate) struct Capture {
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

impl Capture {
    fn captured(&self) -> MutexGuard<'_, Option<Captured>> {
        // Nothing that can panic runs under this lock; the Vec is whole either way.
        self.captured.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Stream {
    /// Starts recording this stream's work into a graph instead of running it.
    pub fn begin_capture(&self) -> Result<()> {
        let mut captured = self.capture.captured();
        self.context().backend().stream_begin_capture(self.handle())?;
        *captured = Some(Captured::default());
        self.capture.capturing.store(true, Ordering::Release);
        Ok(())
    }

    /// Stops recording; the graph keeps the modules of the kernels it launches.
    pub fn end_capture(&self) -> Result<Graph> {
        let mut captured = self.capture.captured();
        let handle = self.context().backend().stream_end_capture(self.handle())?;
        let Captured { modules, allocations } = captured.take().unwrap_or_default();
        self.capture.capturing.store(false, Ordering::Release);
        Ok(Graph::new(self.context(), handle, modules, allocations))
    }

    pub fn is_capturing(&self) -> Result<bool> {
        self.context().backend().stream_is_capturing(self.handle())
    }

    /// Called by a launch on this stream: a graph being recorded keeps `module` loaded and
    /// notes the allocations that the pointer-sized arguments point into.
    pub(crate) fn note_captured_launch(&self, module: &Arc<Module>, args: &KernelArgs) {
        // A capture begun on another thread while this launch runs may miss it either way:
        // the lock would not order the launch's driver call after begin_capture's.
        if !self.capture.capturing.load(Ordering::Acquire) {
            return;
        }
        let mut captured = self.capture.captured();
        let Some(kept) = captured.as_mut() else { return };
        if !kept.modules.iter().any(|m| Arc::ptr_eq(m, module)) {
            kept.modules.push(module.clone());
        }
        let backend = self.context().backend();
        for address in args.eight_byte_values() {
            if address == 0 || kept.allocations.iter().any(|u| u.address == address) {
                continue;
            }
            if let Some(identity) = backend.allocation_identity(address) {
                kept.allocations.push(AllocationUse { address, identity });
            }
        }
    }
}

/// An address a captured launch passed, and the identity of the allocation holding it then
/// (`DeviceMemory::allocation_identity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationUse {
    pub address: DevicePtr,
    pub identity: (DevicePtr, u64),
}

pub struct Graph {
    ctx: Arc<Context>,
    owned: Owned<GraphHandle>,
    modules: Vec<Arc<Module>>,
    allocations: Arc<[AllocationUse]>,
}

impl Graph {
    /// `handle` was just returned by the backend's end of capture.
    pub(crate) fn new(
        ctx: &Arc<Context>,
        handle: GraphHandle,
        modules: Vec<Arc<Module>>,
        allocations: Vec<AllocationUse>,
    ) -> Graph {
        Graph { ctx: ctx.clone(), owned: Owned::new(ctx.backend(), handle), modules, allocations: allocations.into() }
    }

    /// An executable instance, launchable many times; it outlives this graph if need be.
    pub fn instantiate(&self) -> Result<GraphExec> {
        let handle = self.ctx.backend().graph_instantiate(self.owned.get())?;
        Ok(GraphExec {
            ctx: self.ctx.clone(),
            owned: Owned::new(self.ctx.backend(), handle),
            _modules: self.modules.clone(),
            allocations: self.allocations.clone(),
        })
    }

    /// The modules this graph keeps loaded.
    pub fn modules(&self) -> &[Arc<Module>] {
        &self.modules
    }

    /// The allocations the captured launches use, checked at each replay.
    pub fn allocations(&self) -> &[AllocationUse] {
        &self.allocations
    }
}

pub struct GraphExec {
    ctx: Arc<Context>,
    owned: Owned<GraphExecHandle>,
    /// Dropped after `owned` (fields drop in order), so the code outlives the instance.
    _modules: Vec<Arc<Module>>,
    allocations: Arc<[AllocationUse]>,
}

impl GraphExec {
    /// Replays the graph on `stream`, unless an allocation a captured launch uses was freed.
    pub fn launch(&self, stream: StreamHandle) -> Result<()> {
        let backend = self.ctx.backend();
        if let Some(gone) = self.allocations.iter().find(|u| backend.allocation_identity(u.address) != Some(u.identity))
        {
            return Err(Error::detailed(
                CUDA_ERROR_INVALID_VALUE,
                backend.kind(),
                format!(
                    "a kernel captured in this graph uses the allocation at 0x{:x}, which was freed before the \
                     graph was launched: keep what a graph uses alive while it is replayed",
                    gone.address
                ),
            ));
        }
        backend.graph_launch(self.owned.get(), stream)
    }
}
