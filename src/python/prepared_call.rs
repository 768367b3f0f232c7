//! `Function.prepared_call` and `prepared_async_call`, read straight from Python's argument
//! array (METH_FASTCALL). PyO3 gathers `*args` into a new tuple on every call; these two are
//! the launch-bound calls (a solver's step loop), so they are installed on the class at import
//! as plain method descriptors over `entry` below instead.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::module::Function;
use super::stream::CudaStream;

/// A method table entry; CPython only reads it, and every pointer in it is to static data.
struct MethodDef(ffi::PyMethodDef);

// SAFETY: the entries are never written after they are built (below, as statics) and point
// only at static strings and functions.
unsafe impl Sync for MethodDef {}

static PREPARED_CALL: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"prepared_call".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: entry::<false> },
    ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
    ml_doc: c"prepared_call($self, grid, block, *args, shared_size=0)\n--\n\n\
Launches on the default stream with the argument types given to prepare()."
        .as_ptr(),
});

static PREPARED_ASYNC_CALL: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"prepared_async_call".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: entry::<true> },
    ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
    ml_doc: c"prepared_async_call($self, grid, block, stream, *args, shared_size=0)\n--\n\n\
Launches on `stream` (None: the default stream) with the argument types given to prepare()."
        .as_ptr(),
});

/// Puts the two methods on `Function` (the class PyO3 made, which has neither).
pub fn install(function_type: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = function_type.py();
    for (name, def) in [("prepared_call", &PREPARED_CALL), ("prepared_async_call", &PREPARED_ASYNC_CALL)] {
        // SAFETY: function_type is a type object (PyO3's class for Function); the method entry
        // is static and CPython never writes to it (the *mut is the C API's signature only).
        let descriptor = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyDescr_NewMethod(function_type.as_ptr().cast(), &def.0 as *const ffi::PyMethodDef as *mut _),
            )?
        };
        function_type.setattr(name, descriptor)?;
    }
    Ok(())
}

/// Both methods (`WITH_STREAM`: prepared_async_call): `None`, or NULL with a Python exception
/// set (a panic becomes one).
/// # Safety
/// CPython's METH_FASTCALL | METH_KEYWORDS contract: the thread is attached; `slf` is an
/// instance of the class the descriptor was made for; `args` holds `nargs` positional values
/// followed by one value per name in `kwnames` (a tuple of str, or NULL), all borrowed for the
/// length of the call.
unsafe extern "C" fn entry<const WITH_STREAM: bool>(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // Through Python::attach (the thread is attached already), so that PyO3 counts the thread
    // as attached: otherwise every Python object dropped during the call (an exception caught
    // while packing, say) would wait in PyO3's deferred queue until some other PyO3 call.
    Python::attach(|py| {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: borrowed references valid for the call (the contract above).
            let slf = unsafe { Borrowed::from_ptr(py, slf) };
            // SAFETY: as slf, where not NULL.
            let kwnames = (!kwnames.is_null()).then(|| unsafe { Borrowed::from_ptr(py, kwnames) });
            let keywords = kwnames.as_ref().map_or(0, |k| k.len().unwrap_or(0));
            let positional = usize::try_from(nargs).unwrap_or(0);
            let all = if args.is_null() {
                &[][..]
            } else {
                // SAFETY: `args` holds nargs + len(kwnames) borrowed values.
                unsafe { std::slice::from_raw_parts(args, positional + keywords) }
            };
            // SAFETY: each is a borrowed reference valid for the call.
            let arg = |i: usize| unsafe { Borrowed::from_ptr(py, all[i]) };
            call(py, &slf, positional, kwnames.as_ref(), &arg, WITH_STREAM)
        }));
        let result = outcome.unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            Err(PyRuntimeError::new_err(format!("internal error in pygpu (please report it): {message}")))
        });
        match result {
            Ok(()) => py.None().into_ptr(),
            Err(e) => {
                e.restore(py);
                std::ptr::null_mut()
            }
        }
    })
}

/// Reads grid, block (and stream: by position or name, as PyCUDA's signature allows), the
/// values and `shared_size`, and launches.
fn call<'a, 'py>(
    py: Python<'py>,
    slf: &Borrowed<'a, 'py, PyAny>,
    positional: usize,
    kwnames: Option<&Borrowed<'a, 'py, PyAny>>,
    arg: &dyn Fn(usize) -> Borrowed<'a, 'py, PyAny>,
    with_stream: bool,
) -> PyResult<()> {
    let name = if with_stream { "prepared_async_call" } else { "prepared_call" };
    let function = slf.cast::<Function>().map_err(|_| PyTypeError::new_err(format!("{name} needs a Function")))?;
    let params: &[&str] = if with_stream { &["grid", "block", "stream"] } else { &["grid", "block"] };
    let mut fixed: [Option<Borrowed<'a, 'py, PyAny>>; 3] = [None; 3];
    for (slot, i) in fixed.iter_mut().zip(0..positional.min(params.len())) {
        *slot = Some(arg(i));
    }
    let mut shared_size = 0u32;
    if let Some(names) = kwnames {
        for (i, key) in names.cast::<PyTuple>()?.iter().enumerate() {
            let value = arg(positional + i);
            let key = key.cast::<PyString>()?.to_cow()?;
            if key == "shared_size" {
                shared_size = value.extract().map_err(|e| {
                    if crate::python::errors::must_propagate(value.py(), &e) {
                        return e;
                    }
                    PyValueError::new_err(format!(
                        "{name}()'s shared_size must be a number of bytes from 0 to 2**32 - 1"
                    ))
                })?;
                continue;
            }
            let Some(slot) = params.iter().position(|p| *p == key) else {
                return Err(PyTypeError::new_err(format!(
                    "{name}() got an unexpected keyword argument '{key}': the kernel's arguments go by position"
                )));
            };
            if fixed[slot].replace(value).is_some() {
                return Err(PyTypeError::new_err(format!("{name}() got multiple values for argument '{key}'")));
            }
        }
    }
    let missing = |p: &str| {
        PyTypeError::new_err(format!(
            "{name}() missing required argument '{p}' ({} come before the kernel's arguments)",
            params.join(", ")
        ))
    };
    let [grid, block, stream] = fixed;
    let (grid, block) = (grid.ok_or_else(|| missing("grid"))?, block.ok_or_else(|| missing("block"))?);
    if with_stream && stream.is_none() {
        return Err(missing("stream"));
    }
    let stream = match stream.filter(|s| !s.is_none()) {
        None => None,
        Some(s) => Some(s.cast::<CudaStream>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{name}()'s stream must be a pygpu.cudaStream_t or None, not {}",
                s.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?),
    };
    let values = (params.len()..positional.max(params.len())).map(arg);
    function.get().call_prepared(py, &grid, &block, stream.as_deref(), values, shared_size)
}
