//! Kernels from Python: `Module` (a loaded code object) and `Function` (PyCUDA's call and
//! prepared-call conventions; the arguments are packed by `kernel_args`).

use std::sync::Mutex;

use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use super::kernel_args::{dims, pack_any, pack_prepared, parse_signature, unstage, ParamKind};
use super::releasable::Releasable;
use super::stream::{stream_handle, CudaStream};
use crate::runtime::{
    backend, error::record_error, Backend, BackendKind, Error, FunctionAttribute, FunctionHandle, KernelArgs,
    LaunchConfig, ModuleHandle, StreamHandle,
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
            detail += &format!(
                ": the block has {threads} threads, this kernel allows at most {}",
                self.max_threads_per_block
            );
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
        // The argument values were packed from the caller's arguments; whether they match the
        // kernel's parameters is the caller's contract, as with cuLaunchKernel.
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
                crate::runtime::run_interruptible(&check, || {
                    // SAFETY: the launch contract above.
                    unsafe { b.launch_kernel(handle, config, stream, args) }
                })
            });
            if let Some(e) = interrupt.into_inner().unwrap_or_else(|p| p.into_inner()) {
                return Err(e);
            }
            result
        } else {
            // SAFETY: the launch contract above.
            unsafe { b.launch_kernel(handle, config, stream, args) }
        };
        Ok(result.map_err(|e| self.launch_error(e, config))?)
    }

    fn prepared_kinds(&self) -> PyResult<Vec<ParamKind>> {
        self.prepared.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or_else(|| {
            PyValueError::new_err(format!("{} has not been prepared: call prepare(arg_types) first", self.name))
        })
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

    /// The value of a `function_attribute` (a CUfunction_attribute number).
    fn get_attribute(&self, attr: i32) -> PyResult<i32> {
        self.module.get().handle()?;
        Ok(self.backend.function_get_attribute(self.handle, attr)?)
    }

    /// Sets a settable `function_attribute`, e.g. MAX_DYNAMIC_SHARED_SIZE_BYTES before a launch
    /// with more than 48 KiB of dynamic shared memory.
    fn set_attribute(&self, attr: i32, value: i32) -> PyResult<()> {
        self.module.get().handle()?;
        Ok(self.backend.function_set_attribute(self.handle, attr, value)?)
    }

    /// The preferred split of on-chip memory (a `func_cache` value); a hint the GPU may ignore.
    fn set_cache_config(&self, config: i32) -> PyResult<()> {
        self.module.get().handle()?;
        Ok(self.backend.function_set_cache_config(self.handle, config)?)
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
fn texref_removed(call: &str) -> PyErr {
    PyNotImplementedError::new_err(format!(
        "{call}: texture and surface references were removed in CUDA 12 (cuModuleGetTexRef, cuTexRef* and \
         cuSurfRef* no longer exist). Read the data with plain global-memory loads instead (pass a device \
         pointer; __ldg() or const __restrict__ for the read-only cache), or create texture objects \
         (cudaTextureObject_t, cudaCreateTextureObject) in your own C++ code"
    ))
}
