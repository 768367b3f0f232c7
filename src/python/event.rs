//! `cudaEvent_t` and the event calls; same life cycle as streams.

use std::sync::Arc;

use pyo3::prelude::*;

use super::errors::CallResult;
use super::releasable::Releasable;
use super::stream::{stream_handle, CudaStream};
use crate::runtime::{self, backend, Context, Error, Event};

/// A thin wrapper over `runtime::Event`, destroyed with its last reference or by `close()`.
#[pyclass(name = "cudaEvent_t", module = "pygpu", frozen, subclass)]
pub struct CudaEvent {
    event: Releasable<Arc<Event>>,
    flags: u32,
}

impl CudaEvent {
    pub fn event(&self) -> PyResult<Arc<Event>> {
        self.event.get()
    }

    /// Destroys the event now (pending work still completes); idempotent.
    fn destroy(&self) -> runtime::Result<()> {
        self.event.release_with(Event::close)
    }
}

#[pymethods]
impl CudaEvent {
    /// flags: a combination of 1 (cudaEventBlockingSync), 2 (cudaEventDisableTiming) and 4
    /// (cudaEventInterprocess, with 2). `ipc_handle`: open another process's event instead
    /// (the bytes of its `ipc_handle()`; flags are then those of an interprocess event).
    #[new]
    #[pyo3(signature = (flags = 0, ipc_handle = None))]
    fn new(flags: u32, ipc_handle: Option<&[u8]>) -> PyResult<Self> {
        let ctx = Context::current()?;
        let event = match ipc_handle {
            None => Event::new(&ctx, flags)?,
            Some(handle) => super::ipc::open_event(&ctx, handle)?,
        };
        let flags = event.flags();
        Ok(CudaEvent { event: Releasable::new(Arc::new(event), "this cudaEvent_t"), flags })
    }

    /// The bytes (64) with which another process opens this event: `cudaEvent_t(ipc_handle=...)`.
    /// Needs flags 4 | 2 (INTERPROCESS | DISABLE_TIMING).
    fn ipc_handle<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let handle = self.event()?.ipc_handle()?;
        Ok(pyo3::types::PyBytes::new(py, &handle))
    }

    /// The raw handle (cudaEvent_t as an integer), for passing to C/C++ code; raises once closed.
    #[getter(handle)]
    fn py_handle(&self) -> PyResult<usize> {
        self.event.with(|e| e.handle().as_raw())
    }

    /// The flags the event was created with (`event_flags`).
    #[getter]
    fn flags(&self) -> u32 {
        self.flags
    }

    fn __int__(&self) -> PyResult<usize> {
        self.py_handle()
    }

    /// Destroys the event now; idempotent.
    fn close(&self) -> PyResult<()> {
        Ok(self.destroy()?)
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.event.is_released()
    }

    fn __repr__(&self) -> String {
        match self.py_handle() {
            Ok(h) => format!("<cudaEvent_t 0x{h:x}>"),
            Err(_) => "<cudaEvent_t (closed)>".to_string(),
        }
    }
}

/// Records `event` on `stream` (None: the default stream): it completes when the work queued
/// there before it has.
#[pyfunction]
#[pyo3(signature = (event, stream = None))]
pub fn event_record(event: &Bound<'_, CudaEvent>, stream: Option<&Bound<'_, CudaStream>>) -> CallResult<()> {
    let event = event.get().event()?;
    Ok(event.record(stream_handle(stream)?)?)
}

/// Waits (with the GIL released) until `event` has completed.
#[pyfunction]
pub fn event_synchronize(py: Python<'_>, event: &Bound<'_, CudaEvent>) -> CallResult<()> {
    let event = event.get().event()?;
    super::stream::wait_until_done(py, 0, || event.query())
}

/// Whether `event` has completed; never waits.
#[pyfunction]
pub fn event_query(event: &Bound<'_, CudaEvent>) -> CallResult<bool> {
    Ok(event.get().event()?.query()?)
}

/// Milliseconds between two recorded events.
#[pyfunction]
pub fn event_elapsed_time(start: &Bound<'_, CudaEvent>, end: &Bound<'_, CudaEvent>) -> CallResult<f32> {
    Ok(start.get().event()?.elapsed_ms(&*end.get().event()?)?)
}

/// Destroys `event` now, as `close()` does, but raises if it was already closed.
pub fn event_destroy(event: &Bound<'_, CudaEvent>) -> CallResult<()> {
    let e = event.get();
    e.event()?;
    Ok(e.destroy()?)
}

/// Makes work queued on `stream` after this call wait until `event` completes, without
/// blocking the host (flags must be 0).
#[pyfunction]
#[pyo3(signature = (stream, event, flags = 0))]
pub fn stream_wait_event(
    stream: Option<&Bound<'_, CudaStream>>,
    event: &Bound<'_, CudaEvent>,
    flags: u32,
) -> CallResult<()> {
    if flags != 0 {
        return Err(
            PyErr::from(Error::InvalidArgument(format!("stream_wait_event flags must be 0, not {flags}"))).into()
        );
    }
    let b = backend()?;
    Ok(b.stream_wait_event(stream_handle(stream)?, event.get().event()?.handle())?)
}
