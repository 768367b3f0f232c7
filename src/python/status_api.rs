//! PyGPU's status-returning names: `cudaSetDevice(0)` returns `<cudaError: code=0>`,
//! `cudaGetDevice()` returns `(0, <cudaError: code=0>)`, as PyGPU's README fixes them. Each is
//! its raising call (in `device`, `peer`, `stream`, `event`, `memory`) with the failure turned
//! into the status by `CudaStatus::of_call`, the one rule for that; pygpu's own Python layers
//! call the raising names.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use super::device;
use super::errors::{must_propagate, take_last_error, CallResult, CudaStatus, Status};
use super::event::{self, CudaEvent};
use super::peer;
use super::stream::{self, CudaStream};
use crate::runtime::error::{error_name, error_string, CUDA_ERROR_NOT_READY};
use crate::runtime::{self, BackendKind};

fn status(result: CallResult<()>) -> PyResult<Status> {
    CudaStatus::of_call(result).map(|((), s)| Status(s))
}

/// A query's status: cudaErrorNotReady (600) while work is pending, which is not an error
/// (nothing is recorded for cudaGetLastError).
fn query_status(result: CallResult<bool>) -> PyResult<Status> {
    match result {
        Ok(false) => Ok(Status(CudaStatus::from_code(CUDA_ERROR_NOT_READY))),
        other => status(other.map(|_| ())),
    }
}

/// Makes `device` the calling thread's current device; returns the status
/// (cudaErrorInvalidDevice for an ordinal that does not exist).
#[pyfunction(name = "cudaSetDevice")]
pub fn cuda_set_device(device: &Bound<'_, PyAny>) -> PyResult<Status> {
    status(device::set_device(device))
}

/// cudaGetDevice's successful results for the first devices, made once: a tuple is immutable,
/// and building one per call was a quarter of the call (launch-bound code asks often).
static CURRENT_DEVICE_RESULTS: [PyOnceLock<Py<PyTuple>>; 16] = [const { PyOnceLock::new() }; 16];

/// (device, status): the calling thread's current device ordinal.
#[pyfunction(name = "cudaGetDevice")]
pub fn cuda_get_device(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    let (device, status) = CudaStatus::of_call(device::get_device())?;
    if status.code() == 0 {
        if let Some(slot) = usize::try_from(device).ok().and_then(|d| CURRENT_DEVICE_RESULTS.get(d)) {
            let made = slot.get_or_try_init(py, || {
                Ok::<_, PyErr>((device, Status(CudaStatus::SUCCESS)).into_pyobject(py)?.unbind())
            })?;
            return Ok(made.bind(py).clone());
        }
    }
    (device, Status(status)).into_pyobject(py)
}

/// (count, status): how many devices the backend sees (the host backend: 1).
#[pyfunction(name = "cudaGetDeviceCount")]
pub fn cuda_get_device_count() -> PyResult<(i32, CudaStatus)> {
    CudaStatus::of_call(device::get_device_count())
}

/// Waits until every stream of the current device is idle; returns the status (the error of
/// a failed kernel shows here).
#[pyfunction(name = "cudaDeviceSynchronize")]
pub fn cuda_device_synchronize(py: Python<'_>) -> PyResult<Status> {
    status(device::device_synchronize(py))
}

/// (free, total, status) in bytes for the current device.
#[pyfunction(name = "cudaMemGetInfo")]
pub fn cuda_mem_get_info() -> PyResult<(usize, usize, CudaStatus)> {
    let ((free, total), status) = CudaStatus::of_call(super::memory::mem_get_info())?;
    Ok((free, total, status))
}

/// (value, status) of a device attribute given by its CUdevice_attribute number.
#[pyfunction(name = "cudaDeviceGetAttribute")]
pub fn cuda_device_get_attribute(attr: i32, device: i32) -> PyResult<(i32, CudaStatus)> {
    CudaStatus::of_call(device::device_get_attribute(attr, device))
}

/// (version, status): the CUDA version the driver supports, as 1000 * major + 10 * minor.
#[pyfunction(name = "cudaDriverGetVersion")]
pub fn cuda_driver_get_version() -> PyResult<(i32, CudaStatus)> {
    CudaStatus::of_call(device::driver_get_version())
}

