//! Device memory on the host backend (host memory, in the allocation registry, between redzones):
//! allocation, copies, fills, pitched copies, managed memory, and what the registry knows of an address.

use super::*;
use crate::runtime::{MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE};

/// Allocations from this size on are checked against the memory available now (reading
/// /proc/meminfo costs microseconds: not worth it for small ones).
pub(super) const LARGE_ALLOCATION: usize = 64 << 20;

impl HostBackend {
    pub(super) fn cpu_malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        // Device memory here is host memory, promised lazily: a large request beyond what the
        // machine has free now would be an OOM kill on first touch instead of an error.
        if bytes >= LARGE_ALLOCATION && bytes > crate::runtime::memory::available_memory() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let mut state = self.state();
        if bytes > self.total_memory.saturating_sub(state.allocated_bytes) {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let padded = bytes.checked_add(LEADING_REDZONE + REDZONE).ok_or(Self::err(CUDA_ERROR_MEMORY_ALLOCATION))?;
        let layout = layout(padded)?;
        // The registry inserts below cannot fail: where memory ran out they fall back on the
        // reserve, which must be there first.
        if !crate::runtime::oom_reserve::rearm() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        // SAFETY: the layout has a non-zero size. Zeroed so that no stale data of an
        // earlier allocation is ever observable, as on a GPU with a fresh context. From the
        // system directly: the reserve is for the bookkeeping, not for the block.
        let block = unsafe { std::alloc::GlobalAlloc::alloc_zeroed(&std::alloc::System, layout) };
        if block.is_null() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let ptr = block as u64 + LEADING_REDZONE as u64;
        // SAFETY: the block holds LEADING_REDZONE + bytes + REDZONE from `block`.
        unsafe { fill_redzones(ptr, bytes) };
        state.redzones.insert(ptr);
        let device = CURRENT_DEVICE.with(|d| d.get());
        state.allocations.insert(ptr, (bytes, device));
        state.allocated_bytes += bytes;
        Ok(ptr)
    }

