//! Page-locked and registered host memory (hipHostMalloc, hipHostRegister), always portable.

use super::*;

impl HostMemory for HipBackend {
    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; at least one byte so the pointer is a real allocation.
        check(unsafe { hipHostMalloc(&mut ptr, bytes.max(1), HIP_HOST_MALLOC_PORTABLE) })?;
        Ok(ptr as *mut u8)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        // SAFETY: the caller hands over memory from host_alloc.
        check(unsafe { hipHostFree(ptr as *mut c_void) })
    }

    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8> {
        let mut ptr: *mut c_void = null_mut();
        // hipHostMalloc's Portable/Mapped/WriteCombined flags have CUDA's numbers.
        // SAFETY: valid out-pointer; the runtime validates the flags.
        check(unsafe { hipHostMalloc(&mut ptr, bytes.max(1), flags | HIP_HOST_MALLOC_PORTABLE) })?;
        Ok(ptr as *mut u8)
    }

    fn host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr> {
        let mut device: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; the runtime checks that ptr is mapped host memory.
        check(unsafe { hipHostGetDevicePointer(&mut device, ptr as *mut c_void, 0) })?;
        Ok(device as DevicePtr)
    }

    unsafe fn host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()> {
        // SAFETY: the caller vouches that ptr is valid for bytes until unregistered; the
        // hipHostRegister flags have CUDA's numbers.
        check(unsafe { hipHostRegister(ptr as *mut c_void, bytes, flags | HIP_HOST_MALLOC_PORTABLE) })
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<()> {
        // SAFETY: the caller hands over a registration of ours; the runtime rejects others.
        check(unsafe { hipHostUnregister(ptr as *mut c_void) })
    }
}
