//! The one place where Rust errors become Python: the exception classes every compiled call
//! raises (`pygpu.errors` lists them with the Python-defined ones), `ErrorCode`, and the
//! PyGPU-style status object (`<cudaError: code=0>`) that the status-returning names of
//! `status_api` give instead, by the one rule of `CudaStatus::of_call`.
//!
//! Two public names differ only by case, as in PyGPU and the CUDA runtime they mirror:
//! - `cudaError` (the `CudaStatus` class here) is a *value*: the status a low-level call
//!   returns, `<cudaError: code=N>`, equal to its int code; `.check()` raises.
//! - `CudaError` is the *exception* base class (subclasses per code family), raised by the
//!   higher-level API; its repr names the class, code and name:
//!   `InvalidValueError('message', code=1, name='cudaErrorInvalidValue')`.

use pyo3::exceptions::{PyException, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::runtime::error::{
    error_name, error_string, last_error, record_error, CUDA_ERRORS, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
    CUDA_ERROR_FILE_NOT_FOUND, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_INVALID_CONFIGURATION, CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_DEVICE_FUNCTION, CUDA_ERROR_INVALID_KERNEL_IMAGE, CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_INVALID_RESOURCE_HANDLE, CUDA_ERROR_INVALID_SOURCE, CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_MEMORY_ALLOCATION, CUDA_ERROR_NOT_READY, CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_KERNEL_IMAGE_FOR_DEVICE,
    CUDA_ERROR_SYMBOL_NOT_FOUND, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
};
use crate::runtime::{active_backend, BackendKind, Error};

/// The exception classes, created once at import with multiple bases (e.g. the
/// out-of-memory error is also a MemoryError) so that plain `except` clauses work.
struct Exceptions {
    base: Py<PyType>,
    memory: Py<PyType>,
    invalid_value: Py<PyType>,
    invalid_device: Py<PyType>,
    no_device: Py<PyType>,
    invalid_handle: Py<PyType>,
    not_ready: Py<PyType>,
    launch: Py<PyType>,
    module: Py<PyType>,
    unavailable: Py<PyType>,
    /// Not an exception: the warning of a launch whose array reinterprets a pointer's elements.
    kernel_argument: Py<PyType>,
}

static EXCEPTIONS: PyOnceLock<Exceptions> = PyOnceLock::new();

fn new_class<'py>(py: Python<'py>, name: &str, doc: &str, bases: Vec<Bound<'py, PyType>>) -> PyResult<Py<PyType>> {
    let dict = PyDict::new(py);
    dict.set_item("__module__", "pygpu")?;
    dict.set_item("__doc__", doc)?;
    let class = py.get_type::<PyType>().call1((name, PyTuple::new(py, bases)?, dict))?;
    Ok(class.cast_into::<PyType>()?.unbind())
}

