//! Device memory shared between processes (`cuIpcGetMemHandle`/`cuIpcOpenMemHandle`):
//! `mem_get_ipc_handle` gives the bytes to send, `IPCMemoryHandle` maps them in the receiver.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::memory::device_address;
use super::releasable::Releasable;
use crate::runtime::error::record_error;
use crate::runtime::{backend, Backend, DevicePtr, Error, IPC_HANDLE_BYTES};

/// The interprocess handle (64 bytes) of the allocation holding `devptr`.
#[pyfunction]
pub fn mem_get_ipc_handle<'py>(py: Python<'py>, devptr: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let (ptr, _) = device_address(devptr)?;
    let handle = backend()?.ipc_get_mem_handle(ptr)?;
    Ok(PyBytes::new(py, &handle))
}

/// Another process's allocation, mapped into this one; unmapped by `close()` or when the
/// object goes away. `int()` is its device address here.
#[pyclass(module = "pygpu", frozen)]
pub struct IPCMemoryHandle {
    mapping: Releasable<IpcMapping>,
    ptr: DevicePtr,
}

struct IpcMapping {
    ptr: DevicePtr,
    backend: &'static dyn Backend,
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        if crate::runtime::in_forked_child() {
            return;
        }
        // SAFETY: opened by ipc_open_mem_handle and closed exactly once, here.
        if let Err(e) = unsafe { self.backend.ipc_close_mem_handle(self.ptr) } {
            record_error(e.code());
        }
    }
}

#[pymethods]
impl IPCMemoryHandle {
    /// `handle`: the bytes from `mem_get_ipc_handle` in the exporting process; `flags`:
    /// `ipc_mem_flags` (LAZY_ENABLE_PEER_ACCESS, 1, by default as in PyCUDA).
    #[new]
    #[pyo3(signature = (handle, flags = 1))]
    fn py_new(handle: &[u8], flags: u32) -> PyResult<Self> {
        let handle: &[u8; IPC_HANDLE_BYTES] = handle.try_into().map_err(|_| {
            Error::InvalidArgument(format!(
                "an IPC memory handle is {IPC_HANDLE_BYTES} bytes (from mem_get_ipc_handle), not {}",
                handle.len()
            ))
        })?;
        let b = backend()?;
        let ptr = b.ipc_open_mem_handle(handle, flags)?;
        Ok(IPCMemoryHandle { mapping: Releasable::new(IpcMapping { ptr, backend: b }, "this IPCMemoryHandle"), ptr })
    }

    fn __int__(&self) -> PyResult<DevicePtr> {
        self.mapping.with(|m| m.ptr)
    }

    fn __index__(&self) -> PyResult<DevicePtr> {
        self.mapping.with(|m| m.ptr)
    }

    #[getter]
    fn ptr(&self) -> PyResult<DevicePtr> {
        self.mapping.with(|m| m.ptr)
    }

    /// Unmaps now; idempotent.
    fn close(&self) {
        drop(self.mapping.take());
    }

    #[getter]
    fn closed(&self) -> bool {
        self.mapping.is_released()
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " (closed)" } else { "" };
        format!("<IPCMemoryHandle at 0x{:x}{state}>", self.ptr)
    }
}
