//! Devices through the HIP runtime (hipSetDevice/hipGetDevice keep the current one per thread).

use super::*;

impl Devices for HipBackend {
    fn device_count(&self) -> Result<i32> {
        let mut count: c_int = 0;
        // SAFETY: valid out-pointer. With no AMD GPU this returns hipErrorNoDevice (100).
        check(unsafe { hipGetDeviceCount(&mut count) })?;
        Ok(count)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        // SAFETY: plain runtime call; the runtime validates the ordinal.
        check(unsafe { hipSetDevice(device) })
    }

    fn get_device(&self) -> Result<i32> {
        let mut device: c_int = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipGetDevice(&mut device) })?;
        Ok(device)
    }

    fn device_synchronize(&self) -> Result<()> {
        // SAFETY: plain runtime call on the calling thread's current device.
        check(unsafe { hipDeviceSynchronize() })
    }

    fn device_properties(&self, device: i32) -> Result<DeviceProperties> {
        let mut dev: hipDevice_t = 0;
        // SAFETY: valid out-pointer; the runtime validates the ordinal.
        check(unsafe { hipDeviceGet(&mut dev, device) })?;
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds 256 bytes, we pass one less than that so the last byte
        // stays 0 whatever the runtime writes.
        check(unsafe { hipDeviceGetName(name.as_mut_ptr(), (name.len() - 1) as c_int, dev) })?;
        // SAFETY: NUL-terminated within the buffer (its last byte is still 0).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut uuid = hipUUID { bytes: [0; 16] };
        // SAFETY: valid out-pointer to a 16-byte hipUUID.
        let uuid = match unsafe { hipDeviceGetUuid(&mut uuid, dev) } {
            0 => uuid.bytes.map(|b| b as u8),
            // Some devices/runtimes have no UUID to report; leave it zero as CUDA would
            // for a device without one, rather than failing the whole query.
            HIP_ERROR_NOT_SUPPORTED => [0; 16],
            code => return Err(Error::api(code, BackendKind::Hip)),
        };
        let mut total: usize = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipDeviceTotalMem(&mut total, dev) })?;
        use hipDeviceAttribute_t::*;
        Ok(DeviceProperties {
            name,
            uuid,
            pci_bus_id: self.attribute(hipDeviceAttributePciBusId, device)?,
            pci_device_id: self.attribute(hipDeviceAttributePciDeviceId, device)?,
            pci_domain_id: self.attribute(hipDeviceAttributePciDomainID, device)?,
            total_global_mem: total,
            major: self.attribute(hipDeviceAttributeComputeCapabilityMajor, device)?,
            minor: self.attribute(hipDeviceAttributeComputeCapabilityMinor, device)?,
            multi_processor_count: self.attribute(hipDeviceAttributeMultiprocessorCount, device)?,
        })
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers; applies to the current device.
        check(unsafe { hipMemGetInfo(&mut free, &mut total) })?;
        Ok((free, total))
    }

    fn driver_version(&self) -> Result<i32> {
        let mut version: c_int = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipDriverGetVersion(&mut version) })?;
        Ok(version)
    }

    fn device_attribute(&self, device: i32, attribute: i32) -> Result<i32> {
        match attributes::hip_attribute(attribute) {
            Some(hip) => self.attribute(hip, device),
            // No HIP counterpart: reported as the runtime reports what it does not support.
            None => Err(Error::api(HIP_ERROR_NOT_SUPPORTED, BackendKind::Hip)),
        }
    }

    fn context_get_limit(&self, limit: i32) -> Result<usize> {
        hip_limit(limit)?;
        let mut value: usize = 0;
        // SAFETY: valid out-pointer; the limit is one of hipLimit_t's (checked above).
        check(unsafe { hipDeviceGetLimit(&mut value, limit) })?;
        Ok(value)
    }

    fn context_get_cache_config(&self) -> Result<i32> {
        let mut config: c_int = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipDeviceGetCacheConfig(&mut config) })?;
        Ok(config)
    }

    fn context_set_cache_config(&self, config: i32) -> Result<()> {
        if !(0..=3).contains(&config) {
            return Err(Error::api(HIP_ERROR_INVALID_VALUE, BackendKind::Hip));
        }
        // SAFETY: config is one of hipFuncCache_t's values (checked above).
        check(unsafe { hipDeviceSetCacheConfig(config) })
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> Result<bool> {
        let mut can: c_int = 0;
        // SAFETY: valid out-pointer; the runtime validates the ordinals.
        check(unsafe { hipDeviceCanAccessPeer(&mut can, device, peer) })?;
        Ok(can != 0)
    }

    fn context_set_limit(&self, _limit: i32, _value: usize) -> Result<()> {
        // hipDeviceSetLimit is missing from ROCm 5.2's libamdhip64, which the hip feature links against.
        Err(self.unsupported("context limits"))
    }

    fn context_api_version(&self) -> Result<u32> {
        Err(self.unsupported("context API versions"))
    }
}

/// HIP has CUDA's first three limits (stack, printf FIFO, malloc heap) and no others.
fn hip_limit(limit: i32) -> Result<()> {
    if (0..=2).contains(&limit) {
        Ok(())
    } else {
        Err(Error::api(HIP_ERROR_NOT_SUPPORTED, BackendKind::Hip))
    }
}
