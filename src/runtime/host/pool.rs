//! The host backend's memory pool: freed blocks are cached by size class and handed out
//! again without a new allocation. Host streams run their work when it is enqueued, so a
//! block given back is idle at once and needs no event before reuse. Cached blocks stay in
//! the allocation registry (as a GPU pool's memory stays mapped), and count against the
//! device's memory until `pool_trim` returns them.
//!
//! Nothing here may abort for want of memory: the maps grow only through `try_reserve`
//! (`reserve_handout` before a hand-out), a block that cannot be cached is released instead
//! (`GiveBack::Release`), and trimming takes one block at a time.

use std::collections::HashMap;

use super::{HostBackend, CURRENT_DEVICE};
use crate::runtime::activity::{self, ActivityKind};
use crate::runtime::error::{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_MEMORY_ALLOCATION};
use crate::runtime::{DeviceMemory, DevicePtr, PooledMemory, Result, StreamHandle};

/// What became of a block given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GiveBack {
    /// Cached for reuse.
    Cached,
    /// Out of the pool's books: the caller frees it (the cache could not grow to hold it).
    Release,
    /// Not a live pooled block.
    Unknown,
}

#[derive(Default)]
pub(super) struct HostPool {
    /// (device, class bytes) -> idle cached blocks
    idle: HashMap<(i32, usize), Vec<u64>>,
    /// block handed out -> (device, class bytes, bytes asked for)
    live: HashMap<u64, (i32, usize, usize)>,
    /// device -> bytes of its blocks, live and idle
    reserved: HashMap<i32, usize>,
    /// block -> the number of its current hand-out (None while idle): a graph that captured a
    /// launch on a block tells a later hand-out of the same block from the one it used.
    handouts: HashMap<u64, Option<u64>>,
    next_handout: u64,
}

impl HostPool {
    /// Room in every map a hand-out (`take` or `add_live`) grows, or false: out of memory.
    /// Called first, under the same lock, so that the hand-out itself allocates nothing.
    pub(super) fn reserve_handout(&mut self) -> bool {
        self.live.try_reserve(1).is_ok() && self.handouts.try_reserve(1).is_ok() && self.reserved.try_reserve(1).is_ok()
    }

    /// An idle block of this class on `device`, now live (serving `bytes`).
    pub(super) fn take(&mut self, device: i32, class: usize, bytes: usize) -> Option<u64> {
        let ptr = self.idle.get_mut(&(device, class))?.pop()?;
        self.live.insert(ptr, (device, class, bytes));
        self.hand_out(ptr);
        Some(ptr)
    }

    /// Records a block freshly allocated for the pool (serving `bytes`).
    pub(super) fn add_live(&mut self, ptr: u64, device: i32, class: usize, bytes: usize) {
        self.live.insert(ptr, (device, class, bytes));
        *self.reserved.entry(device).or_default() += class;
        self.hand_out(ptr);
    }

    /// The bytes asked for when the live block at `ptr` was handed out; None for an idle
    /// block or memory that is no pooled block.
    pub(super) fn live_bytes(&self, ptr: u64) -> Option<usize> {
        self.live.get(&ptr).map(|&(_, _, bytes)| bytes)
    }

    fn hand_out(&mut self, ptr: u64) {
        self.next_handout += 1;
        self.handouts.insert(ptr, Some(self.next_handout));
    }

    /// For a pooled block: Some(its hand-out number), or Some(None) while it is idle; None
    /// for memory that is no pooled block.
    pub(super) fn handout(&self, ptr: u64) -> Option<Option<u64>> {
        self.handouts.get(&ptr).copied()
    }

    /// Makes a live block idle, or, where the cache cannot grow to hold it (memory ran out),
    /// takes it off the books for the caller to free: a free must never allocate infallibly.
    pub(super) fn give_back(&mut self, ptr: u64) -> GiveBack {
        let Some((device, class, _)) = self.live.remove(&ptr) else {
            return GiveBack::Unknown;
        };
        // After try_reserve(1) one more key fits without reallocating.
        if self.idle.try_reserve(1).is_ok() {
            let idle = self.idle.entry((device, class)).or_default();
            if idle.try_reserve(1).is_ok() {
                idle.push(ptr);
                // Through get_mut: insert() may grow the table even for a key it already holds.
                if let Some(handout) = self.handouts.get_mut(&ptr) {
                    *handout = None;
                }
                return GiveBack::Cached;
            }
        }
        self.forget(ptr, device, class);
        GiveBack::Release
    }

