//! Graphs through the driver: stream capture (relaxed, so that pygpu may allocate while a
//! capture runs), graphs built node by node (conditional nodes included), instantiation,
//! updates and replay, and allocations made while this thread captures.

use super::*;
use crate::runtime::error::{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_SUPPORTED};
use crate::runtime::{ConditionalKind, GraphNode, GraphNodeHandle, KernelArgs, LaunchConfig};

/// The kernel a conditional node's flag goes through: one thread reads the int32 at `flag` and
/// hands "nonzero" to the node's handle with the device runtime's `cudaGraphSetConditional`,
/// which the driver's PTX compiler provides (so no device runtime library is linked). PTX, so
/// that the driver compiles it for whatever GPU it runs on.
const LATCH_PTX: &str = "\
.version 7.0
.target sm_50
.address_size 64
.extern .func cudaGraphSetConditional(.param .b64 handle, .param .b32 value);
.visible .entry pygpu_graph_latch(.param .u64 flag, .param .u64 handle)
{
    .reg .pred %nonzero;
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [flag];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u64 %rd2, [handle];
    ld.global.u32 %r1, [%rd1];
    setp.ne.u32 %nonzero, %r1, 0;
    selp.u32 %r2, 1, 0, %nonzero;
    {
        .param .b64 handle_arg;
        .param .b32 value_arg;
        st.param.b64 [handle_arg], %rd2;
        st.param.b32 [value_arg], %r2;
        call.uni cudaGraphSetConditional, (handle_arg, value_arg);
    }
    ret;
}
\0";

impl CudaBackend {
    /// The kernel node parameters for a launch; `pointers` (the arguments') must outlive the call
    /// that reads them.
    fn kernel_params(
        function: FunctionHandle,
        config: &LaunchConfig,
        pointers: &mut [*mut c_void],
    ) -> CUDA_KERNEL_NODE_PARAMS_v2 {
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        CUDA_KERNEL_NODE_PARAMS_v2 {
            func: function.0 as CUfunction,
            gridDimX: gx,
            gridDimY: gy,
            gridDimZ: gz,
            blockDimX: bx,
            blockDimY: by,
            blockDimZ: bz,
            sharedMemBytes: config.shared_bytes,
            kernelParams: if pointers.is_empty() { null_mut() } else { pointers.as_mut_ptr() },
            extra: null_mut(),
            kern: null_mut(),
            ctx: null_mut(),
        }
    }

