//! Device memory and events shared between processes (`cuIpcGetMemHandle`/`cuIpcOpenMemHandle`,
//! `cuIpcGetEventHandle`/`cuIpcOpenEventHandle`): `mem_get_ipc_handle` gives the bytes to send,
//! `IPCMemoryHandle` maps them in the receiver; an event's bytes come from
//! `cudaEvent_t.ipc_handle()` and open with `cudaEvent_t(ipc_handle=...)`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::memory::device_address;
use super::releasable::Releasable;
use crate::runtime::memory::IpcMapping;
use crate::runtime::{backend, Context, DevicePtr, Error, Event, IPC_HANDLE_BYTES};

/// The interprocess handle (64 bytes) of the allocation holding `devptr`.
#[pyfunction]
pub fn mem_get_ipc_handle<'py>(py: Python<'py>, devptr: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let (ptr, _) = device_address(devptr)?;
    let handle = backend()?.ipc_get_mem_handle(ptr).map_err(|e| match e {
        // The driver answers with a bare code; the likely cause is memory from the pool.
        Error::Api { code, backend, detail: None } => Error::detailed(
            code,
            backend,
            format!(
                "cannot export 0x{ptr:x}: only memory from mem_alloc (cuMemAlloc) can be shared between \
                 processes; memory from the stream-ordered pool (pool_alloc, GPUArray's default allocator) \
                 cannot. Allocate what you share with mem_alloc, e.g. \
                 GPUArray(shape, dtype, allocator=pygpu.mem_alloc)"
            ),
        ),
        other => other,
    })?;
    Ok(PyBytes::new(py, &handle))
}

/// Another process's event from the bytes of its `ipc_handle()`, on `ctx`'s device.
pub fn open_event(ctx: &Arc<Context>, handle: &[u8]) -> PyResult<Event> {
    Ok(Event::open_ipc(ctx, handle_bytes(handle, "event")?)?)
}

fn handle_bytes<'a>(handle: &'a [u8], what: &str) -> PyResult<&'a [u8; IPC_HANDLE_BYTES]> {
    Ok(handle.try_into().map_err(|_| {
        Error::InvalidArgument(format!(
            "an IPC {what} handle is {IPC_HANDLE_BYTES} bytes (from the exporting process), not {}",
            handle.len()
        ))
    })?)
}

/// Another process's allocation, mapped into this one (a thin wrapper over
/// `runtime::memory::IpcMapping`); unmapped by `close()` or when the object goes away.
/// `int()` is its device address here.
#[pyclass(module = "pygpu", frozen)]
pub struct IPCMemoryHandle {
    mapping: Releasable<IpcMapping>,
    ptr: DevicePtr,
}

#[pymethods]
impl IPCMemoryHandle {
    /// `handle`: the bytes from `mem_get_ipc_handle` in the exporting process; `flags`:
    /// `ipc_mem_flags` (LAZY_ENABLE_PEER_ACCESS, 1, by default as in PyCUDA).
    #[new]
    #[pyo3(signature = (handle, flags = 1))]
    fn py_new(handle: &[u8], flags: u32) -> PyResult<Self> {
        let handle = handle_bytes(handle, "memory")?;
        let mapping = IpcMapping::open(handle, flags)?;
        let ptr = mapping.ptr();
        Ok(IPCMemoryHandle { mapping: Releasable::new(mapping, "this IPCMemoryHandle"), ptr })
    }

    fn __int__(&self) -> PyResult<DevicePtr> {
        self.mapping.with(IpcMapping::ptr)
    }

    fn __index__(&self) -> PyResult<DevicePtr> {
        self.mapping.with(IpcMapping::ptr)
    }

    /// The mapped memory's address in this process; raises once closed.
    #[getter]
    fn ptr(&self) -> PyResult<DevicePtr> {
        self.mapping.with(IpcMapping::ptr)
    }

    /// Unmaps now; idempotent.
    fn close(&self) {
        drop(self.mapping.take());
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.mapping.is_released()
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " (closed)" } else { "" };
        format!("<IPCMemoryHandle at 0x{:x}{state}>", self.ptr)
    }
}
