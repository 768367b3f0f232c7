//! `cudaStream_t` and the stream calls. A stream is created by its constructor and
//! destroyed with the object (or by `close()`); using it afterwards raises. Stream capture
//! records into a `Graph` (`graph.rs`, which takes what `end_capture` recorded).

use std::sync::Arc;

use pyo3::prelude::*;

use super::errors::CallResult;
use super::graph::Graph;
use super::releasable::Releasable;
use crate::runtime::activity::{self, ActivityKind};
use crate::runtime::{self, Context, Stream, StreamHandle};

/// A thin wrapper: the stream itself is a `runtime::Stream`, destroyed when the last
/// reference goes (this object, or a call in progress) or by `close()`.
#[pyclass(name = "cudaStream_t", module = "pygpu", frozen, subclass)]
pub struct CudaStream {
    stream: Releasable<Arc<Stream>>,
    device: i32,
    flags: u32,
    /// Objects the work captured so far uses (staging buffers, temporaries): the graph made by
    /// `end_capture` takes them, since a graph keeps only addresses.
    kept: std::sync::Mutex<Vec<Py<PyAny>>>,
    /// Device memory that work on this stream reuses from call to call (pygpu.gpuarray's
    /// one-pass reductions keep their blocks' values and ticket counter there), set by the
    /// Python side on first use. Work queued on the stream may still use it when the stream
    /// goes, so it is released only once that work is done (`release_scratch`).
    scratch: std::sync::Mutex<Option<Py<PyAny>>>,
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        self.release_scratch();
    }
}

impl CudaStream {
    /// The live stream, or the invalid-handle error if it was closed.
    pub fn stream(&self) -> PyResult<Arc<Stream>> {
        self.stream.get()
    }

    /// The live handle, or the invalid-handle error if it was closed.
    pub fn handle(&self) -> PyResult<StreamHandle> {
        self.stream.with(|s| s.handle())
    }

    /// Destroys the stream now (pending work still completes); idempotent.
    fn destroy(&self) -> runtime::Result<()> {
        self.release_scratch();
        self.stream.release_with(Stream::close)
    }

    /// Lets the scratch memory go, after the work queued on the stream (which may use it) is
    /// done: waiting, where there is a scratch, is the price of never freeing memory in use.
    /// A failed wait (a fault has ended the context's work) leaves it to go with the object.
    fn release_scratch(&self) {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if scratch.is_some() && matches!(self.stream.with(|s| s.synchronize()), Ok(Ok(()))) {
            // Dropped with or without the GIL: PyO3 defers the decrement until it is held.
            scratch.take();
        }
    }