    pub(super) unsafe fn cpu_free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        let mut state = self.state();
        if Self::is_ipc_mapping(&state, ptr) {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE)); // closed with its IPCMemoryHandle
        }
        let Some((bytes, _)) = state.allocations.remove(&ptr) else {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        };
        if state.running_launches > 0 {
            // A kernel running on another thread may use this memory (as a GPU would, cudaFree
            // waits for it): out of the registry now, so no new work reaches it; released when
            // the last running launch ends.
            // Where even this list cannot grow (memory ran out) the memory is never released:
            // a leak, not an abort, and never a free under a running kernel.
            if state.deferred_frees.try_reserve(1).is_ok() {
                state.deferred_frees.push((ptr, bytes));
            }
            return Ok(());
        }
        // SAFETY: removed from the registry just now, and no launch runs: released exactly once.
        unsafe { Self::release_block(&mut state, ptr, bytes) };
        Ok(())
    }

    /// Gives a plain allocation's memory back: its pages (`mem_alloc`'s mappings) or its heap
    /// block (pool blocks from `alloc_zeroed`).
    /// # Safety
    /// `ptr` came from `cpu_malloc` or `alloc_zeroed` with `bytes`, is out of the registry, and
    /// nothing uses it any more.
    unsafe fn release_block(state: &mut State, ptr: DevicePtr, bytes: usize) {
        state.allocated_bytes -= bytes;
        let guarded = state.redzones.remove(&ptr);
        // SAFETY: the caller vouches the range is out of the registry and unused.
        if unsafe { Self::unmap_pages(state, ptr) } {
            return;
        }
        let (block, padded) =
            if guarded { (ptr - LEADING_REDZONE as u64, LEADING_REDZONE + bytes + REDZONE) } else { (ptr, bytes) };
        if let Ok(layout) = layout(padded) {
            // SAFETY: not a page mapping, so alloc_zeroed gave `block` with this layout (the
            // registry said whether it has redzones); the caller releases it once.
            unsafe { dealloc(block as *mut u8, layout) };
        }
    }

    /// After a launch: the redzones around the allocations it was given (`guarded`, start and
    /// bytes) are intact, or the launch wrote outside one: error 700 naming the allocation
    /// (the redzones are restored, so the report is made once).
    pub(super) fn check_redzones(&self, guarded: &[(u64, usize)]) -> Result<()> {
        if guarded.is_empty() {
            return Ok(());
        }
        let state = self.state();
        for &(start, bytes) in guarded {
            // Freed during the launch: its memory is released only now, unchecked.
            if !state.redzones.contains(&start) || state.allocations.get(&start).is_none_or(|a| a.0 != bytes) {
                continue;
            }
            // SAFETY: a live allocation with redzones (the registry says so, under its lock).
            if let Some(damage) = unsafe { damaged_redzones(start, bytes) } {
                let (place, offset) = match damage {
                    Damage::Before(n) => ("before the start", format!("{n} byte(s) before its start")),
                    Damage::After(n) => ("past the end", format!("{n} byte(s) after its end")),
                };
                return Err(Error::detailed(
                    CUDA_ERROR_ILLEGAL_ADDRESS,
                    BackendKind::Host,
                    format!(
                        "the kernel wrote {place} of the allocation at 0x{start:x} ({bytes} bytes), which one of \
                         its arguments points into: {offset} (a GPU faults with error 700 here). The host backend \
                         watches the {LEADING_REDZONE} bytes before and the {REDZONE} bytes after each argument's \
                         allocation; writes further out, or through pointers it was not given, go unseen"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Counts a launch as running until the guard drops (see `State::running_launches`).
    pub(super) fn launch_guard(&self) -> LaunchGuard<'_> {
        self.state().running_launches += 1;
        LaunchGuard { backend: self }
    }

    /// Makes a fork wait until no other thread holds the registry (and pool) locks, so that the
    /// child never inherits one locked by a thread that does not exist there. Registered once.
    pub(crate) fn install_fork_handlers(&'static self) {
        if FORK_BACKEND.set(self).is_ok() {
            // SAFETY: the handlers only lock and unlock this backend's mutexes on the forking
            // thread (`prepare` before fork, `parent`/`child` after it, on the same thread).
            unsafe { libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child)) };
        }
    }
}

/// See `HostBackend::launch_guard`.
pub(super) struct LaunchGuard<'a> {
    backend: &'a HostBackend,
}

impl Drop for LaunchGuard<'_> {
    fn drop(&mut self) {
        // The pool's lock comes before the registry's: blocks go back to it after the registry
        // lock is released.
        let mut pooled = self.release_deferred();
        if !pooled.is_empty() {
            // Blocks the cache cannot hold (memory ran out) stay in `pooled`, to be freed.
            let mut cache = self.backend.pool.lock().unwrap_or_else(|e| e.into_inner());
            pooled.retain(|&ptr| cache.give_back(ptr) == pool::GiveBack::Release);
            drop(cache);
            for ptr in pooled {
                // SAFETY: the block came from cpu_malloc and the pool dropped it from its books,
                // so it is freed exactly once; no launch uses it any more.
                let _ = unsafe { self.backend.cpu_free(ptr) };
            }
        }
    }
}

impl LaunchGuard<'_> {
    /// Ends this launch; if it was the last one running, releases the memory freed meanwhile
    /// and returns the pooled blocks to give back.
    fn release_deferred(&self) -> Vec<u64> {
        let mut state = self.backend.state();
        state.running_launches = state.running_launches.saturating_sub(1);
        if state.running_launches > 0 {
            return Vec::new();
        }
        for (ptr, bytes) in std::mem::take(&mut state.deferred_frees) {
            // SAFETY: removed from the registry by cpu_free and held only here since: released
            // exactly once, now that no kernel runs.
            unsafe { HostBackend::release_block(&mut state, ptr, bytes) };
        }
        std::mem::take(&mut state.deferred_pool_frees)
    }
}