    /// A one-dimensional copy between addresses the driver resolves itself (device memory, or
    /// page-locked host memory through unified addressing).
    fn copy_params(dst: DevicePtr, src: DevicePtr, bytes: usize) -> CUDA_MEMCPY3D {
        let unified = CUmemorytype::CU_MEMORYTYPE_UNIFIED;
        CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: unified,
            srcHost: std::ptr::null(),
            srcDevice: src,
            srcArray: null_mut(),
            reserved0: null_mut(),
            srcPitch: 0,
            srcHeight: 0,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: unified,
            dstHost: null_mut(),
            dstDevice: dst,
            dstArray: null_mut(),
            reserved1: null_mut(),
            dstPitch: 0,
            dstHeight: 0,
            WidthInBytes: bytes,
            Height: 1,
            Depth: 1,
        }
    }

    fn memset_params(dst: DevicePtr, value: u32, element_size: usize, count: usize) -> Result<CUDA_MEMSET_NODE_PARAMS> {
        if !matches!(element_size, 1 | 2 | 4) {
            return Err(Error::api(CUDA_ERROR_INVALID_VALUE, BackendKind::Cuda));
        }
        Ok(CUDA_MEMSET_NODE_PARAMS {
            dst,
            pitch: 0,
            value,
            elementSize: element_size as c_uint,
            width: count,
            height: 1,
        })
    }

    /// The current context's latch kernel (see `LATCH_PTX`), loaded on first use.
    fn latch(&self, ctx: CUcontext) -> Result<CUfunction> {
        let mut latches = self.latches.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, f)) = latches.iter().find(|(c, _)| *c == ctx as usize) {
            return Ok(f as CUfunction);
        }
        let mut module: CUmodule = null_mut();
        // SAFETY: a NUL-terminated PTX image; no JIT options. The module stays loaded for the
        // life of the process (as the primary contexts do), so the function stays valid.
        check(unsafe {
            (self.api.cuModuleLoadDataEx)(&mut module, LATCH_PTX.as_ptr().cast(), 0, null_mut(), null_mut())
        })?;
        let mut function: CUfunction = null_mut();
        // SAFETY: a live module; a NUL-terminated name it defines.
        check(unsafe { (self.api.cuModuleGetFunction)(&mut function, module, c"pygpu_graph_latch".as_ptr()) })?;
        latches.push((ctx as usize, function as usize));
        Ok(function)
    }

    /// Adds a launch of the latch kernel for (`flag`, `handle`) to `graph`.
    ///
    /// # Safety
    /// `graph` and `dependencies` are live; `flag` is a device address.
    unsafe fn add_latch(
        &self,
        graph: CUgraph,
        dependencies: &[CUgraphNode],
        latch: CUfunction,
        flag: DevicePtr,
        handle: CUgraphConditionalHandle,
    ) -> Result<CUgraphNode> {
        let mut args = KernelArgs::new();
        args.push(flag)?;
        args.push(handle)?;
        let one = LaunchConfig { grid: [1, 1, 1], block: [1, 1, 1], shared_bytes: 0 };
        let mut node: CUgraphNode = null_mut();
        args.with_pointers(|pointers| {
            let params = Self::kernel_params(FunctionHandle(latch as usize), &one, pointers);
            // SAFETY: the latch takes (u64, u64), given; the driver copies the values.
            check(unsafe {
                (self.api.cuGraphAddKernelNode_v2)(&mut node, graph, dependencies.as_ptr(), dependencies.len(), &params)
            })
        })?;
        Ok(node)
    }

    /// A conditional node: the latch after `dependencies` sets its handle from `flag`, the node
    /// runs a body made of a copy of `body` and the latch again (which decides the next turn of
    /// a while loop).
    ///
    /// # Safety
    /// Live handles; `flag` a device address.
    unsafe fn add_conditional(
        &self,
        graph: CUgraph,
        dependencies: &[CUgraphNode],
        kind: ConditionalKind,
        flag: DevicePtr,
        body: CUgraph,
    ) -> Result<CUgraphNode> {
        let Some(api) = &self.conditionals else {
            return Err(Error::detailed(
                CUDA_ERROR_NOT_SUPPORTED,
                BackendKind::Cuda,
                "conditional graph nodes need an NVIDIA driver for CUDA 12.3 or newer: update the driver, or run the \
                 loop from Python (launch the graph once per turn)",
            ));
        };
        let ctx = self.ensure_context()?;
        let latch =
            self.latch(ctx).map_err(|e| e.with_detail("loading the conditional node's latch kernel".to_string()))?;
        let mut handle: CUgraphConditionalHandle = 0;
        // SAFETY: live graph and context; valid out-pointer; no default value (the latch sets it).
        check(unsafe { (api.cuGraphConditionalHandleCreate)(&mut handle, graph, ctx, 0, 0) })
            .map_err(|e| e.with_detail("creating a conditional node's handle".to_string()))?;
        // SAFETY: forwarded from the caller.
        let before = unsafe { self.add_latch(graph, dependencies, latch, flag, handle) }
            .map_err(|e| e.with_detail("adding the latch kernel before a conditional node".to_string()))?;
        let mut params = ConditionalNodeParams {
            node_type: CU_GRAPH_NODE_TYPE_CONDITIONAL,
            reserved0: [0; 3],
            handle,
            conditional_type: match kind {
                ConditionalKind::If => CU_GRAPH_COND_TYPE_IF,
                ConditionalKind::While => CU_GRAPH_COND_TYPE_WHILE,
            },
            size: 1,
            bodies: null_mut(),
            ctx,
            rest_of_union: [0; 25],
            reserved2: 0,
        };
        let mut node: CUgraphNode = null_mut();
        // SAFETY: live graph, one live dependency, params laid out as cuda.h's CUgraphNodeParams
        // for a conditional node; the driver points `bodies` at the body graphs it owns.
        check(unsafe { (api.cuGraphAddNode)(&mut node, graph, &before, 1, &mut params) })
            .map_err(|e| e.with_detail("adding a conditional node".to_string()))?;
        if params.bodies.is_null() {
            return Err(Error::detailed(CUDA_ERROR_INVALID_VALUE, BackendKind::Cuda, "the driver gave no body graph"));
        }
        // SAFETY: a CUDA-owned array of `size` (1) live body graphs, valid while the node lives.
        let body_out = unsafe { *params.bodies };
        let mut child: CUgraphNode = null_mut();
        // SAFETY: body_out is the node's live body graph; the child graph is copied in.
        check(unsafe { (self.api.cuGraphAddChildGraphNode)(&mut child, body_out, null_mut(), 0, body) })
            .map_err(|e| e.with_detail("copying the body graph into the conditional node".to_string()))?;
        // SAFETY: as above, on the body graph.
        unsafe { self.add_latch(body_out, &[child], latch, flag, handle) }
            .map_err(|e| e.with_detail("adding the latch kernel to a conditional node's body".to_string()))?;
        Ok(node)
    }
}

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

    fn graph_create(&self) -> Result<GraphHandle> {
        self.ensure_context()?;
        let mut graph: CUgraph = null_mut();
        // SAFETY: valid out-pointer; flags must be 0.
        check(unsafe { (self.api.cuGraphCreate)(&mut graph, 0) })?;
        Ok(GraphHandle(graph as usize))
    }

    unsafe fn graph_add_node(
        &self,
        graph: GraphHandle,
        dependencies: &[GraphNodeHandle],
        node: &GraphNode<'_>,
    ) -> Result<GraphNodeHandle> {
        let ctx = self.ensure_context()?;
        let graph = graph.0 as CUgraph;
        let deps: Vec<CUgraphNode> = dependencies.iter().map(|d| d.0 as CUgraphNode).collect();
        let (deps, n) = (deps.as_ptr(), deps.len());
        let mut out: CUgraphNode = null_mut();
        // The graph and the dependencies are live nodes of ours, `out` a valid out-pointer, and
        // what the node uses our caller vouches for; the driver copies parameters before returning.
        let code = match *node {
            // SAFETY: as said above.
            GraphNode::Empty => unsafe { (self.api.cuGraphAddEmptyNode)(&mut out, graph, deps, n) },
            GraphNode::Kernel { function, config, args } => args.with_pointers(|pointers| {
                let params = Self::kernel_params(function, &config, pointers);
                // SAFETY: as said above; `pointers` live across the call.
                unsafe { (self.api.cuGraphAddKernelNode_v2)(&mut out, graph, deps, n, &params) }
            }),
            GraphNode::Copy { dst, src, bytes } => {
                let params = Self::copy_params(dst, src, bytes);
                // SAFETY: as said above.
                unsafe { (self.api.cuGraphAddMemcpyNode)(&mut out, graph, deps, n, &params, ctx) }
            }
            GraphNode::Memset { dst, value, element_size, count } => {
                let params = Self::memset_params(dst, value, element_size, count)?;
                // SAFETY: as said above.
                unsafe { (self.api.cuGraphAddMemsetNode)(&mut out, graph, deps, n, &params, ctx) }
            }
            // SAFETY: as said above; the event is live (its owner is kept with the graph).
            GraphNode::EventRecord(e) => unsafe {
                (self.api.cuGraphAddEventRecordNode)(&mut out, graph, deps, n, e.0 as CUevent)
            },
            // SAFETY: as said above.
            GraphNode::EventWait(e) => unsafe {
                (self.api.cuGraphAddEventWaitNode)(&mut out, graph, deps, n, e.0 as CUevent)
            },
            // SAFETY: as said above; the child graph is live and copied in.
            GraphNode::Child(child) => unsafe {
                (self.api.cuGraphAddChildGraphNode)(&mut out, graph, deps, n, child.0 as CUgraph)
            },
            GraphNode::Conditional { kind, flag, body } => {
                // SAFETY: deps points at n live nodes (the Vec above).
                let deps = unsafe { std::slice::from_raw_parts(deps, n) };
                // SAFETY: as said above.
                out = unsafe { self.add_conditional(graph, deps, kind, flag, body.0 as CUgraph) }?;
                0
            }
        };
        check(code)?;
        Ok(GraphNodeHandle(out as usize))
    }

    unsafe fn graph_exec_update_node(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        update: &GraphNode<'_>,
    ) -> Result<()> {
        let ctx = self.ensure_context()?;
        let (exec, node) = (exec.0 as CUgraphExec, node.0 as CUgraphNode);
        // A live instance and a node of its graph, of the kind the update is (runtime::graph
        // checks); what the node uses our caller vouches for.
        check(match *update {
            GraphNode::Kernel { function, config, args } => args.with_pointers(|pointers| {
                let params = Self::kernel_params(function, &config, pointers);
                // SAFETY: as said above; `pointers` live across the call.
                unsafe { (self.api.cuGraphExecKernelNodeSetParams_v2)(exec, node, &params) }
            }),
            GraphNode::Copy { dst, src, bytes } => {
                let params = Self::copy_params(dst, src, bytes);
                // SAFETY: as said above.
                unsafe { (self.api.cuGraphExecMemcpyNodeSetParams)(exec, node, &params, ctx) }
            }
            GraphNode::Memset { dst, value, element_size, count } => {
                let params = Self::memset_params(dst, value, element_size, count)?;
                // SAFETY: as said above.
                unsafe { (self.api.cuGraphExecMemsetNodeSetParams)(exec, node, &params, ctx) }
            }
            _ => CUDA_ERROR_INVALID_VALUE,
        })
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
