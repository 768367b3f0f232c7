//! Owned device and page-locked host memory: released exactly once, when dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::block_cache::BlockCache;
use super::context::Context;
use super::error::{record_error, CUDA_ERROR_MEMORY_ALLOCATION};
use super::{backend, Backend, DevicePtr, Error, Result};

/// A memset's fill value at its element width (cuMemsetD8/D16/D32). Made only by `new`,
/// so no backend sees an unsupported width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemsetValue {
    U8(u8),
    U16(u16),
    U32(u32),
}

impl MemsetValue {
    /// The low `element_size` bytes of `value`; `element_size` is 1, 2 or 4.
    pub fn new(value: u32, element_size: usize) -> Result<Self> {
        match element_size {
            1 => Ok(MemsetValue::U8(value as u8)),
            2 => Ok(MemsetValue::U16(value as u16)),
            4 => Ok(MemsetValue::U32(value)),
            _ => Err(Error::InvalidArgument(format!("memset element size must be 1, 2 or 4, not {element_size}"))),
        }
    }

    pub fn element_size(self) -> usize {
        match self {
            MemsetValue::U8(_) => 1,
            MemsetValue::U16(_) => 2,
            MemsetValue::U32(_) => 4,
        }
    }

    /// The value, zero-extended.
    pub fn bits(self) -> u32 {
        match self {
            MemsetValue::U8(v) => v.into(),
            MemsetValue::U16(v) => v.into(),
            MemsetValue::U32(v) => v,
        }
    }
}

/// Device memory from a context's backend, freed when dropped; or from the memory pool,
/// given back to it (stream-ordered) when dropped.
pub struct DeviceBuffer {
    ptr: DevicePtr,
    bytes: usize,
    ctx: Arc<Context>,
    /// From `pool::default_pool()`: the ticket its allocation gave.
    pooled: Option<u64>,
    /// Set once the address went to another library (DLPack, CUDA Array Interface), whose
    /// work on its own streams pygpu cannot see: the block is then never reused without the
    /// backend's stream-ordered free (`block_cache`).
    shared: AtomicBool,
    /// Set while a user's memory pool lends the block out: dropping gives it back there.
    lender: Option<Arc<dyn BlockLender>>,
}

/// Takes back a block it lent out (a `DeviceMemoryPool`) when the borrower drops it.
pub trait BlockLender: Send + Sync {
    /// `block` as it was before `lend`, owning its memory again.
    fn take_back(&self, block: DeviceBuffer);
}

/// Plain numbers, which may be copied to and from device memory byte for byte.
pub trait HostValue: Copy + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! host_values {
    ($($t:ty),*) => {$(impl sealed::Sealed for $t {} impl HostValue for $t {})*};
}
host_values!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

impl DeviceBuffer {
    /// `bytes` of memory on the current device.
    pub fn new(bytes: usize) -> Result<Self> {
        Self::alloc(&Context::current()?, bytes)
    }

    pub fn alloc(ctx: &Arc<Context>, bytes: usize) -> Result<Self> {
        let ptr = ctx.backend().malloc(bytes)?;
        Ok(DeviceBuffer { ptr, bytes, ctx: ctx.clone(), pooled: None, shared: AtomicBool::new(false), lender: None })
    }

    /// `bytes` from the caching pool on the current device (plain `malloc` where
    /// `PYGPU_MEMORY_POOL=0`).
    pub fn pooled(bytes: usize) -> Result<Self> {
        let pool = super::pool::default_pool();
        let ctx = Context::current()?;
        if !pool.enabled() {
            return Self::alloc(&ctx, bytes);
        }
        let (ptr, ticket) = pool.alloc(ctx.backend(), ctx.device(), bytes)?;
        Ok(DeviceBuffer { ptr, bytes, ctx, pooled: Some(ticket), shared: AtomicBool::new(false), lender: None })
    }