    fn forget(&mut self, ptr: u64, device: i32, class: usize) {
        self.handouts.remove(&ptr);
        if let Some(held) = self.reserved.get_mut(&device) {
            *held = held.saturating_sub(class);
        }
    }

    /// Removes one of `device`'s idle blocks for the caller to free (None when none is left):
    /// one at a time, so that trimming, which runs when memory ran out, allocates nothing.
    pub(super) fn pop_idle(&mut self, device: i32) -> Option<u64> {
        let (&(_, class), ptrs) = self.idle.iter_mut().find(|((d, _), ptrs)| *d == device && !ptrs.is_empty())?;
        let ptr = ptrs.pop()?;
        if ptrs.is_empty() {
            self.idle.remove(&(device, class));
        }
        self.forget(ptr, device, class);
        Some(ptr)
    }

    pub(super) fn reserved(&self, device: i32) -> usize {
        self.reserved.get(&device).copied().unwrap_or(0)
    }
}

impl PooledMemory for HostBackend {
    // Recorded on stream 0: the pool orders its blocks on CUDA's legacy default stream (handle
    // 1, which on this backend could also name a stream the user created).
    fn pool_malloc(&self, bytes: usize, _stream: StreamHandle) -> Result<(DevicePtr, u64)> {
        activity::noted(ActivityKind::Alloc, 0, bytes as u64, || self.pool_take(bytes))
    }

    unsafe fn pool_free(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        _ticket: u64,
        _device: i32,
        _stream: StreamHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        activity::noted(ActivityKind::Free, 0, bytes as u64, || unsafe { self.pool_give_back(ptr) })
    }

    fn pool_trim(&self, device: i32) -> Result<()> {
        // One block at a time, the pool's lock released before each free (the pool's lock
        // comes before the registry's): trimming runs when memory ran out, so it allocates nothing.
        loop {
            let Some(ptr) = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop_idle(device) else {
                return Ok(());
            };
            // SAFETY: an idle block came from malloc and was just removed from the cache,
            // so nothing hands it out again; it is freed exactly once.
            unsafe { self.free(ptr) }?;
        }
    }

    fn pool_reserved_bytes(&self, device: i32) -> Result<Option<usize>> {
        Ok(Some(self.pool.lock().unwrap_or_else(|e| e.into_inner()).reserved(device)))
    }
}

impl HostBackend {
    /// A block of the pool's cache, or a new one.
    fn pool_take(&self, bytes: usize) -> Result<(DevicePtr, u64)> {
        if bytes == 0 {
            return Ok((0, 0));
        }
        let class = crate::runtime::pool::size_class(bytes).ok_or_else(|| Self::err(CUDA_ERROR_MEMORY_ALLOCATION))?;
        let device = CURRENT_DEVICE.with(|d| d.get());
        let mut cache = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        // Out of memory is an error here, not an abort in a map's growth.
        if !cache.reserve_handout() || !crate::runtime::oom_reserve::rearm() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        if let Some(ptr) = cache.take(device, class, bytes) {
            return Ok((ptr, 0));
        }
        let ptr = self.cpu_malloc(class)?;
        cache.add_live(ptr, device, class, bytes);
        Ok((ptr, 0))
    }

    /// The block back to the pool's cache (or freed, past the cache's bounds).
    ///
    /// # Safety
    /// `ptr` came from pool_take and is not used after this call.
    unsafe fn pool_give_back(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        // Work on host streams has already run, so the block is idle now, unless a kernel on
        // another thread still uses it: then it goes back to the cache when the kernel ends.
        let mut cache = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut state = self.state();
            if state.running_launches > 0 {
                // Where even this list cannot grow (memory ran out), the block stays handed
                // out for good: a leak, not an abort, and never memory a kernel still uses.
                if state.deferred_pool_frees.try_reserve(1).is_ok() {
                    state.deferred_pool_frees.push(ptr);
                }
                return Ok(());
            }
        }
        match cache.give_back(ptr) {
            GiveBack::Cached => Ok(()),
            GiveBack::Release => {
                drop(cache);
                // SAFETY: the block came from cpu_malloc and the pool just dropped it from its
                // books, so it is freed exactly once, here.
                unsafe { self.cpu_free(ptr) }
            }
            GiveBack::Unknown => Err(Self::err(CUDA_ERROR_INVALID_VALUE)),
        }
    }
}
