//! Devices through the driver: the current device (its primary context made current), each
//! device's properties (read from its attributes once), and the primary context's settings.

use super::*;

impl CudaBackend {
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

impl Devices for CudaBackend {
    fn device_count(&self) -> Result<i32> {
        check(self.init_status)?;
        Ok(self.primary.len() as i32)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        let ctx = self.primary_context(device)?;
        // SAFETY: ctx is a retained primary context.
        check(unsafe { (self.api.cuCtxSetCurrent)(ctx) })
    }

    fn get_device(&self) -> Result<i32> {
        check(self.init_status)?;
        let mut ctx: CUcontext = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuCtxGetCurrent)(&mut ctx) })?;
        if ctx.is_null() {
            return Ok(0);
        }
        Ok(self.context_device(ctx)?.0)
    }

    fn launch_device(&self) -> Result<i32> {
        check(self.init_status)?;
        let ctx = self.ensure_context()?;
        Ok(self.context_device(ctx)?.0)
    }

    fn device_synchronize(&self) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: a context is current.
        activity::noted(ActivityKind::Synchronize, 0, 0, || check(unsafe { (self.api.cuCtxSynchronize)() }))
    }

    /// The properties of `device`, asked of the driver on the first call only.
    fn device_properties(&self, device: i32) -> Result<DeviceProperties> {
        check(self.init_status)?;
        let slot = usize::try_from(device).ok().and_then(|d| self.properties.get(d));
        if let Some(cached) = slot.and_then(OnceLock::get) {
            return Ok(cached.clone());
        }
        let properties = self.read_device_properties(device)?;
        // Two threads may both read; either's answer is the same.
        Ok(slot.map_or(&properties, |s| s.get_or_init(|| properties.clone())).clone())
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        self.ensure_context()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers; a context is current.
        check(unsafe { (self.api.cuMemGetInfo_v2)(&mut free, &mut total) })?;
        Ok((free, total))
    }

    fn driver_version(&self) -> Result<i32> {
        let mut version: c_int = 0;
        // SAFETY: valid out-pointer; needs no cuInit.
        check(unsafe { (self.api.cuDriverGetVersion)(&mut version) })?;
        Ok(version)
    }

    fn device_attribute(&self, device: i32, attribute: i32) -> Result<i32> {
        check(self.init_status)?;
        let mut dev: CUdevice = 0;
        // SAFETY: valid out-pointer; the driver validates the ordinal.
        check(unsafe { (self.api.cuDeviceGet)(&mut dev, device) })?;
        let mut value: c_int = 0;
        // SAFETY: valid out-pointer; the driver rejects unknown attributes with INVALID_VALUE.
        check(unsafe { (self.api.cuDeviceGetAttribute)(&mut value, attribute, dev) })?;
        Ok(value)
    }

    fn context_get_limit(&self, limit: i32) -> Result<usize> {
        self.ensure_context()?;
        let mut value: usize = 0;
        // SAFETY: valid out-pointer; a context is current; the driver validates the limit.
        check(unsafe { (self.api.cuCtxGetLimit)(&mut value, limit) })?;
        Ok(value)
    }

    fn context_set_limit(&self, limit: i32, value: usize) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: a context is current; the driver validates limit and value.
        check(unsafe { (self.api.cuCtxSetLimit)(limit, value) })
    }

    fn context_api_version(&self) -> Result<u32> {
        self.ensure_context()?;
        let mut version: c_uint = 0;
        // SAFETY: valid out-pointer; a null context asks about the current one, which exists.
        check(unsafe { (self.api.cuCtxGetApiVersion)(null_mut(), &mut version) })?;
        Ok(version)
    }

    fn context_get_cache_config(&self) -> Result<i32> {
        self.ensure_context()?;
        let mut config: c_int = 0;
        // SAFETY: valid out-pointer; a context is current.
        check(unsafe { (self.api.cuCtxGetCacheConfig)(&mut config) })?;
        Ok(config)
    }

    fn context_set_cache_config(&self, config: i32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: a context is current; the driver validates the configuration.
        check(unsafe { (self.api.cuCtxSetCacheConfig)(config) })
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> Result<bool> {
        check(self.init_status)?;
        let (mut dev, mut peer_dev): (CUdevice, CUdevice) = (0, 0);
        // SAFETY: valid out-pointers; the driver validates the ordinals.
        check(unsafe { (self.api.cuDeviceGet)(&mut dev, device) })?;
        // SAFETY: as above.
        check(unsafe { (self.api.cuDeviceGet)(&mut peer_dev, peer) })?;
        let mut can: c_int = 0;
        // SAFETY: valid out-pointer and device handles.
        check(unsafe { (self.api.cuDeviceCanAccessPeer)(&mut can, dev, peer_dev) })?;
        Ok(can != 0)
    }
}
