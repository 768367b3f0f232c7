//! PyCUDA's memory pools (`DeviceMemoryPool`, `PageLockedMemoryPool`): blocks rounded up to
//! a size class ("bin") of two mantissa bits, handed out again when freed.
//!
//! A block given back is *held* in its bin until `free_held` (or `stop_holding`, after which
//! blocks go back to the allocator as they are freed); a block handed out is *active*. The
//! pool owns held blocks as values (`DeviceBuffer`, `PinnedBuffer`) whose drop frees them,
//! so releasing a block is dropping it, and dropping the pool frees everything it holds.
//! Blocks are dropped outside the lock: a free may wait for the device.

use std::sync::{Arc, Mutex, MutexGuard};

use super::context::Context;
use super::error::CUDA_ERROR_MEMORY_ALLOCATION;
use super::memory::{BlockLender, DeviceBuffer};
use super::{Error, Result};

const MANTISSA_BITS: u32 = 2;
const MANTISSA_MASK: usize = (1 << MANTISSA_BITS) - 1;

/// The size class of a request of `size` bytes: the exponent and two mantissa bits below
/// the leading one (PyCUDA's numbering, so `bin_number` values match its pools').
pub fn bin_number(size: usize) -> u32 {
    let exponent = size.checked_ilog2().unwrap_or(0);
    let mantissa = shift(size, MANTISSA_BITS as i32 - exponent as i32) & MANTISSA_MASK;
    exponent << MANTISSA_BITS | mantissa as u32
}

/// The bytes a block of size class `bin` holds (every request of the class fits), or None
/// past the address space.
pub fn alloc_size(bin: u32) -> Option<usize> {
    let exponent = (bin >> MANTISSA_BITS) as i32;
    let mantissa = (bin as usize) & MANTISSA_MASK;
    let by = exponent - MANTISSA_BITS as i32;
    if by >= 0 && (by >= 64 || (((1 << MANTISSA_BITS) | mantissa) as u128) << by > usize::MAX as u128) {
        return None;
    }
    let low_ones = shift(1, by).saturating_sub(1);
    let head = shift((1 << MANTISSA_BITS) | mantissa, by);
    Some(head | low_ones)
}

/// `value` shifted left by `by` (right where negative); callers keep the result in range.
fn shift(value: usize, by: i32) -> usize {
    if by >= 0 {
        value.checked_shl(by as u32).unwrap_or(0)
    } else {
        value.checked_shr(by.unsigned_abs()).unwrap_or(0)
    }
}

/// The size class of `size` and its block size, or the error saying the request is too big.
pub fn size_class(size: usize) -> Result<(u32, usize)> {
    let bin = bin_number(size);
    match alloc_size(bin) {
        Some(bytes) => Ok((bin, bytes)),
        None => Err(Error::InvalidArgument(format!("a memory pool cannot allocate {size} bytes: too large"))),
    }
}

/// The counters PyCUDA's pools report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolCounts {
    pub held_blocks: usize,
    pub active_blocks: usize,
    /// Bytes of the blocks the pool has from the allocator: active and held.
    pub managed_bytes: usize,
    /// Bytes of the active blocks.
    pub active_bytes: usize,
}

/// Size classes there are: `bin_number` of any usize is at most 63 << 2 | 3.
const BINS: usize = 256;

struct State<B> {
    /// Held blocks, indexed by size class. The table is made once, with the pool, so that
    /// giving a block back never needs a new map node: a free may come right after an
    /// allocation failed, and an allocation that cannot fail would abort the process.
    bins: Vec<Vec<B>>,
    counts: PoolCounts,
    holding: bool,
}

/// Held blocks by size class, and the counters. `B` owns its memory and frees it when dropped.
pub struct BinPool<B> {
    state: Mutex<State<B>>,
}

impl<B> Default for BinPool<B> {
    fn default() -> Self {
        let bins = std::iter::repeat_with(Vec::new).take(BINS).collect();
        BinPool { state: Mutex::new(State { bins, counts: PoolCounts::default(), holding: true }) }
    }
}

impl<B> BinPool<B> {
    fn lock(&self) -> MutexGuard<'_, State<B>> {
        // Nothing that can panic runs under this lock; recover the counters rather than abort.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A block of size class `bin` (`bytes` long): a held one if there is one, else one from
    /// `allocate(bytes)`. Out of memory, the held blocks are freed and `allocate` tried once more.
    pub fn take(&self, bin: u32, bytes: usize, mut allocate: impl FnMut(usize) -> Result<B>) -> Result<B> {
        if let Some(block) = self.take_held(bin, bytes) {
            return Ok(block);
        }
        let block = match allocate(bytes) {
            Err(e) if e.code() == CUDA_ERROR_MEMORY_ALLOCATION => {
                self.free_held();
                allocate(bytes)?
            }
            other => other?,
        };
        let mut state = self.lock();
        state.counts.active_blocks += 1;
        state.counts.active_bytes += bytes;
        state.counts.managed_bytes += bytes;
        Ok(block)
    }

