//! `cudaStream_t` and the stream calls. A stream is created by its constructor and
//! destroyed with the object (or by `close()`); using it afterwards raises. Stream capture
//! records into a `Graph`, which lives here too: the stream makes graphs, and launching a
//! graph takes a stream, so the two are one layer (events and modules build on it).

use pyo3::prelude::*;

use super::errors::{CudaStatus, Status};
use super::releasable::Releasable;
use crate::runtime::{backend, error::record_error, Backend, Error, GraphExecHandle, GraphHandle, StreamHandle};

#[pyclass(name = "cudaStream_t", module = "pygpu", frozen, subclass)]
pub struct CudaStream {
    handle: Releasable<StreamHandle>,
    device: i32,
    flags: u32,
    backend: &'static dyn Backend,
}

impl CudaStream {
    /// The live handle, or the invalid-handle error if it was closed.
    pub fn handle(&self) -> PyResult<StreamHandle> {
        self.handle.get()
    }

    /// Destroys the handle now (pending work still completes); idempotent.
    fn destroy(&self) -> crate::runtime::Result<()> {
        match self.handle.take() {
            // SAFETY: the handle was live and has just been taken out, so it is destroyed once.
            Some(h) => unsafe { self.backend.stream_destroy(h) },
            None => Ok(()),
        }
    }

    pub fn device(&self) -> i32 {
        self.device
    }
}

/// The handle of an optional stream argument: None is the legacy default stream.
pub fn stream_handle(stream: Option<&Bound<'_, CudaStream>>) -> PyResult<StreamHandle> {
    match stream {
        None => Ok(StreamHandle::DEFAULT),
        Some(s) => {
            let s = s.get();
            let current = s.backend.get_device()?;
            if current != s.device {
                return Err(Error::InvalidArgument(format!(
                    "this stream belongs to device {}, but device {current} is current: call cudaSetDevice({}) first",
                    s.device, s.device
                ))
                .into());
            }
            s.handle()
        }
    }
}

#[pymethods]
impl CudaStream {
    /// flags: 0 (default) or 1 (cudaStreamNonBlocking).
    #[new]
    #[pyo3(signature = (flags = 0))]
    fn new(flags: u32) -> PyResult<Self> {
        if flags > crate::runtime::STREAM_NON_BLOCKING {
            return Err(Error::InvalidArgument(format!(
                "stream flags must be 0 (cudaStreamDefault) or 1 (cudaStreamNonBlocking), not {flags}"
            ))
            .into());
        }
        let b = backend()?;
        let device = b.get_device()?;
        let handle = b.stream_create(flags)?;
        Ok(CudaStream { handle: Releasable::new(handle, "this cudaStream_t"), device, flags, backend: b })
    }

    /// The raw handle (cudaStream_t as an integer), for passing to C/C++ code.
    #[getter(handle)]
    fn py_handle(&self) -> PyResult<usize> {
        Ok(self.handle()?.as_raw())
    }

    #[getter(device)]
    fn py_device(&self) -> i32 {
        self.device
    }

    #[getter]
    fn flags(&self) -> u32 {
        self.flags
    }

    fn __int__(&self) -> PyResult<usize> {
        self.py_handle()
    }

    /// The CUDA stream protocol (version 0, handle): CuPy's Stream.from_external, cuda.core
    /// and others accept this stream directly.
    fn __cuda_stream__(&self) -> PyResult<(i32, usize)> {
        Ok((0, self.py_handle()?))
    }

    /// Destroys the stream now (pending work still completes); idempotent.
    fn close(&self) -> PyResult<()> {
        Ok(self.destroy()?)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.handle.is_released()
    }

    /// Starts recording this stream's launches and copies into a graph instead of running them.
    fn begin_capture(slf: &Bound<'_, Self>) -> PyResult<()> {
        begin_capture(slf)
    }

    /// Stops recording and returns the graph.
    fn end_capture(slf: &Bound<'_, Self>) -> PyResult<Graph> {
        end_capture(slf)
    }

    #[getter]
    fn is_capturing(slf: &Bound<'_, Self>) -> PyResult<bool> {
        is_capturing(slf)
    }

    fn __repr__(&self) -> String {
        match self.handle.get() {
            Ok(h) => format!("<cudaStream_t 0x{:x} on device {}>", h.as_raw(), self.device),
            Err(_) => "<cudaStream_t (closed)>".to_string(),
        }
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take_mut().filter(|_| !crate::runtime::in_forked_child()) {
            // SAFETY: last reference; the handle is destroyed exactly once.
            if let Err(e) = unsafe { self.backend.stream_destroy(h) } {
                record_error(e.code());
            }
        }
    }
}