    pub fn device(&self) -> i32 {
        self.device
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Py<PyAny>>> {
        // Nothing that can panic runs under this lock; recover the Vec if it ever did.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The stream of an optional stream argument (None: the legacy default stream), checked
/// to belong to the current device.
pub fn stream_arg(stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Option<Arc<Stream>>> {
    let s = launch_stream(stream)?;
    if let Some(s) = &s {
        s.context().check_current("this stream")?;
    }
    Ok(s)
}

/// A kernel launch's stream argument, unchecked: the launch compares its device with the
/// kernel's and the current one (one look at the current context per launch).
pub fn launch_stream(stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Option<Arc<Stream>>> {
    stream.map(|s| s.get().stream()).transpose()
}

/// The handle of an optional stream argument: None is the legacy default stream.
pub fn stream_handle(stream: Option<&Bound<'_, CudaStream>>) -> PyResult<StreamHandle> {
    Ok(stream_arg(stream)?.map_or(StreamHandle::DEFAULT, |s| s.handle()))
}

/// The stream argument of a stream's own methods.
fn this_stream(slf: &Bound<'_, CudaStream>) -> PyResult<Arc<Stream>> {
    stream_arg(Some(slf))?.ok_or_else(|| super::errors::released("this cudaStream_t"))
}

#[pymethods]
impl CudaStream {
    /// flags: 0 (default) or 1 (cudaStreamNonBlocking).
    #[new]
    #[pyo3(signature = (flags = 0))]
    fn new(flags: u32) -> PyResult<Self> {
        let stream = Stream::new(&Context::current()?, flags)?;
        let device = stream.context().device();
        Ok(CudaStream {
            stream: Releasable::new(Arc::new(stream), "this cudaStream_t"),
            device,
            flags,
            kept: Default::default(),
            scratch: Default::default(),
        })
    }

    /// See the field `scratch` (pygpu.gpuarray's reductions; not a public API).
    #[getter(_scratch)]
    fn scratch_object(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.scratch.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|o| o.clone_ref(py))
    }

    /// Keeps the first value set: a later one (another thread's, made at the same time) is
    /// dropped, so a scratch that work was queued with is never replaced under it.
    #[setter(_scratch)]
    fn set_scratch_object(&self, value: Py<PyAny>) {
        self.scratch.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(value);
    }

    /// The raw handle (cudaStream_t as an integer), for passing to C/C++ code.
    #[getter(handle)]
    fn py_handle(&self) -> PyResult<usize> {
        Ok(self.handle()?.as_raw())
    }

    /// The ordinal of the device the stream belongs to.
    #[getter(device)]
    fn py_device(&self) -> i32 {
        self.device
    }

    /// The flags the stream was created with: 0 or 1 (cudaStreamNonBlocking).
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

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.stream.is_released()
    }

    /// Starts recording this stream's launches and copies into a graph instead of running them.
    fn begin_capture(slf: &Bound<'_, Self>) -> PyResult<()> {
        this_stream(slf)?.begin_capture()?;
        slf.get().kept().clear();
        Ok(())
    }

    /// Stops recording and returns the graph, which keeps alive what `keep_while_captured` got.
    fn end_capture(slf: &Bound<'_, Self>) -> PyResult<Graph> {
        let graph = this_stream(slf)?.end_capture()?;
        Ok(Graph::captured(graph, std::mem::take(&mut *slf.get().kept())))
    }

    /// While this stream captures, keeps `obj` alive as long as the graph being recorded (and
    /// its instances): for memory the captured work reads or writes. True if kept, False when
    /// the stream is not capturing (nothing to do).
    fn keep_while_captured(slf: &Bound<'_, Self>, obj: Py<PyAny>) -> PyResult<bool> {
        if !this_stream(slf)?.is_capturing()? {
            return Ok(false);
        }
        slf.get().kept().push(obj);
        Ok(true)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        // try_lock: the GC must never block; a list being changed is visited next time.
        if let Ok(kept) = self.kept.try_lock() {
            for obj in kept.iter() {
                visit.call(obj)?;
            }
        }
        if let Ok(scratch) = self.scratch.try_lock() {
            if let Some(obj) = scratch.as_ref() {
                visit.call(obj)?;
            }
        }
        Ok(())
    }

    /// Whether the stream is recording into a graph (between `begin_capture` and `end_capture`).
    #[getter]
    fn is_capturing(slf: &Bound<'_, Self>) -> PyResult<bool> {
        Ok(this_stream(slf)?.is_capturing()?)
    }

    fn __repr__(&self) -> String {
        match self.handle() {
            Ok(h) => format!("<cudaStream_t 0x{:x} on device {}>", h.as_raw(), self.device),
            Err(_) => "<cudaStream_t (closed)>".to_string(),
        }
    }
}

/// Waits until `done` says so (see `wait`); a running pygpu.profile() recording notes the wait
/// as a synchronisation on `stream` (a stream's raw handle; 0 for an event's wait).
pub fn wait_until_done<F>(py: Python<'_>, stream: u64, done: F) -> CallResult<()>
where
    F: Fn() -> crate::runtime::Result<bool> + Sync,
{
    let start = activity::recording().then(activity::clock_ns);
    wait(py, done)?;
    if let Some(start) = start {
        activity::record_since(ActivityKind::Synchronize, start, stream, 0);
    }
    Ok(())
}

/// Waits until `done` says so: first without releasing the GIL (an idle stream costs one
/// query), then with the GIL released, spinning briefly and then sleeping, and checking
/// every few milliseconds for Ctrl-C, which ends the wait with KeyboardInterrupt.
fn wait<F>(py: Python<'_>, done: F) -> CallResult<()>
where
    F: Fn() -> crate::runtime::Result<bool> + Sync,
{
    if done()? {
        return Ok(());
    }
    loop {
        let finished: crate::runtime::Result<bool> = py.detach(|| {
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
        if finished? {
            return Ok(());
        }
        py.check_signals()?;
    }
}

/// Waits for the work queued on `stream` (None: the default stream); see `wait_until_done`.
#[pyfunction]
#[pyo3(signature = (stream = None))]
pub fn stream_synchronize(py: Python<'_>, stream: Option<&Bound<'_, CudaStream>>) -> CallResult<()> {
    let b = runtime::backend()?;
    let h = stream_handle(stream)?;
    wait_until_done(py, h.as_raw() as u64, || b.stream_query(h))
}

/// Whether the work queued on `stream` (None: the default stream) is done; never waits.
#[pyfunction]
#[pyo3(signature = (stream = None))]
pub fn stream_query(stream: Option<&Bound<'_, CudaStream>>) -> CallResult<bool> {
    let b = runtime::backend()?;
    Ok(b.stream_query(stream_handle(stream)?)?)
}

/// Destroys `stream` now, as `close()` does, but raises if it was already closed.
pub fn stream_destroy(stream: &Bound<'_, CudaStream>) -> CallResult<()> {
    let s = stream.get();
    s.handle()?;
    Ok(s.destroy()?)
}
