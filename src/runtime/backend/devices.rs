//! Devices: how many there are, which one is current on this thread, what each is, and the
//! settings of its primary context (limits, cache preference).

use crate::runtime::Result;

#[derive(Debug, Clone, PartialEq)]
pub struct DeviceProperties {
    pub name: String,
    pub uuid: [u8; 16],
    pub pci_bus_id: i32,
    pub pci_device_id: i32,
    pub pci_domain_id: i32,
    pub total_global_mem: usize,
    pub major: i32,
    pub minor: i32,
    pub multi_processor_count: i32,
}

/// The highest `CUdevice_attribute` number of CUDA 12.8 (`CU_DEVICE_ATTRIBUTE_MAX` is 144).
pub const DEVICE_ATTRIBUTE_MAX: i32 = 143;

/// A current device per host thread, as the CUDA runtime keeps it; the `context_*` calls act
/// on the current device's primary context.
pub trait Devices {
    fn device_count(&self) -> Result<i32>;
    fn set_device(&self, device: i32) -> Result<()>;
    fn get_device(&self) -> Result<i32>;
    /// The current device for a kernel launch: as `get_device`, but where the thread has no
    /// context current yet, device 0's primary one is made current first (as the runtime's
    /// first call on a thread does), so that `launch_kernel` finds one.
    fn launch_device(&self) -> Result<i32> {
        self.get_device()
    }
    fn device_synchronize(&self) -> Result<()>;
    fn device_properties(&self, device: i32) -> Result<DeviceProperties>;
    /// Any device attribute, by its `CUdevice_attribute` number.
    fn device_attribute(&self, device: i32, attribute: i32) -> Result<i32>;
    /// (free, total) bytes of the current device.
    fn mem_get_info(&self) -> Result<(usize, usize)>;
    /// The CUDA version the driver supports, encoded as CUDA does (1000 * major + 10 * minor).
    fn driver_version(&self) -> Result<i32>;
    /// Whether `device` can address memory of `peer` directly (`cuDeviceCanAccessPeer`): a
    /// question about two devices, answered also where the backend cannot enable the access
    /// (`Backend::peer_access`).
    fn device_can_access_peer(&self, device: i32, peer: i32) -> Result<bool>;

    /// A resource limit of the current device's context (`cuCtxGetLimit`, a CUlimit number).
    fn context_get_limit(&self, limit: i32) -> Result<usize>;
    fn context_set_limit(&self, limit: i32, value: usize) -> Result<()>;
    /// The current device's preferred L1/shared split (`cuCtxGetCacheConfig`, a CUfunc_cache).
    fn context_get_cache_config(&self) -> Result<i32>;
    fn context_set_cache_config(&self, config: i32) -> Result<()>;
    /// The current context's API version (`cuCtxGetApiVersion`, e.g. 3020).
    fn context_api_version(&self) -> Result<u32>;
}
