//! Graphs through the driver: stream capture (relaxed, so that pygpu may allocate while a
//! capture runs), instantiation and replay, and allocations made while this thread captures.

use super::*;

impl CudaBackend {
    /// Runs the allocation `alloc` with this thread's capture mode relaxed. pygpu's own
    /// captures are relaxed already; a global or thread-local capture begun by another library
    /// prohibits cuMemAlloc and cuMemHostAlloc on the capturing thread
    /// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), yet work captured here needs memory that
    /// outlives the capture (`set()` of a strided array stages through a device copy that the
    /// graph keeps). An allocation is not stream work, so relaxing the mode for it alone is
    /// what the driver documents the exchange for; the previous mode is restored after.
    pub(super) fn allocating_during_capture<T>(&self, alloc: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut mode: c_int = CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: valid in/out pointer; the call only swaps this thread's mode.
        check(unsafe { (self.api.cuThreadExchangeStreamCaptureMode)(&mut mode) })?;
        let result = alloc();
        // SAFETY: as above; `mode` now holds the previous mode, which goes back. Swapping a
        // mode this call just set cannot fail short of a broken driver; the allocation's
        // result is what the caller must get either way (an error here would leak it).
        unsafe { (self.api.cuThreadExchangeStreamCaptureMode)(&mut mode) };
        result
    }
}

impl Graphs for CudaBackend {
    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()> {
        self.ensure_context()?;
        // Relaxed: pygpu allocates on the user's behalf while a capture runs (page-locked staging
        // that set() and fill() hand to the graph, memory for results); in the thread-local
        // mode such a call would invalidate the capture (cudaErrorStreamCaptureInvalidated).
        // SAFETY: a live stream of ours.
        check(unsafe { (self.api.cuStreamBeginCapture_v2)(stream(Some(s)), CU_STREAM_CAPTURE_MODE_RELAXED) })
    }

    fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle> {
        let mut graph: CUgraph = null_mut();
        // SAFETY: a live stream; valid out-pointer.
        check(unsafe { (self.api.cuStreamEndCapture)(stream(Some(s)), &mut graph) })?;
        Ok(GraphHandle(graph as usize))
    }

    fn stream_is_capturing(&self, s: StreamHandle) -> Result<bool> {
        let mut status: c_int = 0;
        // SAFETY: a live stream; valid out-pointer.
        check(unsafe { (self.api.cuStreamIsCapturing)(stream(Some(s)), &mut status) })?;
        Ok(status != 0)
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        self.ensure_context()?;
        let mut exec: CUgraphExec = null_mut();
        // SAFETY: a live graph; valid out-pointer.
        check(unsafe { (self.api.cuGraphInstantiateWithFlags)(&mut exec, graph.0 as CUgraph, 0) })?;
        Ok(GraphExecHandle(exec as usize))
    }

    fn graph_launch(&self, exec: GraphExecHandle, s: StreamHandle) -> Result<()> {
        self.note_stream(Some(s));
        // SAFETY: live handles of ours.
        check(unsafe { (self.api.cuGraphLaunch)(exec.0 as CUgraphExec, stream(Some(s))) })
    }

    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        // SAFETY: the caller hands over a live graph.
        check(unsafe { (self.api.cuGraphDestroy)(graph.0 as CUgraph) })
    }

    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        // SAFETY: the caller hands over a live executable graph.
        check(unsafe { (self.api.cuGraphExecDestroy)(exec.0 as CUgraphExec) })
    }
}