/// Creates the classes and adds them to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let base = new_class(
        py,
        "CudaError",
        "A GPU runtime call failed (the exception; the status value a low-level call returns is \
         `cudaError`). `code` is the raw status, `name` its symbolic name.",
        vec![py.get_type::<PyException>()],
    )?;
    // A repr that says exception, code and name, unlike the status value's `<cudaError: code=N>`.
    let repr = py.eval(
        c"lambda self: '%s(%s, code=%r, name=%r)' % (type(self).__name__, ', '.join(map(repr, self.args)), \
           getattr(self, 'code', None), getattr(self, 'name', None))",
        None,
        None,
    )?;
    base.bind(py).setattr("__repr__", repr)?;
    let sub = |name: &str, doc: &str, extra: Option<Bound<'_, PyType>>| -> PyResult<Py<PyType>> {
        let mut bases = vec![base.bind(py).clone()];
        bases.extend(extra);
        new_class(py, name, doc, bases)
    };
    let exceptions = Exceptions {
        memory: sub(
            "CudaMemoryError",
            "The device (or pinned host memory) is out of memory.",
            Some(py.get_type::<PyMemoryError>()),
        )?,
        invalid_value: sub(
            "InvalidValueError",
            "An argument was rejected by the runtime.",
            Some(py.get_type::<PyValueError>()),
        )?,
        invalid_device: sub("InvalidDeviceError", "No device has this ordinal.", Some(py.get_type::<PyValueError>()))?,
        no_device: sub("NoDeviceError", "The driver is present but sees no device.", None)?,
        invalid_handle: sub(
            "InvalidHandleError",
            "A stream, event or other handle is not valid (released, or of another device).",
            Some(py.get_type::<PyValueError>()),
        )?,
        not_ready: sub("NotReadyError", "Work is still pending.", None)?,
        launch: sub("LaunchError", "A kernel launch failed or a kernel faulted.", None)?,
        module: sub("ModuleError", "A code object did not load, or has no kernel or global of that name.", None)?,
        unavailable: sub(
            "BackendUnavailableError",
            "The requested backend cannot be used on this machine.",
            Some(py.get_type::<PyRuntimeError>()),
        )?,
        kernel_argument: new_class(
            py,
            "KernelArgumentWarning",
            "A kernel was launched with an array whose elements have the size but not the type of \
             its pointer parameter's (an int32 array for a float*): the kernel reinterprets the bits. \
             Make it an error with warnings.simplefilter(\"error\", pygpu.KernelArgumentWarning).",
            vec![py.get_type::<pyo3::exceptions::PyUserWarning>()],
        )?,
        base,
    };
    let ex = EXCEPTIONS.get_or_init(py, || exceptions);
    for class in [
        &ex.base,
        &ex.memory,
        &ex.invalid_value,
        &ex.invalid_device,
        &ex.no_device,
        &ex.invalid_handle,
        &ex.not_ready,
        &ex.launch,
        &ex.module,
        &ex.unavailable,
        &ex.kernel_argument,
    ] {
        let class = class.bind(py);
        m.add(class.name()?, class)?;
    }
    m.add("ErrorCode", error_code_enum(py)?)
}

/// `ErrorCode`, the IntEnum of the status codes by their CUDA names, made from the one table
/// of `runtime::error` (its home is `pygpu.errors`).
fn error_code_enum(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let members: Vec<(&str, i32)> = CUDA_ERRORS.iter().map(|&(code, name, _)| (name, code)).collect();
    let kwargs = PyDict::new(py);
    kwargs.set_item("module", "pygpu.errors")?;
    let class = py.import("enum")?.getattr("IntEnum")?.call(("ErrorCode", members), Some(&kwargs))?;
    class.setattr(
        "__doc__",
        "The runtime's status codes by their CUDA names (ErrorCode.cudaErrorInvalidValue == 1); \
         equal to the ints that CudaError.code and cudaError.code hold.",
    )?;
    Ok(class)
}

fn class_for(ex: &Exceptions, code: i32) -> &Py<PyType> {
    match code {
        CUDA_ERROR_MEMORY_ALLOCATION => &ex.memory,
        CUDA_ERROR_INVALID_VALUE => &ex.invalid_value,
        CUDA_ERROR_INVALID_DEVICE => &ex.invalid_device,
        CUDA_ERROR_NO_DEVICE => &ex.no_device,
        CUDA_ERROR_INVALID_RESOURCE_HANDLE => &ex.invalid_handle,
        CUDA_ERROR_NOT_READY => &ex.not_ready,
        CUDA_ERROR_INVALID_KERNEL_IMAGE
        | CUDA_ERROR_NO_KERNEL_IMAGE_FOR_DEVICE
        | CUDA_ERROR_INVALID_PTX
        | CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        | CUDA_ERROR_INVALID_SOURCE
        | CUDA_ERROR_FILE_NOT_FOUND
        | CUDA_ERROR_SYMBOL_NOT_FOUND => &ex.module,
        CUDA_ERROR_INVALID_CONFIGURATION
        | CUDA_ERROR_INVALID_DEVICE_FUNCTION
        | CUDA_ERROR_ILLEGAL_ADDRESS..=CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => &ex.launch,
        _ => &ex.base,
    }
}

