//! Kernels from Python: `Module` (a loaded code object) and `Function` (PyCUDA's call and
//! prepared-call conventions; the arguments are packed by `kernel_args`).

use std::sync::Arc;

use arc_swap::ArcSwapOption;

use pyo3::exceptions::{PyAttributeError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCFunction, PyDict, PyTuple};

use super::device::device_synchronize;
use super::int_args::int_in_range;
use super::kernel_args::{call_handlers, dims, pack_any, pack_prepared};
use super::kernel_declaration::{Declaration, KernelParameter};
use super::kernel_signature::{check_structs, parse_signature, ParamKind};
use super::releasable::Releasable;
use super::stream::{launch_stream, CudaStream};
use crate::runtime::error::CUDA_ERROR_INVALID_RESOURCE_HANDLE;
use crate::runtime::{
    self, BackendKind, Context, Error, Event, FunctionAttribute, KernelArgs, LaunchConfig, Stream, StreamHandle,
};

/// A loaded code object: PTX, cubin or fatbin (CUDA), HSACO (HIP), a kernels shared
/// library (host). A thin wrapper over `runtime::Module`; its functions hold the code
/// loaded, so `close()` unloads it now only when none remains.
#[pyclass(module = "pygpu", frozen)]
pub struct Module {
    module: Releasable<Arc<runtime::Module>>,
    /// `name -> declared parameters or None`, given by whoever knows the module's source
    /// (`_set_declarations`), asked by `get_function`.
    declarations: ArcSwapOption<Py<PyAny>>,
}

impl Module {
    fn module(&self) -> PyResult<Arc<runtime::Module>> {
        self.module.get()
    }

    /// The invalid-handle error once `close()`d.
    fn check_open(&self) -> PyResult<()> {
        self.module.check_live()
    }

    fn load(py: Python<'_>, image: &[u8]) -> PyResult<Self> {
        let ctx = Context::current()?;
        // JIT-compiling PTX can take a while: let other threads run.
        let module = py.detach(|| runtime::Module::load(&ctx, image))?;
        Ok(Module { module: Releasable::new(module, "this Module"), declarations: ArcSwapOption::empty() })
    }
}

/// The largest code object `Module.from_file` reads; bigger files (or endless ones such as
/// /dev/zero) are refused rather than read until memory runs out.
const MAX_IMAGE_BYTES: u64 = 1 << 30;

/// A code object's bytes, with an exception that names the path and what is wrong with it.
fn read_image_file(path: &std::path::Path) -> PyResult<Vec<u8>> {
    use pyo3::exceptions::{PyFileNotFoundError, PyIsADirectoryError, PyMemoryError, PyOSError, PyValueError};
    use std::io::{ErrorKind, Read};
    let fail = |e: std::io::Error| -> PyErr {
        let message = format!("cannot read the code object {}: {e}", path.display());
        match e.kind() {
            ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
            ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
            ErrorKind::InvalidInput => PyValueError::new_err(message),
            ErrorKind::OutOfMemory => PyMemoryError::new_err(message),
            _ => PyOSError::new_err(message),
        }
    };
    let file = std::fs::File::open(path).map_err(fail)?;
    let metadata = file.metadata().map_err(fail)?;
    if metadata.is_dir() {
        return Err(fail(std::io::Error::from(ErrorKind::IsADirectory)));
    }
    // A device or pipe (/dev/zero) may never end: only files have a size to check first.
    if !metadata.is_file() || metadata.len() > MAX_IMAGE_BYTES {
        return Err(PyValueError::new_err(format!(
            "{} is not a code object: {}",
            path.display(),
            if metadata.is_file() {
                format!("{} bytes, more than the {MAX_IMAGE_BYTES} a code object may have", metadata.len())
            } else {
                "not a regular file".to_string()
            }
        )));
    }
    let mut image = Vec::new();
    image.try_reserve_exact(metadata.len() as usize).map_err(|_| {
        PyMemoryError::new_err(format!("no memory to read {} ({} bytes)", path.display(), metadata.len()))
    })?;
    // Bounded: a file growing meanwhile is read up to the limit only.
    file.take(MAX_IMAGE_BYTES).read_to_end(&mut image).map_err(fail)?;
    Ok(image)
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
        Module::load(py, &read_image_file(&path)?)
    }

    /// The kernel named `name` as the code object exports it (a C++ kernel not declared
    /// `extern "C"`: its mangled name); raises if there is none.
    fn get_function(slf: &Bound<'_, Self>, name: &str) -> PyResult<Function> {
        let function = slf.get().module()?.get_function(name)?;
        let f = Function {
            param_sizes: function.param_sizes().ok().flatten(),
            max_threads_per_block: function.attribute(FunctionAttribute::MaxThreadsPerBlock).unwrap_or(0),
            function,
            module: slf.clone().unbind(),
            prepared: ArcSwapOption::empty(),
            declared: ArcSwapOption::empty(),
        };
        if let Some(lookup) = slf.get().declarations.load().as_deref() {
            let described = lookup.call1(slf.py(), (name,))?;
            if !described.is_none(slf.py()) {
                f._declare(slf.py(), described.extract(slf.py())?)?;
            }
        }
        Ok(f)
    }

    /// Gives the module a way to find its kernels' declarations: `lookup(name)` returns a
    /// kernel's parameters as `pygpu._toolchain.kernel_declarations` describes them, or None.
    fn _set_declarations(&self, lookup: Py<PyAny>) {
        self.declarations.store(Some(Arc::new(lookup)));
    }

    /// (device address, size in bytes) of a global variable.
    fn get_global(&self, name: &str) -> PyResult<(u64, usize)> {
        Ok(self.module()?.get_global(name)?)
    }

    /// Texture references were removed in CUDA 12: raises NotImplementedError naming the replacement.
    #[allow(unused_variables)]
    fn get_texref(&self, name: &str) -> PyResult<()> {
        Err(texref_removed("Module.get_texref"))
    }

    /// Surface references were removed in CUDA 12: raises NotImplementedError naming the replacement.
    #[allow(unused_variables)]
    fn get_surfref(&self, name: &str) -> PyResult<()> {
        Err(texref_removed("Module.get_surfref"))
    }

    /// Releases the module now: its functions can no longer be launched; the code is unloaded
    /// once no Function or graph of it remains.
    fn close(&self) -> PyResult<()> {
        Ok(self.module.release_with(runtime::Module::close)?)
    }
}

