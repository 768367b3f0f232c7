//! The memory a host thread lends the blocks it runs: fiber stacks (each with a guard page)
//! and shared memory, kept from launch to launch, and `struct Worker` of
//! pygpu_host/fibers.h that hands them to the kernels library.

use std::ffi::{c_char, c_int, c_uint, c_void};

use super::module::module_error;
use crate::runtime::Result;

/// A fiber's stack; CUDA's default is 1 KiB, but host code and printf use more. The lowest page
/// of each is a guard: an overflow faults instead of overwriting the next fiber's stack.
const STACK_BYTES: usize = 128 * 1024;

/// `struct Worker` of pygpu_host/fibers.h: what a host thread lends the blocks it runs.
#[repr(C)]
pub(super) struct Worker {
    pub(super) stack_memory: *mut u8,
    pub(super) stack_bytes: usize,
    pub(super) stack_count: c_uint,
    pub(super) reserved: c_uint,
    pub(super) shared: *mut c_void,
    pub(super) shared_capacity: usize,
    pub(super) message: [c_char; 256],
    // Fault isolation and interruption, see faults.rs and fibers.h.
    pub(super) jump: *mut *mut c_void,
    pub(super) recover: Option<unsafe extern "C" fn(*mut Worker, c_int, c_int, *mut c_void) -> c_int>,
    pub(super) abandon: *const u64,
    pub(super) group: u64,
    pub(super) thread_self: *mut c_void,
    pub(super) fault_signal: c_int,
    pub(super) fault_code: c_int,
    pub(super) fault_address: *mut c_void,
}

/// One host thread's fiber stacks and shared memory, kept from launch to launch.
pub(super) struct WorkerMemory {
    stacks: *mut u8,
    stack_count: usize,
    shared: Vec<u128>,
    worker: Worker,
}

impl WorkerMemory {
    pub(super) fn new() -> Self {
        WorkerMemory {
            stacks: std::ptr::null_mut(),
            stack_count: 0,
            shared: Vec::new(),
            worker: Worker {
                stack_memory: std::ptr::null_mut(),
                stack_bytes: STACK_BYTES,
                stack_count: 0,
                reserved: 0,
                shared: std::ptr::null_mut(),
                shared_capacity: 0,
                message: [0; 256],
                jump: std::ptr::null_mut(),
                recover: None,
                abandon: std::ptr::null(),
                group: 0,
                thread_self: std::ptr::null_mut(),
                fault_signal: 0,
                fault_code: 0,
                fault_address: std::ptr::null_mut(),
            },
        }
    }

    /// Makes room for `threads` fibers and `shared_bytes` of shared memory.
    pub(super) fn reserve(&mut self, threads: usize, shared_bytes: usize) -> Result<&mut Worker> {
        if self.stack_count < threads {
            let count = threads.next_power_of_two().max(32);
            let bytes = count * STACK_BYTES;
            // SAFETY: an anonymous private mapping; the arguments are valid and the result is checked.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(module_error(
                    crate::runtime::error::CUDA_ERROR_MEMORY_ALLOCATION,
                    format!("no memory for {count} fiber stacks: {}", std::io::Error::last_os_error()),
                ));
            }
            let base = p.cast::<u8>();
            for i in 0..count {
                // SAFETY: the page lies inside the mapping just made. Failing leaves it writable,
                // which only loses the guard.
                unsafe { libc::mprotect(base.add(i * STACK_BYTES).cast(), page_size(), libc::PROT_NONE) };
            }
            self.release_stacks();
            self.stacks = base;
            self.stack_count = count;
        }
        let words = shared_bytes.div_ceil(16);
        if self.shared.len() < words {
            self.shared.resize(words, 0);
        }
        self.worker.stack_memory = self.stacks;
        self.worker.stack_count = self.stack_count as c_uint;
        self.worker.shared = self.shared.as_mut_ptr().cast();
        self.worker.shared_capacity = self.shared.len() * 16;
        Ok(&mut self.worker)
    }

    fn release_stacks(&mut self) {
        if !self.stacks.is_null() {
            // SAFETY: stacks is the mapping of stack_count stacks made by reserve, unused now.
            unsafe { libc::munmap(self.stacks.cast(), self.stack_count * STACK_BYTES) };
            self.stacks = std::ptr::null_mut();
        }
    }
}

impl Drop for WorkerMemory {
    fn drop(&mut self) {
        self.release_stacks();
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_memory_grows_and_keeps_its_stacks() {
        let mut memory = WorkerMemory::new();
        let worker = memory.reserve(100, 1000).expect("reserve");
        assert_eq!(worker.stack_count, 128);
        assert_eq!(worker.stack_bytes % 16, 0);
        assert!(worker.shared_capacity >= 1000 && (worker.shared as usize).is_multiple_of(16));
        let first = worker.stack_memory;
        // The top page of each stack is writable (the guard is the lowest page).
        // SAFETY: inside the mapping of 128 stacks just made.
        unsafe { *first.add(STACK_BYTES - 1) = 1 };
        let again = memory.reserve(64, 0).expect("reserve");
        assert_eq!(again.stack_memory, first, "enough stacks: nothing reallocated");
        let bigger = memory.reserve(1024, 48 * 1024).expect("reserve");
        assert_eq!(bigger.stack_count, 1024);
        assert!(bigger.shared_capacity >= 48 * 1024);
    }
}
