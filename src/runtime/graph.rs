//! Graphs recorded by stream capture and their executable instances. Both keep the modules
//! of the kernels captured into them loaded (`Stream::end_capture` collects them), and an
//! instance checks before each replay that the allocations its launches use still exist:
//! a GPU would otherwise read and write freed (or reused) memory.

use std::sync::Arc;

use super::context::Context;
use super::error::CUDA_ERROR_INVALID_VALUE;
use super::module::Module;
use super::owned::Owned;
use super::{DevicePtr, Error, GraphExecHandle, GraphHandle, Result, StreamHandle};

/// An address a captured launch passed, and the identity of the allocation holding it then
/// (`Backend::allocation_identity`).
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
            return Err(Error::Detailed {
                code: CUDA_ERROR_INVALID_VALUE,
                backend: backend.kind(),
                detail: format!(
                    "a kernel captured in this graph uses the allocation at 0x{:x}, which was freed before the \
                     graph was launched: keep what a graph uses alive while it is replayed",
                    gone.address
                ),
            });
        }
        backend.graph_launch(self.owned.get(), stream)
    }
}