/// A kernel of a loaded module, launched PyCUDA's way; a thin wrapper over `runtime::Function`.
#[pyclass(module = "pygpu", frozen)]
pub struct Function {
    function: runtime::Function,
    max_threads_per_block: i32,
    /// Parameter sizes where the backend knows them: launches are checked against them.
    param_sizes: Option<Vec<usize>>,
    /// The Python module, whose `close()` ends launching from this function.
    module: Py<Module>,
    /// The parameter types given to prepare(): read by every prepared call without a lock,
    /// replaced by another prepare() (a call in flight keeps the types it started with).
    prepared: ArcSwapOption<Vec<ParamKind>>,
    /// The parameters as the kernel's C declaration gives them (`_declare`): plain calls are
    /// checked and converted against them.
    declared: ArcSwapOption<Declaration>,
}

impl Function {
    pub(super) fn config(
        &self,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        shared: u32,
    ) -> PyResult<LaunchConfig> {
        Ok(LaunchConfig { grid: dims(grid, "grid")?, block: dims(block, "block")?, shared_bytes: shared })
    }

    /// Says which launch failed and, where it explains the failure, the kernel's limits.
    fn launch_error(&self, error: Error, config: &LaunchConfig) -> Error {
        let Error::Api { code, backend, detail: None } = error else { return error };
        let threads: u64 = config.block.iter().map(|&d| u64::from(d)).product();
        let mut detail = format!(
            "launching {} with grid {:?}, block {:?}, {} bytes of shared memory",
            self.function.name(),
            config.grid,
            config.block,
            config.shared_bytes
        );
        if self.max_threads_per_block > 0 && threads > self.max_threads_per_block as u64 {
            detail += &format!(
                ": the block has {threads} threads, this kernel allows at most {}",
                self.max_threads_per_block
            );
        }
        if code == CUDA_ERROR_INVALID_RESOURCE_HANDLE {
            // The device matched (check_device), so the context or the stream did not.
            detail += &format!(
                ": the kernel belongs to device {}'s primary context; if another library made a context \
                 of its own current (pycuda.autoinit does), use its primary context instead \
                 (pycuda.autoprimaryctx), and pass only streams of the current context",
                self.function.context().device()
            );
        }
        Error::detailed(code, backend, detail)
    }

