//! Device control. These calls raise; `status_api` gives PyGPU's status-returning names
//! (`cudaSetDevice`, ...) over them.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::CallResult;
use super::int_args::int_in_range;
use crate::runtime::{self, backend, DeviceProperties};

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

/// Makes `device` (an ordinal from 0) the calling thread's current device.
#[pyfunction]
pub fn set_device(device: &Bound<'_, PyAny>) -> CallResult<()> {
    let device = int_in_range::<i32>(device, || "the device ordinal".to_string())?;
    Ok(backend()?.set_device(device)?)
}

/// The calling thread's current device ordinal.
#[pyfunction]
pub fn get_device() -> CallResult<i32> {
    Ok(backend()?.get_device()?)
}

/// How many devices the backend sees (the host backend: 1).
#[pyfunction]
pub fn get_device_count() -> CallResult<i32> {
    Ok(backend()?.device_count()?)
}

/// Waits (with the GIL released) until every stream of the current device is idle; the error
/// of a failed kernel shows here.
#[pyfunction]
pub fn device_synchronize(py: Python<'_>) -> CallResult<()> {
    let b = backend()?;
    Ok(py.detach(|| b.device_synchronize())?)
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

/// A device attribute given by its CUdevice_attribute number.
#[pyfunction]
pub fn device_get_attribute(attr: i32, device: i32) -> CallResult<i32> {
    Ok(backend()?.device_attribute(device, attr)?)
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

/// The CUDA version the driver supports, as 1000 * major + 10 * minor.
#[pyfunction]
pub fn driver_get_version() -> CallResult<i32> {
    Ok(backend()?.driver_version()?)
}

/// A resource limit (a CUlimit number) of the current device.
#[pyfunction]
pub fn device_get_limit(limit: i32) -> CallResult<usize> {
    Ok(backend()?.context_get_limit(limit)?)
}

/// Sets a resource limit (a CUlimit number) of the current device.
#[pyfunction]
pub fn device_set_limit(limit: i32, value: usize) -> CallResult<()> {
    Ok(backend()?.context_set_limit(limit, value)?)
}

/// The current context's API version (cuCtxGetApiVersion, 3020 on CUDA 12).
#[pyfunction]
pub fn ctx_get_api_version() -> CallResult<u32> {
    Ok(backend()?.context_api_version()?)
}

/// The current device's preferred L1/shared split (a CUfunc_cache number).
#[pyfunction]
pub fn device_get_cache_config() -> CallResult<i32> {
    Ok(backend()?.context_get_cache_config()?)
}

/// Sets the current device's preferred L1/shared split (a CUfunc_cache number).
#[pyfunction]
pub fn device_set_cache_config(config: i32) -> CallResult<()> {
    Ok(backend()?.context_set_cache_config(config)?)
}

/// Whether `device` can address memory of `peer` directly.
#[pyfunction]
pub fn device_can_access_peer(device: i32, peer: i32) -> CallResult<bool> {
    Ok(backend()?.device_can_access_peer(device, peer)?)
}
