//! Device control with PyGPU's names: calls return the status object (and their value
//! first, as PyGPU does); only a missing backend raises.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyTuple};

use super::errors::{take_last_error, CudaStatus, Status};
use crate::runtime::{self, backend, error::error_name, error::error_string, DeviceProperties};

/// Chooses the backend ("cuda", "hip" or "host") before the first GPU call.
#[pyfunction]
pub fn set_backend(name: &str) -> PyResult<()> {
    Ok(runtime::set_backend(name)?)
}

/// The name of the backend in use, starting it if needed.
#[pyfunction(name = "backend")]
pub fn backend_name() -> PyResult<&'static str> {
    Ok(backend()?.kind().name())
}

/// Makes `device` (an ordinal from 0) the calling thread's current device; returns the status
/// (cudaErrorInvalidDevice for an ordinal that does not exist).
#[pyfunction(name = "cudaSetDevice")]
pub fn cuda_set_device(device: i32) -> PyResult<Status> {
    CudaStatus::from_result(&backend()?.set_device(device)).map(Status)
}

/// cudaGetDevice's successful results for the first devices, made once: a tuple is immutable,
/// and building one per call was a quarter of the call (launch-bound code asks often).
static CURRENT_DEVICE_RESULTS: [PyOnceLock<Py<PyTuple>>; 16] = [const { PyOnceLock::new() }; 16];

/// (device, status): the calling thread's current device ordinal.
#[pyfunction(name = "cudaGetDevice")]
pub fn cuda_get_device(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    let result = backend()?.get_device();
    if let Ok(device) = result {
        if let Some(slot) = usize::try_from(device).ok().and_then(|d| CURRENT_DEVICE_RESULTS.get(d)) {
            let made = slot.get_or_try_init(py, || {
                Ok::<_, PyErr>((device, Status(CudaStatus::SUCCESS)).into_pyobject(py)?.unbind())
            })?;
            return Ok(made.bind(py).clone());
        }
    }
    (*result.as_ref().unwrap_or(&0), Status(CudaStatus::from_result(&result)?)).into_pyobject(py)
}

/// (count, status): how many devices the backend sees (the host backend: 1).
#[pyfunction(name = "cudaGetDeviceCount")]
pub fn cuda_get_device_count() -> PyResult<(i32, CudaStatus)> {
    let result = backend()?.device_count();
    Ok((*result.as_ref().unwrap_or(&0), CudaStatus::from_result(&result)?))
}

/// Waits until every stream of the current device is idle; returns the status (the error of
/// a failed kernel shows here).
#[pyfunction(name = "cudaDeviceSynchronize")]
pub fn cuda_device_synchronize(py: Python<'_>) -> PyResult<Status> {
    let b = backend()?;
    let result = py.detach(|| b.device_synchronize());
    CudaStatus::from_result(&result).map(Status)
}