    /// This block, given back to `lender` instead of freed when dropped.
    pub fn lend(mut self, lender: Arc<dyn BlockLender>) -> Self {
        self.lender = Some(lender);
        self
    }

    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Records that the address went to another library (see `shared`).
    pub fn mark_shared(&self) {
        self.shared.store(true, Ordering::Release);
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn device(&self) -> i32 {
        self.ctx.device()
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn backend(&self) -> &'static dyn Backend {
        self.ctx.backend()
    }

    fn check_fits(&self, offset: usize, bytes: usize) -> Result<()> {
        match offset.checked_add(bytes) {
            Some(end) if end <= self.bytes => Ok(()),
            _ => Err(Error::InvalidArgument(format!(
                "{bytes} bytes at offset {offset} do not fit in a device buffer of {} bytes",
                self.bytes
            ))),
        }
    }

    /// Copies `src` to the start of the buffer and waits for the copy.
    pub fn copy_from_host<T: HostValue>(&mut self, src: &[T]) -> Result<()> {
        let bytes = std::mem::size_of_val(src);
        self.check_fits(0, bytes)?;
        // SAFETY: `src` is a live slice of plain numbers, valid for reads of `bytes` for this
        // synchronous copy, and the destination range was checked to lie in this buffer.
        unsafe { self.ctx.backend().memcpy_htod(self.ptr, src.as_ptr().cast(), bytes, None) }
    }

    /// Copies the start of the buffer to `dst` and waits for the copy.
    pub fn copy_to_host<T: HostValue>(&self, dst: &mut [T]) -> Result<()> {
        self.copy_to_host_at(0, dst)
    }

    /// Copies the bytes from `offset` on to `dst` and waits for the copy.
    pub fn copy_to_host_at<T: HostValue>(&self, offset: usize, dst: &mut [T]) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        self.check_fits(offset, bytes)?;
        // SAFETY: `dst` is a live, exclusively borrowed slice of plain numbers (any bit pattern
        // is a value), valid for writes of `bytes` for this synchronous copy; the source range
        // was checked to lie in this buffer.
        unsafe { self.ctx.backend().memcpy_dtoh(dst.as_mut_ptr().cast(), self.ptr + offset as u64, bytes, None) }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if let Some(lender) = self.lender.take() {
            let (ptr, bytes, pooled) = (self.ptr, self.bytes, self.pooled);
            let shared = AtomicBool::new(self.shared.load(Ordering::Acquire));
            lender.take_back(DeviceBuffer { ptr, bytes, ctx: self.ctx.clone(), pooled, shared, lender: None });
            return;
        }
        if super::in_forked_child() {
            return; // the parent owns the memory
        }
        let backend = self.ctx.backend();
        let freed = if let Some(mut ticket) = self.pooled {
            if self.shared.load(Ordering::Acquire) {
                ticket = BlockCache::NEVER;
            }
            // SAFETY: ptr came from the default pool with these values and is dropped exactly
            // once; the free is ordered after all work queued on blocking streams.
            unsafe { super::pool::default_pool().free(backend, self.ctx.device(), self.ptr, ticket, self.bytes) }
        } else {
            // SAFETY: ptr came from this backend's malloc and is dropped exactly once.
            unsafe { backend.free(self.ptr) }
        };
        if let Err(e) = freed {
            record_error(e.code());
        }
    }
}

/// Page-locked host memory (ordinary memory on the host backend).
pub struct PinnedBuffer {
    ptr: *mut u8,
    bytes: usize,
    backend: &'static dyn Backend,
}

