//! The host backend: device memory is host memory, streams execute their work in order at the
//! moment it is enqueued, on the enqueuing thread (a launch or a graph replay holds its stream's
//! lock while it runs, so that two threads' launches on one stream run one after the other, as
//! on a GPU; a stream is busy only while another thread's launch holds it), events carry the
//! time they were recorded. Every device address is checked against a registry of live
//! allocations, so a bad pointer is an error code here, as the driver would answer it, rather
//! than a stray write.

use std::alloc::{dealloc, Layout};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::activity::{self, ActivityKind};
use super::error::{
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_RESOURCE_HANDLE, CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_MEMORY_ALLOCATION, CUDA_ERROR_UNSUPPORTED_LIMIT,
};
use super::pitched::{Memory, PitchedCopy};
use super::{
    Backend, BackendKind, DeviceProperties, DevicePtr, Error, EventHandle, Result, StreamHandle, EVENT_DISABLE_TIMING,
    HOST_ALLOC_DEVICEMAP, HOST_ALLOC_PORTABLE, HOST_ALLOC_WRITECOMBINED, HOST_REGISTER_READ_ONLY, IPC_HANDLE_BYTES,
};
use super::{DeviceMemory, Devices, Graphs, HostMemory, Interprocess, Kernels, PeerAccess, Streams};
use super::{
    FunctionAttribute, FunctionHandle, GraphExecHandle, GraphHandle, KernelArgs, LaunchConfig, MemsetValue,
    ModuleHandle,
};
use graphs::HostGraph;
use module::{HostFunction, HostLibrary, HostOp};

// What a GPU reports for the same capture faults.
use super::error::{
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED as CAPTURE_UNMATCHED,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED as CAPTURE_UNSUPPORTED,
};

/// Device allocations are aligned like cudaMalloc's.
const ALIGNMENT: usize = 256;

/// Bytes after each plain device allocation, filled with `REDZONE_BYTE` and checked after every
/// launch whose arguments point into the allocation: a host kernel that writes past the end of
/// an array is reported (error 700, as a GPU faults) instead of silently corrupting the heap.
const REDZONE: usize = 64;
/// Bytes before each plain device allocation, watched in the same way (a stencil's `u[i - 1]` at
/// `i = 0`): a whole `ALIGNMENT`, so that the allocation keeps cudaMalloc's alignment.
const LEADING_REDZONE: usize = ALIGNMENT;
const REDZONE_BYTE: u8 = 0xa5;

thread_local! {
    static CURRENT_DEVICE: Cell<i32> = const { Cell::new(0) };
}

#[derive(Default)]
struct State {
    /// start address -> (bytes, device)
    allocations: BTreeMap<u64, (usize, i32)>,
    allocated_bytes: usize,
    host_allocations: HashMap<usize, usize>,
    /// stream id -> device
    streams: HashMap<usize, i32>,
    events: HashMap<usize, EventState>,
    modules: HashMap<usize, Arc<HostLibrary>>,
    /// module id -> the addresses of its globals registered in `allocations`
    module_globals: HashMap<usize, Vec<u64>>,
    functions: HashMap<usize, Arc<HostFunction>>,
    /// module id -> kernel name -> function id: one handle per kernel, as on a GPU, so that
    /// get_function in a loop adds nothing, and unloading removes them.
    module_functions: HashMap<usize, HashMap<String, usize>>,
    /// stream id -> the work recorded since begin_capture
    capturing: HashMap<usize, Vec<HostOp>>,
    graphs: HashMap<usize, HostGraph>,
    /// An update copies the instance's nodes if a replay still holds them (`Arc::make_mut`).
    graph_execs: HashMap<usize, Arc<HostGraph>>,
    /// Page-locked (host_alloc) and registered host memory: device code may address it,
    /// as CUDA's unified addressing lets it; start -> bytes.
    mapped: BTreeMap<u64, usize>,
    /// Registrations made by host_register (start -> bytes), the subset of `mapped` it may undo.
    registered: HashMap<usize, usize>,
    /// Function attributes set by function_set_attribute: (function, attribute) -> value.
    function_settings: HashMap<(usize, i32), i32>,
    /// Context limits set by context_set_limit (CUlimit -> value); the rest keep their defaults.
    limits: HashMap<i32, usize>,
    cache_config: i32,
    /// Plain allocations (cpu_malloc, cpu_malloc_pages) between redzones (`LEADING_REDZONE`
    /// before, `REDZONE` after).
    redzones: HashSet<u64>,
    /// (device, peer) pairs with peer access enabled.
    peer_access: HashSet<(i32, i32)>,
    /// Plain allocations (mem_alloc): whole pages, which can be shared with other processes.
    page_mappings: HashMap<u64, ipc::PageMapping>,
    /// Mappings of other processes' memory opened from IPC handles: the allocation's start ->
    /// (the mapping's start, its bytes).
    ipc_opened: HashMap<u64, (u64, usize)>,
    /// Kernel launches running now (on any thread): memory freed meanwhile is only taken out
    /// of the registry, and released by the last of them to end (`memory::LaunchGuard`).
    running_launches: usize,
    /// Stream id (the legacy default stream's is 0) -> the lock a launch or a graph replay on it
    /// holds while it runs: work runs on the thread that enqueues it, so without it two threads'
    /// launches on one stream would run at the same time, where a GPU runs them in order.
    stream_order: HashMap<usize, Arc<Mutex<()>>>,
    /// (address, bytes) freed while a launch ran.
    deferred_frees: Vec<(u64, usize)>,
    /// Pooled blocks freed while a launch ran: given back to the pool's cache when it ends.
    deferred_pool_frees: Vec<u64>,
}