fn exception(py: Python<'_>, class: &Py<PyType>, code: i32, name: &str, message: String) -> PyErr {
    let instance = class.bind(py).call1((message,)).and_then(|value| {
        value.setattr("code", code)?;
        value.setattr("name", name)?;
        Ok(value)
    });
    match instance {
        Ok(value) => PyErr::from_value(value),
        Err(e) => e,
    }
}

impl From<Error> for PyErr {
    fn from(error: Error) -> PyErr {
        Python::attach(|py| {
            let Some(ex) = EXCEPTIONS.get(py) else {
                // Only reachable if the module failed to initialise; still never panic.
                return PyRuntimeError::new_err(error.to_string());
            };
            match &error {
                Error::Api { code, backend, .. } => {
                    record_error(*code);
                    let name = error_name(*backend, *code);
                    exception(py, class_for(ex, *code), *code, &name, error.to_string())
                }
                Error::Unavailable(msg) => exception(
                    py,
                    &ex.unavailable,
                    error.code(),
                    &error_name(BackendKind::Cuda, error.code()),
                    msg.clone(),
                ),
                Error::InvalidArgument(msg) => PyValueError::new_err(msg.clone()),
            }
        })
    }
}

/// Whether `e`, raised while converting a user's object (`__index__`, `__int__`, `__len__`,
/// iteration), must reach the caller as it is rather than become the converter's own "not an
/// int / not a shape" error. Only TypeError, ValueError and OverflowError say that the value
/// is not of the kind asked for; anything else (KeyboardInterrupt and every other
/// BaseException that is not an Exception, or an error of the user's own code) is news.
pub fn must_propagate(py: Python<'_>, e: &PyErr) -> bool {
    !(e.is_instance_of::<pyo3::exceptions::PyTypeError>(py)
        || e.is_instance_of::<PyValueError>(py)
        || e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py))
}

/// Warns with `KernelArgumentWarning` (which a warnings filter may turn into the error returned).
pub fn warn_kernel_argument(py: Python<'_>, message: &str) -> PyResult<()> {
    let Some(ex) = EXCEPTIONS.get(py) else { return Ok(()) };
    let message = std::ffi::CString::new(message).unwrap_or_default();
    PyErr::warn(py, ex.kernel_argument.bind(py), &message, 1)
}

/// The error for a stream, event or allocation used after it was released.
pub fn released(what: &str) -> PyErr {
    Python::attach(|py| match EXCEPTIONS.get(py) {
        Some(ex) => exception(
            py,
            &ex.invalid_handle,
            CUDA_ERROR_INVALID_RESOURCE_HANDLE,
            &error_name(BackendKind::Cuda, CUDA_ERROR_INVALID_RESOURCE_HANDLE),
            format!("{what} has been released and can no longer be used"),
        ),
        None => PyValueError::new_err(format!("{what} has been released")),
    })
}

/// How a raising call fails: a runtime error, which its status-returning name (`status_api`)
/// returns as the status where a status can say all of it, or a Python exception (a bad
/// argument, a released handle, an interrupt), which both forms raise.
pub enum CallError {
    Runtime(Error),
    Python(PyErr),
}

pub type CallResult<T> = Result<T, CallError>;

impl From<Error> for CallError {
    fn from(error: Error) -> Self {
        CallError::Runtime(error)
    }
}

impl From<PyErr> for CallError {
    fn from(error: PyErr) -> Self {
        CallError::Python(error)
    }
}

impl From<CallError> for PyErr {
    fn from(error: CallError) -> PyErr {
        match error {
            CallError::Runtime(e) => e.into(),
            CallError::Python(e) => e,
        }
    }
}

/// The PyGPU-style status object: the raw integer code, its name and message.
#[pyclass(name = "cudaError", module = "pygpu", frozen)]
#[derive(Clone)]
pub struct CudaStatus {
    code: i32,
    backend: BackendKind,
}

impl CudaStatus {
    pub const SUCCESS: CudaStatus = CudaStatus { code: 0, backend: BackendKind::Cuda };

