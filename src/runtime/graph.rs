//! Graphs recorded by stream capture and their executable instances. Both keep the modules
//! of the kernels captured into them loaded (`Stream::end_capture` collects them).

use std::sync::Arc;

use super::context::Context;
use super::module::Module;
use super::owned::Owned;
use super::{GraphExecHandle, GraphHandle, Result, StreamHandle};

pub struct Graph {
    ctx: Arc<Context>,
    owned: Owned<GraphHandle>,
    modules: Vec<Arc<Module>>,
}

impl Graph {
    /// `handle` was just returned by the backend's end of capture.
    pub(crate) fn new(ctx: &Arc<Context>, handle: GraphHandle, modules: Vec<Arc<Module>>) -> Graph {
        Graph { ctx: ctx.clone(), owned: Owned::new(ctx.backend(), handle), modules }
    }

    /// An executable instance, launchable many times; it outlives this graph if need be.
    pub fn instantiate(&self) -> Result<GraphExec> {
        let handle = self.ctx.backend().graph_instantiate(self.owned.get())?;
        Ok(GraphExec {
            ctx: self.ctx.clone(),
            owned: Owned::new(self.ctx.backend(), handle),
            _modules: self.modules.clone(),
        })
    }

    /// The modules this graph keeps loaded.
    pub fn modules(&self) -> &[Arc<Module>] {
        &self.modules
    }
}

pub struct GraphExec {
    ctx: Arc<Context>,
    owned: Owned<GraphExecHandle>,
    /// Dropped after `owned` (fields drop in order), so the code outlives the instance.
    _modules: Vec<Arc<Module>>,
}

impl GraphExec {
    /// Replays the graph on `stream`.
    pub fn launch(&self, stream: StreamHandle) -> Result<()> {
        self.ctx.backend().graph_launch(self.owned.get(), stream)
    }
}
