//! A reserve of address space that turns running out of host memory into an error instead of
//! an abort. Rust's collections allocate infallibly: where memory ran out, the B-tree node of a
//! registry insert after a successful allocation, or a small string in the error that reports
//! it, would abort the process ("memory allocation of N bytes failed"). The extension's
//! allocator is the system's, plus this: a 1 MiB block held back, released the first time an
//! allocation fails and that allocation retried. Every pygpu allocation of host-backed memory
//! first re-arms the reserve (`rearm`), and fails with an out-of-memory error where it cannot:
//! so the infallible bookkeeping that follows it always has the reserve to fall back on.
//! Untouched, the reserve costs address space only (its pages are never resident).

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

const RESERVE_BYTES: usize = 1 << 20;
const RESERVE: Layout = match Layout::from_size_align(RESERVE_BYTES, 4096) {
    Ok(layout) => layout,
    Err(_) => panic!("the reserve's layout is valid"),
};

static HELD: AtomicPtr<u8> = AtomicPtr::new(null_mut());

/// The system allocator, retrying once with the reserve released when an allocation fails.
pub struct ReserveAllocator;

#[global_allocator]
static ALLOCATOR: ReserveAllocator = ReserveAllocator;

/// Gives the reserve back to the system; false if it was already spent.
fn release() -> bool {
    let held = HELD.swap(null_mut(), Ordering::AcqRel);
    if held.is_null() {
        return false;
    }
    // SAFETY: `held` came from System.alloc(RESERVE) in `rearm` and the swap made this the
    // only owner, so it is freed once.
    unsafe { System.dealloc(held, RESERVE) };
    true
}

/// Takes the reserve back if it was spent; false where memory is too short for it (the caller
/// then reports out of memory rather than run into bookkeeping that cannot fail).
pub fn rearm() -> bool {
    if !HELD.load(Ordering::Acquire).is_null() {
        return true;
    }
    // SAFETY: a non-zero size.
    let block = unsafe { System.alloc(RESERVE) };
    if block.is_null() {
        return false;
    }
    if HELD.compare_exchange(null_mut(), block, Ordering::AcqRel, Ordering::Acquire).is_err() {
        // Another thread re-armed it first.
        // SAFETY: allocated just above with this layout, owned only here.
        unsafe { System.dealloc(block, RESERVE) };
    }
    true
}

// SAFETY: every method forwards to System with the caller's arguments; the reserve is a block
// of System's own that only `release` frees, so no pointer is returned twice or freed by
// the wrong allocator.
unsafe impl GlobalAlloc for ReserveAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from the caller.
        let ptr = unsafe { System.alloc(layout) };
        if ptr.is_null() && release() {
            // SAFETY: as above.
            return unsafe { System.alloc(layout) };
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from the caller.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if ptr.is_null() && release() {
            // SAFETY: as above.
            return unsafe { System.alloc_zeroed(layout) };
        }
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded from the caller; a failed realloc leaves `ptr` valid, so it may
        // be retried.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if moved.is_null() && release() {
            // SAFETY: as above.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        moved
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_reserve_is_rearmed_once() {
        assert!(rearm());
        let first = HELD.load(Ordering::Acquire);
        assert!(rearm(), "already armed");
        assert_eq!(HELD.load(Ordering::Acquire), first, "re-arming an armed reserve keeps it");
        assert!(release());
        assert!(!release(), "spent");
        assert!(rearm());
        assert!(!HELD.load(Ordering::Acquire).is_null());
    }
}