    /// The status of a low-level call; failures are also recorded for cudaGetLastError.
    pub fn from_result<T>(result: &Result<T, Error>) -> PyResult<CudaStatus> {
        match result {
            Ok(_) => Ok(Self::SUCCESS),
            Err(error) => Self::of_error(error.clone()),
        }
    }

    /// A raising call's outcome as PyGPU's (value, status); on failure the value is 0 (the
    /// type's default).
    pub fn of_call<T: Default>(result: CallResult<T>) -> PyResult<(T, CudaStatus)> {
        match result {
            Ok(value) => Ok((value, Self::SUCCESS)),
            Err(CallError::Runtime(error)) => Ok((T::default(), Self::of_error(error)?)),
            Err(CallError::Python(error)) => Err(error),
        }
    }

    /// The one rule of what a status reports: a bare status code. An error with a detail (a JIT
    /// log, the name looked for) or with no code at all is raised, so that nothing is lost.
    fn of_error(error: Error) -> PyResult<CudaStatus> {
        match error {
            Error::Api { code, backend, detail: None } => {
                record_error(code);
                Ok(CudaStatus { code, backend })
            }
            other => Err(other.into()),
        }
    }

    pub fn from_code(code: i32) -> CudaStatus {
        CudaStatus { code, backend: active_backend().map_or(BackendKind::Cuda, |b| b.kind()) }
    }

    pub fn code(&self) -> i32 {
        self.code
    }
}

#[pymethods]
impl CudaStatus {
    #[new]
    fn py_new(code: i32) -> Self {
        CudaStatus::from_code(code)
    }

    /// The raw status code (0: success).
    #[getter]
    fn get_code(&self) -> i32 {
        self.code
    }

    /// The code's symbolic name, e.g. `cudaErrorInvalidValue`.
    #[getter]
    fn name(&self) -> String {
        error_name(self.backend, self.code)
    }

    /// The backend's description of the code.
    #[getter]
    fn message(&self) -> String {
        error_string(self.backend, self.code)
    }

    fn __int__(&self) -> i32 {
        self.code
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        if let Ok(s) = other.cast::<CudaStatus>() {
            return Ok(s.get().code == self.code);
        }
        match other.extract::<i64>() {
            Ok(v) => Ok(v == i64::from(self.code)),
            Err(e) if must_propagate(other.py(), &e) => Err(e),
            Err(_) => Ok(false),
        }
    }

    fn __hash__(&self) -> isize {
        // Equal to hash(int(self)), so statuses and ints mix in sets and dicts.
        self.code as isize
    }

    fn __index__(&self) -> i32 {
        self.code
    }

    fn __repr__(&self) -> String {
        format!("<cudaError: code={}>", self.code)
    }

    fn __str__(&self) -> String {
        format!("{} ({}): {}", self.name(), self.code, self.message())
    }

    /// Raises the matching CudaError subclass unless this is success; returns None.
    fn check(&self) -> PyResult<()> {
        if self.code == 0 {
            Ok(())
        } else {
            Err(Error::api(self.code, self.backend).into())
        }
    }
}

/// What a low-level call hands to Python: its status object, where success is one cached
/// object, so the common case allocates nothing (`cudaError` is immutable).
pub struct Status(pub CudaStatus);

static SUCCESS_OBJECT: PyOnceLock<Py<CudaStatus>> = PyOnceLock::new();

impl From<CudaStatus> for Status {
    fn from(status: CudaStatus) -> Self {
        Status(status)
    }
}

impl<'py> IntoPyObject<'py> for Status {
    type Target = CudaStatus;
    type Output = Bound<'py, CudaStatus>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, CudaStatus>> {
        let s = self.0;
        if s.code == CudaStatus::SUCCESS.code && s.backend == CudaStatus::SUCCESS.backend {
            let cached = SUCCESS_OBJECT.get_or_try_init(py, || Py::new(py, CudaStatus::SUCCESS))?;
            return Ok(cached.bind(py).clone());
        }
        Bound::new(py, s)
    }
}

pub fn take_last_error(reset: bool) -> CudaStatus {
    CudaStatus::from_code(last_error(reset))
}