// SAFETY: the buffer is plain memory owned by this value; the backend is Sync.
unsafe impl Send for PinnedBuffer {}
// SAFETY: shared access only hands out the address; writes go through raw pointers
// whose synchronisation is the user's (as with any numpy array).
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    pub fn new(bytes: usize) -> Result<Self> {
        let backend = backend()?;
        // Page-locked memory cannot be swapped out: more than is available now can never be
        // pinned, and asking the driver for it gets the process killed by the kernel's OOM
        // killer, not an error.
        if bytes > available_memory() {
            return Err(Error::api(CUDA_ERROR_MEMORY_ALLOCATION, backend.kind()));
        }
        let ptr = backend.host_alloc(bytes)?;
        Ok(PinnedBuffer { ptr, bytes, backend })
    }

    /// Page-locked memory with `CU_MEMHOSTALLOC_*` flags (PORTABLE, DEVICEMAP, WRITECOMBINED).
    pub fn with_flags(bytes: usize, flags: u32) -> Result<Self> {
        if flags == 0 {
            return Self::new(bytes);
        }
        let backend = backend()?;
        if bytes > available_memory() {
            return Err(Error::api(CUDA_ERROR_MEMORY_ALLOCATION, backend.kind()));
        }
        let ptr = backend.host_alloc_flags(bytes, flags)?;
        Ok(PinnedBuffer { ptr, bytes, backend })
    }

    /// The address device code uses for this memory.
    pub fn device_pointer(&self) -> Result<DevicePtr> {
        self.backend.host_get_device_pointer(self.ptr)
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if super::in_forked_child() {
            return;
        }
        // SAFETY: ptr came from this backend's host_alloc and is dropped exactly once.
        if let Err(e) = unsafe { self.backend.host_free(self.ptr) } {
            record_error(e.code());
        }
    }
}

/// Whether every page of `[ptr, ptr + bytes)` is mapped in this process (Linux: `mincore`,
/// which fails with ENOMEM on an unmapped page; elsewhere None: cannot tell). It sees neither
/// protections (a PROT_NONE guard page is mapped) nor whose memory it is; it only tells an
/// address that cannot be host memory at all (a bogus pointer or offset) before numpy reads it.
pub fn host_span_is_mapped(ptr: u64, bytes: u64) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        if bytes == 0 {
            return Some(true);
        }
        // SAFETY: sysconf only reads system configuration.
        let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            p if p > 0 => p as u64,
            _ => return None,
        };
        let Some(end) = ptr.checked_add(bytes) else { return Some(false) };
        let mut residency = [0u8; 4096];
        let mut at = ptr - ptr % page;
        while at < end {
            let span = (end - at).min(residency.len() as u64 * page);
            let Ok(len) = usize::try_from(span) else { return Some(false) };
            // SAFETY: mincore reads only the page tables of [at, at + span) (`at` page-aligned)
            // and writes one byte per page of it, at most residency.len(), into `residency`.
            if unsafe { libc::mincore(at as *mut libc::c_void, len, residency.as_mut_ptr()) } != 0 {
                return Some(false);
            }
            at += span;
        }
        Some(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (ptr, bytes);
        None
    }
}

/// The machine's physical memory in bytes.
pub fn physical_memory() -> usize {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages > 0 && page_size > 0 {
        (pages as usize).saturating_mul(page_size as usize)
    } else {
        1 << 34
    }
}

/// Host memory this process can still get now: the kernel's MemAvailable estimate (physical
/// memory where /proc/meminfo cannot be read), bounded by what its memory cgroup and the
/// address-space limit (RLIMIT_AS) leave. Requests sized by an argument are checked against it before they are
/// made, since memory that is promised (overcommitted) but not there is an OOM kill, not an error.
pub fn available_memory() -> usize {
    let mut available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib.saturating_mul(1024))
        })
        .unwrap_or_else(physical_memory);
    // In a container MemAvailable is the host's: its memory cgroup's limit is what counts.
    if let Some(headroom) = cgroup_headroom() {
        available = available.min(headroom);
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0 && limit.rlim_cur != libc::RLIM_INFINITY {
        let used = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<usize>().ok())
            .map_or(0, |pages| pages.saturating_mul(page_bytes()));
        available = available.min((limit.rlim_cur as usize).saturating_sub(used));
    }
    available
}

