//! pygpu: GPU control from Python over the CUDA, HIP and host backends.
//! The Rust API is `runtime`; the Python module `pygpu._pygpu` is declared below, in one
//! export list that is the whole compiled Python surface.

pub mod python;
pub mod runtime;

use pyo3::prelude::*;

#[pymodule]
mod _pygpu {
    use pyo3::prelude::*;

    #[pymodule_export]
    use crate::python::activity::{activity_clock_ns, activity_record_range, activity_start, activity_stop};
    #[pymodule_export]
    use crate::python::array::{
        DeviceArrayComplex128, DeviceArrayComplex64, DeviceArrayFloat32, DeviceArrayFloat64, DeviceArrayInt16,
        DeviceArrayInt32, DeviceArrayInt64, DeviceArrayUint16, DeviceArrayUint32, DeviceArrayUint64,
    };
    #[pymodule_export]
    use crate::python::buffer::raw_memory_dtype;
    #[pymodule_export]
    use crate::python::capabilities::{capabilities, Capabilities};
    #[pymodule_export]
    use crate::python::compiler::{rtc_compile, rtc_supported_archs, rtc_version};
    #[pymodule_export]
    use crate::python::device::{
        backend_name, device_synchronize, get_device, get_device_count, set_backend, set_device, CudaDeviceProp,
    };
    #[pymodule_export]
    use crate::python::errors::CudaStatus;
    #[pymodule_export]
    use crate::python::event::{
        event_elapsed_time, event_query, event_record, event_synchronize, stream_wait_event, CudaEvent,
    };
    #[pymodule_export]
    use crate::python::graph::{Graph, GraphExec, GraphNode};
    #[pymodule_export]
    use crate::python::kernel_declaration::KernelParameter;
    #[pymodule_export]
    use crate::python::memory::{allocation_extent, host_span_is_mapped, is_device_memory, AllocationExport};
    #[pymodule_export]
    use crate::python::memory::{
        mem_alloc, mem_get_info, memcpy_dtod, memcpy_dtoh, memcpy_htod, memset_d16, memset_d32, memset_d8, pool_alloc,
        DeviceAllocation, HostAllocation,
    };
    #[pymodule_export]
    use crate::python::memory_pool::{get_default_memory_pool, MemoryPool};
    #[pymodule_export]
    use crate::python::module::{Function, Module};
    #[pymodule_export]
    use crate::python::ptr_wrapper::{
        PointerWrapperComplex128, PointerWrapperComplex64, PointerWrapperFloat32, PointerWrapperFloat64,
        PointerWrapperInt16, PointerWrapperInt32, PointerWrapperInt64, PointerWrapperUint16, PointerWrapperUint32,
        PointerWrapperUint64,
    };
    #[pymodule_export]
    use crate::python::status_api::{
        cu_ctx_get_api_version, cuda_device_can_access_peer, cuda_device_disable_peer_access,
        cuda_device_enable_peer_access, cuda_device_get_attribute, cuda_device_get_cache_config, cuda_device_get_limit,
        cuda_device_set_cache_config, cuda_device_set_limit, cuda_device_synchronize, cuda_driver_get_version,
        cuda_event_destroy, cuda_event_elapsed_time, cuda_event_query, cuda_event_record, cuda_event_synchronize,
        cuda_get_device, cuda_get_device_count, cuda_get_error_name, cuda_get_error_string, cuda_get_last_error,
        cuda_mem_get_info, cuda_memcpy_peer, cuda_memcpy_peer_async, cuda_peek_at_last_error, cuda_set_device,
        cuda_stream_destroy, cuda_stream_query, cuda_stream_synchronize, cuda_stream_wait_event,
    };
    #[pymodule_export]
    use crate::python::stream::{stream_query, stream_synchronize, CudaStream};

    #[pymodule_export]
    use crate::python::array::dlpack::{dlpack_capsule, dlpack_from_capsule, DLPackTensor};
    #[pymodule_export]
    use crate::python::bundled_sources::bundled_kernel_sources;
    #[pymodule_export]
    use crate::python::device::{
        ctx_get_api_version, device_attributes, device_can_access_peer, device_get_attribute, device_get_cache_config,
        device_get_limit, device_set_cache_config, device_set_limit, driver_get_version,
    };
    #[pymodule_export]
    use crate::python::device_memory_pool::{DeviceMemoryPool, PooledDeviceAllocation};
    #[pymodule_export]
    use crate::python::host_registration::RegisteredHostMemory;
    #[pymodule_export]
    use crate::python::interop::{event_record_raw, stream_wait_event_raw};
    #[pymodule_export]
    use crate::python::ipc::{mem_get_ipc_handle, IPCMemoryHandle};
    #[pymodule_export]
    use crate::python::managed::ManagedAllocation;
    #[pymodule_export]
    use crate::python::page_locked_pool::{PageLockedMemoryPool, PooledHostAllocation};
    #[pymodule_export]
    use crate::python::peer::{device_disable_peer_access, device_enable_peer_access, memcpy_peer, memcpy_peer_async};
    #[pymodule_export]
    use crate::python::pitched_copy::memcpy_pitched;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        crate::python::errors::register(m)?;
        crate::python::array_storage::register(m)?;
        crate::python::prepared_call::install(&m.getattr("Function")?)
    }
}