    fn take_held(&self, bin: u32, bytes: usize) -> Option<B> {
        let mut state = self.lock();
        let block = state.bins.get_mut(bin as usize)?.pop()?;
        state.counts.held_blocks -= 1;
        state.counts.active_blocks += 1;
        state.counts.active_bytes += bytes;
        Some(block)
    }

    /// Takes back an active block of size class `bin`: held, or freed (dropped) after
    /// `stop_holding`, or when holding it would need memory the process cannot get.
    pub fn give_back(&self, block: B, bin: u32, bytes: usize) {
        let mut state = self.lock();
        state.counts.active_blocks = state.counts.active_blocks.saturating_sub(1);
        state.counts.active_bytes = state.counts.active_bytes.saturating_sub(bytes);
        if state.holding {
            if let Some(held) = state.bins.get_mut(bin as usize) {
                if held.try_reserve(1).is_ok() {
                    held.push(block);
                    state.counts.held_blocks += 1;
                    return;
                }
            }
        }
        state.counts.managed_bytes = state.counts.managed_bytes.saturating_sub(bytes);
        drop(state);
        drop(block);
    }

    /// Frees every held block, a size class at a time (the table stays, so nothing is
    /// allocated: this runs when memory ran out).
    pub fn free_held(&self) {
        for bin in 0..BINS {
            let blocks = {
                let mut state = self.lock();
                let Some(held) = state.bins.get_mut(bin) else { break };
                if held.is_empty() {
                    continue;
                }
                let blocks = std::mem::take(held);
                let held_bytes = alloc_size(bin as u32).unwrap_or(0).saturating_mul(blocks.len());
                state.counts.managed_bytes = state.counts.managed_bytes.saturating_sub(held_bytes);
                state.counts.held_blocks = state.counts.held_blocks.saturating_sub(blocks.len());
                blocks
            };
            // Outside the lock: a free may wait for the device.
            drop(blocks);
        }
    }

    /// Frees the held blocks, and from now on every block given back.
    pub fn stop_holding(&self) {
        self.lock().holding = false;
        self.free_held();
    }

    pub fn counts(&self) -> PoolCounts {
        self.lock().counts
    }

    /// False once `stop_holding` was called.
    pub fn holding(&self) -> bool {
        self.lock().holding
    }
}

/// A pool of device memory on one device (PyCUDA's `DeviceMemoryPool`): blocks are lent out
/// as `DeviceBuffer`s that come back here when dropped.
pub struct DeviceBinPool {
    bins: BinPool<DeviceBuffer>,
    ctx: Arc<Context>,
}

impl DeviceBinPool {
    /// A pool on the calling thread's current device.
    pub fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(DeviceBinPool { bins: BinPool::default(), ctx: Context::current()? }))
    }

    /// At least `size` bytes (a whole size class), given back to this pool when dropped.
    pub fn allocate(self: &Arc<Self>, size: usize) -> Result<DeviceBuffer> {
        let (bin, bytes) = size_class(size)?;
        let block = self.bins.take(bin, bytes, |bytes| {
            // A held block may be handed out under any current device (its address stays
            // valid), but fresh memory must come from the pool's device.
            self.ctx.check_current("this DeviceMemoryPool")?;
            DeviceBuffer::alloc(&self.ctx, bytes)
        })?;
        Ok(block.lend(self.clone()))
    }

    pub fn bins(&self) -> &BinPool<DeviceBuffer> {
        &self.bins
    }

    pub fn device(&self) -> i32 {
        self.ctx.device()
    }
}

