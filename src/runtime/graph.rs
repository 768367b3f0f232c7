//! Graphs, all of it here (as in cudarc's safe layer): stream capture
//! (`Stream::begin_capture`/`end_capture`/`is_capturing`, and the `Capture` record a stream
//! keeps while it captures, of the modules whose kernels were launched on it and the
//! allocations their arguments point into); graphs built node by node (`Graph::empty`,
//! `add_*`); `Graph` and its executable instances, `GraphExec`, which keep the kernels' modules
//! loaded, check before each replay that the allocations the graph uses still exist (a GPU
//! would otherwise read and write freed or reused memory), and update a node's parameters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::context::Context;
use super::error::CUDA_ERROR_INVALID_VALUE;
use super::module::Module;
use super::owned::Owned;
use super::stream::Stream;
use super::{
    Backend, ConditionalKind, DevicePtr, Error, Event, Function, FunctionHandle, GraphExecHandle, GraphHandle,
    GraphNode, GraphNodeHandle, KernelArgs, LaunchConfig, Result, StreamHandle,
};

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
        let uses = allocations.into_iter().map(|u| (None, u)).collect();
        Ok(Graph::new(self.context(), handle, GraphParts { modules, uses, nodes: 0 }))
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

/// An address a graph's node passes, and the identity of the allocation holding it then
/// (`DeviceMemory::allocation_identity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationUse {
    pub address: DevicePtr,
    pub identity: (DevicePtr, u64),
}

/// The allocations a node uses, each noted with its node (None: recorded by a capture), so that
/// an update replaces that node's.
type Uses = Vec<(Option<GraphNodeHandle>, AllocationUse)>;

/// The allocations that `addresses` point into (0 and repeats skipped), noted for `node`.
fn allocation_uses(backend: &dyn Backend, node: Option<GraphNodeHandle>, addresses: &[DevicePtr]) -> Uses {
    let mut uses: Uses = Vec::new();
    for &address in addresses {
        if address == 0 || uses.iter().any(|(_, u)| u.address == address) {
            continue;
        }
        if let Some(identity) = backend.allocation_identity(address) {
            uses.push((node, AllocationUse { address, identity }));
        }
    }
    uses
}

/// What a graph keeps beside its handle.
#[derive(Clone, Default)]
struct GraphParts {
    modules: Vec<Arc<Module>>,
    uses: Uses,
    /// Nodes added by `add_*` (a captured graph's are not addressable).
    nodes: usize,
}

/// A node of a `Graph`, for dependencies and updates: it names its graph, and which kernel a
/// kernel node launches (an update may change the arguments, not the kernel).
#[derive(Clone)]
pub struct Node {
    graph: u64,
    handle: GraphNodeHandle,
    kind: NodeKind,
}

#[derive(Clone)]
enum NodeKind {
    /// The kernel, and the launch shape the node was added with.
    Kernel(FunctionHandle, LaunchConfig),
    Copy,
    Memset,
    Other(&'static str),
}

impl Node {
    /// What kind of node this is, in words ("kernel", "memcpy", "memset", "empty", ...).
    pub fn kind(&self) -> &'static str {
        match self.kind {
            NodeKind::Kernel(..) => "kernel",
            NodeKind::Copy => "memcpy",
            NodeKind::Memset => "memset",
            NodeKind::Other(kind) => kind,
        }
    }

    /// A number for this node, unique within its graph.
    pub fn id(&self) -> usize {
        self.handle.0
    }

    /// A kernel node's launch shape as it was added; None for other nodes.
    pub fn kernel_config(&self) -> Option<LaunchConfig> {
        match self.kind {
            NodeKind::Kernel(_, config) => Some(config),
            _ => None,
        }
    }
}

/// Numbers graphs, so that a node is only used with the graph it belongs to.
static NEXT_GRAPH_ID: AtomicU64 = AtomicU64::new(1);

pub struct Graph {
    ctx: Arc<Context>,
    owned: Owned<GraphHandle>,
    id: u64,
    parts: Mutex<GraphParts>,
}

