//! Stream hand-off with foreign libraries (CuPy, PyTorch, ...), which name their streams
//! by raw handle: `cudaStream_t` objects cannot wrap those, so these calls take the int.
//! On the host backend every stream has finished its work at enqueue, so only the event
//! is checked.
//!
//! This is the one place where an integer from Python becomes a stream handle
//! (`foreign_stream`). The driver cannot check a stream handle, so these two calls trust
//! their caller, as PyCUDA's and CuPy's external-stream wrappers do; the `.pyi` says so.

use pyo3::prelude::*;

use super::event::CudaEvent;
use crate::runtime::{
    backend, BackendKind, Error, ForeignStream, StreamHandle, CUDA_STREAM_LEGACY, CUDA_STREAM_PER_THREAD,
};

/// The stream named by `raw`, refusing values that certainly are not a stream handle.
fn foreign_stream(raw: usize) -> PyResult<StreamHandle> {
    if !ForeignStream::plausible(raw) {
        return Err(Error::InvalidArgument(format!(
            "0x{raw:x} is not a stream handle: pass the integer of a live cudaStream_t/hipStream_t \
             (e.g. torch.cuda.current_stream().cuda_stream or cupy's stream.ptr), or 0, 1 or 2"
        ))
        .into());
    }
    match raw {
        0 | CUDA_STREAM_LEGACY => {}
        // Ordered with the legacy stream, but not with another thread's per-thread stream.
        CUDA_STREAM_PER_THREAD => backend()?.pool_note_per_thread_stream(),
        // Another library's stream may use pooled memory out of the legacy stream's order.
        _ => backend()?.pool_note_unordered_stream()?,
    }
    // SAFETY: the audited point of trust for foreign streams. The Python API documents that
    // `raw` is a live stream of the current device made by another library (or 0/1/2);
    // implausible values were refused above.
    Ok(unsafe { ForeignStream::new(raw) }.handle())
}

/// Makes the foreign stream `stream_handle` (an int: a cudaStream_t/hipStream_t, or 1/2
/// for CUDA's legacy/per-thread default streams) wait for `event`. Raises on failure.
#[pyfunction]
pub fn stream_wait_event_raw(stream_handle: usize, event: &Bound<'_, CudaEvent>) -> PyResult<()> {
    let b = backend()?;
    let e = event.get().event()?;
    if b.kind() == BackendKind::Host {
        e.query()?;
        return Ok(());
    }
    Ok(b.stream_wait_event(foreign_stream(stream_handle)?, e.handle())?)
}

/// Records `event` on the foreign stream `stream_handle` (see `stream_wait_event_raw`).
#[pyfunction]
pub fn event_record_raw(event: &Bound<'_, CudaEvent>, stream_handle: usize) -> PyResult<()> {
    let b = backend()?;
    let e = event.get().event()?;
    if b.kind() == BackendKind::Host {
        return Ok(e.record(StreamHandle::DEFAULT)?);
    }
    Ok(e.record(foreign_stream(stream_handle)?)?)
}
