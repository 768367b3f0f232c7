//! Page-locked and registered host memory (cuMemHostAlloc, cuMemHostRegister), always
//! portable to every device's primary context.

use super::*;

impl HostMemory for CudaBackend {
    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        self.ensure_context()?;
        let mut ptr: *mut c_void = null_mut();
        // CU_MEMHOSTALLOC_PORTABLE: pinned for every context, as cudaMallocHost's memory is.
        // SAFETY: valid out-pointer.
        self.allocating_during_capture(|| check(unsafe { (self.api.cuMemHostAlloc)(&mut ptr, bytes.max(1), 0x1) }))?;
        Ok(ptr as *mut u8)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller hands over memory from host_alloc.
        check(unsafe { (self.api.cuMemFreeHost)(ptr as *mut c_void) })
    }

    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8> {
        self.ensure_context()?;
        let mut ptr: *mut c_void = null_mut();
        // PORTABLE is always added: with one primary context per device, memory pinned for
        // only the current one would be a trap when the current device changes.
        // SAFETY: valid out-pointer; the driver validates the flags.
        check(unsafe { (self.api.cuMemHostAlloc)(&mut ptr, bytes.max(1), flags | HOST_ALLOC_PORTABLE) })?;
        Ok(ptr as *mut u8)
    }

    fn host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr> {
        self.ensure_context()?;
        let mut device: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the driver checks that ptr is mapped page-locked memory.
        check(unsafe { (self.api.cuMemHostGetDevicePointer_v2)(&mut device, ptr as *mut c_void, 0) })?;
        Ok(device)
    }

    unsafe fn host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller vouches that ptr is valid for bytes until unregistered.
        check(unsafe { (self.api.cuMemHostRegister_v2)(ptr as *mut c_void, bytes, flags | HOST_ALLOC_PORTABLE) })
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller hands over a registration of ours; the driver rejects others.
        check(unsafe { (self.api.cuMemHostUnregister)(ptr as *mut c_void) })
    }
}