impl Graph {
    /// `handle` was just returned by the backend (end of capture, or an empty graph).
    fn new(ctx: &Arc<Context>, handle: GraphHandle, parts: GraphParts) -> Graph {
        Graph {
            ctx: ctx.clone(),
            owned: Owned::new(ctx.backend(), handle),
            id: NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed),
            parts: Mutex::new(parts),
        }
    }

    /// An empty graph of `ctx`'s device, to build node by node.
    pub fn empty(ctx: &Arc<Context>) -> Result<Graph> {
        let handle = ctx.backend().graph_create()?;
        Ok(Graph::new(ctx, handle, GraphParts::default()))
    }

    fn parts(&self) -> MutexGuard<'_, GraphParts> {
        // Nothing that can panic runs under this lock; the parts are whole either way.
        self.parts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The handles of `dependencies`, which must be nodes of this graph.
    fn dependency_handles(&self, dependencies: &[Node]) -> Result<Vec<GraphNodeHandle>> {
        dependencies
            .iter()
            .map(|d| match d.graph == self.id {
                true => Ok(d.handle),
                false => Err(Error::InvalidArgument(
                    "a dependency is a node of another graph: a node can only depend on nodes of its own graph"
                        .to_string(),
                )),
            })
            .collect()
    }

    /// Adds `node` after `dependencies`; `modules`/`uses`: what it keeps loaded and uses.
    ///
    /// # Safety
    /// As `Graphs::graph_add_node`'s.
    unsafe fn add(
        &self,
        dependencies: &[Node],
        node: &GraphNode<'_>,
        kind: NodeKind,
        modules: &[Arc<Module>],
        addresses: &[DevicePtr],
        inherited: Uses,
    ) -> Result<Node> {
        let deps = self.dependency_handles(dependencies)?;
        self.ctx.check_current("this graph")?;
        let mut parts = self.parts();
        // SAFETY: forwarded from the caller.
        let handle = unsafe { self.ctx.backend().graph_add_node(self.owned.get(), &deps, node) }?;
        parts.nodes += 1;
        for module in modules {
            if !parts.modules.iter().any(|m| Arc::ptr_eq(m, module)) {
                parts.modules.push(module.clone());
            }
        }
        parts.uses.extend(allocation_uses(self.ctx.backend(), Some(handle), addresses));
        parts.uses.extend(inherited.into_iter().map(|(_, u)| (Some(handle), u)));
        Ok(Node { graph: self.id, handle, kind })
    }

    /// A node that does nothing (joins its dependencies).
    pub fn add_empty(&self, dependencies: &[Node]) -> Result<Node> {
        // SAFETY: an empty node uses nothing.
        unsafe { self.add(dependencies, &GraphNode::Empty, NodeKind::Other("empty"), &[], &[], Vec::new()) }
    }

    /// A launch of `function`.
    ///
    /// # Safety
    /// `args` match the kernel's parameters, and what they point to outlives the graph's
    /// instances (as for `Function::launch`, for every replay).
    pub unsafe fn add_kernel(
        &self,
        dependencies: &[Node],
        function: &Function,
        config: &LaunchConfig,
        args: &KernelArgs,
    ) -> Result<Node> {
        self.check_same_context(function.context())?;
        let node = GraphNode::Kernel { function: function.handle(), config: *config, args };
        let addresses: Vec<_> = args.eight_byte_values().collect();
        // SAFETY: forwarded from the caller.
        unsafe {
            self.add(
                dependencies,
                &node,
                NodeKind::Kernel(function.handle(), *config),
                std::slice::from_ref(function.module()),
                &addresses,
                Vec::new(),
            )
        }
    }

    /// A copy of `bytes` between device addresses.
    ///
    /// # Safety
    /// Both ranges stay valid while the graph's instances may run.
    pub unsafe fn add_copy(&self, dependencies: &[Node], dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<Node> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.add(dependencies, &GraphNode::Copy { dst, src, bytes }, NodeKind::Copy, &[], &[dst, src], Vec::new())
        }
    }

    /// `count` elements of `element_size` bytes at `dst` set to `value`.
    ///
    /// # Safety
    /// The range stays valid while the graph's instances may run.
    pub unsafe fn add_memset(
        &self,
        dependencies: &[Node],
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
    ) -> Result<Node> {
        let node = GraphNode::Memset { dst, value, element_size, count };
        // SAFETY: forwarded from the caller.
        unsafe { self.add(dependencies, &node, NodeKind::Memset, &[], &[dst], Vec::new()) }
    }

    /// Records `event` (`record == true`) or waits for it; the caller keeps the event alive
    /// while the graph's instances may run.
    pub fn add_event(&self, dependencies: &[Node], event: &Event, record: bool) -> Result<Node> {
        let (node, kind) = match record {
            true => (GraphNode::EventRecord(event.handle()), "event record"),
            false => (GraphNode::EventWait(event.handle()), "event wait"),
        };
        // SAFETY: an event node uses no memory.
        unsafe { self.add(dependencies, &node, NodeKind::Other(kind), &[], &[], Vec::new()) }
    }

    /// A copy of `child`'s nodes, run as one node.
    pub fn add_child(&self, dependencies: &[Node], child: &Graph) -> Result<Node> {
        self.check_same_context(&child.ctx)?;
        let (modules, uses) = child.kept();
        // SAFETY: the child's nodes were checked when they were added to it.
        unsafe {
            self.add(
                dependencies,
                &GraphNode::Child(child.owned.get()),
                NodeKind::Other("child graph"),
                &modules,
                &[],
                uses,
            )
        }
    }

    /// A copy of `body`, run if (or while) the int32 at `flag` is nonzero, read on the device
    /// before each run.
    ///
    /// # Safety
    /// `flag` stays valid while the graph's instances may run.
    pub unsafe fn add_conditional(
        &self,
        dependencies: &[Node],
        kind: ConditionalKind,
        flag: DevicePtr,
        body: &Graph,
    ) -> Result<Node> {
        self.check_same_context(&body.ctx)?;
        let (modules, uses) = body.kept();
        let node = GraphNode::Conditional { kind, flag, body: body.owned.get() };
        let name = match kind {
            ConditionalKind::If => "if",
            ConditionalKind::While => "while",
        };
        // SAFETY: forwarded from the caller; the body's nodes were checked when added to it.
        unsafe { self.add(dependencies, &node, NodeKind::Other(name), &modules, &[flag], uses) }
    }

    fn check_same_context(&self, other: &Arc<Context>) -> Result<()> {
        match Arc::ptr_eq(&self.ctx, other) {
            true => Ok(()),
            false => Err(Error::InvalidArgument(format!(
                "this graph belongs to device {}, the node's kernel or graph to device {}: a graph's nodes \
                 run on one device",
                self.ctx.device(),
                other.device()
            ))),
        }
    }

    /// The modules and allocations this graph keeps and checks.
    fn kept(&self) -> (Vec<Arc<Module>>, Uses) {
        let parts = self.parts();
        (parts.modules.clone(), parts.uses.clone())
    }

    /// How many nodes `add_*` added.
    pub fn node_count(&self) -> usize {
        self.parts().nodes
    }

    /// An executable instance, launchable many times; it outlives this graph if need be, and
    /// later additions to the graph do not change it.
    pub fn instantiate(&self) -> Result<GraphExec> {
        let parts = self.parts().clone();
        let handle = self.ctx.backend().graph_instantiate(self.owned.get())?;
        Ok(GraphExec {
            ctx: self.ctx.clone(),
            owned: Owned::new(self.ctx.backend(), handle),
            graph: self.id,
            parts: Mutex::new(parts),
        })
    }

    /// The modules this graph keeps loaded.
    pub fn modules(&self) -> Vec<Arc<Module>> {
        self.parts().modules.clone()
    }
}

