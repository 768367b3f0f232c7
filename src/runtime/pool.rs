//! The caching device allocator behind GPUArray and everything else that allocates on the
//! user's behalf (explicit `mem_alloc` stays an ordinary cuMemAlloc, as in PyCUDA).
//!
//! A cuMemAlloc/cuMemFree pair per result costs more than a small kernel, and cuMemFree
//! waits for the device, so launches could not queue ahead. The backends keep the cache
//! (`PooledMemory::pool_malloc`/`pool_free`: CUDA's stream-ordered default memory pool, a
//! size-class cache on the host backend); this layer adds what is common: the byte
//! count in use, a limit, out-of-memory handling (trim the cache, retry once) and the
//! `PYGPU_MEMORY_POOL=0` switch that turns pooling off (for compute-sanitizer).
//!
//! Blocks are allocated and freed in order on the legacy default stream, which every
//! blocking stream synchronises with, so a block is reused only after the work queued
//! before its free. Work on a non-blocking or another library's stream is not ordered by
//! it: once such a stream exists the CUDA backend waits for the device before each pooled
//! free (`PooledMemory::pool_note_unordered_stream`), as cuMemFree always does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::error::CUDA_ERROR_MEMORY_ALLOCATION;
use super::{Backend, DevicePtr, Error, Result, StreamHandle, CUDA_STREAM_LEGACY};

/// Pooled blocks are rounded up to a multiple of this many bytes (by the host backend's cache and
/// CUDA's `block_cache`), so that near sizes share blocks.
const SIZE_CLASS: usize = 512;

/// The block size (class) that serves a request of `bytes`; None where rounding up overflows.
pub fn size_class(bytes: usize) -> Option<usize> {
    bytes.checked_next_multiple_of(SIZE_CLASS)
}

/// The stream pooled blocks are ordered on.
fn pool_stream() -> StreamHandle {
    StreamHandle(CUDA_STREAM_LEGACY)
}

/// The process-wide pool over all devices of the active backend.
pub struct MemoryPool {
    enabled: bool,
    /// Bytes of live pooled allocations, as requested.
    used: AtomicUsize,
    /// The most `used` may reach; `usize::MAX` for none.
    limit: AtomicUsize,
    /// One past the highest device ordinal that has allocated from the pool.
    devices_seen: AtomicUsize,
}

static DEFAULT_POOL: OnceLock<MemoryPool> = OnceLock::new();

/// The pool, created on first use; `PYGPU_MEMORY_POOL=0` (or `off`, `false`) disables it.
pub fn default_pool() -> &'static MemoryPool {
    DEFAULT_POOL.get_or_init(|| {
        let enabled = match std::env::var("PYGPU_MEMORY_POOL") {
            Ok(v) => !super::environment::switched_off(&v),
            Err(_) => true,
        };
        MemoryPool::new(enabled)
    })
}

impl MemoryPool {
    pub fn new(enabled: bool) -> Self {
        MemoryPool {
            enabled,
            used: AtomicUsize::new(0),
            limit: AtomicUsize::new(usize::MAX),
            devices_seen: AtomicUsize::new(0),
        }
    }

    /// False when `PYGPU_MEMORY_POOL=0` turned pooling off: callers use plain malloc/free.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Allocates `bytes` on the current device of `backend`: the block and the ticket to
    /// give back to `free` with it.
    pub fn alloc(&self, backend: &dyn Backend, device: i32, bytes: usize) -> Result<(DevicePtr, u64)> {
        if bytes == 0 {
            return Ok((0, 0));
        }
        self.reserve(bytes, backend)?;
        self.devices_seen.fetch_max(usize::try_from(device).unwrap_or(0) + 1, Ordering::Relaxed);
        let result = match backend.pool_malloc(bytes, pool_stream()) {
            Err(e) if e.code() == CUDA_ERROR_MEMORY_ALLOCATION => {
                // The cache may hold what the device lacks: give it back and try once more.
                backend.pool_trim(device).and_then(|()| backend.pool_malloc(bytes, pool_stream()))
            }
            other => other,
        };
        if result.is_err() {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
        }
        result
    }

