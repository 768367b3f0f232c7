//! Graphs on the host backend: a capture records the stream's operations (checked as they
//! are recorded), and a replay runs them again in order.

use super::*;

impl Graphs for HostBackend {
    fn stream_begin_capture(&self, stream: StreamHandle) -> Result<()> {
        let mut state = self.state();
        self.check_stream(&state, Some(stream))?;
        // As in CUDA, the legacy default stream cannot be captured, nor a stream twice.
        if stream == StreamHandle::DEFAULT || state.capturing.contains_key(&stream.0) {
            return Err(Self::err(CAPTURE_UNSUPPORTED));
        }
        state.capturing.insert(stream.0, Vec::new());
        Ok(())
    }

    fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle> {
        let mut state = self.state();
        self.check_stream(&state, Some(stream))?;
        let ops = state.capturing.remove(&stream.0).ok_or_else(|| Self::err(CAPTURE_UNMATCHED))?;
        let id = self.new_handle();
        state.graphs.insert(id, Arc::new(ops));
        Ok(GraphHandle(id))
    }

    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<bool> {
        let state = self.state();
        self.check_stream(&state, Some(stream))?;
        Ok(state.capturing.contains_key(&stream.0))
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        let mut state = self.state();
        let ops = state.graphs.get(&graph.0).cloned().ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        let id = self.new_handle();
        state.graph_execs.insert(id, ops);
        Ok(GraphExecHandle(id))
    }

    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
        let ops = {
            let state = self.state();
            self.check_stream(&state, Some(stream))?;
            if state.capturing.contains_key(&stream.0) {
                return Err(Self::err(CAPTURE_UNSUPPORTED));
            }
            state.graph_execs.get(&exec.0).cloned().ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?
        };
        for op in ops.iter() {
            // SAFETY: the ops were validated when captured; host pointers captured in a
            // graph must stay valid while it is replayed, as in CUDA.
            unsafe { self.run_op_on(op, Some(stream)) }?;
        }
        Ok(())
    }

    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        self.state().graphs.remove(&graph.0).map(|_| ()).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))
    }

    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        self.state()
            .graph_execs
            .remove(&exec.0)
            .map(|_| ())
            .ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))
    }
}
