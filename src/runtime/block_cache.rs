//! Freed pool blocks kept for reuse in front of a GPU backend's stream-ordered pool.
//!
//! A `cuMemAllocAsync` + `cuMemFreeAsync` pair costs about 2 µs of driver time, more than
//! the small kernel a temporary is made for (issue 16). Blocks freed here are kept by size
//! class and handed out again without a driver call, as the driver's own pool would after a
//! free on the legacy default stream, but only where that reuse is ordered just as well.
//!
//! Why reuse without a free on the legacy stream is safe: every pooled block is ordered on
//! the legacy default stream, and work on any blocking stream waits for the legacy
//! stream's earlier work, which in turn waits for every blocking stream's. While no stream
//! other than the legacy one has existed during a block's life, all its earlier work was on
//! the legacy stream, and whatever stream its next owner uses comes after that work. So a
//! block is cached only if, between its allocation and its free, the set of streams did not
//! change and held none but the legacy stream (the `ticket` taken at allocation tells).
//! Any other block goes back through the driver's stream-ordered free, as before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::DevicePtr;

/// Larger blocks go back to the driver: a kernel on 64 MiB outlasts the 2 µs saved by far.
const MAX_CACHED_BLOCK: usize = 64 << 20;
/// What one device's cache may hold; beyond it, frees go back to the driver.
const MAX_CACHED_PER_DEVICE: usize = 1 << 30;

#[derive(Default)]
struct Blocks {
    /// (device, class bytes) -> idle blocks
    idle: HashMap<(i32, usize), Vec<DevicePtr>>,
    /// device -> bytes of its idle blocks
    held: HashMap<i32, usize>,
}

#[derive(Default)]
pub struct BlockCache {
    blocks: Mutex<Blocks>,
    /// Streams other than the legacy one that may hold work: pygpu's open streams, plus one
    /// for good once the per-thread default stream or another library's stream was used.
    open_streams: AtomicUsize,
    /// Changes whenever `open_streams` does: a block whose ticket differs lived while the
    /// set of streams changed.
    stream_epoch: AtomicU64,
}

impl BlockCache {
    fn blocks(&self) -> std::sync::MutexGuard<'_, Blocks> {
        // Nothing panics between a lock's updates, so a poisoned lock still guards whole maps.
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Taken when a block is allocated and handed back to `keep` with it.
    pub fn ticket(&self) -> u64 {
        self.stream_epoch.load(Ordering::Acquire)
    }

    /// The ticket of a block that must never be cached (one allocated outside the device's
    /// primary context, whose legacy stream orders nothing here).
    pub const NEVER: u64 = u64::MAX;

