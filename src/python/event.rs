//! `cudaEvent_t` and the event calls; same life cycle as streams.

use pyo3::prelude::*;

use super::errors::{CudaStatus, Status};
use super::releasable::Releasable;
use super::stream::{stream_handle, CudaStream};
use crate::runtime::{
    backend, error::record_error, Backend, Error, EventHandle, EVENT_BLOCKING_SYNC, EVENT_DISABLE_TIMING,
};

#[pyclass(name = "cudaEvent_t", module = "pygpu", frozen, subclass)]
pub struct CudaEvent {
    handle: Releasable<EventHandle>,
    flags: u32,
    backend: &'static dyn Backend,
}

impl CudaEvent {
    pub fn handle(&self) -> PyResult<EventHandle> {
        self.handle.get()
    }

    /// Destroys the handle now (pending work still completes); idempotent.
    fn destroy(&self) -> crate::runtime::Result<()> {
        match self.handle.take() {
            // SAFETY: the handle was live and has just been taken out, so it is destroyed once.
            Some(h) => unsafe { self.backend.event_destroy(h) },
            None => Ok(()),
        }
    }
}

#[pymethods]
impl CudaEvent {
    /// flags: a combination of 1 (cudaEventBlockingSync) and 2 (cudaEventDisableTiming).
    #[new]
    #[pyo3(signature = (flags = 0))]
    fn new(flags: u32) -> PyResult<Self> {
        if flags & !(EVENT_BLOCKING_SYNC | EVENT_DISABLE_TIMING) != 0 {
            return Err(Error::InvalidArgument(format!(
                "event flags must combine 1 (cudaEventBlockingSync) and 2 (cudaEventDisableTiming), not {flags}"
            ))
            .into());
        }
        let b = backend()?;
        let handle = b.event_create(flags)?;
        Ok(CudaEvent { handle: Releasable::new(handle, "this cudaEvent_t"), flags, backend: b })
    }

    #[getter(handle)]
    fn py_handle(&self) -> PyResult<usize> {
        Ok(self.handle()?.as_raw())
    }

    #[getter]
    fn flags(&self) -> u32 {
        self.flags
    }

    fn __int__(&self) -> PyResult<usize> {
        self.py_handle()
    }

    fn close(&self) -> PyResult<()> {
        Ok(self.destroy()?)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.handle.is_released()
    }

    fn __repr__(&self) -> String {
        match self.handle.get() {
            Ok(h) => format!("<cudaEvent_t 0x{:x}>", h.as_raw()),
            Err(_) => "<cudaEvent_t (closed)>".to_string(),
        }
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take_mut().filter(|_| !crate::runtime::in_forked_child()) {
            // SAFETY: last reference; destroyed exactly once.
            if let Err(e) = unsafe { self.backend.event_destroy(h) } {
                record_error(e.code());
            }
        }
    }
}

#[pyfunction(name = "cudaEventRecord")]
#[pyo3(signature = (event, stream = None))]
pub fn cuda_event_record(event: &Bound<'_, CudaEvent>, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Status> {
    let b = backend()?;
    CudaStatus::from_result(&b.event_record(event.get().handle()?, stream_handle(stream)?)).map(Status)
}

#[pyfunction(name = "cudaEventSynchronize")]
pub fn cuda_event_synchronize(py: Python<'_>, event: &Bound<'_, CudaEvent>) -> PyResult<Status> {
    let b = backend()?;
    let h = event.get().handle()?;
    let result = super::stream::wait_until_done(py, || b.event_query(h))?;
    CudaStatus::from_result(&result).map(Status)
}

#[pyfunction(name = "cudaEventQuery")]
pub fn cuda_event_query(event: &Bound<'_, CudaEvent>) -> PyResult<Status> {
    let b = backend()?;
    let status = match b.event_query(event.get().handle()?) {
        Ok(true) => Ok(CudaStatus::SUCCESS),
        Ok(false) => Ok(CudaStatus::from_code(crate::runtime::error::CUDA_ERROR_NOT_READY)),
        Err(e) => CudaStatus::from_result::<()>(&Err(e)),
    };
    status.map(Status)
}

/// (milliseconds, status) between two recorded events.
#[pyfunction(name = "cudaEventElapsedTime")]
pub fn cuda_event_elapsed_time(
    start: &Bound<'_, CudaEvent>,
    end: &Bound<'_, CudaEvent>,
) -> PyResult<(f32, CudaStatus)> {
    let b = backend()?;
    let result = b.event_elapsed_ms(start.get().handle()?, end.get().handle()?);
    Ok((*result.as_ref().unwrap_or(&0.0), CudaStatus::from_result(&result)?))
}

#[pyfunction(name = "cudaEventDestroy")]
pub fn cuda_event_destroy(event: &Bound<'_, CudaEvent>) -> PyResult<CudaStatus> {
    let e = event.get();
    e.handle()?;
    CudaStatus::from_result(&e.destroy())
}

#[pyfunction(name = "cudaStreamWaitEvent")]
#[pyo3(signature = (stream, event, flags = 0))]
pub fn cuda_stream_wait_event(
    stream: Option<&Bound<'_, CudaStream>>,
    event: &Bound<'_, CudaEvent>,
    flags: u32,
) -> PyResult<CudaStatus> {
    if flags != 0 {
        return Err(Error::InvalidArgument(format!("cudaStreamWaitEvent flags must be 0, not {flags}")).into());
    }
    let b = backend()?;
    CudaStatus::from_result(&b.stream_wait_event(stream_handle(stream)?, event.get().handle()?))
}
