//! Owned device and page-locked host memory: released exactly once, when dropped.

use super::error::{record_error, CUDA_ERROR_MEMORY_ALLOCATION};
use super::{backend, Backend, DevicePtr, Error, Result};

/// Device memory from the active backend's `malloc`.
pub struct DeviceBuffer {
    ptr: DevicePtr,
    bytes: usize,
    device: i32,
    backend: &'static dyn Backend,
}

impl DeviceBuffer {
    pub fn new(bytes: usize) -> Result<Self> {
        let backend = backend()?;
        let device = backend.get_device()?;
        let ptr = backend.malloc(bytes)?;
        Ok(DeviceBuffer { ptr, bytes, device, backend })
    }

    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn device(&self) -> i32 {
        self.device
    }

    pub fn backend(&self) -> &'static dyn Backend {
        self.backend
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if super::in_forked_child() {
            return; // the parent owns the memory
        }
        // SAFETY: ptr came from this backend's malloc and is dropped exactly once.
        if let Err(e) = unsafe { self.backend.free(self.ptr) } {
            record_error(e.code());
        }
    }
}

/// Page-locked host memory (ordinary memory on the host backend).
pub struct PinnedBuffer {
    ptr: *mut u8,
    bytes: usize,
    backend: &'static dyn Backend,
}

// SAFETY: the buffer is plain memory owned by this value; the backend is Sync.
unsafe impl Send for PinnedBuffer {}
// SAFETY: shared access only hands out the address; writes go through raw pointers
// whose synchronisation is the user's (as with any numpy array).
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    pub fn new(bytes: usize) -> Result<Self> {
        let backend = backend()?;
        // More page-locked memory than the machine has can never be pinned, and asking the
        // driver for it gets the process killed by the kernel's OOM killer, not an error.
        if bytes > physical_memory() {
            return Err(Error::api(CUDA_ERROR_MEMORY_ALLOCATION, backend.kind()));
        }
        let ptr = backend.host_alloc(bytes)?;
        Ok(PinnedBuffer { ptr, bytes, backend })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if super::in_forked_child() {
            return;
        }
        // SAFETY: ptr came from this backend's host_alloc and is dropped exactly once.
        if let Err(e) = unsafe { self.backend.host_free(self.ptr) } {
            record_error(e.code());
        }
    }
}

/// The machine's physical memory in bytes.
pub fn physical_memory() -> usize {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages > 0 && page_size > 0 {
        (pages as usize).saturating_mul(page_size as usize)
    } else {
        1 << 34
    }
}
