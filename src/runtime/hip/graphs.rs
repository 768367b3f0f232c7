//! Stream capture and graphs through the HIP runtime.

use super::*;
use crate::runtime::{GraphNode, GraphNodeHandle};

impl Graphs for HipBackend {
    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()> {
        // hipStreamCaptureModeThreadLocal = 1, as in CUDA.
        // SAFETY: a live stream of ours.
        check(unsafe { hipStreamBeginCapture(stream(Some(s)), 1) })
    }

    fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle> {
        let mut graph: hipGraph_t = null_mut();
        // SAFETY: a live stream, valid out-pointer.
        check(unsafe { hipStreamEndCapture(stream(Some(s)), &mut graph) })?;
        Ok(GraphHandle(graph as usize))
    }

    fn stream_is_capturing(&self, s: StreamHandle) -> Result<bool> {
        let mut status: c_int = 0;
        // SAFETY: a live stream, valid out-pointer.
        check(unsafe { hipStreamIsCapturing(stream(Some(s)), &mut status) })?;
        Ok(status != 0)
    }

    // Graphs built node by node: hipGraph's node calls take the runtime API's kernel handles and
    // structs laid out unlike CUDA's, which no AMD device here could check, so they are refused
    // plainly rather than guessed; stream capture covers the same work on HIP.
    fn graph_create(&self) -> Result<GraphHandle> {
        Err(self.unsupported("building a graph node by node (use stream capture)"))
    }

    unsafe fn graph_add_node(
        &self,
        _graph: GraphHandle,
        _dependencies: &[GraphNodeHandle],
        _node: &GraphNode<'_>,
    ) -> Result<GraphNodeHandle> {
        Err(self.unsupported("building a graph node by node (use stream capture)"))
    }

    unsafe fn graph_exec_update_node(
        &self,
        _exec: GraphExecHandle,
        _node: GraphNodeHandle,
        _update: &GraphNode<'_>,
    ) -> Result<()> {
        Err(self.unsupported("updating a graph's nodes"))
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        let mut exec: hipGraphExec_t = null_mut();
        // SAFETY: a live graph, valid out-pointer, no error node or log requested.
        check(unsafe { hipGraphInstantiate(&mut exec, graph.0 as hipGraph_t, null_mut(), null_mut(), 0) })?;
        Ok(GraphExecHandle(exec as usize))
    }

    fn graph_launch(&self, exec: GraphExecHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipGraphLaunch(exec.0 as hipGraphExec_t, stream(Some(s))) })
    }

    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        // SAFETY: the caller hands over a live graph.
        check(unsafe { hipGraphDestroy(graph.0 as hipGraph_t) })
    }

    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        // SAFETY: the caller hands over a live executable graph.
        check(unsafe { hipGraphExecDestroy(exec.0 as hipGraphExec_t) })
    }
}