    /// Refuses an argument list that does not match the kernel's parameters, which would
    /// otherwise make the kernel read past the values given.
    fn check_arguments(&self, args: &KernelArgs) -> PyResult<()> {
        let Some(expected) = &self.param_sizes else { return Ok(()) };
        if expected.as_slice() == args.sizes() {
            return Ok(());
        }
        Err(Error::detailed(
            crate::runtime::error::CUDA_ERROR_INVALID_VALUE,
            self.function.context().kind(),
            format!(
                "{} takes {} arguments of {:?} bytes, but was given {} of {:?} bytes \
                 (pointers are 8 bytes; pass numpy.int32/float64/... scalars of the kernel's types)",
                self.function.name(),
                expected.len(),
                expected,
                args.len(),
                args.sizes()
            ),
        )
        .into())
    }

    fn launch(
        &self,
        py: Python<'_>,
        config: &LaunchConfig,
        stream: Option<&Stream>,
        args: &KernelArgs,
    ) -> PyResult<()> {
        self.check_arguments(args)?;
        // A closed Python module ends launching, as before the runtime types kept code loaded.
        self.module.get().check_open()?;
        let f = &self.function;
        // The argument values were packed from the caller's arguments; whether they match the
        // kernel's parameters is the caller's contract, as with cuLaunchKernel.
        let launch = || match stream {
            // SAFETY: the launch contract above.
            Some(s) => unsafe { f.launch(config, s, args) },
            // SAFETY: the launch contract above.
            None => unsafe { f.launch_on(config, StreamHandle::DEFAULT, args) },
        };
        let result = if f.context().kind() == BackendKind::Host { run_on_host_thread(py, launch)? } else { launch() };
        Ok(result.map_err(|e| self.launch_error(e, config))?)
    }

    /// A call's arguments packed as `__call__` packs them (checked and converted against the
    /// kernel's declaration where it is known), and the In/Out/InOut handlers among them.
    pub(super) fn pack_call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(KernelArgs, Vec<Bound<'py, PyAny>>)> {
        let mut packed = KernelArgs::new();
        let mut handlers = Vec::new();
        let declared = self.declared.load();
        let name = self.function.name();
        match declared.as_deref() {
            Some(declaration) => {
                let values = declaration.bind(name, args, kwargs.filter(|k| !k.is_empty()))?;
                declaration.pack(name, &mut packed, &mut handlers, &values)?;
            }
            None => {
                if let Some(k) = kwargs.filter(|k| !k.is_empty()) {
                    return Err(PyTypeError::new_err(format!(
                        "{name}() got keyword arguments ({}), but its parameters' names are unknown (they are known \
                         for kernels compiled from source by SourceModule): pass the arguments by position",
                        k.keys()
                    )));
                }
                for (i, arg) in args.iter().enumerate() {
                    pack_any(&mut packed, &mut handlers, &arg, i)?;
                }
            }
        }
        self.check_arguments(&packed)?;
        Ok((packed, handlers))
    }

    /// The kernel, for a graph's kernel node; refused once the module was closed.
    pub(super) fn runtime_function(&self) -> PyResult<&runtime::Function> {
        self.module.get().check_open()?;
        Ok(&self.function)
    }

    fn not_prepared(&self) -> PyErr {
        PyValueError::new_err(format!("{} has not been prepared: call prepare(arg_types) first", self.function.name()))
    }

    /// Packs `values` with the types given to prepare() and launches (prepared_call and
    /// prepared_async_call, see `prepared_call`; prepared_timed_call).
    pub(super) fn call_prepared<'a, 'py>(
        &self,
        py: Python<'py>,
        grid: &Bound<'py, PyAny>,
        block: &Bound<'py, PyAny>,
        stream: Option<&Bound<'py, CudaStream>>,
        values: impl ExactSizeIterator<Item = Borrowed<'a, 'py, PyAny>>,
        shared_size: u32,
    ) -> PyResult<()> {
        let prepared = self.prepared.load();
        let Some(kinds) = prepared.as_deref() else { return Err(self.not_prepared()) };
        if kinds.len() != values.len() {
            return Err(Error::InvalidArgument(format!(
                "{} was prepared for {} arguments but got {}",
                self.function.name(),
                kinds.len(),
                values.len()
            ))
            .into());
        }
        let mut args = KernelArgs::new();
        for (i, (kind, value)) in kinds.iter().zip(values).enumerate() {
            pack_prepared(&mut args, *kind, &value, i)?;
        }
        let config = self.config(grid, block, shared_size)?;
        self.launch(py, &config, launch_stream(stream)?.as_deref(), &args)
    }
}