/// What the memory cgroup (v2, else v1) still allows: its limit less what it uses, not
/// counting inactive file cache (reclaimed before anything is killed); None without a limit file.
fn cgroup_headroom() -> Option<usize> {
    let number = |path: &str| std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let stat = |path: &str, key: &str| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix(key).and_then(|v| v.trim().parse::<u64>().ok())))
    };
    let versions = [
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat", "inactive_file "),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
            "/sys/fs/cgroup/memory/memory.stat",
            "total_inactive_file ",
        ),
    ];
    versions.iter().find_map(|&(limit, usage, stats, inactive)| {
        let (limit, usage) = (number(limit)?, number(usage)?);
        let used = usage.saturating_sub(stat(stats, inactive).unwrap_or(0));
        Some(usize::try_from(limit.saturating_sub(used)).unwrap_or(usize::MAX))
    })
}

fn page_bytes() -> usize {
    // SAFETY: sysconf only reads system configuration.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Existing host memory page-locked (and mapped) by `cuMemHostRegister` until dropped.
pub struct HostRegistration {
    ptr: *mut u8,
    bytes: usize,
    backend: &'static dyn Backend,
}

// SAFETY: holds only the address of memory whose owner outlives it; the backend is Sync.
unsafe impl Send for HostRegistration {}
// SAFETY: shared access only hands out the address.
unsafe impl Sync for HostRegistration {}

impl HostRegistration {
    /// # Safety
    /// `ptr` stays valid for `bytes` until this value is dropped.
    pub unsafe fn new(ptr: *mut u8, bytes: usize, flags: u32) -> Result<Self> {
        let backend = backend()?;
        // SAFETY: forwarded from the caller.
        unsafe { backend.host_register(ptr, bytes, flags) }?;
        Ok(HostRegistration { ptr, bytes, backend })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn device_pointer(&self) -> Result<DevicePtr> {
        self.backend.host_get_device_pointer(self.ptr)
    }
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        if super::in_forked_child() {
            return;
        }
        // SAFETY: registered in `new` by this backend and unregistered exactly once.
        if let Err(e) = unsafe { self.backend.host_unregister(self.ptr) } {
            record_error(e.code());
        }
    }
}

/// Another process's allocation mapped into this one (cuIpcOpenMemHandle), unmapped when
/// dropped.
pub struct IpcMapping {
    ptr: DevicePtr,
    backend: &'static dyn Backend,
}

impl IpcMapping {
    /// Maps the allocation named by `handle` (from `ipc_get_mem_handle` in its process).
    pub fn open(handle: &[u8; super::IPC_HANDLE_BYTES], flags: u32) -> Result<Self> {
        let backend = backend()?;
        let ptr = backend.ipc_open_mem_handle(handle, flags)?;
        Ok(IpcMapping { ptr, backend })
    }

    /// The mapping's device address in this process.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        if super::in_forked_child() {
            return;
        }
        // SAFETY: opened by ipc_open_mem_handle in `open` and closed exactly once, here.
        if let Err(e) = unsafe { self.backend.ipc_close_mem_handle(self.ptr) } {
            record_error(e.code());
        }
    }
}

#[cfg(test)]
mod available_tests {
    use super::*;

    #[test]
    fn available_memory_is_positive_and_at_most_physical_plus_swap() {
        let available = available_memory();
        assert!(available > 0);
        assert!(available <= physical_memory().saturating_mul(4));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memset_values_keep_the_low_bytes_of_a_supported_width() {
        assert_eq!(MemsetValue::new(0x1234_5678, 1), Ok(MemsetValue::U8(0x78)));
        assert_eq!(MemsetValue::new(0x1234_5678, 2), Ok(MemsetValue::U16(0x5678)));
        assert_eq!(MemsetValue::new(0x1234_5678, 4).map(MemsetValue::bits), Ok(0x1234_5678));
        assert_eq!(MemsetValue::new(0xFFFF, 2).map(MemsetValue::element_size), Ok(2));
        for bad in [0, 3, 8] {
            assert!(matches!(MemsetValue::new(0, bad), Err(Error::InvalidArgument(_))));
        }
    }
}
