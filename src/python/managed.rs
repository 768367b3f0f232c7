//! `ManagedAllocation`: managed (unified) memory, one address that the host and the device
//! both use (`cuMemAllocManaged`). `pygpu.driver.managed_empty` and friends return numpy
//! arrays over it whose `base` is the allocation, as PyCUDA's do.
//!
//! numpy keeps no buffer view open for such an array, only a reference to its base, so a
//! `free()` cannot know whether arrays still read the memory: it ends this object's use
//! (pointers, new views) at once, and the memory itself goes with the object's last
//! reference, the arrays' included. Releasing it earlier would leave them dangling.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

use super::buffer::{fill_byte_view, release_byte_view};
use super::errors::released;
use super::stream::{stream_handle, CudaStream};
use crate::runtime::{DevicePtr, Error, ManagedBuffer, MEM_ATTACH_GLOBAL};

/// Managed (unified) memory: one address the host and the device both use (cuMemAllocManaged).
/// `pygpu.driver.managed_empty` and friends return numpy arrays whose `base` is one;
/// `get_device_pointer()`, `attach(flags, stream)` and `free()` as in PyCUDA.
#[pyclass(module = "pygpu", frozen)]
pub struct ManagedAllocation {
    buffer: ManagedBuffer,
    /// Set by `free()`: the object no longer hands out its memory.
    freed: AtomicBool,
}

impl ManagedAllocation {
    fn live_ptr(&self) -> PyResult<DevicePtr> {
        if self.freed.load(Ordering::Acquire) {
            return Err(released("this ManagedAllocation"));
        }
        Ok(self.buffer.ptr())
    }
}

#[pymethods]
impl ManagedAllocation {
    /// `nbytes` of managed memory on the current device; `mem_flags` is a `mem_attach_flags`
    /// value, GLOBAL (1, also for 0 as cudaMallocManaged's default) or HOST (2).
    #[new]
    #[pyo3(signature = (nbytes, mem_flags = 1))]
    fn py_new(py: Python<'_>, nbytes: usize, mem_flags: u32) -> PyResult<Self> {
        let flags = if mem_flags == 0 { MEM_ATTACH_GLOBAL } else { mem_flags };
        let buffer = py.detach(|| ManagedBuffer::new(nbytes, flags))?;
        Ok(ManagedAllocation { buffer, freed: AtomicBool::new(false) })
    }

    /// The address, valid in kernels and on the host alike.
    fn get_device_pointer(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    /// The address, valid in kernels and on the host alike; raises once freed.
    #[getter]
    fn ptr(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    /// The size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.buffer.bytes()
    }

    /// Changes which streams may access the memory (`cuStreamAttachMemAsync`), once the work
    /// queued on `stream` before it is done: GLOBAL any stream, HOST the host only, SINGLE only
    /// `stream` (which SINGLE requires).
    #[pyo3(signature = (mem_flags, stream = None))]
    fn attach(&self, mem_flags: u32, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<()> {
        self.live_ptr()?;
        let handle = stream_handle(stream)?;
        Ok(self.buffer.attach(mem_flags, handle)?)
    }

    /// Ends this object's use of the memory now (its pointer and new views then raise). The
    /// memory is released with the object's last reference, so numpy arrays that view it stay
    /// valid until they go; idempotent.
    fn free(&self) {
        self.freed.store(true, Ordering::Release);
    }

    fn __int__(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    fn __index__(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let me = slf.get();
        let ptr = me.live_ptr()? as usize as *mut c_void;
        let bytes = me.buffer.bytes();
        // SAFETY: the memory is this object's until it is dropped, and the view references it.
        unsafe { fill_byte_view(view, flags, ptr, bytes, slf.into_any()) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: view was filled by fill_byte_view.
        unsafe { release_byte_view(view) }
    }

    fn __repr__(&self) -> String {
        let state = if self.freed.load(Ordering::Acquire) { " (freed)" } else { "" };
        format!("<ManagedAllocation of {} bytes at 0x{:x}{state}>", self.buffer.bytes(), self.buffer.ptr())
    }
}

/// The address of a numpy array over managed memory (its base a `ManagedAllocation`), which a
/// kernel takes by address as PyCUDA passes such arrays; None for any other object.
pub(super) fn managed_array_pointer(obj: &Bound<'_, PyAny>) -> PyResult<Option<DevicePtr>> {
    let py = obj.py();
    let Ok(mut base) = obj.getattr(pyo3::intern!(py, "base")) else { return Ok(None) };
    // A view's base may be the array it was taken from, whose base is the allocation.
    let ndarray = py.import(pyo3::intern!(py, "numpy"))?.getattr(pyo3::intern!(py, "ndarray"))?;
    while base.is_instance(&ndarray)? {
        base = base.getattr(pyo3::intern!(py, "base"))?;
    }
    let Ok(allocation) = base.cast::<ManagedAllocation>() else { return Ok(None) };
    allocation.get().live_ptr()?;
    let interface = obj.getattr(pyo3::intern!(py, "__array_interface__"))?;
    let address: u64 = interface.get_item("data")?.get_item(0)?.extract()?;
    let end = allocation.get().buffer.ptr() + allocation.get().buffer.bytes() as u64;
    if address < allocation.get().buffer.ptr() || address > end {
        return Err(Error::InvalidArgument(format!(
            "this array's data (0x{address:x}) lies outside its ManagedAllocation: pass an array over managed memory"
        ))
        .into());
    }
    Ok(Some(address))
}
