//! Devices on the host backend: `PYGPU_HOST_DEVICES` of them, all the same CPU, each with its
//! own recorded context settings.

use super::*;

impl Devices for HostBackend {
    fn device_count(&self) -> Result<i32> {
        Ok(self.device_count)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        if !(0..self.device_count).contains(&device) {
            return Err(Self::err(CUDA_ERROR_INVALID_DEVICE));
        }
        CURRENT_DEVICE.with(|d| d.set(device));
        Ok(())
    }

    fn get_device(&self) -> Result<i32> {
        Ok(CURRENT_DEVICE.with(|d| d.get()))
    }

    fn device_synchronize(&self) -> Result<()> {
        if activity::recording() {
            activity::record_since(ActivityKind::Synchronize, activity::clock_ns(), 0, 0);
        }
        Ok(())
    }

    fn device_properties(&self, device: i32) -> Result<DeviceProperties> {
        if !(0..self.device_count).contains(&device) {
            return Err(Self::err(CUDA_ERROR_INVALID_DEVICE));
        }
        let mut uuid = [0u8; 16];
        uuid[15] = device as u8;
        Ok(DeviceProperties {
            name: "pygpu host backend (CPU)".to_string(),
            uuid,
            pci_bus_id: 0,
            pci_device_id: device,
            pci_domain_id: 0,
            total_global_mem: self.total_memory,
            // Programs expect a real number here (none expects a GPU below 1.0: Kernel Tuner
            // turns it into `arch=`), and gate features by it: 3.5's dynamic parallelism, which
            // the host does not run, must read as absent. Later capabilities' device code that
            // the host has (`_sync` warp functions, `__nanosleep`, ...) compiles regardless.
            major: HOST_COMPUTE_CAPABILITY.0,
            minor: HOST_COMPUTE_CAPABILITY.1,
            multi_processor_count: std::thread::available_parallelism().map_or(1, |n| n.get() as i32),
        })
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let used = self.state().allocated_bytes;
        Ok((self.total_memory.saturating_sub(used), self.total_memory))
    }

    fn driver_version(&self) -> Result<i32> {
        Ok(HOST_DRIVER_VERSION)
    }

    fn device_attribute(&self, device: i32, attribute: i32) -> Result<i32> {
        let props = self.device_properties(device)?;
        attributes::device_attribute(attribute, &props).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))
    }

    fn context_get_limit(&self, limit: i32) -> Result<usize> {
        let default = default_limit(limit).ok_or(Self::err(CUDA_ERROR_UNSUPPORTED_LIMIT))?;
        Ok(self.state().limits.get(&limit).copied().unwrap_or(default))
    }

    fn context_set_limit(&self, limit: i32, value: usize) -> Result<()> {
        default_limit(limit).ok_or(Self::err(CUDA_ERROR_UNSUPPORTED_LIMIT))?;
        // Recorded and reported back, as a GPU does; host kernels take their stacks and heap
        // from the process, so the values do not constrain them.
        self.state().limits.insert(limit, value);
        Ok(())
    }

    fn context_api_version(&self) -> Result<u32> {
        // What CUDA 12 drivers report: the context API has not changed since CUDA 3.2.
        Ok(3020)
    }

    fn context_get_cache_config(&self) -> Result<i32> {
        Ok(self.state().cache_config)
    }

    fn context_set_cache_config(&self, config: i32) -> Result<()> {
        if !(0..=3).contains(&config) {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        self.state().cache_config = config;
        Ok(())
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> Result<bool> {
        for d in [device, peer] {
            if !(0..self.device_count).contains(&d) {
                return Err(Self::err(CUDA_ERROR_INVALID_DEVICE));
            }
        }
        // All host devices share the process's memory; like CUDA, a device is not its own peer.
        Ok(device != peer)
    }
}

/// The CUDA version whose runtime semantics the host backend follows: that of the bindings
/// pygpu is built against (pygpu.driver.get_version()).
const HOST_DRIVER_VERSION: i32 = 12080;
/// The compute capability the host backend reports (see `device_properties`).
const HOST_COMPUTE_CAPABILITY: (i32, i32) = (3, 0);

/// A GPU's default for each CUlimit (CUDA's documented defaults), None for unknown limits.
fn default_limit(limit: i32) -> Option<usize> {
    Some(match limit {
        0 => 1024,    // STACK_SIZE
        1 => 1 << 20, // PRINTF_FIFO_SIZE
        2 => 8 << 20, // MALLOC_HEAP_SIZE
        3 => 2,       // DEV_RUNTIME_SYNC_DEPTH
        4 => 2048,    // DEV_RUNTIME_PENDING_LAUNCH_COUNT
        5 => 32,      // MAX_L2_FETCH_GRANULARITY
        6 => 0,       // PERSISTING_L2_CACHE_SIZE
        _ => return None,
    })
}