struct EventState {
    flags: u32,
    recorded_at: Option<Instant>,
}

pub struct HostBackend {
    device_count: i32,
    total_memory: usize,
    state: Mutex<State>,
    next_handle: AtomicUsize,
    /// The cache behind `pool_malloc`; its own lock, taken before `state`'s, never inside it.
    pool: Mutex<pool::HostPool>,
}

impl HostBackend {
    pub fn new() -> Self {
        // PYGPU_HOST_DEVICES lets tests exercise multi-device code paths on one CPU.
        let device_count = std::env::var("PYGPU_HOST_DEVICES")
            .ok()
            .and_then(|v| v.trim().parse::<i32>().ok())
            .filter(|n| (1..=64).contains(n))
            .unwrap_or(1);
        HostBackend {
            device_count,
            total_memory: crate::runtime::memory::physical_memory(),
            state: Mutex::new(State::default()),
            next_handle: AtomicUsize::new(1),
            pool: Mutex::new(pool::HostPool::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic cannot happen while the lock is held (no user code runs under it), but
        // if one ever did, the registry is still consistent: recover rather than abort.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn err(code: i32) -> Error {
        Error::api(code, BackendKind::Host)
    }

    /// Checks that `[ptr, ptr + bytes)` lies inside one live allocation.
    fn check_range(&self, state: &State, ptr: DevicePtr, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let below = state.allocations.range(..=ptr).next_back();
        let inside = below.is_some_and(|(start, (size, _))| {
            ptr.checked_add(bytes as u64).is_some_and(|end| end <= start + *size as u64)
        });
        if inside || Self::in_mapped(state, ptr, bytes) {
            return Ok(());
        }
        // What the address was, for the message (a GPU says only "invalid argument").
        let place = match below {
            Some((start, (size, _))) if ptr < start + *size as u64 => format!(
                "runs {} bytes past the end of the allocation at 0x{start:x} ({size} bytes)",
                (ptr - start).saturating_add(bytes as u64) - *size as u64
            ),
            _ => "is not in any live device allocation (freed, never allocated, or host memory)".to_string(),
        };
        Err(Error::detailed(
            CUDA_ERROR_INVALID_VALUE,
            BackendKind::Host,
            format!("the device range 0x{ptr:x} + {bytes} bytes {place}"),
        ))
    }

    /// True when `[ptr, ptr + bytes)` lies inside one page-locked or registered host range.
    fn in_mapped(state: &State, ptr: DevicePtr, bytes: usize) -> bool {
        state.mapped.range(..=ptr).next_back().is_some_and(|(start, size)| {
            ptr.checked_add(bytes.max(1) as u64).is_some_and(|end| end <= start + *size as u64)
        })
    }

    fn check_stream(&self, state: &State, stream: Option<StreamHandle>) -> Result<()> {
        match stream {
            None | Some(StreamHandle::DEFAULT) => Ok(()),
            Some(s) if state.streams.contains_key(&s.0) => Ok(()),
            Some(_) => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        }
    }

    fn new_handle(&self) -> usize {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs `op` now, or records it if its stream is being captured.
    fn submit(&self, stream: Option<StreamHandle>, op: HostOp) -> Result<()> {
        let order = {
            let mut state = self.state();
            self.check_stream(&state, stream)?;
            if stream.is_some_and(|s| state.capturing.contains_key(&s.0)) {
                let op = Self::capturable(&state, op)?;
                if let Some(ops) = stream.and_then(|s| state.capturing.get_mut(&s.0)) {
                    ops.push(op);
                }
                return Ok(());
            }
            // Launches only: copies and memsets are short, and some run holding the GIL, which
            // a kernel's Ctrl-C check needs (a launch waits for the lock without it).
            matches!(op, HostOp::Launch { .. }).then(|| Self::stream_order(&mut state, stream))
        };
        let _in_order = order.as_deref().map(|lock| lock.lock().unwrap_or_else(|e| e.into_inner()));
        // SAFETY: the caller of the public entry point vouched for the host pointers;
        // device ranges are checked by run_op.
        unsafe { self.run_op_on(&op, stream) }
    }

    /// The lock that launches on `stream` hold while they run (`State::stream_order`).
    fn stream_order(state: &mut State, stream: Option<StreamHandle>) -> Arc<Mutex<()>> {
        state.stream_order.entry(stream.unwrap_or(StreamHandle::DEFAULT).0).or_default().clone()
    }

    /// run_op, noted in a running pygpu.profile() recording (`stream`: None is the default one).
    ///
    /// # Safety
    /// As run_op's.
    #[inline(always)]
    unsafe fn run_op_on(&self, op: &HostOp, stream: Option<StreamHandle>) -> Result<()> {
        if activity::recording() {
            // SAFETY: forwarded from the caller.
            return unsafe { self.run_op_recorded(op, stream) };
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.run_op(op) }
    }

    /// run_op_on while recording: out of line, so that the path outside a recording stays as
    /// it was but for one load and branch.
    ///
    /// # Safety
    /// As run_op's.
    #[cold]
    #[inline(never)]
    unsafe fn run_op_recorded(&self, op: &HostOp, stream: Option<StreamHandle>) -> Result<()> {
        let start = activity::clock_ns();
        // SAFETY: forwarded from the caller.
        let result = unsafe { self.run_op(op) };
        if result.is_ok() {
            activity::record(op.activity(stream.map_or(0, |s| s.0 as u64), start));
        }
        result
    }

    /// `op` as a graph keeps it: a graph holds addresses only, so copies to or from pageable
    /// host memory (a temporary's, gone before the replay) are refused, and a launch notes the
    /// allocations its arguments point into, for the replay to check they still exist.
    fn capturable(state: &State, mut op: HostOp) -> Result<HostOp> {
        let host = match op {
            HostOp::HostToDevice { src, bytes, .. } => Some((src as u64, bytes)),
            HostOp::DeviceToHost { dst, bytes, .. } => Some((dst as u64, bytes)),
            _ => None,
        };
        if let Some((ptr, bytes)) = host.filter(|&(_, bytes)| bytes > 0) {
            if !Self::in_mapped(state, ptr, bytes) {
                return Err(Error::detailed(
                    CAPTURE_UNSUPPORTED,
                    BackendKind::Host,
                    "a copy between the device and pageable host memory cannot be captured: the graph \
                             would keep only the address of memory that may be gone when it replays. Copy from \
                             or to page-locked memory (pagelocked_empty) that outlives the graph"
                        .to_string(),
                ));
            }
        }
        if let HostOp::Launch { ref args, ref mut uses, .. } = op {
            *uses = Self::argument_allocations(state, args);
        }
        Ok(op)
    }

    /// The allocations (start, bytes) that a launch's 8-byte arguments point into: the ones
    /// the kernel may use, as far as its arguments tell.
    fn argument_allocations(state: &State, args: &KernelArgs) -> Vec<(u64, usize)> {
        let mut found = Vec::new();
        for value in args.eight_byte_values() {
            if let Some((&start, &(bytes, _))) = state.allocations.range(..=value).next_back() {
                // One past the end counts: a kernel given the end of an array may write there.
                if value <= start + bytes as u64 && !found.contains(&(start, bytes)) {
                    found.push((start, bytes));
                }
            }
        }
        found
    }

    /// # Safety
    /// Host pointers in `op` are valid for its byte counts (the same contract as the
    /// memcpy entry points, and for a graph, as long as the graph is replayed).
    unsafe fn run_op(&self, op: &HostOp) -> Result<()> {
        let empty = match *op {
            HostOp::HostToDevice { bytes, .. }
            | HostOp::DeviceToHost { bytes, .. }
            | HostOp::DeviceToDevice { bytes, .. } => bytes == 0,
            HostOp::Memset { count, .. } => count == 0,
            HostOp::Launch { .. } => false,
        };
        if empty {
            // Nothing to do, and the pointers of an empty range may be null, which even a
            // zero-length copy must not be given.
            return Ok(());
        }
        match *op {
            // Kernels run without the registry lock, so other threads keep working; the guard
            // keeps memory freed meanwhile mapped until the kernel ends.
            HostOp::Launch { ref function, ref config, ref args, ref uses } => {
                let _running = self.launch_guard();
                let guarded = {
                    let state = self.state();
                    if let Some((start, bytes)) =
                        uses.iter().find(|(start, bytes)| state.allocations.get(start).is_none_or(|a| a.0 != *bytes))
                    {
                        return Err(Error::detailed(
                            CUDA_ERROR_INVALID_VALUE,
                            BackendKind::Host,
                            format!(
                                "a kernel captured in this graph uses the allocation at 0x{start:x} ({bytes} bytes), \
                                 which was freed before the graph was launched: keep what a graph uses alive"
                            ),
                        ));
                    }
                    let mut guarded = Self::argument_allocations(&state, args);
                    guarded.retain(|(start, _)| state.redzones.contains(start));
                    guarded
                };
                // SAFETY: the launch's caller vouched that args match the kernel (launch_kernel's
                // contract), and for a graph, for as long as it is replayed.
                let ran = unsafe { function.run(config, args) };
                // Even after a fault: the redzones are restored for the launches that follow.
                let checked = self.check_redzones(&guarded);
                ran.and(checked)
            }
            HostOp::HostToDevice { dst, src, bytes } => {
                let state = self.state();
                self.check_range(&state, dst, bytes)?;
                // SAFETY: dst lies in a live allocation (checked; the lock keeps it live);
                // src is the caller's. `copy` allows overlap.
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
                Ok(())
            }
            HostOp::DeviceToHost { dst, src, bytes } => {
                let state = self.state();
                self.check_range(&state, src, bytes)?;
                // SAFETY: src lies in a live allocation; dst is the caller's.
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
                Ok(())
            }
            HostOp::DeviceToDevice { dst, src, bytes } => {
                let state = self.state();
                self.check_range(&state, src, bytes)?;
                self.check_range(&state, dst, bytes)?;
                // SAFETY: both ranges lie inside live allocations (checked under the lock).
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
                Ok(())
            }
            HostOp::Memset { dst, value, element_size, count } => {
                let bytes = count.checked_mul(element_size).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_VALUE))?;
                let state = self.state();
                self.check_range(&state, dst, bytes)?;
                if !matches!(element_size, 1 | 2 | 4) || dst % element_size as u64 != 0 {
                    return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
                }
                // SAFETY: the range is inside a live allocation and aligned for the element type.
                unsafe {
                    match element_size {
                        1 => std::ptr::write_bytes(dst as *mut u8, value as u8, count),
                        2 => std::slice::from_raw_parts_mut(dst as *mut u16, count).fill(value as u16),
                        _ => std::slice::from_raw_parts_mut(dst as *mut u32, count).fill(value),
                    }
                }
                Ok(())
            }
        }
    }
}

impl Default for HostBackend {
    fn default() -> Self {
        Self::new()
    }
}

fn layout(bytes: usize) -> Result<Layout> {
    Layout::from_size_align(bytes, ALIGNMENT).map_err(|_| HostBackend::err(CUDA_ERROR_MEMORY_ALLOCATION))
}

mod attributes;
mod backend;
mod devices;
mod faults;
mod function_attributes;
mod graphs;
mod host_memory;
mod ipc;
mod kernels;
mod memory;
pub(crate) mod module;
mod peer;
mod pool;
mod streams;
#[cfg(test)]
mod tests;
mod worker_memory;
