//! Host memory the device can reach: page-locked allocations (with `CU_MEMHOSTALLOC_*`
//! flags), existing memory page-locked in place (registered), and their device addresses.
//! On the host backend all of it is ordinary host memory.

use crate::runtime::{DevicePtr, Result};

/// `CU_MEMHOSTALLOC_*` / `CU_MEMHOSTREGISTER_*` flags (the same numbers in HIP).
pub const HOST_ALLOC_PORTABLE: u32 = 0x1;
pub const HOST_ALLOC_DEVICEMAP: u32 = 0x2;
pub const HOST_ALLOC_WRITECOMBINED: u32 = 0x4;
pub const HOST_REGISTER_READ_ONLY: u32 = 0x8;

pub trait HostMemory {
    /// Page-locked host memory, portable to every device's context (`cudaMallocHost`).
    fn host_alloc(&self, bytes: usize) -> Result<*mut u8>;
    /// # Safety
    /// `ptr` came from `host_alloc` (or `host_alloc_flags`) of this backend and nothing uses it afterwards.
    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()>;
    /// Page-locked host memory with `CU_MEMHOSTALLOC_*` flags (PORTABLE 1, DEVICEMAP 2,
    /// WRITECOMBINED 4).
    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8>;
    /// The device address of mapped page-locked host memory (`cuMemHostGetDevicePointer`).
    fn host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr>;
    /// Page-locks (and maps) existing host memory (`cuMemHostRegister`, CU_MEMHOSTREGISTER_* flags).
    /// # Safety
    /// `ptr` is valid for `bytes` until `host_unregister`.
    unsafe fn host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()>;
    /// # Safety
    /// `ptr` was registered by `host_register` and no copy or kernel uses it any more.
    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<()>;
}
