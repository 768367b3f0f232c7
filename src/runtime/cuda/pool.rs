//! Stream-ordered allocation from each device's default memory pool (cuMemAllocAsync).

use super::*;

impl CudaBackend {
    pub(super) fn cuda_pool_malloc(&self, bytes: usize, s: StreamHandle) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        self.ensure_context()?;
        if self.memory_pool(self.get_device()?)?.is_none() {
            return self.malloc(bytes);
        }
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; a context is current and the stream is the caller's.
        check(unsafe { (self.api.cuMemAllocAsync)(&mut ptr, bytes, stream(Some(s))) })?;
        Ok(ptr)
    }

    pub(super) unsafe fn cuda_pool_free(&self, ptr: DevicePtr, device: i32, s: StreamHandle) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        if self.memory_pool(device)?.is_none() {
            // SAFETY: without pools, pool_malloc was malloc; the caller hands the block over.
            return unsafe { self.free(ptr) };
        }
        // In the block's own context, so the free is ordered on that device's stream.
        self.in_device_context(device, || {
            if self.unordered_streams.load(Ordering::Acquire) {
                // Work on a non-blocking stream may still use the block: wait for it.
                // SAFETY: the device's context is current.
                check(unsafe { (self.api.cuCtxSynchronize)() })?;
            }
            // SAFETY: ptr came from cuMemAllocAsync on this device and nothing queued later uses it.
            check(unsafe { (self.api.cuMemFreeAsync)(ptr, stream(Some(s))) })
        })
    }

    pub(super) fn cuda_pool_trim(&self, device: i32) -> Result<()> {
        let Some(pool) = self.memory_pool(device)? else {
            return Ok(());
        };
        self.in_device_context(device, || {
            // Frees still queued are released only once the device has reached them.
            // SAFETY: a context is current.
            check(unsafe { (self.api.cuCtxSynchronize)() })?;
            // SAFETY: pool is the device's default pool, which lives as long as the context.
            check(unsafe { (self.api.cuMemPoolTrimTo)(pool, 0) })
        })
    }

    pub(super) fn cuda_pool_reserved_bytes(&self, device: i32) -> Result<Option<usize>> {
        let Some(pool) = self.memory_pool(device)? else {
            return Ok(None);
        };
        let mut reserved: u64 = 0;
        // SAFETY: the attribute is a cuuint64_t, which reserved is.
        check(unsafe {
            (self.api.cuMemPoolGetAttribute)(
                pool,
                CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                (&mut reserved as *mut u64).cast(),
            )
        })?;
        Ok(Some(usize::try_from(reserved).unwrap_or(usize::MAX)))
    }
}
