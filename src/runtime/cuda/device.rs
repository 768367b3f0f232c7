//! A device's properties, read from its attributes.

use super::*;

impl CudaBackend {
    /// The properties of `device`, asked of the driver on the first call only.
    pub(super) fn cuda_device_properties(&self, device: i32) -> Result<DeviceProperties> {
        check(self.init_status)?;
        let slot = usize::try_from(device).ok().and_then(|d| self.properties.get(d));
        if let Some(cached) = slot.and_then(OnceLock::get) {
            return Ok(cached.clone());
        }
        let properties = self.read_device_properties(device)?;
        // Two threads may both read; either's answer is the same.
        Ok(slot.map_or(&properties, |s| s.get_or_init(|| properties.clone())).clone())
    }

    fn read_device_properties(&self, device: i32) -> Result<DeviceProperties> {
        let mut dev: CUdevice = 0;
        // SAFETY: valid out-pointer; the driver validates the ordinal.
        check(unsafe { (self.api.cuDeviceGet)(&mut dev, device) })?;
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds 256 bytes and the driver NUL-terminates within it.
        check(unsafe { (self.api.cuDeviceGetName)(name.as_mut_ptr(), name.len() as c_int, dev) })?;
        // SAFETY: NUL-terminated by the driver (and the last byte is still 0).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut uuid = CUuuid { bytes: [0; 16] };
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuDeviceGetUuid_v2)(&mut uuid, dev) })?;
        let mut total: usize = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuDeviceTotalMem_v2)(&mut total, dev) })?;
        use CUdevice_attribute::*;
        Ok(DeviceProperties {
            name,
            uuid: uuid.bytes.map(|b| b as u8),
            pci_bus_id: self.attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev)?,
            pci_device_id: self.attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev)?,
            pci_domain_id: self.attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev)?,
            total_global_mem: total,
            major: self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)?,
            minor: self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)?,
            multi_processor_count: self.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)?,
        })
    }
}