    /// Counts `bytes` as used unless that would pass the limit.
    fn reserve(&self, bytes: usize, backend: &dyn Backend) -> Result<()> {
        let limit = self.limit.load(Ordering::Acquire);
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= limit)
            })
            .map(|_| ())
            .map_err(|used| {
                Error::detailed(
                    CUDA_ERROR_MEMORY_ALLOCATION,
                    backend.kind(),
                    format!(
                        "allocating {bytes} bytes would pass the memory pool's limit of {limit} bytes \
                     ({used} bytes in use): free arrays, or raise the limit with \
                     pygpu.get_default_memory_pool().set_limit(nbytes) (0 for no limit)"
                    ),
                )
            })
    }

    /// Gives back a block of `bytes` from `alloc`, ordered after the work queued so far.
    /// # Safety
    /// `(ptr, ticket)` came from `alloc(backend, device, bytes)` and nothing queued later
    /// uses the block.
    pub unsafe fn free(
        &self,
        backend: &dyn Backend,
        device: i32,
        ptr: DevicePtr,
        ticket: u64,
        bytes: usize,
    ) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        self.used.fetch_sub(bytes, Ordering::AcqRel);
        // SAFETY: forwarded from the caller.
        unsafe { backend.pool_free(ptr, bytes, ticket, device, pool_stream()) }
    }

    /// Bytes of live pooled allocations.
    pub fn used_bytes(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Bytes the pool holds from the devices: in use and cached.
    pub fn total_bytes(&self, backend: &dyn Backend) -> Result<usize> {
        let mut reserved = 0usize;
        for device in 0..self.devices_seen.load(Ordering::Acquire) {
            match backend.pool_reserved_bytes(device as i32)? {
                Some(bytes) => reserved = reserved.saturating_add(bytes),
                // Nothing is cached on this backend: what is held is what is used.
                None => return Ok(self.used_bytes()),
            }
        }
        Ok(reserved.max(self.used_bytes()))
    }

    /// Returns every cached block to the devices.
    pub fn free_all_blocks(&self, backend: &dyn Backend) -> Result<()> {
        for device in 0..self.devices_seen.load(Ordering::Acquire) {
            backend.pool_trim(device as i32)?;
        }
        Ok(())
    }

    /// The limit on bytes in use; 0 removes it.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(if bytes == 0 { usize::MAX } else { bytes }, Ordering::Release);
    }

    /// The limit, 0 for none.
    pub fn limit(&self) -> usize {
        match self.limit.load(Ordering::Acquire) {
            usize::MAX => 0,
            bytes => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::host::HostBackend;

    #[test]
    fn blocks_are_reused_and_counted() {
        let backend = HostBackend::new();
        let pool = MemoryPool::new(true);
        let (a, ticket) = pool.alloc(&backend, 0, 1000).unwrap();
        assert_eq!(pool.used_bytes(), 1000);
        // SAFETY: a came from this pool and is not used again.
        unsafe { pool.free(&backend, 0, a, ticket, 1000) }.unwrap();
        assert_eq!(pool.used_bytes(), 0);
        let held = pool.total_bytes(&backend).unwrap();
        assert!(held >= 1000);
        let (b, ticket) = pool.alloc(&backend, 0, 1000).unwrap();
        assert_eq!(a, b, "the cached block is handed out again");
        assert_eq!(pool.total_bytes(&backend).unwrap(), held);
        // SAFETY: b came from this pool and is not used again.
        unsafe { pool.free(&backend, 0, b, ticket, 1000) }.unwrap();
        pool.free_all_blocks(&backend).unwrap();
        assert_eq!(pool.total_bytes(&backend).unwrap(), 0);
    }

    #[test]
    fn the_limit_refuses_with_an_out_of_memory_error() {
        let backend = HostBackend::new();
        let pool = MemoryPool::new(true);
        pool.set_limit(4096);
        assert_eq!(pool.limit(), 4096);
        let (a, ticket) = pool.alloc(&backend, 0, 4000).unwrap();
        let err = pool.alloc(&backend, 0, 100).unwrap_err();
        assert_eq!(err.code(), CUDA_ERROR_MEMORY_ALLOCATION);
        assert!(err.to_string().contains("set_limit"), "{err}");
        assert_eq!(pool.used_bytes(), 4000, "a refused allocation is not counted");
        // SAFETY: a came from this pool and is not used again.
        unsafe { pool.free(&backend, 0, a, ticket, 4000) }.unwrap();
        pool.set_limit(0);
        assert_eq!(pool.limit(), 0);
    }
}
