//! Graphs: recording a stream's work (stream capture) instead of running it, building a graph
//! node by node, and replaying either. The safe layer over it is `runtime::graph`.

use crate::runtime::{
    DevicePtr, EventHandle, FunctionHandle, GraphExecHandle, GraphHandle, GraphNodeHandle, KernelArgs, LaunchConfig,
    Result, StreamHandle,
};

/// Whether a conditional node runs its body once (`If`) or again and again (`While`) while
/// the 32-bit flag it reads is nonzero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionalKind {
    If,
    While,
}

/// The work of one node of an explicitly built graph.
#[derive(Debug, Clone, Copy)]
pub enum GraphNode<'a> {
    /// Does nothing: joins dependencies.
    Empty,
    Kernel {
        function: FunctionHandle,
        config: LaunchConfig,
        args: &'a KernelArgs,
    },
    /// A copy between device addresses (page-locked host memory through its device address).
    Copy {
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
    },
    /// `count` elements of `element_size` (1, 2 or 4) bytes set to `value`.
    Memset {
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
    },
    EventRecord(EventHandle),
    EventWait(EventHandle),
    /// A copy of `GraphHandle`'s nodes, run as one node.
    Child(GraphHandle),
    /// `body` (copied in, as a child graph is) run if, or while, the int32 at `flag` is
    /// nonzero; the flag is read on the device before each run, so kernels of the body (or
    /// before the node) decide by writing it.
    Conditional {
        kind: ConditionalKind,
        flag: DevicePtr,
        body: GraphHandle,
    },
}

pub trait Graphs {
    /// Starts recording the stream's work into a graph instead of running it.
    fn stream_begin_capture(&self, stream: StreamHandle) -> Result<()>;
    /// Stops recording and returns the graph recorded.
    fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle>;
    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<bool>;
    /// An empty graph, for `graph_add_node`.
    fn graph_create(&self) -> Result<GraphHandle>;
    /// Adds `node` to `graph`, to run after `dependencies` (nodes of `graph`).
    ///
    /// # Safety
    /// A kernel node's arguments match its kernel's parameters, and every address the node
    /// uses stays valid while an instance of the graph may run.
    unsafe fn graph_add_node(
        &self,
        graph: GraphHandle,
        dependencies: &[GraphNodeHandle],
        node: &GraphNode<'_>,
    ) -> Result<GraphNodeHandle>;
    /// An executable instance of `graph`.
    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle>;
    /// Changes what `node` (a kernel, copy or memset node of the graph `exec` was made from)
    /// does in `exec` from its next launch on; `node` keeps its kind (and a kernel its function).
    ///
    /// # Safety
    /// As `graph_add_node`'s.
    unsafe fn graph_exec_update_node(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        update: &GraphNode<'_>,
    ) -> Result<()>;
    /// Replays an instance on `stream`.
    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()>;
    /// # Safety
    /// `graph` is live and not used afterwards.
    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()>;
    /// # Safety
    /// `exec` is live and not used afterwards.
    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()>;
}
