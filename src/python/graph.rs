//! Graphs from Python: `Graph` (recorded by stream capture, or built node by node with
//! `add_*_node`), `GraphNode` (a node, for dependencies and updates) and `GraphExec` (an
//! instance: `launch`, and `set_*_node_params` to change a node between launches). Thin
//! wrappers over `runtime::graph`; what they add is keeping alive the Python objects whose
//! memory, kernels and events the nodes use, node by node, so that an update releases what
//! the node used before. Above `module` and `event` (kernel and event nodes use them);
//! `cudaStream_t.end_capture` hands its recording here.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::event::CudaEvent;
use super::int_args::int_in_range;
use super::kernel_args::dims;
use super::memory::{byte_count, device_address};
use super::module::{run_on_host_thread, shared_bytes, Function};
use super::stream::{stream_handle, CudaStream};
use crate::runtime::graph::Node;
use crate::runtime::{self, BackendKind, ConditionalKind, Context, DevicePtr, Error, LaunchConfig};

/// Python objects a graph's nodes use, each under its node (None: all of a capture's).
type Kept = Vec<(Option<usize>, Py<PyAny>)>;

fn lock(kept: &Mutex<Kept>) -> MutexGuard<'_, Kept> {
    // Nothing that can panic runs under this lock; the list is whole either way.
    kept.lock().unwrap_or_else(|e| e.into_inner())
}

fn traverse(kept: &Mutex<Kept>, visit: &pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
    // try_lock: the GC must never block; a list being changed is visited next time.
    if let Ok(kept) = kept.try_lock() {
        for (_, obj) in kept.iter() {
            visit.call(obj)?;
        }
    }
    Ok(())
}

