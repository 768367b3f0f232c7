//! The stream-ordered memory pool behind `pool::MemoryPool`. The provided methods are a
//! backend that keeps no pool of its own: each block an ordinary `malloc`, given back by `free`.

use super::DeviceMemory;
use crate::runtime::{DevicePtr, Result, StreamHandle};

pub trait PooledMemory: DeviceMemory {
    /// Allocates from the current device's memory pool, ordered on `stream`: the block may
    /// be one freed earlier on that stream, reused without waiting. Returns the block and a
    /// ticket to hand back to `pool_free` with it (where the backend caches blocks itself:
    /// `block_cache`). By default an ordinary `malloc`, where the backend caches nothing.
    fn pool_malloc(&self, bytes: usize, _stream: StreamHandle) -> Result<(DevicePtr, u64)> {
        Ok((self.malloc(bytes)?, 0))
    }
    /// Gives a block back to `device`'s pool, ordered on `stream` (after the work already
    /// queued there). By default an ordinary `free`.
    /// # Safety
    /// `ptr` and `ticket` came from one `pool_malloc` of this backend on `device` for
    /// `bytes`, and no work queued after this call (on any stream) uses the block.
    unsafe fn pool_free(
        &self,
        ptr: DevicePtr,
        _bytes: usize,
        _ticket: u64,
        _device: i32,
        _stream: StreamHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller; the default pool_malloc is malloc.
        unsafe { self.free(ptr) }
    }
    /// Returns `device`'s cached, unused blocks to the system.
    fn pool_trim(&self, _device: i32) -> Result<()> {
        Ok(())
    }
    /// The bytes `device`'s pool holds from the system (in use and cached), or None where
    /// the backend caches nothing.
    fn pool_reserved_bytes(&self, _device: i32) -> Result<Option<usize>> {
        Ok(None)
    }
    /// Says that work may run on a stream that does not synchronise with the legacy default
    /// stream (another library's): from then on pooled blocks are freed only once the device
    /// is idle, as cuMemFree does, since such work cannot be ordered before the free.
    fn pool_note_unordered_stream(&self) -> Result<()> {
        Ok(())
    }
    /// Says that work may run on CUDA's per-thread default stream, which is ordered with the
    /// legacy default stream but not with another thread's: blocks are no longer reused
    /// without the backend's stream-ordered free.
    fn pool_note_per_thread_stream(&self) {}
}