#[pymethods]
impl Function {
    /// Launches with PyCUDA's convention: `f(*args, block=(x, y, z), grid=(x, y), stream=None, shared=0)`.
    /// Arguments: device arrays and allocations pass their pointer, numpy scalars their value,
    /// In/Out/InOut (PyCUDA's `ArgumentHandler` protocol) the device memory they stage through.
    /// Where the kernel's declaration is known (`parameters`), arguments may also be given by
    /// parameter name, Python numbers become the parameters' C types, and arrays must match
    /// their pointers' element types.
    #[pyo3(signature = (*args, block, grid = None, stream = None, shared = 0, texrefs = None, time_kernel = false, **kwargs))]
    #[allow(clippy::too_many_arguments)]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        block: &Bound<'_, PyAny>,
        grid: Option<&Bound<'_, PyAny>>,
        stream: Option<&Bound<'_, CudaStream>>,
        #[pyo3(from_py_with = shared_bytes)] shared: u32,
        texrefs: Option<&Bound<'_, PyAny>>,
        time_kernel: bool,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Option<f64>> {
        no_texrefs(texrefs, "Function.__call__(texrefs=...)")?;
        if time_kernel && stream.is_some() {
            return Err(PyValueError::new_err(
                "time_kernel=True times a launch on the default stream, waiting for it (PyCUDA: \"Can't time the \
                 kernel on an asynchronous invocation\"): drop stream=, or time it with Events recorded on the stream",
            ));
        }
        let (packed, handlers) = self.pack_call(args, kwargs)?;
        let one = pyo3::types::PyInt::new(py, 1);
        let config = self.config(grid.unwrap_or(one.as_any()), block, shared)?;
        let stream_arg = stream.map_or_else(|| py.None().into_bound(py), |s| s.clone().into_any());
        call_handlers(&handlers, pyo3::intern!(py, "pre_call"), &stream_arg)?;
        let stream = launch_stream(stream)?;
        // PyCUDA's time_kernel: the wall-clock seconds from an idle device to the launch's end.
        let started = if time_kernel {
            device_synchronize(py)?;
            Some(std::time::Instant::now())
        } else {
            None
        };
        self.launch(py, &config, stream.as_deref(), &packed)?;
        let elapsed = match started {
            Some(start) => {
                device_synchronize(py)?;
                Some(start.elapsed().as_secs_f64())
            }
            None => None,
        };
        call_handlers(&handlers, pyo3::intern!(py, "post_call"), &stream_arg)?;
        Ok(elapsed)
    }