static FORK_BACKEND: std::sync::OnceLock<&'static HostBackend> = std::sync::OnceLock::new();

thread_local! {
    /// The locks `fork_prepare` took, released after the fork in parent and child alike.
    static FORK_GUARDS: std::cell::RefCell<Option<(MutexGuard<'static, pool::HostPool>, MutexGuard<'static, State>)>> =
        const { std::cell::RefCell::new(None) };
}

extern "C" fn fork_prepare() {
    if let Some(backend) = FORK_BACKEND.get() {
        // The pool's lock is taken before the registry's, as everywhere else.
        let pool = backend.pool.lock().unwrap_or_else(|e| e.into_inner());
        let state = backend.state();
        let _ = FORK_GUARDS.try_with(|g| *g.borrow_mut() = Some((pool, state)));
    }
}

extern "C" fn fork_parent() {
    let _ = FORK_GUARDS.try_with(|g| drop(g.borrow_mut().take()));
}

extern "C" fn fork_child() {
    let _ = FORK_GUARDS.try_with(|g| {
        if let Some((pool, mut state)) = g.borrow_mut().take() {
            // Only the forking thread exists in the child: launches running elsewhere are gone,
            // and so are the stream locks they held.
            state.running_launches = 0;
            state.stream_order.clear();
            drop((state, pool));
        }
    });
}

/// Fills the redzones around `[ptr, ptr + bytes)`.
/// # Safety
/// `[ptr - LEADING_REDZONE, ptr)` and `[ptr + bytes, ptr + bytes + REDZONE)` belong to the
/// allocation's block and nothing else uses them.
pub(super) unsafe fn fill_redzones(ptr: u64, bytes: usize) {
    // SAFETY: the caller vouches for both ranges.
    unsafe {
        std::ptr::write_bytes((ptr as usize - LEADING_REDZONE) as *mut u8, REDZONE_BYTE, LEADING_REDZONE);
        std::ptr::write_bytes((ptr as usize + bytes) as *mut u8, REDZONE_BYTE, REDZONE);
    }
}

/// Where a kernel wrote into a redzone, as the farthest byte's distance from the allocation:
/// 1 is the byte just before its start, or just after its end.
enum Damage {
    Before(usize),
    After(usize),
}

/// The damage to the redzones around `[ptr, ptr + bytes)`, with them restored; None if both
/// are intact.
/// # Safety
/// As `fill_redzones`.
unsafe fn damaged_redzones(ptr: u64, bytes: usize) -> Option<Damage> {
    // SAFETY: the caller vouches that the redzones are the allocation's.
    let (before, after) = unsafe {
        (
            std::slice::from_raw_parts((ptr as usize - LEADING_REDZONE) as *const u8, LEADING_REDZONE),
            std::slice::from_raw_parts((ptr as usize + bytes) as *const u8, REDZONE),
        )
    };
    let damage = match before.iter().position(|&b| b != REDZONE_BYTE) {
        Some(first) => Damage::Before(LEADING_REDZONE - first),
        None => Damage::After(after.iter().rposition(|&b| b != REDZONE_BYTE)? + 1),
    };
    // SAFETY: the same ranges.
    unsafe { fill_redzones(ptr, bytes) };
    Some(damage)
}

