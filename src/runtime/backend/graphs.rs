//! Graphs: recording a stream's work (stream capture) instead of running it, and replaying
//! the recording. The safe layer over it is `runtime::graph`.

use crate::runtime::{GraphExecHandle, GraphHandle, Result, StreamHandle};

pub trait Graphs {
    /// Starts recording the stream's work into a graph instead of running it.
    fn stream_begin_capture(&self, stream: StreamHandle) -> Result<()>;
    /// Stops recording and returns the graph recorded.
    fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle>;
    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<bool>;
    /// An executable instance of `graph`.
    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle>;
    /// Replays an instance on `stream`.
    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()>;
    /// # Safety
    /// `graph` is live and not used afterwards.
    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()>;
    /// # Safety
    /// `exec` is live and not used afterwards.
    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()>;
}