/// The nodes of a `dependencies=` argument (any iterable of GraphNode).
fn dependency_nodes(dependencies: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Node>> {
    let Some(dependencies) = dependencies else { return Ok(Vec::new()) };
    let mut nodes = Vec::new();
    for item in dependencies.try_iter()? {
        let item = item?;
        let node = item.cast::<GraphNode>().map_err(|_| {
            PyValueError::new_err(format!(
                "dependencies= takes the GraphNode objects that add_*_node returned, not {}",
                item.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        nodes.push(node.get().node.clone());
    }
    Ok(nodes)
}

/// A kernel call's arguments packed as a launch packs them, refusing In/Out/InOut (they stage
/// through host memory around each call, which a graph's replay does not do).
fn node_arguments(
    function: &Function,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<runtime::KernelArgs> {
    let (packed, handlers) = function.pack_call(args, kwargs)?;
    if !handlers.is_empty() {
        return Err(PyValueError::new_err(
            "In/Out/InOut arguments copy host memory around each call, which a graph's replay does not do: pass \
             device arrays (to_gpu, and get() after the launch) to a kernel node",
        ));
    }
    Ok(packed)
}

/// A copy node's (dst, src, bytes): device addresses, `nbytes` defaulting to the smaller
/// allocation and checked against both where their sizes are known.
fn copy_range(
    dst: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    nbytes: Option<isize>,
) -> PyResult<(DevicePtr, DevicePtr, usize)> {
    let (dst, dst_bytes) = device_address(dst)?;
    let (src, src_bytes) = device_address(src)?;
    let bytes = match (nbytes, dst_bytes, src_bytes) {
        (Some(n), ..) => byte_count(n)?,
        (None, Some(a), Some(b)) => a.min(b),
        _ => return Err(Error::InvalidArgument("a copy between plain int addresses needs nbytes=".to_string()).into()),
    };
    for (side, capacity) in [("destination", dst_bytes), ("source", src_bytes)] {
        if capacity.is_some_and(|c| bytes > c) {
            return Err(Error::InvalidArgument(format!(
                "the copy's {bytes} bytes do not fit in its {side} ({} bytes)",
                capacity.unwrap_or(0)
            ))
            .into());
        }
    }
    Ok((dst, src, bytes))
}

/// A memset node's (dst, value, element size, count): `value` of `element_size` bytes (1, 2
/// or 4), `count` elements, checked against the allocation where its size is known.
fn memset_range(
    dst: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    count: isize,
    element_size: usize,
) -> PyResult<(DevicePtr, u32, usize, usize)> {
    let value = match element_size {
        1 => int_in_range::<u8>(value, || "a 1-byte memset's value".to_string())?.into(),
        2 => int_in_range::<u16>(value, || "a 2-byte memset's value".to_string())?.into(),
        4 => int_in_range::<u32>(value, || "a 4-byte memset's value".to_string())?,
        _ => return Err(PyValueError::new_err(format!("element_size must be 1, 2 or 4 bytes, not {element_size}"))),
    };
    let (dst, capacity) = device_address(dst)?;
    let count = byte_count(count)?;
    let bytes = count.checked_mul(element_size).ok_or_else(|| PyValueError::new_err("the memset's size overflows"))?;
    if capacity.is_some_and(|c| bytes > c) {
        return Err(Error::InvalidArgument(format!(
            "the memset's {bytes} bytes do not fit in its destination ({} bytes)",
            capacity.unwrap_or(0)
        ))
        .into());
    }
    Ok((dst, value, element_size, count))
}

/// A graph: recorded by stream capture (`cudaStream_t.end_capture()`) or built node by node
/// from `Graph()`; it and its instances keep the kernels' modules loaded and the objects its
/// nodes use alive.
#[pyclass(module = "pygpu", frozen)]
pub struct Graph {
    graph: runtime::Graph,
    kept: Mutex<Kept>,
}

impl Graph {
    /// The graph a capture recorded, keeping `kept` (what `keep_while_captured` got).
    pub(super) fn captured(graph: runtime::Graph, kept: Vec<Py<PyAny>>) -> Graph {
        Graph { graph, kept: Mutex::new(kept.into_iter().map(|o| (None, o)).collect()) }
    }

    /// Notes `node`, keeping `objects` alive with the graph, and returns it to Python.
    fn added(&self, node: Node, objects: impl IntoIterator<Item = Py<PyAny>>) -> GraphNode {
        lock(&self.kept).extend(objects.into_iter().map(|o| (Some(node.id()), o)));
        GraphNode { node }
    }
}

#[pymethods]
impl Graph {
    /// An empty graph on the current device, to build with the ``add_*_node`` methods.
    #[new]
    fn new() -> PyResult<Self> {
        let ctx = Context::current()?;
        Ok(Graph { graph: runtime::Graph::empty(&ctx)?, kept: Mutex::new(Vec::new()) })
    }

    /// A launch of ``func`` with ``args`` (as ``func(*args, block=, grid=, shared=)`` takes them;
    /// keyword arguments by parameter name where the kernel's declaration is known), after
    /// ``dependencies``. The arrays passed are kept alive with the graph.
    #[pyo3(signature = (func, *args, block, grid = None, shared = 0, dependencies = None, **kwargs))]
    #[allow(clippy::too_many_arguments)]
    fn add_kernel_node(
        &self,
        py: Python<'_>,
        func: &Bound<'_, Function>,
        args: &Bound<'_, PyTuple>,
        block: &Bound<'_, PyAny>,
        grid: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = shared_bytes)] shared: u32,
        dependencies: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<GraphNode> {
        let function = func.get();
        let one = pyo3::types::PyInt::new(py, 1);
        let packed = node_arguments(function, args, kwargs)?;
        let config = function.config(grid.unwrap_or(one.as_any()), block, shared)?;
        let deps = dependency_nodes(dependencies)?;
        // SAFETY: the arguments were packed (and checked where the kernel's parameters are known)
        // as a launch packs them; the graph keeps the objects they came from alive (below).
        let node = unsafe { self.graph.add_kernel(&deps, function.runtime_function()?, &config, &packed) }?;
        let mut objects = vec![func.clone().into_any().unbind(), args.clone().into_any().unbind()];
        objects.extend(kwargs.map(|k| k.clone().into_any().unbind()));
        Ok(self.added(node, objects))
    }

    /// A copy of ``nbytes`` (default: the smaller of the two allocations) from ``src`` to ``dst``,
    /// device memory (DeviceAllocation, GPUArray or an int address; page-locked host memory
    /// through its device pointer).
    #[pyo3(signature = (dst, src, nbytes = None, dependencies = None))]
    fn add_memcpy_node(
        &self,
        dst: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        nbytes: Option<isize>,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        let (to, from, bytes) = copy_range(dst, src, nbytes)?;
        let deps = dependency_nodes(dependencies)?;
        // SAFETY: the graph keeps dst and src alive; a plain int address is the caller's to keep.
        let node = unsafe { self.graph.add_copy(&deps, to, from, bytes) }?;
        Ok(self.added(node, [dst.clone().unbind(), src.clone().unbind()]))
    }

    /// Sets ``count`` elements of ``element_size`` bytes (1, 2 or 4) at ``dst`` to ``value``.
    #[pyo3(signature = (dst, value, count, element_size = 1, dependencies = None))]
    fn add_memset_node(
        &self,
        dst: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        count: isize,
        element_size: usize,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        let (to, value, element_size, count) = memset_range(dst, value, count, element_size)?;
        let deps = dependency_nodes(dependencies)?;
        // SAFETY: the graph keeps dst alive; a plain int address is the caller's to keep.
        let node = unsafe { self.graph.add_memset(&deps, to, value, element_size, count) }?;
        Ok(self.added(node, [dst.clone().unbind()]))
    }

    /// Records ``event`` when the dependencies are done (for timing, or for other streams to wait).
    #[pyo3(signature = (event, dependencies = None))]
    fn add_event_record_node(
        &self,
        event: &Bound<'_, CudaEvent>,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        self.add_event(event, dependencies, true)
    }

    /// Waits for ``event`` (recorded elsewhere) before the nodes that depend on this one.
    #[pyo3(signature = (event, dependencies = None))]
    fn add_event_wait_node(
        &self,
        event: &Bound<'_, CudaEvent>,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        self.add_event(event, dependencies, false)
    }

    /// A copy of ``child``'s nodes, run as one node (later changes to ``child`` do not reach it).
    #[pyo3(signature = (child, dependencies = None))]
    fn add_child_graph_node(
        &self,
        child: &Bound<'_, Graph>,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        let deps = dependency_nodes(dependencies)?;
        let node = self.graph.add_child(&deps, &child.get().graph)?;
        Ok(self.added(node, [child.clone().into_any().unbind()]))
    }

    /// A node that does nothing: one node to depend on for many.
    #[pyo3(signature = (dependencies = None))]
    fn add_empty_node(&self, dependencies: Option<&Bound<'_, PyAny>>) -> PyResult<GraphNode> {
        let deps = dependency_nodes(dependencies)?;
        Ok(self.added(self.graph.add_empty(&deps)?, []))
    }

    /// Runs a copy of ``body`` again and again while the int32 at ``flag`` (device memory: a
    /// GPUArray of one int32, an allocation or an address) is nonzero, read on the device before
    /// each turn: kernels of the body end the loop by writing 0 there. On CUDA a conditional node
    /// (a driver for CUDA 12.3+), so the loop runs without Python.
    #[pyo3(signature = (body, flag, dependencies = None))]
    fn add_while_node(
        &self,
        body: &Bound<'_, Graph>,
        flag: &Bound<'_, PyAny>,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        self.add_conditional(ConditionalKind::While, body, flag, dependencies)
    }

    /// Runs a copy of ``body`` once if the int32 at ``flag`` is nonzero when the node is reached.
    #[pyo3(signature = (body, flag, dependencies = None))]
    fn add_if_node(
        &self,
        body: &Bound<'_, Graph>,
        flag: &Bound<'_, PyAny>,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        self.add_conditional(ConditionalKind::If, body, flag, dependencies)
    }

    /// How many nodes the ``add_*_node`` methods added (0 for a captured graph).
    #[getter]
    fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    /// An executable instance, launchable many times; later additions to this graph do not
    /// change it.
    fn instantiate(&self, py: Python<'_>) -> PyResult<GraphExec> {
        let kept = lock(&self.kept).iter().map(|(n, o)| (*n, o.clone_ref(py))).collect();
        Ok(GraphExec { exec: self.graph.instantiate()?, kept: Mutex::new(kept) })
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        traverse(&self.kept, &visit)
    }
}

impl Graph {
    fn add_event(
        &self,
        event: &Bound<'_, CudaEvent>,
        dependencies: Option<&Bound<'_, PyAny>>,
        record: bool,
    ) -> PyResult<GraphNode> {
        let deps = dependency_nodes(dependencies)?;
        let node = self.graph.add_event(&deps, &*event.get().event()?, record)?;
        Ok(self.added(node, [event.clone().into_any().unbind()]))
    }

    fn add_conditional(
        &self,
        kind: ConditionalKind,
        body: &Bound<'_, Graph>,
        flag: &Bound<'_, PyAny>,
        dependencies: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GraphNode> {
        let (address, capacity) = device_address(flag)?;
        if capacity.is_some_and(|c| c < 4) || address % 4 != 0 {
            return Err(PyValueError::new_err(
                "flag must be 4 bytes of device memory aligned to 4 (an int32), e.g. gpuarray.zeros(1, numpy.int32)",
            ));
        }
        let deps = dependency_nodes(dependencies)?;
        // SAFETY: the graph keeps the flag's object alive; a plain int address is the caller's to keep.
        let node = unsafe { self.graph.add_conditional(&deps, kind, address, &body.get().graph) }?;
        Ok(self.added(node, [body.clone().into_any().unbind(), flag.clone().unbind()]))
    }
}

/// A node of a Graph (what its ``add_*_node`` methods return): for ``dependencies=`` and for
/// ``GraphExec.set_*_node_params``.
#[pyclass(module = "pygpu", frozen)]
pub struct GraphNode {
    node: Node,
}

#[pymethods]
impl GraphNode {
    /// "kernel", "memcpy", "memset", "event record", "event wait", "child graph", "empty",
    /// "while" or "if".
    #[getter]
    fn kind(&self) -> &'static str {
        self.node.kind()
    }

    fn __repr__(&self) -> String {
        format!("<pygpu.GraphNode {}>", self.node.kind())
    }
}

/// An executable instance of a Graph (``Graph.instantiate()``): ``launch(stream)`` replays it
/// as often as wanted; ``set_*_node_params`` change a kernel's arguments, a copy's or a
/// memset's range between launches without instantiating again.
#[pyclass(module = "pygpu", frozen)]
pub struct GraphExec {
    exec: runtime::GraphExec,
    kept: Mutex<Kept>,
}

impl GraphExec {
    /// Keeps `objects` for `node` instead of what it kept before.
    fn replace_kept(&self, node: &Node, objects: impl IntoIterator<Item = Py<PyAny>>) {
        let mut kept = lock(&self.kept);
        let id = Some(node.id());
        kept.retain(|(n, _)| *n != id);
        kept.extend(objects.into_iter().map(|o| (id, o)));
    }
}

#[pymethods]
impl GraphExec {
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        traverse(&self.kept, &visit)
    }

    /// Replays the graph on `stream` (None: the default stream). On the host backend the replay
    /// runs here, and Ctrl-C stops it.
    #[pyo3(signature = (stream = None))]
    fn launch(&self, py: Python<'_>, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<()> {
        let stream = stream_handle(stream)?;
        let replay = || self.exec.launch(stream);
        match self.exec.kind() {
            BackendKind::Host => run_on_host_thread(py, replay)??,
            _ => replay()?,
        }
        Ok(())
    }

    /// New arguments for a kernel node (of the graph this instance was made from) from the next
    /// launch on, packed as ``func(*args)`` packs them; ``block``/``grid``/``shared``: None
    /// keeps the node's launch shape as it was added.
    #[pyo3(signature = (node, func, *args, block = None, grid = None, shared = None, **kwargs))]
    #[allow(clippy::too_many_arguments)]
    fn set_kernel_node_params(
        &self,
        node: &Bound<'_, GraphNode>,
        func: &Bound<'_, Function>,
        args: &Bound<'_, PyTuple>,
        block: Option<&Bound<'_, PyAny>>,
        grid: Option<&Bound<'_, PyAny>>,
        shared: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let node = &node.get().node;
        let function = func.get();
        let Some(added) = node.kernel_config() else {
            return Err(Error::InvalidArgument(format!("the node is a {} node, not a kernel node", node.kind())).into());
        };
        let packed = node_arguments(function, args, kwargs)?;
        let config = LaunchConfig {
            grid: grid.map(|g| dims(g, "grid")).transpose()?.unwrap_or(added.grid),
            block: block.map(|b| dims(b, "block")).transpose()?.unwrap_or(added.block),
            shared_bytes: shared.map(shared_bytes).transpose()?.unwrap_or(added.shared_bytes),
        };
        // SAFETY: packed and checked as add_kernel_node packs; the objects are kept (below).
        unsafe { self.exec.set_kernel(node, function.runtime_function()?, &config, &packed) }?;
        let mut objects = vec![func.clone().into_any().unbind(), args.clone().into_any().unbind()];
        objects.extend(kwargs.map(|k| k.clone().into_any().unbind()));
        self.replace_kept(node, objects);
        Ok(())
    }

    /// A memcpy node's new destination, source and size (as ``add_memcpy_node`` takes them).
    #[pyo3(signature = (node, dst, src, nbytes = None))]
    fn set_memcpy_node_params(
        &self,
        node: &Bound<'_, GraphNode>,
        dst: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        nbytes: Option<isize>,
    ) -> PyResult<()> {
        let node = &node.get().node;
        let (to, from, bytes) = copy_range(dst, src, nbytes)?;
        // SAFETY: the objects are kept (below); a plain int address is the caller's to keep.
        unsafe { self.exec.set_copy(node, to, from, bytes) }?;
        self.replace_kept(node, [dst.clone().unbind(), src.clone().unbind()]);
        Ok(())
    }

    /// A memset node's new destination, value and count (as ``add_memset_node`` takes them).
    #[pyo3(signature = (node, dst, value, count, element_size = 1))]
    fn set_memset_node_params(
        &self,
        node: &Bound<'_, GraphNode>,
        dst: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        count: isize,
        element_size: usize,
    ) -> PyResult<()> {
        let node = &node.get().node;
        let (to, value, element_size, count) = memset_range(dst, value, count, element_size)?;
        // SAFETY: the object is kept (below); a plain int address is the caller's to keep.
        unsafe { self.exec.set_memset(node, to, value, element_size, count) }?;
        self.replace_kept(node, [dst.clone().unbind()]);
        Ok(())
    }
}