pub struct GraphExec {
    ctx: Arc<Context>,
    owned: Owned<GraphExecHandle>,
    /// The graph this instance was made from: only its nodes can be updated here.
    graph: u64,
    /// Dropped after `owned` (fields drop in order), so the code outlives the instance.
    parts: Mutex<GraphParts>,
}

impl GraphExec {
    fn parts(&self) -> MutexGuard<'_, GraphParts> {
        // Nothing that can panic runs under this lock; the parts are whole either way.
        self.parts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The backend this instance runs on.
    pub fn kind(&self) -> super::BackendKind {
        self.ctx.kind()
    }

    /// Replays the graph on `stream`, unless an allocation one of its nodes uses was freed.
    pub fn launch(&self, stream: StreamHandle) -> Result<()> {
        let backend = self.ctx.backend();
        {
            let parts = self.parts();
            if let Some((_, gone)) =
                parts.uses.iter().find(|(_, u)| backend.allocation_identity(u.address) != Some(u.identity))
            {
                return Err(Error::detailed(
                    CUDA_ERROR_INVALID_VALUE,
                    backend.kind(),
                    format!(
                        "a node of this graph uses the allocation at 0x{:x}, which was freed before the graph was \
                         launched: keep what a graph uses alive while it is replayed",
                        gone.address
                    ),
                ));
            }
        }
        backend.graph_launch(self.owned.get(), stream)
    }