    /// A stream other than the legacy one was made (or, `for_good`, another kind of stream
    /// came into use that is never closed here).
    pub fn stream_opened(&self) {
        self.open_streams.fetch_add(1, Ordering::AcqRel);
        self.stream_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// A stream counted by `stream_opened` was destroyed (its work may still be running).
    pub fn stream_closed(&self) {
        self.stream_epoch.fetch_add(1, Ordering::AcqRel);
        // Never below zero, even if a caller closes a stream it did not count.
        let _ = self.open_streams.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// An idle block of `class` bytes on `device`, if one is cached.
    pub fn take(&self, device: i32, class: usize) -> Option<DevicePtr> {
        let mut blocks = self.blocks();
        let ptr = blocks.idle.get_mut(&(device, class))?.pop()?;
        if let Some(held) = blocks.held.get_mut(&device) {
            *held -= class;
        }
        Some(ptr)
    }

    /// Caches a freed block of `class` bytes if its reuse is ordered (see the module's
    /// comment) and the cache has room; false if the caller must free it to the driver.
    /// Never aborts for want of host memory: a free may come right after an allocation
    /// failed, so where the maps cannot grow the block goes back to the driver instead.
    pub fn keep(&self, device: i32, class: usize, ptr: DevicePtr, ticket: u64) -> bool {
        if class > MAX_CACHED_BLOCK
            || ticket == Self::NEVER
            || self.open_streams.load(Ordering::Acquire) != 0
            || self.stream_epoch.load(Ordering::Acquire) != ticket
        {
            return false;
        }
        let mut blocks = self.blocks();
        // One more key fits without reallocating once try_reserve(1) succeeded.
        if blocks.held.try_reserve(1).is_err() || blocks.idle.try_reserve(1).is_err() {
            return false;
        }
        if blocks.held.get(&device).copied().unwrap_or(0) + class > MAX_CACHED_PER_DEVICE {
            return false;
        }
        let idle = blocks.idle.entry((device, class)).or_default();
        if idle.try_reserve(1).is_err() {
            return false;
        }
        idle.push(ptr);
        *blocks.held.entry(device).or_default() += class;
        true
    }

    /// Removes one of `device`'s idle blocks, for the caller to free to the driver (None when
    /// none is left). One at a time, so that trimming (which runs when memory ran out)
    /// allocates nothing.
    pub fn pop_idle(&self, device: i32) -> Option<DevicePtr> {
        let mut blocks = self.blocks();
        let (&(_, class), ptrs) = blocks.idle.iter_mut().find(|((d, _), ptrs)| *d == device && !ptrs.is_empty())?;
        let ptr = ptrs.pop()?;
        if let Some(held) = blocks.held.get_mut(&device) {
            *held = held.saturating_sub(class);
        }
        Some(ptr)
    }

    /// Removes and returns `device`'s idle blocks (tests).
    #[cfg(test)]
    fn drain(&self, device: i32) -> Vec<DevicePtr> {
        std::iter::from_fn(|| self.pop_idle(device)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::pool::size_class;

    #[test]
    fn a_freed_block_is_handed_out_again_for_its_class() {
        let cache = BlockCache::default();
        let class = size_class(1000).unwrap();
        assert_eq!(class, 1024);
        assert!(cache.keep(0, class, 0x1000, cache.ticket()));
        assert_eq!(cache.take(1, class), None, "another device's block is not handed out");
        assert_eq!(cache.take(0, 512), None, "nor another class's");
        assert_eq!(cache.take(0, class), Some(0x1000));
        assert_eq!(cache.take(0, class), None, "a block is handed out once");
    }

    #[test]
    fn a_block_that_lived_beside_another_stream_is_not_cached() {
        let cache = BlockCache::default();
        let before = cache.ticket();
        cache.stream_opened();
        assert!(!cache.keep(0, 512, 0x1000, cache.ticket()), "a stream is open");
        cache.stream_closed();
        assert!(!cache.keep(0, 512, 0x2000, before), "a stream existed during the block's life");
        assert!(cache.keep(0, 512, 0x3000, cache.ticket()), "allocated after the stream was gone");
        assert_eq!(cache.take(0, 512), Some(0x3000));
    }

    #[test]
    fn large_blocks_and_a_full_cache_go_back_to_the_driver() {
        let cache = BlockCache::default();
        let t = cache.ticket();
        assert!(!cache.keep(0, size_class(MAX_CACHED_BLOCK + 1).unwrap(), 0x1000, t));
        let mut kept = 0;
        while cache.keep(0, MAX_CACHED_BLOCK, 0x1000 + kept, t) {
            kept += 1;
        }
        assert_eq!(kept as usize, MAX_CACHED_PER_DEVICE / MAX_CACHED_BLOCK);
        assert!(cache.keep(1, MAX_CACHED_BLOCK, 0x9000, t), "each device has its own room");
        assert_eq!(cache.drain(0).len(), kept as usize);
        assert!(cache.keep(0, MAX_CACHED_BLOCK, 0x1000, t), "drained, there is room again");
        assert_eq!(cache.drain(1), vec![0x9000]);
    }

    #[test]
    fn closing_an_uncounted_stream_does_not_underflow() {
        let cache = BlockCache::default();
        cache.stream_closed();
        assert!(cache.keep(0, 512, 0x1000, cache.ticket()));
    }
}
