//! `RegisteredHostMemory`: a host buffer (a numpy array) page-locked in place by
//! `cuMemHostRegister`, so that copies from it are fast and asynchronous and kernels can
//! address it; unregistered by `unregister()` or when the object goes away.

use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

use super::buffer::{fill_byte_view, release_byte_view, HostView};
use super::releasable::Releasable;
use crate::runtime::memory::HostRegistration;
use crate::runtime::{DevicePtr, Error, HOST_REGISTER_READ_ONLY};

/// A host buffer (a numpy array) page-locked in place (cuMemHostRegister), so that copies
/// from it are fast and asynchronous; `pygpu.driver.register_host_memory` makes one.
/// `unregister()` (or dropping it) undoes that.
#[pyclass(module = "pygpu", frozen)]
pub struct RegisteredHostMemory {
    registration: Releasable<HostRegistration>,
    /// The registered object: holding it keeps its memory alive (and numpy from resizing it).
    base: Py<PyAny>,
    ptr: usize,
    bytes: usize,
    flags: u32,
}

#[pymethods]
impl RegisteredHostMemory {
    /// Page-locks the C- or Fortran-contiguous buffer `base`; `flags` combine
    /// `mem_host_register_flags` (PORTABLE 1, DEVICEMAP 2, IOMEMORY 4, READ_ONLY 8).
    #[new]
    #[pyo3(signature = (base, flags = 0))]
    fn py_new(base: &Bound<'_, PyAny>, flags: u32) -> PyResult<Self> {
        if flags & !0xF != 0 {
            return Err(Error::InvalidArgument(format!(
                "host register flags {flags:#x}: only PORTABLE (1), DEVICEMAP (2), IOMEMORY (4) and READ_ONLY (8) exist"
            ))
            .into());
        }
        let view = HostView::get_any_order(base, flags & HOST_REGISTER_READ_ONLY == 0)?;
        if view.is_empty() {
            return Err(Error::InvalidArgument("cannot register an empty buffer".to_string()).into());
        }
        let (ptr, bytes) = (view.ptr(), view.len());
        // SAFETY: `base` is kept referenced by the returned object, and a referenced numpy
        // array (or other exporter) keeps its memory where it is; the registration is dropped
        // (unregistered) before `base` is released.
        let registration = unsafe { HostRegistration::new(ptr, bytes, flags) }?;
        Ok(RegisteredHostMemory {
            registration: Releasable::new(registration, "this RegisteredHostMemory"),
            base: base.clone().unbind(),
            ptr: ptr as usize,
            bytes,
            flags,
        })
    }

    /// The registered object.
    #[getter]
    fn base(&self, py: Python<'_>) -> Py<PyAny> {
        self.base.clone_ref(py)
    }

    /// The host address of the registered bytes.
    #[getter]
    fn ptr(&self) -> usize {
        self.ptr
    }

    /// The size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.bytes
    }

    /// The `mem_host_register_flags` it was registered with.
    #[getter]
    fn flags(&self) -> u32 {
        self.flags
    }

    /// The address kernels use for this memory (registered with DEVICEMAP).
    fn get_device_pointer(&self) -> PyResult<DevicePtr> {
        self.registration.with(|r| r.device_pointer())?.map_err(Into::into)
    }

    /// Ends the registration now (the memory stays the base object's); idempotent.
    fn unregister(&self) {
        drop(self.registration.take());
    }

    /// Whether the memory is still registered (False after `unregister()`).
    #[getter]
    fn registered(&self) -> bool {
        !self.registration.is_released()
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let (ptr, bytes) = (slf.get().ptr as *mut c_void, slf.get().bytes);
        // SAFETY: the memory belongs to `base`, which slf references and the view keeps alive.
        unsafe { fill_byte_view(view, flags, ptr, bytes, slf.into_any()) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: view was filled by fill_byte_view.
        unsafe { release_byte_view(view) }
    }

    fn __repr__(&self) -> String {
        let state = if self.registered() { "" } else { " (unregistered)" };
        format!("<RegisteredHostMemory of {} bytes at 0x{:x}{state}>", self.bytes, self.ptr)
    }
}