/// (free, total, status) in bytes for the current device.
#[pyfunction(name = "cudaMemGetInfo")]
pub fn cuda_mem_get_info() -> PyResult<(usize, usize, CudaStatus)> {
    let result = backend()?.mem_get_info();
    let (free, total) = *result.as_ref().unwrap_or(&(0, 0));
    Ok((free, total, CudaStatus::from_result(&result)?))
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
        Err(e) if crate::python::errors::must_propagate(error.py(), &e) => return Err(e),
        Err(_) => {}
        Ok(_) => {
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

fn active_kind() -> runtime::BackendKind {
    runtime::active_backend().map_or(runtime::BackendKind::Cuda, |b| b.kind())
}

/// A device's properties, read when constructed; CUDA's field names.
#[pyclass(name = "cudaDeviceProp", module = "pygpu", frozen)]
pub struct CudaDeviceProp {
    /// The device ordinal.
    #[pyo3(get)]
    device: i32,
    /// The device's name.
    #[pyo3(get)]
    name: String,
    /// The device's 16-byte UUID.
    #[pyo3(get)]
    uuid: Py<PyBytes>,
    /// The PCI bus number.
    #[pyo3(get, name = "pciBusID")]
    pci_bus_id: i32,
    /// The PCI device number.
    #[pyo3(get, name = "pciDeviceID")]
    pci_device_id: i32,
    /// The PCI domain number.
    #[pyo3(get, name = "pciDomainID")]
    pci_domain_id: i32,
    /// Global memory in bytes.
    #[pyo3(get, name = "totalGlobalMem")]
    total_global_mem: usize,
    /// The compute capability's major number.
    #[pyo3(get)]
    major: i32,
    /// The compute capability's minor number.
    #[pyo3(get)]
    minor: i32,
    /// The number of multiprocessors (SMs; CUs on AMD).
    #[pyo3(get, name = "multiProcessorCount")]
    multi_processor_count: i32,
}

#[pymethods]
impl CudaDeviceProp {
    #[new]
    fn new(py: Python<'_>, device: i32) -> PyResult<Self> {
        let p: DeviceProperties = backend()?.device_properties(device)?;
        Ok(CudaDeviceProp {
            device,
            name: p.name,
            uuid: PyBytes::new(py, &p.uuid).unbind(),
            pci_bus_id: p.pci_bus_id,
            pci_device_id: p.pci_device_id,
            pci_domain_id: p.pci_domain_id,
            total_global_mem: p.total_global_mem,
            major: p.major,
            minor: p.minor,
            multi_processor_count: p.multi_processor_count,
        })
    }

    /// (major, minor)
    #[getter]
    fn compute_capability(&self) -> (i32, i32) {
        (self.major, self.minor)
    }

    fn __repr__(&self) -> String {
        format!(
            "<cudaDeviceProp {}: {:?}, sm_{}{}, {} MiB>",
            self.device,
            self.name,
            self.major,
            self.minor,
            self.total_global_mem >> 20
        )
    }
}

/// (value, status) of a device attribute given by its CUdevice_attribute number.
#[pyfunction(name = "cudaDeviceGetAttribute")]
pub fn cuda_device_get_attribute(attr: i32, device: i32) -> PyResult<(i32, CudaStatus)> {
    let result = backend()?.device_attribute(device, attr);
    Ok((*result.as_ref().unwrap_or(&0), CudaStatus::from_result(&result)?))
}

/// Every attribute of `device` the backend reports, by CUdevice_attribute number; the ones
/// it does not know are left out (and, unlike cudaDeviceGetAttribute, leave no last error).
#[pyfunction]
pub fn device_attributes(device: i32) -> PyResult<std::collections::BTreeMap<i32, i32>> {
    let b = backend()?;
    b.device_properties(device)?;
    Ok((1..=crate::runtime::DEVICE_ATTRIBUTE_MAX)
        .filter_map(|a| b.device_attribute(device, a).ok().map(|v| (a, v)))
        .collect())
}

/// (version, status): the CUDA version the driver supports, as 1000 * major + 10 * minor.
#[pyfunction(name = "cudaDriverGetVersion")]
pub fn cuda_driver_get_version() -> PyResult<(i32, CudaStatus)> {
    let result = backend()?.driver_version();
    Ok((*result.as_ref().unwrap_or(&0), CudaStatus::from_result(&result)?))
}

/// (value, status) of a resource limit (a CUlimit number) of the current device.
#[pyfunction(name = "cudaDeviceGetLimit")]
pub fn cuda_device_get_limit(limit: i32) -> PyResult<(usize, CudaStatus)> {
    let result = backend()?.context_get_limit(limit);
    Ok((*result.as_ref().unwrap_or(&0), CudaStatus::from_result(&result)?))
}

/// (version, status): the current context's API version (cuCtxGetApiVersion, 3020 on CUDA 12).
#[pyfunction(name = "cuCtxGetApiVersion")]
pub fn cu_ctx_get_api_version() -> PyResult<(u32, CudaStatus)> {
    let result = backend()?.context_api_version();
    Ok((*result.as_ref().unwrap_or(&0), CudaStatus::from_result(&result)?))
}

#[pyfunction(name = "cudaDeviceSetLimit")]
pub fn cuda_device_set_limit(limit: i32, value: usize) -> PyResult<CudaStatus> {
    CudaStatus::from_result(&backend()?.context_set_limit(limit, value))
}

/// (config, status): the current device's preferred L1/shared split (a CUfunc_cache number).
#[pyfunction(name = "cudaDeviceGetCacheConfig")]
pub fn cuda_device_get_cache_config() -> PyResult<(i32, CudaStatus)> {
    let result = backend()?.context_get_cache_config();
    Ok((*result.as_ref().unwrap_or(&0), CudaStatus::from_result(&result)?))
}

#[pyfunction(name = "cudaDeviceSetCacheConfig")]
pub fn cuda_device_set_cache_config(config: i32) -> PyResult<CudaStatus> {
    CudaStatus::from_result(&backend()?.context_set_cache_config(config))
}

/// (1 or 0, status): whether `device` can address memory of `peer` directly.
#[pyfunction(name = "cudaDeviceCanAccessPeer")]
pub fn cuda_device_can_access_peer(device: i32, peer: i32) -> PyResult<(i32, CudaStatus)> {
    let result = backend()?.device_can_access_peer(device, peer);
    Ok((i32::from(*result.as_ref().unwrap_or(&false)), CudaStatus::from_result(&result)?))
}