    /// Declares the parameter types (struct characters such as "PiPd", "12s" for a 12-byte
    /// struct, or numpy types; "P"/numpy.intp is a pointer, a structured dtype a struct passed
    /// by value) for prepared_call; returns self. Without `arg_types`, the types of the kernel's
    /// declaration (`parameters`) are taken.
    #[pyo3(signature = (arg_types = None, texrefs = None))]
    fn prepare<'py>(
        slf: &Bound<'py, Self>,
        arg_types: Option<&Bound<'py, PyAny>>,
        texrefs: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        no_texrefs(texrefs, "Function.prepare(texrefs=...)")?;
        let me = slf.get();
        let name = me.function.name();
        let kinds = match arg_types {
            Some(types) => parse_signature(types)?,
            None => {
                let declared = me.declared.load();
                let Some(declaration) = declared.as_deref() else {
                    return Err(PyValueError::new_err(format!(
                        "{name}.prepare() needs arg_types (e.g. \"PiPd\"): the kernel's declaration is unknown \
                         (it is known for kernels compiled from source by SourceModule)"
                    )));
                };
                declaration.prepared_kinds(me.param_sizes.as_deref()).map_err(|p| {
                    PyValueError::new_err(format!(
                        "{name}.prepare(): the type of {p} has no known size: pass arg_types (e.g. \"PiPd\")"
                    ))
                })?
            }
        };
        check_structs(name, &kinds, me.param_sizes.as_deref())?;
        me.prepared.store(Some(Arc::new(kinds)));
        Ok(slf.clone())
    }

    /// The kernel's parameters (`KernelParameter`: name, C type, size), from its declaration
    /// where pygpu read it (SourceModule's sources, the bundled kernels), else their sizes
    /// alone where the backend reports them; None where neither is known.
    #[getter]
    fn parameters(&self, py: Python<'_>) -> PyResult<Option<Py<PyTuple>>> {
        if let Some(declaration) = self.declared.load().as_deref() {
            return Ok(Some(declaration.parameters.clone_ref(py)));
        }
        let Some(sizes) = &self.param_sizes else { return Ok(None) };
        let sized = sizes.iter().map(|&s| Py::new(py, KernelParameter::sized(s))).collect::<PyResult<Vec<_>>>()?;
        Ok(Some(PyTuple::new(py, sized)?.unbind()))
    }

    /// Gives the kernel's declared parameters, as `pygpu._toolchain.kernel_declarations` reads them from
    /// its source; False (and nothing changes) where they disagree with the sizes the backend
    /// reports for the loaded kernel.
    fn _declare(&self, py: Python<'_>, described: Vec<super::kernel_declaration::Described>) -> PyResult<bool> {
        let Some(declaration) = Declaration::new(py, described, self.param_sizes.as_deref())? else {
            return Ok(false);
        };
        self.declared.store(Some(Arc::new(declaration)));
        Ok(true)
    }

    /// Launches as `prepared_call` between two events on the default stream, and returns a
    /// callable that waits for the launch and gives its duration in seconds (PyCUDA's
    /// `prepared_timed_call`).
    #[pyo3(signature = (grid, block, *args, shared_size = 0))]
    fn prepared_timed_call<'py>(
        &self,
        py: Python<'py>,
        grid: &Bound<'py, PyAny>,
        block: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        shared_size: u32,
    ) -> PyResult<Bound<'py, PyCFunction>> {
        let ctx = self.function.context();
        let (start, end) = (Event::new(ctx, 0)?, Event::new(ctx, 0)?);
        start.record(StreamHandle::DEFAULT)?;
        self.call_prepared(py, grid, block, None, args.iter_borrowed(), shared_size)?;
        end.record(StreamHandle::DEFAULT)?;
        PyCFunction::new_closure(
            py,
            Some(c"prepared_timed_call_time"),
            Some(c"Waits for the timed launch and returns its duration in seconds."),
            move |args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>| -> PyResult<f64> {
                let py = args.py();
                // Without the GIL: the launch may still run, and host kernels need it for Ctrl-C.
                let ms = py.detach(|| end.synchronize().and_then(|()| start.elapsed_ms(&end)))?;
                Ok(f64::from(ms) * 1e-3)
            },
        )
    }

    /// PyCUDA's shared-memory bank size preference (a `shared_config` value). Since CUDA 12 the
    /// driver ignores it (cuFuncSetSharedMemConfig is a no-op and deprecated), so it is checked
    /// and accepted; nothing changes.
    fn set_shared_config(&self, config: i32) -> PyResult<()> {
        self.module.get().module()?;
        if !(0..=2).contains(&config) {
            return Err(Error::InvalidArgument(format!(
                "{config} is not a shared_config: DEFAULT_BANK_SIZE (0), FOUR_BYTE_BANK_SIZE (1) or \
                 EIGHT_BYTE_BANK_SIZE (2)"
            ))
            .into());
        }
        Ok(())
    }

    /// The kernel's name in the module.
    #[getter]
    fn name(&self) -> &str {
        self.function.name()
    }

    /// The value of a `function_attribute` (a CUfunction_attribute number).
    fn get_attribute(&self, attr: i32) -> PyResult<i32> {
        self.module.get().module()?;
        Ok(self.function.get_attribute(attr)?)
    }

    /// Sets a settable `function_attribute`, e.g. MAX_DYNAMIC_SHARED_SIZE_BYTES before a launch
    /// with more than 48 KiB of dynamic shared memory.
    fn set_attribute(&self, attr: i32, value: i32) -> PyResult<()> {
        self.module.get().module()?;
        Ok(self.function.set_attribute(attr, value)?)
    }

    /// The preferred split of on-chip memory (a `func_cache` value); a hint the GPU may ignore.
    fn set_cache_config(&self, config: i32) -> PyResult<()> {
        self.module.get().module()?;
        Ok(self.function.set_cache_config(config)?)
    }

    /// Registers each thread uses (`function_attribute.NUM_REGS`): what limits occupancy.
    #[getter]
    fn num_regs(&self) -> PyResult<i32> {
        Ok(self.function.attribute(FunctionAttribute::NumRegs)?)
    }

    /// Bytes of statically allocated shared memory per block (`SHARED_SIZE_BYTES`).
    #[getter]
    fn shared_size_bytes(&self) -> PyResult<i32> {
        Ok(self.function.attribute(FunctionAttribute::SharedSizeBytes)?)
    }

    /// Bytes of local memory per thread (`LOCAL_SIZE_BYTES`): register spills show up here.
    #[getter]
    fn local_size_bytes(&self) -> PyResult<i32> {
        Ok(self.function.attribute(FunctionAttribute::LocalSizeBytes)?)
    }

    /// Bytes of constant memory the kernel uses (`CONST_SIZE_BYTES`).
    #[getter]
    fn const_size_bytes(&self) -> PyResult<i32> {
        Ok(self.function.attribute(FunctionAttribute::ConstSizeBytes)?)
    }

    /// The most threads a block of this kernel may have (`MAX_THREADS_PER_BLOCK`); 0 where the
    /// backend does not report it. Launches with larger blocks raise.
    #[getter]
    fn max_threads_per_block(&self) -> i32 {
        self.max_threads_per_block
    }

    /// (minimum grid size, block size) that maximise occupancy (cuOccupancyMaxPotentialBlockSize).
    #[pyo3(signature = (dynamic_shared_bytes = 0, block_size_limit = 0))]
    fn max_potential_block_size(&self, dynamic_shared_bytes: usize, block_size_limit: i32) -> PyResult<(i32, i32)> {
        Ok(self.function.max_potential_block_size(dynamic_shared_bytes, block_size_limit)?)
    }

    /// PyCUDA's spelling of every other `function_attribute`: `f.ptx_version`,
    /// `f.max_dynamic_shared_size_bytes`, ... is `f.get_attribute(function_attribute.NAME)`.
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<i32> {
        let no_such = || PyAttributeError::new_err(format!("'pygpu.Function' object has no attribute '{name}'"));
        if name.starts_with('_') || name.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(no_such());
        }
        let attributes = py.import("pygpu._driver.enums")?.getattr("function_attribute")?;
        let members = attributes.getattr("__members__")?;
        match members.get_item(name.to_ascii_uppercase()) {
            Ok(member) => self.get_attribute(member.extract()?),
            Err(_) => Err(no_such()),
        }
    }

    fn __repr__(&self) -> String {
        format!("<pygpu.Function {}>", self.function.name())
    }
}
/// PyCUDA's `texrefs=` argument: an empty list is accepted, texture references are not.
fn no_texrefs(texrefs: Option<&Bound<'_, PyAny>>, call: &str) -> PyResult<()> {
    match texrefs {
        Some(t) if !t.is_none() && t.len().map_or(true, |n| n > 0) => Err(texref_removed(call)),
        _ => Ok(()),
    }
}

