//! Kernels from Python: `Module` (a loaded code object), `Function` (PyCUDA's call and
//! prepared-call conventions), argument packing, and `Graph`/`GraphExec` from stream capture.

use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString, PyTuple, PyType};

use super::releasable::Releasable;
use super::memory::{DeviceAllocation, HostView};
use super::stream::{stream_handle, CudaStream};
use crate::runtime::memory::DeviceBuffer;
use crate::runtime::{
    backend, error::record_error, Backend, BackendKind, Error, FunctionAttribute, FunctionHandle, GraphExecHandle,
    GraphHandle, KernelArgs, LaunchConfig, ModuleHandle, StreamHandle,
};

/// A loaded code object: PTX, cubin or fatbin (CUDA), HSACO (HIP), a kernels shared
/// library (host). Unloaded with the last reference (functions keep it alive) or `close()`.
#[pyclass(module = "pygpu", frozen)]
pub struct Module {
    handle: Releasable<ModuleHandle>,
    backend: &'static dyn Backend,
}

impl Module {
    fn handle(&self) -> PyResult<ModuleHandle> {
        self.handle.get()
    }

    fn load(py: Python<'_>, image: &[u8]) -> PyResult<Self> {
        let b = backend()?;
        // JIT-compiling PTX can take a while: let other threads run.
        let handle = py.detach(|| b.module_load(image))?;
        Ok(Module { handle: Releasable::new(handle, "this Module"), backend: b })
    }
}

#[pymethods]
impl Module {
    /// Loads a code object from its bytes.
    #[new]
    fn new(py: Python<'_>, image: &Bound<'_, PyBytes>) -> PyResult<Self> {
        Module::load(py, image.as_bytes())
    }

    /// Loads a code object from a file.
    #[staticmethod]
    fn from_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let image = std::fs::read(&path).map_err(|e| {
            pyo3::exceptions::PyFileNotFoundError::new_err(format!("cannot read {}: {e}", path.display()))
        })?;
        Module::load(py, &image)
    }

    fn get_function(slf: &Bound<'_, Self>, name: &str) -> PyResult<Function> {
        let this = slf.get();
        let handle = this.backend.module_get_function(this.handle()?, name)?;
        let attribute = |a| this.backend.function_attribute(handle, a).unwrap_or(0);
        Ok(Function {
            handle,
            param_sizes: this.backend.function_param_sizes(handle).ok().flatten(),
            name: name.to_string(),
            max_threads_per_block: attribute(FunctionAttribute::MaxThreadsPerBlock),
            module: slf.clone().unbind(),
            backend: this.backend,
            prepared: Mutex::new(None),
        })
    }

    /// (device address, size in bytes) of a global variable.
    fn get_global(&self, name: &str) -> PyResult<(u64, usize)> {
        Ok(self.backend.module_get_global(self.handle()?, name)?)
    }

    /// Unloads now; functions of this module must not be launched afterwards.
    fn close(&self) -> PyResult<()> {
        if let Some(h) = self.handle.take() {
            // SAFETY: taken out of the object, so unloaded exactly once.
            unsafe { self.backend.module_unload(h) }?;
        }
        Ok(())
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take_mut().filter(|_| !crate::runtime::in_forked_child()) {
            // SAFETY: last reference (functions hold one), so nothing launches from it.
            if let Err(e) = unsafe { self.backend.module_unload(h) } {
                record_error(e.code());
            }
        }
    }
}

/// A parameter type of a prepared function.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ParamKind {
    Pointer,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    C64,
    C128,
}

impl ParamKind {
    /// struct-module characters, as PyCUDA's prepare() takes them.
    fn from_char(c: char) -> Option<Self> {
        Some(match c {
            'P' => ParamKind::Pointer,
            'b' => ParamKind::I8,
            'B' | '?' => ParamKind::U8,
            'h' => ParamKind::I16,
            'H' => ParamKind::U16,
            'i' => ParamKind::I32,
            'I' => ParamKind::U32,
            'l' | 'q' => ParamKind::I64,
            'L' | 'Q' => ParamKind::U64,
            'f' => ParamKind::F32,
            'd' => ParamKind::F64,
            'F' => ParamKind::C64,
            'D' => ParamKind::C128,
            _ => return None,
        })
    }

