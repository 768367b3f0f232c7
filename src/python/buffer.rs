//! CPython's buffer protocol in both directions: exporting device-visible host memory as a
//! one-dimensional byte buffer (`fill_byte_view`/`release_byte_view`, for `__getbuffer__`),
//! and borrowing a C-contiguous view of any host buffer (`HostView`).

use std::ffi::{c_int, c_void, CString};

use numpy::{PyArrayDescr, PyArrayDescrMethods};
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
pub struct HostView {
    view: ffi::Py_buffer,
}

impl HostView {
    pub fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
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
                // Asked again for less, to say which part failed: contiguous bytes that are not
                // writable, or whose item format cannot be given (numpy's datetimes), are told so
                // rather than asked for a contiguous copy.
                let contiguous = Self::request(obj, ffi::PyBUF_C_CONTIGUOUS).is_ok();
                let readonly = contiguous
                    && writable
                    && Self::request(obj, ffi::PyBUF_C_CONTIGUOUS | ffi::PyBUF_WRITABLE).is_err();
                let message = if readonly {
                    "the destination host buffer is read-only".to_string()
                } else if contiguous {
                    format!(
                        "this buffer's item type cannot be copied as bytes: convert it, e.g. a.view(numpy.int64) ({e})"
                    )
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

    fn request(obj: &Bound<'_, PyAny>, flags: c_int) -> PyResult<Self> {
        let mut view = std::mem::MaybeUninit::<ffi::Py_buffer>::uninit();
        // SAFETY: obj is live; on success the view is initialised and released in Drop.
        if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) } != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: PyObject_GetBuffer succeeded.
        Ok(HostView { view: unsafe { view.assume_init() } })
    }

    /// Refuses a buffer whose items hold Python objects (format `O`, alone or as a field of
    /// a structured dtype): copying raw bytes over `PyObject*` slots corrupts the heap.
    fn refusing_objects(self, obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if self.view.format.is_null() {
            return Ok(self);
        }
        // SAFETY: a non-null format is a NUL-terminated string owned by the live view.
        let format = unsafe { std::ffi::CStr::from_ptr(self.view.format) }.to_string_lossy();
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
        self.view.buf as *mut u8
    }

    pub fn len(&self) -> usize {
        usize::try_from(self.view.len).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The exported bytes.
    pub fn bytes(&self) -> &[u8] {
        if self.view.buf.is_null() || self.is_empty() {
            return &[];
        }
        // SAFETY: the exporter guarantees len readable bytes at buf while the view lives.
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
        // SAFETY: releases the view obtained in `request` exactly once. Views are only
        // created and dropped by code holding the GIL (they never cross detach()).
        unsafe { ffi::PyBuffer_Release(&mut self.view) };
    }
}

/// `dtype` as a numpy dtype, refused with a TypeError when its items hold Python objects
/// (`object`, or a structured dtype with an object field): memory that pygpu allocates, pools
/// or copies as raw bytes would hand out stale or garbage bytes as `PyObject*` pointers, and a
/// kernel or copy would overwrite them. The one check used by every constructor of arrays over
/// such memory (`pagelocked_*`, `aligned_*`, `managed_*`, `register_host_memory`,
/// `PageLockedMemoryPool.allocate`, GPUArray's dtypes); `what` names the caller in the message.
#[pyfunction]
pub fn raw_memory_dtype<'py>(dtype: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyArrayDescr>> {
    let descr = PyArrayDescr::new(dtype.py(), dtype)?;
    if descr.has_object() {
        return Err(PyTypeError::new_err(format!(
            "{what}: unsupported dtype {descr}: it holds Python objects, which cannot live in memory handed out \
             as raw bytes: use a numeric or struct dtype without object fields"
        )));
    }
    Ok(descr)
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