fn texref_removed(call: &str) -> PyErr {
    PyNotImplementedError::new_err(format!(
        "{call}: texture and surface references were removed in CUDA 12 (cuModuleGetTexRef, cuTexRef* and \
         cuSurfRef* no longer exist). Read the data with plain global-memory loads instead (pass a device \
         pointer; __ldg() or const __restrict__ for the read-only cache), or create texture objects \
         (cudaTextureObject_t, cudaCreateTextureObject) in your own C++ code"
    ))
}

/// Runs work of the host backend whose kernels run on this thread (a launch, a graph's
/// replay), which may run long: without the GIL, so that other threads run, and with Python's
/// signal handlers run between blocks (and between a graph's loop turns), so that Ctrl-C stops
/// it; the outer error is then the handler's (KeyboardInterrupt), the inner one the work's.
pub(super) fn run_on_host_thread<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> runtime::Result<T> + Send,
) -> PyResult<runtime::Result<T>> {
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
    // Ctrl-C may also stop a kernel mid-block where Python's SIGINT handler is its default
    // one, which raises (asked once per process).
    runtime::offer_sigint_hook(|| {
        let default = || -> PyResult<bool> {
            let signal = py.import("signal")?;
            Ok(signal.getattr("getsignal")?.call1((2,))?.is(&signal.getattr("default_int_handler")?))
        };
        default().unwrap_or(false)
    });
    let result = py.detach(|| runtime::run_interruptible(&check, work));
    match interrupt.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// `shared=`'s bytes of dynamic shared memory, or an OverflowError giving the range.
pub(super) fn shared_bytes(bytes: &Bound<'_, PyAny>) -> PyResult<u32> {
    int_in_range::<u32>(bytes, || "shared= (bytes of dynamic shared memory)".to_string())
}