    /// numpy dtype characters (np.dtype(x).char); np.intp stands for a pointer, as in PyCUDA.
    fn from_dtype_char(c: char) -> Option<Self> {
        match c {
            'p' => Some(ParamKind::Pointer),
            'l' | 'q' => Some(ParamKind::I64),
            'L' | 'Q' => Some(ParamKind::U64),
            _ => Self::from_char(c),
        }
    }
}

fn parse_signature(arg_types: &Bound<'_, PyAny>) -> PyResult<Vec<ParamKind>> {
    let bad = |what: String| PyValueError::new_err(format!("prepare(): {what}; use struct characters such as \"PiPd\" or numpy types"));
    if let Ok(s) = arg_types.cast::<PyString>() {
        return s
            .to_str()?
            .chars()
            .map(|c| ParamKind::from_char(c).ok_or_else(|| bad(format!("unknown type character {c:?}"))))
            .collect();
    }
    let numpy = arg_types.py().import("numpy")?;
    let mut kinds = Vec::new();
    for item in arg_types.try_iter()? {
        let item = item?;
        if let Ok(s) = item.cast::<PyString>() {
            let s = s.to_str()?;
            let mut chars = s.chars();
            match (chars.next().and_then(ParamKind::from_char), chars.next()) {
                (Some(k), None) => kinds.push(k),
                _ => return Err(bad(format!("unknown type {s:?}"))),
            }
            continue;
        }
        let dtype = numpy.call_method1("dtype", (&item,)).map_err(|_| bad(format!("{item} is not a type")))?;
        let c: String = dtype.getattr("char")?.extract()?;
        let kind = c.chars().next().and_then(ParamKind::from_dtype_char).ok_or_else(|| bad(format!("unsupported type {item}")))?;
        kinds.push(kind);
    }
    Ok(kinds)
}

static NUMPY_GENERIC: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn numpy_generic(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    NUMPY_GENERIC.import(py, "numpy", "generic")
}

/// Host arrays staged through device memory for one launch (PyCUDA's In/Out/InOut).
#[pyclass(module = "pygpu", frozen, subclass)]
pub struct ArgumentHandler {
    #[pyo3(get)]
    array: Py<PyAny>,
    copy_in: bool,
    copy_out: bool,
}

#[pymethods]
impl ArgumentHandler {
    #[getter]
    fn direction(&self) -> &'static str {
        match (self.copy_in, self.copy_out) {
            (true, false) => "in",
            (false, true) => "out",
            _ => "inout",
        }
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let shape = slf.get().array.bind(slf.py()).getattr("shape").map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
        Ok(format!("{}(array of shape {shape})", slf.get_type().name()?))
    }

    /// direction: "in", "out" or "inout".
    #[new]
    fn new(array: &Bound<'_, PyAny>, direction: &str) -> PyResult<Self> {
        let (copy_in, copy_out) = match direction {
            "in" => (true, false),
            "out" => (false, true),
            "inout" => (true, true),
            other => return Err(PyValueError::new_err(format!("direction must be 'in', 'out' or 'inout', not {other:?}"))),
        };
        HostView::get(array, copy_out)?;
        Ok(ArgumentHandler { array: array.clone().unbind(), copy_in, copy_out })
    }
}

/// Device staging for one In/Out/InOut argument.
struct Staged {
    buffer: DeviceBuffer,
    host: Py<PyAny>,
    copy_out: bool,
}

