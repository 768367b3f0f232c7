//! CPython's buffer protocol in both directions: exporting device-visible host memory as a
//! one-dimensional byte buffer (`fill_byte_view`/`release_byte_view`, for `__getbuffer__`),
//! and borrowing a C-contiguous view of any host buffer (`HostView`).

use std::ffi::{c_int, c_void, CString};

use numpy::npyffi::{NPY_ARRAY_C_CONTIGUOUS, NPY_ARRAY_WRITEABLE};
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;

use crate::runtime::Error;

/// Fills a writable one-dimensional byte view.
///
/// # Safety
/// `view` is the struct Python passed to `__getbuffer__`; `ptr` is valid for `bytes`
/// for as long as `owner` lives.
pub(crate) unsafe fn fill_byte_view(
    view: *mut ffi::Py_buffer,
    flags: c_int,
    ptr: *mut c_void,
    bytes: usize,
    owner: Bound<'_, PyAny>,
) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("view is null"));
    }
    let len = isize::try_from(bytes).map_err(|_| PyBufferError::new_err("buffer too large"))?;
    // SAFETY: view is non-null and ours to fill; shape and strides point into a boxed
    // pair that release_byte_view frees, format into a CString it frees likewise.
    unsafe {
        (*view).obj = owner.into_ptr();
        (*view).buf = ptr;
        (*view).len = len;
        (*view).readonly = 0;
        (*view).itemsize = 1;
        (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
            CString::from(c"B").into_raw()
        } else {
            std::ptr::null_mut()
        };
        (*view).ndim = 1;
        let dims = Box::into_raw(Box::new([len, 1isize]));
        (*view).shape = dims as *mut isize;
        (*view).strides = (dims as *mut isize).add(1);
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = dims as *mut c_void;
    }
    Ok(())
}

/// # Safety
/// `view` was filled by `fill_byte_view`.
pub(crate) unsafe fn release_byte_view(view: *mut ffi::Py_buffer) {
    // SAFETY: format and internal were allocated by fill_byte_view and are freed once.
    unsafe {
        if !(*view).format.is_null() {
            drop(CString::from_raw((*view).format));
        }
        if !(*view).internal.is_null() {
            drop(Box::from_raw((*view).internal as *mut [isize; 2]));
        }
    }
}

/// A C-contiguous view of a host buffer (a numpy array of any rank, bytes, a
/// memoryview...), released when dropped. PyBuffer is not used because it refuses
/// zero-dimensional buffers such as numpy scalars and 0-d arrays.
pub struct HostView(Source);

enum Source {
    /// A small numeric numpy array, read from numpy's own fields: exporting a buffer (which
    /// builds a format string) was a third of an 8-byte copy's time in pygpu.
    Array {
        ptr: *mut u8,
        len: usize,
        _array: Py<PyAny>,
    },
    Buffer(ffi::Py_buffer),
}

/// Arrays from this size on take the buffer protocol: their copies release the GIL, and the
/// export is what stops another thread from resizing the array meanwhile.
const DIRECT_ARRAY_BYTES: usize = 1 << 20;

