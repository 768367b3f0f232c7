//! Memory and events shared with other processes on the host backend, as CUDA IPC shares
//! them between processes on one node.
//!
//! A plain allocation (`DeviceMemory::malloc`, PyCUDA's `mem_alloc`) is a private anonymous
//! mapping of whole pages. Exporting it (`ipc_get_mem_handle`) moves its bytes into a memfd
//! and maps the file over the same addresses, so the exporter's pointers stay valid; the
//! handle names the process, the descriptor and the file's inode, and another process maps
//! the same pages through `/proc/<pid>/fd/<fd>`: both see each other's writes, no copy.
//! As in CUDA, the exporter must keep the allocation alive while others use it, memory from
//! the caching pool cannot be exported, and a handle is not opened by its own process.
//!
//! Host streams finish their work when it is enqueued, so an event is complete in every
//! process once recorded: an opened event only has to exist, and waiting on it returns.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};

use super::*;
use crate::runtime::EVENT_INTERPROCESS;

const MEMORY_MAGIC: &[u8; 8] = b"pygpuMEM";
const EVENT_MAGIC: &[u8; 8] = b"pygpuEVT";

/// A plain allocation: its mapping's length (from `LEADING_REDZONE` before the allocation), and
/// the file behind it once exported.
pub(super) struct PageMapping {
    map_bytes: usize,
    shared: Option<SharedFile>,
}

/// The memfd an exported allocation lives in (closed when the allocation is freed; the
/// mappings other processes hold keep the pages).
struct SharedFile {
    file: File,
    inode: u64,
}

/// What a memory handle says, in the byte order of the node (both processes share it).
struct MemoryHandle {
    pid: u32,
    fd: i32,
    inode: u64,
    bytes: u64,
    map_bytes: u64,
    /// Where the allocation starts in the file (after its leading redzone).
    offset: u64,
}

impl MemoryHandle {
    fn encode(&self) -> [u8; IPC_HANDLE_BYTES] {
        let mut h = [0u8; IPC_HANDLE_BYTES];
        h[..8].copy_from_slice(MEMORY_MAGIC);
        h[8..12].copy_from_slice(&self.pid.to_ne_bytes());
        h[12..16].copy_from_slice(&self.fd.to_ne_bytes());
        h[16..24].copy_from_slice(&self.inode.to_ne_bytes());
        h[24..32].copy_from_slice(&self.bytes.to_ne_bytes());
        h[32..40].copy_from_slice(&self.map_bytes.to_ne_bytes());
        h[40..48].copy_from_slice(&self.offset.to_ne_bytes());
        h
    }

    fn decode(h: &[u8; IPC_HANDLE_BYTES]) -> Option<Self> {
        if &h[..8] != MEMORY_MAGIC {
            return None;
        }
        Some(MemoryHandle {
            pid: u32::from_ne_bytes(h[8..12].try_into().ok()?),
            fd: i32::from_ne_bytes(h[12..16].try_into().ok()?),
            inode: u64::from_ne_bytes(h[16..24].try_into().ok()?),
            bytes: u64::from_ne_bytes(h[24..32].try_into().ok()?),
            map_bytes: u64::from_ne_bytes(h[32..40].try_into().ok()?),
            offset: u64::from_ne_bytes(h[40..48].try_into().ok()?),
        })
    }
}

fn invalid(detail: String) -> Error {
    Error::detailed(CUDA_ERROR_INVALID_VALUE, BackendKind::Host, detail)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|s| *s > 0).unwrap_or(4096)
}

fn own_process(pid: u32, what: &str) -> Error {
    invalid(format!(
        "this {what} handle was made by this process (pid {pid}): as in CUDA, a handle is opened only by \
         other processes; use the original object here"
    ))
}

