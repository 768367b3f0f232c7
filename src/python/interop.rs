//! Stream hand-off with foreign libraries (CuPy, PyTorch, ...), which name their streams
//! by raw handle: `cudaStream_t` objects cannot wrap those, so these calls take the int.
//! On the host backend every stream has finished its work at enqueue, so only the event
//! is checked.

use pyo3::prelude::*;

use super::event::CudaEvent;
use crate::runtime::{backend, BackendKind, StreamHandle};

/// Makes the foreign stream `stream_handle` (an int: a cudaStream_t/hipStream_t, or 1/2
/// for CUDA's legacy/per-thread default streams) wait for `event`. Raises on failure.
#[pyfunction]
pub fn stream_wait_event_raw(stream_handle: usize, event: &Bound<'_, CudaEvent>) -> PyResult<()> {
    let b = backend()?;
    let e = event.get().handle()?;
    if b.kind() == BackendKind::Host {
        b.event_query(e)?;
        return Ok(());
    }
    Ok(b.stream_wait_event(StreamHandle(stream_handle), e)?)
}

/// Records `event` on the foreign stream `stream_handle` (see `stream_wait_event_raw`).
#[pyfunction]
pub fn event_record_raw(event: &Bound<'_, CudaEvent>, stream_handle: usize) -> PyResult<()> {
    let b = backend()?;
    let e = event.get().handle()?;
    if b.kind() == BackendKind::Host {
        return Ok(b.event_record(e, StreamHandle::DEFAULT)?);
    }
    Ok(b.event_record(e, StreamHandle(stream_handle))?)
}