/// Packs one argument of an unprepared call.
fn pack_any(args: &mut KernelArgs, staged: &mut Vec<Staged>, obj: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
    let py = obj.py();
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        return Ok(args.push(a.get().live_ptr()?)?);
    }
    if obj.is_instance(numpy_generic(py)?)? {
        return Ok(args.push_bytes(HostView::get(obj, false)?.bytes())?);
    }
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "argument {index} is a Python {}: a kernel needs a sized type, e.g. numpy.int32(x) or numpy.float64(x), \
             or declare the types once with prepare()",
            obj.get_type().name()?
        )));
    }
    if let Ok(h) = obj.cast::<ArgumentHandler>() {
        return stage(args, staged, h.get());
    }
    Ok(args.push(pointer_of(obj, index)?)?)
}

/// The device address an array-like or pointer-like argument stands for.
fn pointer_of(obj: &Bound<'_, PyAny>, index: usize) -> PyResult<u64> {
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        return a.get().live_ptr();
    }
    if let Ok(ptr) = obj.getattr(pyo3::intern!(obj.py(), "ptr")) {
        if let Ok(p) = ptr.extract::<u64>() {
            return Ok(p);
        }
    }
    if let Ok(cai) = obj.getattr(pyo3::intern!(obj.py(), "__cuda_array_interface__")) {
        let data = cai.get_item("data")?;
        return data.get_item(0)?.extract::<u64>();
    }
    obj.extract::<u64>().map_err(|_| {
        PyTypeError::new_err(format!(
            "argument {index} ({}) is not a device pointer, an array with __cuda_array_interface__, or a numpy scalar",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

fn stage(args: &mut KernelArgs, staged: &mut Vec<Staged>, h: &ArgumentHandler) -> PyResult<()> {
    Python::attach(|py| {
        let buffer = HostView::get(h.array.bind(py), h.copy_out)?;
        let device = DeviceBuffer::new(buffer.len())?;
        if h.copy_in {
            // SAFETY: the view is readable for len() bytes while it lives; synchronous copy.
            unsafe { device.backend().memcpy_htod(device.ptr(), buffer.ptr(), buffer.len(), None) }?;
        }
        args.push(device.ptr())?;
        staged.push(Staged { buffer: device, host: h.array.clone_ref(py), copy_out: h.copy_out });
        Ok(())
    })
}

/// Copies Out/InOut arguments back once the launch has finished.
fn unstage(py: Python<'_>, staged: Vec<Staged>, stream: StreamHandle) -> PyResult<()> {
    if staged.is_empty() {
        return Ok(());
    }
    let b = backend()?;
    py.detach(|| b.stream_synchronize(stream))?;
    for s in staged.into_iter().filter(|s| s.copy_out) {
        let buffer = HostView::get(s.host.bind(py), true)?;
        let bytes = buffer.len().min(s.buffer.bytes());
        // SAFETY: the writable view holds len() bytes; the copy is synchronous.
        unsafe { b.memcpy_dtoh(buffer.ptr(), s.buffer.ptr(), bytes, None) }?;
    }
    Ok(())
}

fn pack_prepared(args: &mut KernelArgs, kind: ParamKind, obj: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
    let r = match kind {
        ParamKind::Pointer => args.push(pointer_of(obj, index)?),
        ParamKind::I8 => args.push(obj.extract::<i8>()?),
        ParamKind::U8 => args.push(obj.extract::<u8>()?),
        ParamKind::I16 => args.push(obj.extract::<i16>()?),
        ParamKind::U16 => args.push(obj.extract::<u16>()?),
        ParamKind::I32 => args.push(obj.extract::<i32>()?),
        ParamKind::U32 => args.push(obj.extract::<u32>()?),
        ParamKind::I64 => args.push(obj.extract::<i64>()?),
        ParamKind::U64 => args.push(obj.extract::<u64>()?),
        ParamKind::F32 => args.push(obj.extract::<f64>()? as f32),
        ParamKind::F64 => args.push(obj.extract::<f64>()?),
        ParamKind::C64 => {
            let c = obj.extract::<num_complex::Complex64>()?;
            args.push(num_complex::Complex32::new(c.re as f32, c.im as f32))
        }
        ParamKind::C128 => args.push(obj.extract::<num_complex::Complex64>()?),
    };
    Ok(r?)
}

/// (x, y, z) from an int or a tuple of 1 to 3 positive ints; missing entries are 1.
fn dims(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<[u32; 3]> {
    let bad = || PyValueError::new_err(format!("{what} must be a positive int or a tuple of 1 to 3 positive ints, not {obj}"));
    let positive = |v: i64| u32::try_from(v).ok().filter(|v| *v > 0).ok_or_else(bad);
    let mut out = [1u32; 3];
    // Tuples first, item by item: trying them as an int would raise (and build) a
    // TypeError on every launch.
    if let Ok(t) = obj.cast::<PyTuple>() {
        if t.is_empty() || t.len() > 3 {
            return Err(bad());
        }
        for (slot, item) in out.iter_mut().zip(t.iter()) {
            *slot = positive(item.extract::<i64>().map_err(|_| bad())?)?;
        }
        return Ok(out);
    }
    let values: Vec<i64> = if let Ok(n) = obj.extract::<i64>() {
        vec![n]
    } else {
        obj.extract::<Vec<i64>>().map_err(|_| bad())?
    };
    if values.is_empty() || values.len() > 3 {
        return Err(bad());
    }
    for (slot, v) in out.iter_mut().zip(values) {
        *slot = positive(v)?;
    }
    Ok(out)
}

/// A kernel of a loaded module, launched PyCUDA's way.
#[pyclass(module = "pygpu", frozen)]
pub struct Function {
    handle: FunctionHandle,
    name: String,
    max_threads_per_block: i32,
    /// Parameter sizes where the backend knows them: launches are checked against them.
    param_sizes: Option<Vec<usize>>,
    /// Keeps the code loaded while the function can be launched.
    module: Py<Module>,
    backend: &'static dyn Backend,
    prepared: Mutex<Option<Vec<ParamKind>>>,
}

impl Function {
    fn config(&self, grid: &Bound<'_, PyAny>, block: &Bound<'_, PyAny>, shared: u32) -> PyResult<LaunchConfig> {
        Ok(LaunchConfig { grid: dims(grid, "grid")?, block: dims(block, "block")?, shared_bytes: shared })
    }

    /// Says which launch failed and, where it explains the failure, the kernel's limits.
    fn launch_error(&self, error: Error, config: &LaunchConfig) -> Error {
        let Error::Api { code, backend } = error else { return error };
        let threads: u64 = config.block.iter().map(|&d| u64::from(d)).product();
        let mut detail = format!(
            "launching {} with grid {:?}, block {:?}, {} bytes of shared memory",
            self.name, config.grid, config.block, config.shared_bytes
        );
        if self.max_threads_per_block > 0 && threads > self.max_threads_per_block as u64 {
            detail += &format!(": the block has {threads} threads, this kernel allows at most {}", self.max_threads_per_block);
        }
        Error::Detailed { code, backend, detail }
    }

    /// Refuses an argument list that does not match the kernel's parameters, which would
    /// otherwise make the kernel read past the values given.
    fn check_arguments(&self, args: &KernelArgs) -> PyResult<()> {
        let Some(expected) = &self.param_sizes else { return Ok(()) };
        if expected.as_slice() == args.sizes() {
            return Ok(());
        }
        Err(Error::Detailed {
            code: crate::runtime::error::CUDA_ERROR_INVALID_VALUE,
            backend: self.backend.kind(),
            detail: format!(
                "{} takes {} arguments of {:?} bytes, but was given {} of {:?} bytes \
                 (pointers are 8 bytes; pass numpy.int32/float64/... scalars of the kernel's types)",
                self.name,
                expected.len(),
                expected,
                args.len(),
                args.sizes()
            ),
        }
        .into())
    }

    fn launch(&self, py: Python<'_>, config: &LaunchConfig, stream: StreamHandle, args: &KernelArgs) -> PyResult<()> {
        self.check_arguments(args)?;
        // Keep the module loaded for the duration (a module's close() waits for nothing).
        self.module.get().handle()?;
        let b = self.backend;
        let handle = self.handle;
        // SAFETY: the argument values were packed from the caller's arguments; whether they
        // match the kernel's parameters is the caller's contract, as with cuLaunchKernel.
        let result = if b.kind() == BackendKind::Host {
            // Host kernels run on this thread and may run long: let other threads run, and
            // between blocks run Python's signal handlers, so that Ctrl-C stops the launch.
            let interrupt: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
            let check = || {
                Python::attach(|py| match py.check_signals() {
                    Ok(()) => false,
                    Err(e) => {
                        *interrupt.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        true
                    }
                })
            };
            let result = py.detach(|| {
                crate::runtime::run_interruptible(&check, || unsafe { b.launch_kernel(handle, config, stream, args) })
            });
            if let Some(e) = interrupt.into_inner().unwrap_or_else(|p| p.into_inner()) {
                return Err(e);
            }
            result
        } else {
            unsafe { b.launch_kernel(handle, config, stream, args) }
        };
        Ok(result.map_err(|e| self.launch_error(e, config))?)
    }

    fn prepared_kinds(&self) -> PyResult<Vec<ParamKind>> {
        self.prepared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| PyValueError::new_err(format!("{} has not been prepared: call prepare(arg_types) first", self.name)))
    }

    fn call_prepared(
        &self,
        py: Python<'_>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, CudaStream>>,
        values: &Bound<'_, PyTuple>,
        shared_size: u32,
    ) -> PyResult<()> {
        let kinds = self.prepared_kinds()?;
        if kinds.len() != values.len() {
            return Err(Error::InvalidArgument(format!(
                "{} was prepared for {} arguments but got {}",
                self.name,
                kinds.len(),
                values.len()
            ))
            .into());
        }
        let mut args = KernelArgs::new();
        for (i, (kind, value)) in kinds.iter().zip(values.iter()).enumerate() {
            pack_prepared(&mut args, *kind, &value, i)?;
        }
        let config = self.config(grid, block, shared_size)?;
        self.launch(py, &config, stream_handle(stream)?, &args)
    }
}

#[pymethods]
impl Function {
    /// Launches with PyCUDA's convention: `f(*args, block=(x, y, z), grid=(x, y), stream=None, shared=0)`.
    /// Arguments: device arrays and allocations pass their pointer, numpy scalars their value,
    /// In/Out/InOut stage host arrays through device memory.
    #[pyo3(signature = (*args, block, grid = None, stream = None, shared = 0))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        block: &Bound<'_, PyAny>,
        grid: Option<&Bound<'_, PyAny>>,
        stream: Option<&Bound<'_, CudaStream>>,
        shared: u32,
    ) -> PyResult<()> {
        let mut packed = KernelArgs::new();
        let mut staged = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            pack_any(&mut packed, &mut staged, &arg, i)?;
        }
        let one = pyo3::types::PyInt::new(py, 1);
        let config = self.config(grid.unwrap_or(one.as_any()), block, shared)?;
        let stream = stream_handle(stream)?;
        self.launch(py, &config, stream, &packed)?;
        unstage(py, staged, stream)
    }

    /// Declares the parameter types (struct characters such as "PiPd", or numpy types;
    /// "P"/numpy.intp is a pointer) for prepared_call; returns self.
    fn prepare<'py>(slf: &Bound<'py, Self>, arg_types: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let kinds = parse_signature(arg_types)?;
        *slf.get().prepared.lock().unwrap_or_else(|e| e.into_inner()) = Some(kinds);
        Ok(slf.clone())
    }

    #[pyo3(signature = (grid, block, *args, shared_size = 0))]
    fn prepared_call(
        &self,
        py: Python<'_>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        shared_size: u32,
    ) -> PyResult<()> {
        self.call_prepared(py, grid, block, None, args, shared_size)
    }

    #[pyo3(signature = (grid, block, stream, *args, shared_size = 0))]
    fn prepared_async_call(
        &self,
        py: Python<'_>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, CudaStream>>,
        args: &Bound<'_, PyTuple>,
        shared_size: u32,
    ) -> PyResult<()> {
        self.call_prepared(py, grid, block, stream, args, shared_size)
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn num_regs(&self) -> PyResult<i32> {
        Ok(self.backend.function_attribute(self.handle, FunctionAttribute::NumRegs)?)
    }

    #[getter]
    fn shared_size_bytes(&self) -> PyResult<i32> {
        Ok(self.backend.function_attribute(self.handle, FunctionAttribute::SharedSizeBytes)?)
    }

    #[getter]
    fn local_size_bytes(&self) -> PyResult<i32> {
        Ok(self.backend.function_attribute(self.handle, FunctionAttribute::LocalSizeBytes)?)
    }

    #[getter]
    fn const_size_bytes(&self) -> PyResult<i32> {
        Ok(self.backend.function_attribute(self.handle, FunctionAttribute::ConstSizeBytes)?)
    }

    #[getter]
    fn max_threads_per_block(&self) -> i32 {
        self.max_threads_per_block
    }

    /// (minimum grid size, block size) that maximise occupancy (cuOccupancyMaxPotentialBlockSize).
    #[pyo3(signature = (dynamic_shared_bytes = 0, block_size_limit = 0))]
    fn max_potential_block_size(&self, dynamic_shared_bytes: usize, block_size_limit: i32) -> PyResult<(i32, i32)> {
        Ok(self.backend.max_potential_block_size(self.handle, dynamic_shared_bytes, block_size_limit)?)
    }

    fn __repr__(&self) -> String {
        format!("<pygpu.Function {}>", self.name)
    }
}

/// A graph recorded by stream capture (`cudaStream_t.end_capture()`).
#[pyclass(module = "pygpu", frozen)]
pub struct Graph {
    handle: GraphHandle,
    backend: &'static dyn Backend,
}

#[pymethods]
impl Graph {
    /// An executable instance, launchable many times.
    fn instantiate(&self) -> PyResult<GraphExec> {
        let exec = self.backend.graph_instantiate(self.handle)?;
        Ok(GraphExec { handle: exec, backend: self.backend })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if crate::runtime::in_forked_child() {
            return;
        }
        // SAFETY: owned handle, destroyed once.
        if let Err(e) = unsafe { self.backend.graph_destroy(self.handle) } {
            record_error(e.code());
        }
    }
}

#[pyclass(module = "pygpu", frozen)]
pub struct GraphExec {
    handle: GraphExecHandle,
    backend: &'static dyn Backend,
}

#[pymethods]
impl GraphExec {
    /// Replays the graph on `stream` (None: the default stream).
    #[pyo3(signature = (stream = None))]
    fn launch(&self, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<()> {
        Ok(self.backend.graph_launch(self.handle, stream_handle(stream)?)?)
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if crate::runtime::in_forked_child() {
            return;
        }
        // SAFETY: owned handle, destroyed once.
        if let Err(e) = unsafe { self.backend.graph_exec_destroy(self.handle) } {
            record_error(e.code());
        }
    }
}

/// Starts recording `stream`'s work into a graph (used by cudaStream_t.begin_capture).
pub fn begin_capture(stream: &Bound<'_, CudaStream>) -> PyResult<()> {
    let b = backend()?;
    Ok(b.stream_begin_capture(stream_handle(Some(stream))?)?)
}

pub fn end_capture(stream: &Bound<'_, CudaStream>) -> PyResult<Graph> {
    let b = backend()?;
    let handle = b.stream_end_capture(stream_handle(Some(stream))?)?;
    Ok(Graph { handle, backend: b })
}

pub fn is_capturing(stream: &Bound<'_, CudaStream>) -> PyResult<bool> {
    let b = backend()?;
    Ok(b.stream_is_capturing(stream_handle(Some(stream))?)?)
}
