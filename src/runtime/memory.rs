//! Owned device and page-locked host memory: released exactly once, when dropped.

use super::{backend, error::record_error, Backend, DevicePtr, Result};

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
