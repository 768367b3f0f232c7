//! The host backend's memory pool: freed blocks are cached by size class and handed out
//! again without a new allocation. Host streams run their work when it is enqueued, so a
//! block given back is idle at once and needs no event before reuse. Cached blocks stay in
//! the allocation registry (as a GPU pool's memory stays mapped), and count against the
//! device's memory until `pool_trim` returns them.

use std::collections::HashMap;

#[derive(Default)]
pub(super) struct HostPool {
    /// (device, class bytes) -> idle cached blocks
    idle: HashMap<(i32, usize), Vec<u64>>,
    /// block handed out -> (device, class bytes)
    live: HashMap<u64, (i32, usize)>,
    /// device -> bytes of its blocks, live and idle
    reserved: HashMap<i32, usize>,
    /// block -> the number of its current hand-out (None while idle): a graph that captured a
    /// launch on a block tells a later hand-out of the same block from the one it used.
    handouts: HashMap<u64, Option<u64>>,
    next_handout: u64,
}

impl HostPool {
    /// An idle block of this class on `device`, now live.
    pub(super) fn take(&mut self, device: i32, class: usize) -> Option<u64> {
        let ptr = self.idle.get_mut(&(device, class))?.pop()?;
        self.live.insert(ptr, (device, class));
        self.hand_out(ptr);
        Some(ptr)
    }

    /// Records a block freshly allocated for the pool.
    pub(super) fn add_live(&mut self, ptr: u64, device: i32, class: usize) {
        self.live.insert(ptr, (device, class));
        *self.reserved.entry(device).or_default() += class;
        self.hand_out(ptr);
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

    /// Makes a live block idle; false if `ptr` is not a live pooled block.
    pub(super) fn give_back(&mut self, ptr: u64) -> bool {
        match self.live.remove(&ptr) {
            Some((device, class)) => {
                self.idle.entry((device, class)).or_default().push(ptr);
                self.handouts.insert(ptr, None);
                true
            }
            None => false,
        }
    }

    /// Removes and returns `device`'s idle blocks, for the caller to free.
    pub(super) fn drain_idle(&mut self, device: i32) -> Vec<u64> {
        let mut blocks = Vec::new();
        self.idle.retain(|(d, class), ptrs| {
            if *d != device {
                return true;
            }
            if let Some(held) = self.reserved.get_mut(d) {
                *held -= *class * ptrs.len();
            }
            for ptr in ptrs.iter() {
                self.handouts.remove(ptr);
            }
            blocks.append(ptrs);
            false
        });
        blocks
    }

    pub(super) fn reserved(&self, device: i32) -> usize {
        self.reserved.get(&device).copied().unwrap_or(0)
    }
}