    /// Checks that `node` is one of this instance's graph, of the kind `wanted`.
    fn check_node(&self, node: &Node, wanted: &str) -> Result<()> {
        if node.graph != self.graph {
            return Err(Error::InvalidArgument(
                "the node belongs to another graph: update the nodes of the graph this instance was made from"
                    .to_string(),
            ));
        }
        if node.kind() != wanted {
            return Err(Error::InvalidArgument(format!("the node is a {} node, not a {wanted} node", node.kind())));
        }
        Ok(())
    }

    /// Updates `node` and what it is noted to use.
    ///
    /// # Safety
    /// As `Graphs::graph_exec_update_node`'s.
    unsafe fn update(&self, node: &Node, update: &GraphNode<'_>, addresses: &[DevicePtr]) -> Result<()> {
        self.ctx.check_current("this graph")?;
        let mut parts = self.parts();
        // SAFETY: forwarded from the caller.
        unsafe { self.ctx.backend().graph_exec_update_node(self.owned.get(), node.handle, update) }?;
        parts.uses.retain(|(n, _)| *n != Some(node.handle));
        parts.uses.extend(allocation_uses(self.ctx.backend(), Some(node.handle), addresses));
        Ok(())
    }

    /// New arguments (and launch shape) for a kernel node, from the next launch on.
    ///
    /// # Safety
    /// As `Graph::add_kernel`'s.
    pub unsafe fn set_kernel(
        &self,
        node: &Node,
        function: &Function,
        config: &LaunchConfig,
        args: &KernelArgs,
    ) -> Result<()> {
        self.check_node(node, "kernel")?;
        if !matches!(node.kind, NodeKind::Kernel(f, _) if f == function.handle()) {
            return Err(Error::InvalidArgument(format!(
                "the node launches another kernel than {}: an update changes a kernel's arguments, not the kernel",
                function.name()
            )));
        }
        let update = GraphNode::Kernel { function: function.handle(), config: *config, args };
        let addresses: Vec<_> = args.eight_byte_values().collect();
        // SAFETY: forwarded from the caller.
        unsafe { self.update(node, &update, &addresses) }
    }

    /// New addresses and size for a copy node.
    ///
    /// # Safety
    /// As `Graph::add_copy`'s.
    pub unsafe fn set_copy(&self, node: &Node, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<()> {
        self.check_node(node, "memcpy")?;
        // SAFETY: forwarded from the caller.
        unsafe { self.update(node, &GraphNode::Copy { dst, src, bytes }, &[dst, src]) }
    }

    /// New range and value for a memset node.
    ///
    /// # Safety
    /// As `Graph::add_memset`'s.
    pub unsafe fn set_memset(
        &self,
        node: &Node,
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
    ) -> Result<()> {
        self.check_node(node, "memset")?;
        // SAFETY: forwarded from the caller.
        unsafe { self.update(node, &GraphNode::Memset { dst, value, element_size, count }, &[dst]) }
    }
}