/// Waits until `done` says so: first without releasing the GIL (an idle stream costs one
/// query), then with the GIL released, spinning briefly and then sleeping, and checking
/// every few milliseconds for Ctrl-C, which ends the wait with KeyboardInterrupt.
/// The outer result is Python's (an interrupt), the inner the backend's.
pub fn wait_until_done<F>(py: Python<'_>, done: F) -> PyResult<crate::runtime::Result<()>>
where
    F: Fn() -> crate::runtime::Result<bool> + Sync,
{
    match done() {
        Ok(true) => return Ok(Ok(())),
        Ok(false) => {}
        Err(e) => return Ok(Err(e)),
    }
    loop {
        let finished = py.detach(|| {
            let start = std::time::Instant::now();
            loop {
                if done()? {
                    return Ok(true);
                }
                let waited = start.elapsed();
                if waited > std::time::Duration::from_millis(5) {
                    return Ok(false);
                }
                if waited > std::time::Duration::from_micros(200) {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        match finished {
            Ok(true) => return Ok(Ok(())),
            Ok(false) => py.check_signals()?,
            Err(e) => return Ok(Err(e)),
        }
    }
}

/// Waits for the stream's work; see `wait_until_done`.
#[pyfunction(name = "cudaStreamSynchronize")]
#[pyo3(signature = (stream = None))]
pub fn cuda_stream_synchronize(py: Python<'_>, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Status> {
    let b = backend()?;
    let h = stream_handle(stream)?;
    let result = wait_until_done(py, || b.stream_query(h))?;
    CudaStatus::from_result(&result).map(Status)
}

/// cudaSuccess when the stream is idle, cudaErrorNotReady (600) while work is pending.
#[pyfunction(name = "cudaStreamQuery")]
#[pyo3(signature = (stream = None))]
pub fn cuda_stream_query(stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Status> {
    let b = backend()?;
    let status = match b.stream_query(stream_handle(stream)?) {
        Ok(true) => Ok(CudaStatus::SUCCESS),
        Ok(false) => Ok(CudaStatus::from_code(crate::runtime::error::CUDA_ERROR_NOT_READY)),
        Err(e) => CudaStatus::from_result::<()>(&Err(e)),
    };
    status.map(Status)
}

#[pyfunction(name = "cudaStreamDestroy")]
pub fn cuda_stream_destroy(stream: &Bound<'_, CudaStream>) -> PyResult<CudaStatus> {
    let s = stream.get();
    s.handle()?;
    CudaStatus::from_result(&s.destroy())
}

/// A graph recorded by stream capture (`cudaStream_t.end_capture()`).
#[pyclass(module = "pygpu", frozen)]
pub struct Graph {
    handle: GraphHandle,
    backend: &'static dyn Backend,
}

#[pymethods]
impl Graph {
    /// An executable instance, launchable many times.
    fn instantiate(&self) -> PyResult<GraphExec> {
        let exec = self.backend.graph_instantiate(self.handle)?;
        Ok(GraphExec { handle: exec, backend: self.backend })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if crate::runtime::in_forked_child() {
            return;
        }
        // SAFETY: owned handle, destroyed once.
        if let Err(e) = unsafe { self.backend.graph_destroy(self.handle) } {
            record_error(e.code());
        }
    }
}

#[pyclass(module = "pygpu", frozen)]
pub struct GraphExec {
    handle: GraphExecHandle,
    backend: &'static dyn Backend,
}

#[pymethods]
impl GraphExec {
    /// Replays the graph on `stream` (None: the default stream).
    #[pyo3(signature = (stream = None))]
    fn launch(&self, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<()> {
        Ok(self.backend.graph_launch(self.handle, stream_handle(stream)?)?)
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if crate::runtime::in_forked_child() {
            return;
        }
        // SAFETY: owned handle, destroyed once.
        if let Err(e) = unsafe { self.backend.graph_exec_destroy(self.handle) } {
            record_error(e.code());
        }
    }
}

/// Starts recording `stream`'s work into a graph (used by cudaStream_t.begin_capture).
fn begin_capture(stream: &Bound<'_, CudaStream>) -> PyResult<()> {
    let b = backend()?;
    Ok(b.stream_begin_capture(stream_handle(Some(stream))?)?)
}

fn end_capture(stream: &Bound<'_, CudaStream>) -> PyResult<Graph> {
    let b = backend()?;
    let handle = b.stream_end_capture(stream_handle(Some(stream))?)?;
    Ok(Graph { handle, backend: b })
}

fn is_capturing(stream: &Bound<'_, CudaStream>) -> PyResult<bool> {
    let b = backend()?;
    Ok(b.stream_is_capturing(stream_handle(Some(stream))?)?)
}