impl HostBackend {
    /// `DeviceMemory::malloc`: fresh zeroed pages, exportable later.
    pub(super) fn cpu_malloc_pages(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut state = self.state();
        if bytes > self.total_memory.saturating_sub(state.allocated_bytes) {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let map_bytes = bytes
            .checked_add(LEADING_REDZONE + REDZONE)
            .and_then(|b| b.checked_next_multiple_of(page_size()))
            .ok_or(Self::err(CUDA_ERROR_MEMORY_ALLOCATION))?;
        // SAFETY: a new anonymous mapping at an address the kernel chooses touches no existing memory.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let ptr = mapping as u64 + LEADING_REDZONE as u64;
        // SAFETY: the mapping holds LEADING_REDZONE + bytes + REDZONE.
        unsafe { memory::fill_redzones(ptr, bytes) };
        state.redzones.insert(ptr);
        let device = CURRENT_DEVICE.with(|d| d.get());
        state.allocations.insert(ptr, (bytes, device));
        state.allocated_bytes += bytes;
        state.page_mappings.insert(ptr, PageMapping { map_bytes, shared: None });
        Ok(ptr)
    }

    /// Unmaps a plain allocation already removed from the registry; false if `ptr` is not one.
    /// # Safety
    /// Nothing uses `[ptr, ptr + its length)` afterwards.
    pub(super) unsafe fn unmap_pages(state: &mut State, ptr: DevicePtr) -> bool {
        let Some(mapping) = state.page_mappings.remove(&ptr) else { return false };
        // SAFETY: the registry says this range is our own mapping; the caller vouches it is unused.
        unsafe { libc::munmap((ptr - LEADING_REDZONE as u64) as *mut libc::c_void, mapping.map_bytes) };
        true
    }

    /// True when `ptr` was opened from another process's handle (freed by closing the handle).
    pub(super) fn is_ipc_mapping(state: &State, ptr: DevicePtr) -> bool {
        state.ipc_opened.contains_key(&ptr)
    }
}

/// Moves the bytes of the private mapping `[base, base + map_bytes)` into a new memfd and maps
/// the file over the same addresses.
fn share_in_place(base: DevicePtr, map_bytes: usize) -> Result<SharedFile> {
    let failed =
        |what: &str| invalid(format!("sharing the allocation failed ({what}: {})", std::io::Error::last_os_error()));
    // SAFETY: the name is a NUL-terminated literal.
    let fd = unsafe { libc::memfd_create(c"pygpu-ipc".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(failed("memfd_create"));
    }
    // SAFETY: fd was just returned by memfd_create and nothing else owns it.
    let file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    file.set_len(map_bytes as u64).map_err(|_| failed("ftruncate"))?;
    // SAFETY: the range is our live private mapping (the caller holds the registry lock), readable.
    let current = unsafe { std::slice::from_raw_parts(base as *const u8, map_bytes) };
    file.write_all_at(current, 0).map_err(|_| failed("write"))?;
    let inode = file.metadata().map_err(|_| failed("fstat"))?.ino();
    // SAFETY: MAP_FIXED replaces exactly our own page-aligned private mapping with the file's
    // pages, which now hold the same bytes; no other memory is touched.
    let mapped = unsafe {
        libc::mmap(
            base as *mut libc::c_void,
            map_bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            file.as_raw_fd(),
            0,
        )
    };
    if mapped == libc::MAP_FAILED || mapped as u64 != base {
        return Err(failed("mmap"));
    }
    Ok(SharedFile { file, inode })
}

impl Interprocess for HostBackend {
    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]> {
        let mut state = self.state();
        let found = state.allocations.range(..=ptr).next_back().map(|(s, (n, _))| (*s, *n));
        let Some((base, bytes)) = found.filter(|(s, n)| ptr < s + (*n).max(1) as u64) else {
            return Err(invalid(format!("0x{ptr:x} is not device memory of this process")));
        };
        if state.ipc_opened.contains_key(&base) {
            return Err(invalid(
                "this memory was opened from another process's IPC handle: pass that handle on instead".to_string(),
            ));
        }
        let Some(mapping) = state.page_mappings.get_mut(&base) else {
            return Err(invalid(format!(
                "the allocation at 0x{base:x} comes from the caching memory pool (pool_alloc, GPUArray's default \
                 allocator) or a module, which cannot be shared between processes (on CUDA, cuIpcGetMemHandle \
                 refuses stream-ordered pool memory too): allocate memory to share with mem_alloc, e.g. \
                 GPUArray(shape, dtype, allocator=pygpu.mem_alloc)"
            )));
        };
        if mapping.shared.is_none() {
            mapping.shared = Some(share_in_place(base - LEADING_REDZONE as u64, mapping.map_bytes)?);
        }
        let shared = mapping.shared.as_ref().ok_or_else(|| invalid("the allocation was not shared".to_string()))?;
        Ok(MemoryHandle {
            pid: std::process::id(),
            fd: shared.file.as_raw_fd(),
            inode: shared.inode,
            bytes: bytes as u64,
            map_bytes: mapping.map_bytes as u64,
            offset: LEADING_REDZONE as u64,
        }
        .encode())
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; IPC_HANDLE_BYTES], flags: u32) -> Result<DevicePtr> {
        let h = MemoryHandle::decode(handle).ok_or_else(|| {
            invalid("these 64 bytes are not a memory handle from mem_get_ipc_handle on the host backend".to_string())
        })?;
        if flags & !1 != 0 {
            return Err(invalid(format!("IPC memory flags are 0 or 1 (LAZY_ENABLE_PEER_ACCESS), not {flags}")));
        }
        if h.pid == std::process::id() {
            return Err(own_process(h.pid, "memory"));
        }
        let gone = |why: String| {
            invalid(format!(
                "cannot open the memory of process {}: it has exited or freed the allocation ({why})",
                h.pid
            ))
        };
        let path = format!("/proc/{}/fd/{}", h.pid, h.fd);
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).map_err(|e| gone(e.to_string()))?;
        let meta = file.metadata().map_err(|e| gone(e.to_string()))?;
        let map_bytes = usize::try_from(h.map_bytes).map_err(|_| gone("size".to_string()))?;
        let bytes = usize::try_from(h.bytes).map_err(|_| gone("size".to_string()))?;
        let offset = usize::try_from(h.offset).map_err(|_| gone("offset".to_string()))?;
        if meta.ino() != h.inode
            || meta.len() != h.map_bytes
            || offset.checked_add(bytes).is_none_or(|end| end > map_bytes)
        {
            return Err(gone("the descriptor now names another file".to_string()));
        }
        // SAFETY: a new shared mapping of the exporter's file at an address the kernel chooses.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return Err(gone(std::io::Error::last_os_error().to_string()));
        }
        let ptr = mapping as u64 + offset as u64;
        let device = CURRENT_DEVICE.with(|d| d.get());
        let mut state = self.state();
        state.allocations.insert(ptr, (bytes, device));
        state.ipc_opened.insert(ptr, (mapping as u64, map_bytes));
        Ok(ptr)
    }

    /// # Safety
    /// Nothing uses the mapping at `ptr` afterwards.
    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()> {
        let mut state = self.state();
        let Some((mapping, map_bytes)) = state.ipc_opened.remove(&ptr) else {
            return Err(invalid(format!("0x{ptr:x} is not memory opened from an IPC handle")));
        };
        state.allocations.remove(&ptr);
        // SAFETY: the registry says this is our mapping of the exporter's file; the caller vouches it is unused.
        unsafe { libc::munmap(mapping as *mut libc::c_void, map_bytes) };
        Ok(())
    }

    fn ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]> {
        let state = self.state();
        let ev = state.events.get(&event.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        if ev.flags & EVENT_INTERPROCESS == 0 {
            return Err(invalid(
                "the event was not made for sharing: create it with flags INTERPROCESS | DISABLE_TIMING".to_string(),
            ));
        }
        let mut h = [0u8; IPC_HANDLE_BYTES];
        h[..8].copy_from_slice(EVENT_MAGIC);
        h[8..12].copy_from_slice(&std::process::id().to_ne_bytes());
        h[16..24].copy_from_slice(&(event.0 as u64).to_ne_bytes());
        Ok(h)
    }

    fn ipc_open_event_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle> {
        if &handle[..8] != EVENT_MAGIC {
            return Err(invalid(
                "these 64 bytes are not an event handle from Event.ipc_handle() on the host backend".to_string(),
            ));
        }
        let pid = u32::from_ne_bytes([handle[8], handle[9], handle[10], handle[11]]);
        if pid == std::process::id() {
            return Err(own_process(pid, "event"));
        }
        let id = self.new_handle();
        let flags = EVENT_INTERPROCESS | EVENT_DISABLE_TIMING;
        self.state().events.insert(id, EventState { flags, recorded_at: None });
        Ok(EventHandle(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::PooledMemory;

    #[test]
    fn exporting_keeps_the_address_and_the_bytes() {
        let b = HostBackend::new();
        let p = b.malloc(10_000).expect("malloc");
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        // SAFETY: data is valid for its length.
        unsafe { b.memcpy_htod(p, data.as_ptr(), data.len(), None) }.expect("fill");
        let handle = b.ipc_get_mem_handle(p + 100).expect("export (an interior address names its allocation)");
        assert_eq!(b.ipc_get_mem_handle(p).expect("again"), handle, "exported once");
        let mut out = vec![0u8; data.len()];
        // SAFETY: out is valid for its length.
        unsafe { b.memcpy_dtoh(out.as_mut_ptr(), p, out.len(), None) }.expect("read");
        assert_eq!(out, data);
        let own = b.ipc_open_mem_handle(&handle, 1).expect_err("a process does not open its own handle");
        assert!(own.to_string().contains("made by this process"), "{own}");
        assert!(b.ipc_open_mem_handle(&[0; IPC_HANDLE_BYTES], 1).is_err());
        // SAFETY: ours, freed once (unmapping the shared file).
        unsafe { b.free(p) }.expect("free");
    }

    #[test]
    fn pool_memory_and_plain_events_are_not_exported() {
        let b = HostBackend::new();
        let (pooled, _) = b.pool_malloc(256, StreamHandle::DEFAULT).expect("pool");
        let refused = b.ipc_get_mem_handle(pooled).expect_err("pool memory");
        assert!(refused.to_string().contains("caching memory pool"), "{refused}");
        let plain = b.event_create(EVENT_DISABLE_TIMING).expect("event");
        assert!(b.ipc_get_event_handle(plain).is_err());
        let shared = b.event_create(EVENT_DISABLE_TIMING | EVENT_INTERPROCESS).expect("event");
        let handle = b.ipc_get_event_handle(shared).expect("handle");
        assert!(b.ipc_open_event_handle(&handle).is_err(), "not in its own process");
    }
}
