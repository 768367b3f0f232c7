//! Stream-ordered allocation from each device's default memory pool (cuMemAllocAsync).

use super::*;
use crate::runtime::block_cache::BlockCache;
use crate::runtime::error::CUDA_ERROR_MEMORY_ALLOCATION;
use crate::runtime::pool::size_class;
use crate::runtime::CUDA_STREAM_LEGACY;

impl CudaBackend {
    /// The driver's stream-ordered free, in the block's own context.
    /// # Safety
    /// `ptr` came from cuMemAllocAsync on `device` and nothing queued later uses it.
    unsafe fn free_to_driver_pool(&self, ptr: DevicePtr, device: i32, s: StreamHandle) -> Result<()> {
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
}

impl PooledMemory for CudaBackend {
    fn pool_malloc(&self, bytes: usize, s: StreamHandle) -> Result<(DevicePtr, u64)> {
        if bytes == 0 {
            return Ok((0, 0));
        }
        let (device, primary) = self.context_device(self.ensure_context()?)?;
        if self.memory_pool(device)?.is_none() {
            return Ok((self.malloc(bytes)?, BlockCache::NEVER));
        }
        let class = size_class(bytes).ok_or(Error::api(CUDA_ERROR_MEMORY_ALLOCATION, BackendKind::Cuda))?;
        activity::noted(ActivityKind::Alloc, 0, bytes as u64, || {
            // Only the primary context's legacy stream orders the cache's blocks (see block_cache).
            let ticket = if primary {
                if let Some(ptr) = self.block_cache.take(device, class) {
                    return Ok((ptr, self.block_cache.ticket()));
                }
                self.block_cache.ticket()
            } else {
                BlockCache::NEVER
            };
            let mut ptr: CUdeviceptr = 0;
            // SAFETY: valid out-pointer; a context is current and the stream is the caller's.
            check(unsafe { (self.api.cuMemAllocAsync)(&mut ptr, class, stream(Some(s))) })?;
            Ok((ptr, ticket))
        })
    }

    unsafe fn pool_free(&self, ptr: DevicePtr, bytes: usize, ticket: u64, device: i32, s: StreamHandle) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        if self.memory_pool(device)?.is_none() {
            // SAFETY: without pools, pool_malloc was malloc; the caller hands the block over.
            return unsafe { self.free(ptr) };
        }
        activity::noted(ActivityKind::Free, 0, bytes as u64, || {
            // pool_malloc allocated the class, so the class is what is cached.
            if size_class(bytes).is_some_and(|class| self.block_cache.keep(device, class, ptr, ticket)) {
                return Ok(());
            }
            // SAFETY: forwarded from the caller.
            unsafe { self.free_to_driver_pool(ptr, device, s) }
        })
    }

    fn pool_trim(&self, device: i32) -> Result<()> {
        let Some(pool) = self.memory_pool(device)? else {
            return Ok(());
        };
        while let Some(ptr) = self.block_cache.pop_idle(device) {
            // SAFETY: an idle cached block of this device, just removed from the cache: no one
            // holds it, and it is freed exactly once, on the legacy stream it was ordered on.
            unsafe { self.free_to_driver_pool(ptr, device, StreamHandle(CUDA_STREAM_LEGACY)) }?;
        }
        self.in_device_context(device, || {
            // Frees still queued are released only once the device has reached them.
            // SAFETY: a context is current.
            check(unsafe { (self.api.cuCtxSynchronize)() })?;
            // SAFETY: pool is the device's default pool, which lives as long as the context.
            check(unsafe { (self.api.cuMemPoolTrimTo)(pool, 0) })
        })
    }

    fn pool_note_unordered_stream(&self) -> Result<()> {
        self.note_unordered_streams()
    }

    fn pool_note_per_thread_stream(&self) {
        if !self.per_thread_stream_used.swap(true, Ordering::AcqRel) {
            self.block_cache.stream_opened();
        }
    }

    fn pool_reserved_bytes(&self, device: i32) -> Result<Option<usize>> {
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