/// (value, status) of a resource limit (a CUlimit number) of the current device.
#[pyfunction(name = "cudaDeviceGetLimit")]
pub fn cuda_device_get_limit(limit: i32) -> PyResult<(usize, CudaStatus)> {
    CudaStatus::of_call(device::device_get_limit(limit))
}

#[pyfunction(name = "cudaDeviceSetLimit")]
pub fn cuda_device_set_limit(limit: i32, value: usize) -> PyResult<Status> {
    status(device::device_set_limit(limit, value))
}

/// (version, status): the current context's API version (cuCtxGetApiVersion, 3020 on CUDA 12).
#[pyfunction(name = "cuCtxGetApiVersion")]
pub fn cu_ctx_get_api_version() -> PyResult<(u32, CudaStatus)> {
    CudaStatus::of_call(device::ctx_get_api_version())
}

/// (config, status): the current device's preferred L1/shared split (a CUfunc_cache number).
#[pyfunction(name = "cudaDeviceGetCacheConfig")]
pub fn cuda_device_get_cache_config() -> PyResult<(i32, CudaStatus)> {
    CudaStatus::of_call(device::device_get_cache_config())
}

#[pyfunction(name = "cudaDeviceSetCacheConfig")]
pub fn cuda_device_set_cache_config(config: i32) -> PyResult<Status> {
    status(device::device_set_cache_config(config))
}

/// (1 or 0, status): whether `device` can address memory of `peer` directly.
#[pyfunction(name = "cudaDeviceCanAccessPeer")]
pub fn cuda_device_can_access_peer(device: i32, peer: i32) -> PyResult<(i32, CudaStatus)> {
    let (can, status) = CudaStatus::of_call(device::device_can_access_peer(device, peer))?;
    Ok((i32::from(can), status))
}

/// Lets the current device address `peer_device`'s memory directly (flags must be 0); returns
/// the status.
#[pyfunction(name = "cudaDeviceEnablePeerAccess")]
#[pyo3(signature = (peer_device, flags = 0))]
pub fn cuda_device_enable_peer_access(peer_device: i32, flags: u32) -> PyResult<Status> {
    status(peer::device_enable_peer_access(peer_device, flags))
}

/// Stops the current device addressing `peer_device`'s memory directly; returns the status.
#[pyfunction(name = "cudaDeviceDisablePeerAccess")]
pub fn cuda_device_disable_peer_access(peer_device: i32) -> PyResult<Status> {
    status(peer::device_disable_peer_access(peer_device))
}

/// Copies `count` bytes from `src` on `src_device` to `dst` on `dst_device`, waiting for it.
#[pyfunction(name = "cudaMemcpyPeer")]
pub fn cuda_memcpy_peer(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    dst_device: i32,
    src: &Bound<'_, PyAny>,
    src_device: i32,
    count: isize,
) -> PyResult<Status> {
    status(peer::memcpy_peer(py, dst, dst_device, src, src_device, count))
}