impl DeviceMemory for HostBackend {
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        activity::noted(ActivityKind::Alloc, 0, bytes as u64, || self.cpu_malloc_pages(bytes))
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        let recorded = activity::recording()
            .then(|| (activity::clock_ns(), self.state().allocations.get(&ptr).map_or(0, |a| a.0)));
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cpu_free(ptr) }?;
        if let Some((start, bytes)) = recorded {
            activity::record_since(ActivityKind::Free, start, 0, bytes as u64);
        }
        Ok(())
    }

    unsafe fn memcpy_htod(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()> {
        self.submit(stream, HostOp::HostToDevice { dst, src: src as usize, bytes })
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()> {
        self.submit(stream, HostOp::DeviceToHost { dst: dst as usize, src, bytes })
    }

    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: Option<StreamHandle>) -> Result<()> {
        self.submit(stream, HostOp::DeviceToDevice { dst, src, bytes })
    }

    fn memset_value(
        &self,
        dst: DevicePtr,
        value: MemsetValue,
        count: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()> {
        let (value, element_size) = (value.bits(), value.element_size());
        self.submit(stream, HostOp::Memset { dst, value, element_size, count })
    }

    unsafe fn memcpy_pitched(&self, copy: &PitchedCopy, stream: Option<StreamHandle>) -> Result<()> {
        copy.validate()?;
        if copy.is_empty() {
            return Ok(());
        }
        // Every row lies between the first byte and the end of the last row: when that span is
        // inside one allocation, no row copy can fail half-way through.
        for side in [&copy.src, &copy.dst] {
            if let Memory::Device(base) = side.memory {
                let first = side.offset(0, 0).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))?;
                let end = copy.end(side).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))?;
                let start = base.checked_add(first as u64).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))?;
                self.check_range(&self.state(), start, end - first)?;
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { copy.by_rows(self, stream) }
    }

    fn malloc_managed(&self, bytes: usize, flags: u32) -> Result<DevicePtr> {
        if bytes == 0 || (flags != MEM_ATTACH_GLOBAL && flags != MEM_ATTACH_HOST) {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        // Host and "device" share one memory here: managed memory is a plain allocation,
        // in the registry like any other, so kernels and copies accept it.
        self.cpu_malloc_pages(bytes)
    }

    fn stream_attach_mem(&self, stream: StreamHandle, ptr: DevicePtr, bytes: usize, flags: u32) -> Result<()> {
        let state = self.state();
        self.check_stream(&state, Some(stream))?;
        let Some(&(size, _device)) = state.allocations.get(&ptr) else {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        };
        if (bytes != 0 && bytes != size) || ![MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE].contains(&flags) {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        // One memory for every stream and the host: the association changes nothing here.
        Ok(())
    }

    fn span_is_device_memory(&self, ptr: DevicePtr, bytes: usize) -> Option<bool> {
        Some(self.check_range(&self.state(), ptr, bytes.max(1)).is_ok())
    }

    fn allocation_extent(&self, ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
        // The pool's lock comes before the registry's.
        let cache = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let state = self.state();
        let extent = |start: u64, bytes: usize| match cache.handout(start) {
            Some(Some(_)) => (start, cache.live_bytes(start).unwrap_or(bytes)),
            Some(None) => (start, 0),
            None => (start, bytes),
        };
        if let Some((&start, &(bytes, _))) = state.allocations.range(..=ptr).next_back() {
            // An allocation's redzones are its own too: a tensor reaching into them runs outside
            // it, it is not foreign memory.
            let trailing = if state.redzones.contains(&start) { REDZONE } else { 0 };
            if ptr < start.saturating_add((bytes + trailing) as u64) {
                return Some(extent(start, bytes));
            }
        }
        if let Some((&start, &(bytes, _))) = state.allocations.range(ptr..).next() {
            if state.redzones.contains(&start) && start - ptr <= LEADING_REDZONE as u64 {
                return Some(extent(start, bytes));
            }
        }
        let (&start, &bytes) = state.mapped.range(..=ptr).next_back()?;
        (ptr < start.saturating_add(bytes as u64)).then_some((start, bytes))
    }

    fn allocation_identity(&self, ptr: DevicePtr) -> Option<(DevicePtr, u64)> {
        // A pooled block by its hand-out (an idle one is freed memory); other memory by start
        // and size, as the host backend's own replay check compares them. The pool's lock
        // comes before the registry's.
        let cache = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let state = self.state();
        let (&start, &(bytes, _)) = state.allocations.range(..=ptr).next_back()?;
        if ptr >= start + bytes as u64 {
            return None;
        }
        match cache.handout(start) {
            Some(handout) => handout.map(|n| (start, n)),
            None => Some((start, bytes as u64)),
        }
    }
}