impl BlockLender for DeviceBinPool {
    fn take_back(&self, block: DeviceBuffer) {
        let bytes = block.bytes();
        self.bins.give_back(block, bin_number(bytes), bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn size_classes_hold_their_requests_and_round_trip() {
        for size in (0..5000).chain([1 << 20, (1 << 20) + 1, 12_345_678, 1 << 40, usize::MAX >> 3]) {
            let (bin, bytes) = size_class(size).unwrap();
            assert!(bytes >= size, "{size} -> {bytes}");
            if size >= 8 {
                assert!(bytes as f64 <= size as f64 * 1.25 + 1.0, "{size} -> {bytes}");
            }
            assert_eq!(bin_number(bytes), bin, "{size}");
        }
        assert_eq!((bin_number(0), alloc_size(0)), (0, Some(1)));
        assert_eq!(bin_number(1 << 20), 80);
        assert_eq!(size_class(usize::MAX).unwrap().1, usize::MAX);
        assert_eq!(alloc_size(64 << MANTISSA_BITS), None);
        assert_eq!(alloc_size(u32::MAX), None);
    }

    /// A block that counts the live ones, so frees are visible.
    struct Counted(usize, Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn allocator(live: &Arc<AtomicUsize>, next: &Arc<AtomicUsize>) -> impl FnMut(usize) -> Result<Counted> {
        let (live, next) = (live.clone(), next.clone());
        move |_| {
            live.fetch_add(1, Ordering::SeqCst);
            Ok(Counted(next.fetch_add(1, Ordering::SeqCst), live.clone()))
        }
    }

    #[test]
    fn blocks_are_held_reused_and_freed() {
        let (live, next) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let pool = BinPool::default();
        let (bin, bytes) = size_class(1000).unwrap();
        let a = pool.take(bin, bytes, allocator(&live, &next)).unwrap();
        let id = a.0;
        pool.give_back(a, bin, bytes);
        let counts = pool.counts();
        assert_eq!((counts.held_blocks, counts.active_blocks, counts.managed_bytes), (1, 0, bytes));
        let b = pool.take(bin, bytes, allocator(&live, &next)).unwrap();
        assert_eq!(b.0, id, "the held block is reused");
        assert_eq!(live.load(Ordering::SeqCst), 1);
        pool.stop_holding();
        pool.give_back(b, bin, bytes);
        assert_eq!(live.load(Ordering::SeqCst), 0, "after stop_holding a block given back is freed");
        assert_eq!(pool.counts(), PoolCounts::default());
    }

    #[test]
    fn out_of_memory_frees_the_held_blocks_and_retries_once() {
        let (live, next) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let pool = BinPool::default();
        let (small, small_bytes) = size_class(100).unwrap();
        let held = pool.take(small, small_bytes, allocator(&live, &next)).unwrap();
        pool.give_back(held, small, small_bytes);
        let (big, big_bytes) = size_class(1 << 20).unwrap();
        let mut calls = 0;
        let mut inner = allocator(&live, &next);
        let block = pool
            .take(big, big_bytes, |n| {
                calls += 1;
                if calls == 1 {
                    Err(Error::api(CUDA_ERROR_MEMORY_ALLOCATION, crate::runtime::BackendKind::Host))
                } else {
                    inner(n)
                }
            })
            .unwrap();
        assert_eq!(calls, 2);
        assert_eq!(pool.counts().held_blocks, 0, "the held block was freed before the retry");
        assert_eq!(live.load(Ordering::SeqCst), 1);
        let err = pool
            .take(big, big_bytes, |_| Err(Error::api(CUDA_ERROR_MEMORY_ALLOCATION, crate::runtime::BackendKind::Host)))
            .err()
            .map(|e| e.code());
        assert_eq!(err, Some(CUDA_ERROR_MEMORY_ALLOCATION), "a second failure is the caller's error");
        drop(block);
    }

    #[test]
    fn device_blocks_come_back_when_dropped_and_keep_their_data() {
        if crate::runtime::set_backend("host").is_err() {
            return; // another backend is active in this test process
        }
        let Ok(pool) = DeviceBinPool::new() else { return };
        if pool.ctx.kind() != crate::runtime::BackendKind::Host {
            return;
        }
        let mut block = pool.allocate(1000).unwrap();
        let (ptr, bytes) = (block.ptr(), block.bytes());
        assert_eq!(bytes, alloc_size(bin_number(1000)).unwrap());
        block.copy_from_host(&[7u64; 125]).unwrap();
        drop(block);
        let counts = pool.bins().counts();
        assert_eq!((counts.held_blocks, counts.active_blocks, counts.managed_bytes), (1, 0, bytes));
        let again = pool.allocate(1010).unwrap();
        assert_eq!(again.ptr(), ptr, "the same size class reuses the held block");
        let mut back = [0u64; 125];
        again.copy_to_host(&mut back).unwrap();
        assert_eq!(back, [7u64; 125], "a held block keeps its memory (nothing freed it)");
        pool.bins().stop_holding();
        drop(again);
        assert_eq!(pool.bins().counts(), PoolCounts::default(), "after stop_holding the block is freed");
    }

    #[test]
    fn eight_threads_never_share_a_block() {
        let (live, next) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let pool = Arc::new(BinPool::default());
        let active = Arc::new(Mutex::new(HashSet::new()));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (pool, active, live, next) = (pool.clone(), active.clone(), live.clone(), next.clone());
                std::thread::spawn(move || {
                    let mut alloc = allocator(&live, &next);
                    for round in 0..2000 {
                        let (bin, bytes) = size_class(64 << ((t + round) % 3)).unwrap();
                        let block = pool.take(bin, bytes, &mut alloc).unwrap();
                        assert!(active.lock().unwrap().insert(block.0), "block {} handed out twice", block.0);
                        active.lock().unwrap().remove(&block.0);
                        pool.give_back(block, bin, bytes);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let counts = pool.counts();
        assert_eq!(counts.active_blocks, 0);
        assert_eq!(counts.held_blocks, live.load(Ordering::SeqCst));
        assert!(counts.held_blocks <= 24, "at most 8 threads x 3 classes blocks: {}", counts.held_blocks);
        pool.free_held();
        assert_eq!(live.load(Ordering::SeqCst), 0);
    }
}