/// The same, ordered on `stream` (of the current device; None: the legacy default stream).
#[pyfunction(name = "cudaMemcpyPeerAsync")]
#[pyo3(signature = (dst, dst_device, src, src_device, count, stream = None))]
pub fn cuda_memcpy_peer_async(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    dst_device: i32,
    src: &Bound<'_, PyAny>,
    src_device: i32,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<Status> {
    status(peer::memcpy_peer_async(py, dst, dst_device, src, src_device, count, stream))
}

/// Waits for the stream's work (with the GIL released); returns the status.
#[pyfunction(name = "cudaStreamSynchronize")]
#[pyo3(signature = (stream = None))]
pub fn cuda_stream_synchronize(py: Python<'_>, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Status> {
    status(stream::stream_synchronize(py, stream))
}

/// cudaSuccess when the stream is idle, cudaErrorNotReady (600) while work is pending.
#[pyfunction(name = "cudaStreamQuery")]
#[pyo3(signature = (stream = None))]
pub fn cuda_stream_query(stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Status> {
    query_status(stream::stream_query(stream))
}

/// Destroys `stream` now (work queued on it still completes; it is also destroyed with the
/// object); returns the status.
#[pyfunction(name = "cudaStreamDestroy")]
pub fn cuda_stream_destroy(stream: &Bound<'_, CudaStream>) -> PyResult<Status> {
    status(stream::stream_destroy(stream))
}

/// Records `event` on `stream` (None: the default stream): it completes when the work queued
/// there before it has; returns the status.
#[pyfunction(name = "cudaEventRecord")]
#[pyo3(signature = (event, stream = None))]
pub fn cuda_event_record(event: &Bound<'_, CudaEvent>, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Status> {
    status(event::event_record(event, stream))
}

/// Waits (with the GIL released) until `event` has completed; returns the status.
#[pyfunction(name = "cudaEventSynchronize")]
pub fn cuda_event_synchronize(py: Python<'_>, event: &Bound<'_, CudaEvent>) -> PyResult<Status> {
    status(event::event_synchronize(py, event))
}

/// cudaSuccess when `event` has completed, cudaErrorNotReady (600) while work before it is
/// pending; never waits.
#[pyfunction(name = "cudaEventQuery")]
pub fn cuda_event_query(event: &Bound<'_, CudaEvent>) -> PyResult<Status> {
    query_status(event::event_query(event))
}

/// (milliseconds, status) between two recorded events.
#[pyfunction(name = "cudaEventElapsedTime")]
pub fn cuda_event_elapsed_time(
    start: &Bound<'_, CudaEvent>,
    end: &Bound<'_, CudaEvent>,
) -> PyResult<(f32, CudaStatus)> {
    CudaStatus::of_call(event::event_elapsed_time(start, end))
}

/// Destroys `event` now (it is also destroyed with the object); returns the status.
#[pyfunction(name = "cudaEventDestroy")]
pub fn cuda_event_destroy(event: &Bound<'_, CudaEvent>) -> PyResult<Status> {
    status(event::event_destroy(event))
}

/// Makes work queued on `stream` after this call wait until `event` completes, without
/// blocking the host (flags must be 0); returns the status.
#[pyfunction(name = "cudaStreamWaitEvent")]
#[pyo3(signature = (stream, event, flags = 0))]
pub fn cuda_stream_wait_event(
    stream: Option<&Bound<'_, CudaStream>>,
    event: &Bound<'_, CudaEvent>,
    flags: u32,
) -> PyResult<Status> {
    status(event::stream_wait_event(stream, event, flags))
}

/// Returns and clears the last error of a runtime call on this thread.
#[pyfunction(name = "cudaGetLastError")]
pub fn cuda_get_last_error() -> CudaStatus {
    take_last_error(true)
}

/// Returns the last error without clearing it.
#[pyfunction(name = "cudaPeekAtLastError")]
pub fn cuda_peek_at_last_error() -> CudaStatus {
    take_last_error(false)
}

fn status_of(error: &Bound<'_, PyAny>) -> PyResult<CudaStatus> {
    if let Ok(s) = error.cast::<CudaStatus>() {
        return Ok(s.get().clone());
    }
    match error.extract::<i64>() {
        Err(e) if must_propagate(error.py(), &e) => return Err(e),
        // Not an integer at all; an int too large even for i64 falls to the range check below.
        Err(e) if !e.is_instance_of::<pyo3::exceptions::PyOverflowError>(error.py()) => {}
        _ => {
            let code = error.extract::<i32>().map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "error code {error} is out of range: cudaError codes are 32-bit ints (e.g. 2 or cudaError(2))"
                ))
            })?;
            return Ok(CudaStatus::from_code(code));
        }
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected a cudaError or an int error code, got {}",
        error.get_type().name()?
    )))
}

/// The name of an error code or cudaError status, e.g. "cudaErrorInvalidValue".
#[pyfunction(name = "cudaGetErrorName")]
pub fn cuda_get_error_name(error: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = status_of(error)?;
    Ok(error_name(active_kind(), s.code()))
}

/// The description of an error code or cudaError status, e.g. "invalid argument".
#[pyfunction(name = "cudaGetErrorString")]
pub fn cuda_get_error_string(error: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = status_of(error)?;
    Ok(error_string(active_kind(), s.code()))
}

fn active_kind() -> BackendKind {
    runtime::active_backend().map_or(BackendKind::Cuda, |b| b.kind())
}