impl HostView {
    pub fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        if let Some(view) = Self::small_numeric_array(obj, writable) {
            return Ok(view);
        }
        let flags = ffi::PyBUF_C_CONTIGUOUS | ffi::PyBUF_FORMAT | if writable { ffi::PyBUF_WRITABLE } else { 0 };
        Self::request(obj, flags)
            .map_err(|e| {
                // SAFETY: obj is a live object.
                if unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 0 {
                    return PyTypeError::new_err(format!(
                        "expected a host buffer such as a numpy array, got {}",
                        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ));
                }
                let readonly = writable && Self::request(obj, ffi::PyBUF_C_CONTIGUOUS).is_ok();
                // A C-contiguous numpy array refused anyway has a dtype buffers cannot carry.
                let contiguous = obj.cast::<PyUntypedArray>().is_ok_and(|a| a.is_c_contiguous());
                let message = if readonly {
                    "the destination host buffer is read-only".to_string()
                } else if contiguous {
                    format!("this array's dtype cannot be copied as bytes: convert it, e.g. a.view(numpy.int64) ({e})")
                } else {
                    format!("the host buffer must be C-contiguous: pass numpy.ascontiguousarray(a) ({e})")
                };
                PyErr::from(Error::InvalidArgument(message))
            })?
            .refusing_objects(obj)
    }

    /// As `get`, for a buffer contiguous in either C or Fortran order (its bytes in memory order).
    pub fn get_any_order(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        let flags = ffi::PyBUF_ANY_CONTIGUOUS | ffi::PyBUF_FORMAT | if writable { ffi::PyBUF_WRITABLE } else { 0 };
        Self::request(obj, flags)
            .map_err(|e| {
                // SAFETY: obj is a live object.
                if unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 0 {
                    return PyTypeError::new_err(format!(
                        "expected a host buffer such as a numpy array, got {}",
                        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ));
                }
                Error::InvalidArgument(format!(
                    "the host buffer must be contiguous{} ({e})",
                    if writable { " and writable" } else { "" }
                ))
                .into()
            })
            .and_then(|v: Self| v.refusing_objects(obj))
    }

    /// A C-contiguous numpy array of numbers or bools under DIRECT_ARRAY_BYTES (writable if
    /// asked), viewed directly; None for anything else, which the buffer protocol handles (and
    /// explains when it refuses).
    fn small_numeric_array(obj: &Bound<'_, PyAny>, writable: bool) -> Option<Self> {
        let array = obj.cast::<PyUntypedArray>().ok()?;
        let raw = array.as_array_ptr();
        // SAFETY: `raw` is a live ndarray (cast checked it), whose fields numpy keeps.
        let (flags, data) = unsafe { ((*raw).fields.flags, (*raw).fields.data) };
        let required = NPY_ARRAY_C_CONTIGUOUS | if writable { NPY_ARRAY_WRITEABLE } else { 0 };
        if flags & required != required {
            return None;
        }
        let dtype = array.dtype();
        if !b"biufc".contains(&dtype.kind()) {
            return None;
        }
        let len = array.len().checked_mul(dtype.itemsize()).filter(|&n| n < DIRECT_ARRAY_BYTES)?;
        Some(HostView(Source::Array { ptr: data.cast(), len, _array: obj.clone().unbind() }))
    }

    fn request(obj: &Bound<'_, PyAny>, flags: c_int) -> PyResult<Self> {
        let mut view = std::mem::MaybeUninit::<ffi::Py_buffer>::uninit();
        // SAFETY: obj is live; on success the view is initialised and released in Drop.
        if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) } != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: PyObject_GetBuffer succeeded.
        Ok(HostView(Source::Buffer(unsafe { view.assume_init() })))
    }

    /// Refuses a buffer whose items hold Python objects (format `O`, alone or as a field of
    /// a structured dtype): copying raw bytes over `PyObject*` slots corrupts the heap.
    fn refusing_objects(self, obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let Source::Buffer(view) = &self.0 else { return Ok(self) };
        if view.format.is_null() {
            return Ok(self);
        }
        // SAFETY: a non-null format is a NUL-terminated string owned by the live view.
        let format = unsafe { std::ffi::CStr::from_ptr(view.format) }.to_string_lossy();
        if format_holds_objects(&format) {
            return Err(PyTypeError::new_err(format!(
                "a host buffer of Python objects (format {format:?}, from {}) cannot be copied as bytes: \
                 use a numeric dtype (a.astype(...))",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            )));
        }
        Ok(self)
    }

    pub fn ptr(&self) -> *mut u8 {
        match &self.0 {
            Source::Array { ptr, .. } => *ptr,
            Source::Buffer(view) => view.buf as *mut u8,
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Source::Array { len, .. } => *len,
            Source::Buffer(view) => usize::try_from(view.len).unwrap_or(0),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The exported bytes.
    pub fn bytes(&self) -> &[u8] {
        if self.ptr().is_null() || self.is_empty() {
            return &[];
        }
        // SAFETY: the exporter (or numpy, for an array held by the view) guarantees len
        // readable bytes at ptr while the view lives.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len()) }
    }
}

/// Whether a struct-module format string (PEP 3118) has an `O` item; field names, written
/// between colons, are skipped.
pub(crate) fn format_holds_objects(format: &str) -> bool {
    let mut in_name = false;
    for c in format.chars() {
        match c {
            ':' => in_name = !in_name,
            'O' if !in_name => return true,
            _ => {}
        }
    }
    false
}

impl Drop for HostView {
    fn drop(&mut self) {
        if let Source::Buffer(view) = &mut self.0 {
            // SAFETY: releases the view obtained in `request` exactly once. Views are only
            // created and dropped by code holding the GIL (they never cross detach()).
            unsafe { ffi::PyBuffer_Release(view) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::format_holds_objects;

    #[test]
    fn object_items_are_found_but_not_in_field_names() {
        assert!(format_holds_objects("O"));
        assert!(format_holds_objects("T{<d:x:O:y:}"));
        assert!(!format_holds_objects("T{<d:O:<f:Obj:}"));
        assert!(!format_holds_objects("<d"));
        assert!(!format_holds_objects("B"));
    }
}
