//! Graphs on the host backend: a graph is a list of nodes in the order they were added (an
//! order every dependency agrees with, since a node's dependencies exist before it), recorded
//! from a capture (its operations, checked as they are recorded) or added one by one; a replay
//! runs them in that order, as the host's streams run everything.

use super::*;
use crate::runtime::backend::{ConditionalKind, GraphNode};
use crate::runtime::error::CUDA_ERROR_LAUNCH_FAILURE;
use crate::runtime::GraphNodeHandle;

#[derive(Clone, Default)]
pub(super) struct HostGraph {
    nodes: Vec<HostNode>,
}

#[derive(Clone)]
enum HostNode {
    Op(HostOp),
    Empty,
    EventRecord(EventHandle),
    /// The nodes of another graph, copied when added.
    Child(Arc<HostGraph>),
    Conditional {
        kind: ConditionalKind,
        flag: DevicePtr,
        body: Arc<HostGraph>,
    },
}

impl HostBackend {
    /// The host node for `node`: a kernel notes the allocations its arguments point into (a
    /// replay refuses to run once one is gone), a child or body is copied in.
    fn host_node(&self, state: &State, node: &GraphNode<'_>) -> Result<HostNode> {
        let graph_of = |g: GraphHandle| {
            state.graphs.get(&g.0).cloned().map(Arc::new).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))
        };
        let event = |e: EventHandle| match state.events.contains_key(&e.0) {
            true => Ok(e),
            false => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        };
        Ok(match *node {
            GraphNode::Empty => HostNode::Empty,
            GraphNode::Kernel { function, config, args } => {
                let function = state
                    .functions
                    .get(&function.0)
                    .cloned()
                    .ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
                let uses = Self::argument_allocations(state, args);
                HostNode::Op(HostOp::Launch { function, config, args: Box::new(args.clone()), uses })
            }
            GraphNode::Copy { dst, src, bytes } => HostNode::Op(HostOp::DeviceToDevice { dst, src, bytes }),
            GraphNode::Memset { dst, value, element_size, count } => {
                HostNode::Op(HostOp::Memset { dst, value, element_size, count })
            }
            GraphNode::EventRecord(e) => HostNode::EventRecord(event(e)?),
            // Everything enqueued before has run already: there is nothing to wait for.
            GraphNode::EventWait(e) => event(e).map(|_| HostNode::Empty)?,
            GraphNode::Child(g) => HostNode::Child(graph_of(g)?),
            GraphNode::Conditional { kind, flag, body } => {
                self.check_range(state, flag, 4)?;
                HostNode::Conditional { kind, flag, body: graph_of(body)? }
            }
        })
    }

    /// Runs `graph`'s nodes in order on `stream`.
    ///
    /// # Safety
    /// As run_op's, for every node.
    unsafe fn run_graph(&self, graph: &HostGraph, stream: StreamHandle) -> Result<()> {
        for node in &graph.nodes {
            match node {
                // SAFETY: forwarded from the caller.
                HostNode::Op(op) => unsafe { self.run_op_on(op, Some(stream)) }?,
                HostNode::Empty => {}
                HostNode::EventRecord(event) => self.event_record(*event, stream)?,
                // SAFETY: forwarded from the caller.
                HostNode::Child(child) => unsafe { self.run_graph(child, stream) }?,
                HostNode::Conditional { kind, flag, body } => {
                    while self.read_flag(*flag)? != 0 {
                        // SAFETY: forwarded from the caller.
                        unsafe { self.run_graph(body, stream) }?;
                        if *kind == ConditionalKind::If {
                            break;
                        }
                        // Between turns too (a body of copies alone launches no kernel that would
                        // look): a loop whose flag is never cleared stops on Ctrl-C.
                        if module::should_interrupt() {
                            return Err(Error::detailed(
                                CUDA_ERROR_LAUNCH_FAILURE,
                                BackendKind::Host,
                                "the graph's while loop was interrupted",
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The int32 at `flag`, which must lie in live device memory.
    fn read_flag(&self, flag: DevicePtr) -> Result<i32> {
        let state = self.state();
        self.check_range(&state, flag, 4)?;
        // SAFETY: the 4 bytes lie in a live allocation (checked; the lock keeps it live); an
        // unaligned address is read as such.
        Ok(unsafe { std::ptr::read_unaligned(flag as *const i32) })
    }
}

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
        state.graphs.insert(id, HostGraph { nodes: ops.into_iter().map(HostNode::Op).collect() });
        Ok(GraphHandle(id))
    }

    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<bool> {
        let state = self.state();
        self.check_stream(&state, Some(stream))?;
        Ok(state.capturing.contains_key(&stream.0))
    }

    fn graph_create(&self) -> Result<GraphHandle> {
        let id = self.new_handle();
        self.state().graphs.insert(id, HostGraph::default());
        Ok(GraphHandle(id))
    }

    unsafe fn graph_add_node(
        &self,
        graph: GraphHandle,
        dependencies: &[GraphNodeHandle],
        node: &GraphNode<'_>,
    ) -> Result<GraphNodeHandle> {
        let mut state = self.state();
        let host_node = self.host_node(&state, node)?;
        let nodes =
            &mut state.graphs.get_mut(&graph.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?.nodes;
        if dependencies.iter().any(|d| d.0 >= nodes.len()) {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        nodes.push(host_node);
        Ok(GraphNodeHandle(nodes.len() - 1))
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        let mut state = self.state();
        let nodes = state.graphs.get(&graph.0).cloned().ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        let id = self.new_handle();
        state.graph_execs.insert(id, Arc::new(nodes));
        Ok(GraphExecHandle(id))
    }

    unsafe fn graph_exec_update_node(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        update: &GraphNode<'_>,
    ) -> Result<()> {
        let mut state = self.state();
        let new = self.host_node(&state, update)?;
        let graph = state.graph_execs.get_mut(&exec.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        let slot = Arc::make_mut(graph).nodes.get_mut(node.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_VALUE))?;
        // As on a GPU: a node keeps its kind, and a kernel node its kernel.
        let same_kind = match (&*slot, &new) {
            (HostNode::Op(HostOp::Launch { function: a, .. }), HostNode::Op(HostOp::Launch { function: b, .. })) => {
                Arc::ptr_eq(a, b)
            }
            (HostNode::Op(HostOp::DeviceToDevice { .. }), HostNode::Op(HostOp::DeviceToDevice { .. }))
            | (HostNode::Op(HostOp::Memset { .. }), HostNode::Op(HostOp::Memset { .. })) => true,
            _ => false,
        };
        if !same_kind {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        *slot = new;
        Ok(())
    }

    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
        let (graph, order) = {
            let mut state = self.state();
            self.check_stream(&state, Some(stream))?;
            if state.capturing.contains_key(&stream.0) {
                return Err(Self::err(CAPTURE_UNSUPPORTED));
            }
            let graph =
                state.graph_execs.get(&exec.0).cloned().ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
            (graph, Self::stream_order(&mut state, Some(stream)))
        };
        // A replay runs in order with the stream's launches, as one launch does.
        let _in_order = order.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: captured ops were validated when captured, added nodes are checked as they
        // run; host pointers in a graph must stay valid while it is replayed, as in CUDA.
        unsafe { self.run_graph(&graph, stream) }
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
