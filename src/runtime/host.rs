//! The host backend: device memory is host memory, streams execute their work in order
//! at the moment it is enqueued (so they are always idle when queried), events carry the
//! time they were recorded. Every device address is checked against a registry of live
//! allocations, so a bad pointer is an error code here, as the driver would answer it,
//! rather than a stray write.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::error::{
    CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_RESOURCE_HANDLE, CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_MEMORY_ALLOCATION,
};
use super::host_module::{HostFunction, HostLibrary, HostOp};
use super::kernel::{
    FunctionAttribute, FunctionHandle, GraphExecHandle, GraphHandle, KernelArgs, LaunchConfig, ModuleHandle,
};
use super::{
    Backend, BackendKind, DeviceProperties, DevicePtr, Error, EventHandle, Result, StreamHandle, EVENT_DISABLE_TIMING,
};

/// cudaErrorStreamCaptureUnsupported, cudaErrorStreamCaptureUnmatched / IllegalState.
const CAPTURE_UNSUPPORTED: i32 = 900;
const CAPTURE_UNMATCHED: i32 = 903;

/// Device allocations are aligned like cudaMalloc's.
const ALIGNMENT: usize = 256;

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
    /// stream id -> the work recorded since begin_capture
    capturing: HashMap<usize, Vec<HostOp>>,
    graphs: HashMap<usize, Arc<Vec<HostOp>>>,
    graph_execs: HashMap<usize, Arc<Vec<HostOp>>>,
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
            total_memory: super::memory::physical_memory(),
            state: Mutex::new(State::default()),
            next_handle: AtomicUsize::new(1),
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
        let inside = state.allocations.range(..=ptr).next_back().is_some_and(|(start, (size, _))| {
            ptr.checked_add(bytes as u64).is_some_and(|end| end <= start + *size as u64)
        });
        if inside {
            Ok(())
        } else {
            Err(Self::err(CUDA_ERROR_INVALID_VALUE))
        }
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
        {
            let mut state = self.state();
            self.check_stream(&state, stream)?;
            if let Some(ops) = stream.and_then(|s| state.capturing.get_mut(&s.0)) {
                ops.push(op);
                return Ok(());
            }
        }
        // SAFETY: the caller of the public entry point vouched for the host pointers;
        // device ranges are checked by run_op.
        unsafe { self.run_op(&op) }
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
            // Kernels run without the registry lock, so other threads keep working.
            HostOp::Launch { ref function, ref config, ref args } => unsafe { function.run(config, args) },
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

impl Backend for HostBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    fn device_count(&self) -> Result<i32> {
        Ok(self.device_count)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        if !(0..self.device_count).contains(&device) {
            return Err(Self::err(CUDA_ERROR_INVALID_DEVICE));
        }
        CURRENT_DEVICE.with(|d| d.set(device));
        Ok(())
    }

    fn get_device(&self) -> Result<i32> {
        Ok(CURRENT_DEVICE.with(|d| d.get()))
    }

    fn device_synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn device_properties(&self, device: i32) -> Result<DeviceProperties> {
        if !(0..self.device_count).contains(&device) {
            return Err(Self::err(CUDA_ERROR_INVALID_DEVICE));
        }
        let mut uuid = [0u8; 16];
        uuid[15] = device as u8;
        Ok(DeviceProperties {
            name: "pygpu host backend (CPU)".to_string(),
            uuid,
            pci_bus_id: 0,
            pci_device_id: device,
            pci_domain_id: 0,
            total_global_mem: self.total_memory,
            major: 0,
            minor: 0,
            multi_processor_count: std::thread::available_parallelism().map_or(1, |n| n.get() as i32),
        })
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let used = self.state().allocated_bytes;
        Ok((self.total_memory.saturating_sub(used), self.total_memory))
    }

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut state = self.state();
        if bytes > self.total_memory.saturating_sub(state.allocated_bytes) {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let layout = layout(bytes)?;
        // SAFETY: the layout has a non-zero size. Zeroed so that no stale data of an
        // earlier allocation is ever observable, as on a GPU with a fresh context.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let device = CURRENT_DEVICE.with(|d| d.get());
        state.allocations.insert(ptr as u64, (bytes, device));
        state.allocated_bytes += bytes;
        Ok(ptr as u64)
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        let mut state = self.state();
        let Some((bytes, _)) = state.allocations.remove(&ptr) else {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        };
        state.allocated_bytes -= bytes;
        // SAFETY: ptr was returned by alloc_zeroed with this layout (the registry says so)
        // and has just been removed from it, so it is freed exactly once.
        unsafe { dealloc(ptr as *mut u8, layout(bytes)?) };
        Ok(())
    }

    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        let layout = layout(bytes.max(1))?;
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        self.state().host_allocations.insert(ptr as usize, bytes.max(1));
        Ok(ptr)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        let Some(bytes) = self.state().host_allocations.remove(&(ptr as usize)) else {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        };
        // SAFETY: registered by host_alloc with this size; removed, so freed once.
        unsafe { dealloc(ptr, layout(bytes)?) };
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

    fn memset(
        &self,
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()> {
        self.submit(stream, HostOp::Memset { dst, value, element_size, count })
    }

    fn stream_create(&self, _flags: u32) -> Result<StreamHandle> {
        let id = self.new_handle();
        let device = CURRENT_DEVICE.with(|d| d.get());
        self.state().streams.insert(id, device);
        Ok(StreamHandle(id))
    }

    unsafe fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
        match self.state().streams.remove(&stream.0) {
            Some(_) => Ok(()),
            None => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        }
    }

    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
        self.check_stream(&self.state(), Some(stream))
    }

    fn stream_query(&self, stream: StreamHandle) -> Result<bool> {
        self.check_stream(&self.state(), Some(stream))?;
        Ok(true)
    }

    fn stream_wait_event(&self, stream: StreamHandle, event: EventHandle) -> Result<()> {
        let state = self.state();
        self.check_stream(&state, Some(stream))?;
        if !state.events.contains_key(&event.0) {
            return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
        }
        Ok(())
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        let id = self.new_handle();
        self.state().events.insert(id, EventState { flags, recorded_at: None });
        Ok(EventHandle(id))
    }

    unsafe fn event_destroy(&self, event: EventHandle) -> Result<()> {
        match self.state().events.remove(&event.0) {
            Some(_) => Ok(()),
            None => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        }
    }

    fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()> {
        let mut state = self.state();
        self.check_stream(&state, Some(stream))?;
        let ev = state.events.get_mut(&event.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        // Work before the record has already run (streams execute at enqueue time).
        ev.recorded_at = Some(Instant::now());
        Ok(())
    }

    fn event_synchronize(&self, event: EventHandle) -> Result<()> {
        self.event_query(event).map(|_| ())
    }

    fn event_query(&self, event: EventHandle) -> Result<bool> {
        match self.state().events.get(&event.0) {
            Some(_) => Ok(true),
            None => Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE)),
        }
    }

    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let state = self.state();
        let time = |ev: EventHandle| -> Result<Instant> {
            let ev = state.events.get(&ev.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
            if ev.flags & EVENT_DISABLE_TIMING != 0 {
                return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
            }
            // As in CUDA: timing an event that was never recorded is an invalid handle.
            ev.recorded_at.ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))
        };
        let (t0, t1) = (time(start)?, time(end)?);
        let ms = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        Ok(ms as f32)
    }

    fn module_load(&self, image: &[u8]) -> Result<ModuleHandle> {
        let library = Arc::new(HostLibrary::load(image)?);
        let id = self.new_handle();
        self.state().modules.insert(id, library);
        Ok(ModuleHandle(id))
    }

    unsafe fn module_unload(&self, module: ModuleHandle) -> Result<()> {
        // Functions and graphs hold the library too, so it stays mapped while they live;
        // its globals stop being addressable, as on a GPU.
        let mut state = self.state();
        if state.modules.remove(&module.0).is_none() {
            return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
        }
        for ptr in state.module_globals.remove(&module.0).unwrap_or_default() {
            state.allocations.remove(&ptr);
        }
        Ok(())
    }

    fn module_get_function(&self, module: ModuleHandle, name: &str) -> Result<FunctionHandle> {
        let library = self
            .state()
            .modules
            .get(&module.0)
            .cloned()
            .ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        let function = Arc::new(library.function(name)?);
        let id = self.new_handle();
        self.state().functions.insert(id, function);
        Ok(FunctionHandle(id))
    }

    fn module_get_global(&self, module: ModuleHandle, name: &str) -> Result<(DevicePtr, usize)> {
        let library = self
            .state()
            .modules
            .get(&module.0)
            .cloned()
            .ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        let (ptr, bytes) = library.global(name)?;
        // Register the variable like an allocation, so copies to and from it are checked.
        let mut state = self.state();
        if let std::collections::btree_map::Entry::Vacant(slot) = state.allocations.entry(ptr) {
            slot.insert((bytes, 0));
            state.module_globals.entry(module.0).or_default().push(ptr);
        }
        Ok((ptr, bytes))
    }

    fn function_param_sizes(&self, function: FunctionHandle) -> Result<Option<Vec<usize>>> {
        let state = self.state();
        let f = state.functions.get(&function.0).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        Ok(f.param_sizes.clone())
    }

    fn function_attribute(&self, function: FunctionHandle, attribute: FunctionAttribute) -> Result<i32> {
        if !self.state().functions.contains_key(&function.0) {
            return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
        }
        // Host kernels use no registers or shared memory of a device; the block limit is a GPU's.
        Ok(match attribute {
            FunctionAttribute::MaxThreadsPerBlock => 1024,
            _ => 0,
        })
    }

    fn max_potential_block_size(
        &self,
        function: FunctionHandle,
        _dynamic_shared: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        if !self.state().functions.contains_key(&function.0) {
            return Err(Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE));
        }
        let block = if block_limit > 0 { block_limit.min(256) } else { 256 };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as i32);
        Ok((cores, block))
    }

    unsafe fn launch_kernel(
        &self,
        function: FunctionHandle,
        config: &LaunchConfig,
        stream: StreamHandle,
        args: &KernelArgs,
    ) -> Result<()> {
        let function = self
            .state()
            .functions
            .get(&function.0)
            .cloned()
            .ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        self.submit(Some(stream), HostOp::Launch { function, config: *config, args: args.clone() })
    }

    fn stream_begin_capture(&self, stream: StreamHandle) -> Result<()> {
        let mut state = self.state();
        self.check_stream(&state, Some(stream))?;
        // As in CUDA, the legacy default stream cannot be captured, nor a stream twice.
        if stream == StreamHandle::DEFAULT || state.capturing.contains_key(&stream.0) {
            return Err(Self::err(CAPTURE_UNSUPPORTED));
        }
        state.capturing.insert(stream.0, Vec::new());
        Ok(())
    }

    fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle> {
        let mut state = self.state();
        self.check_stream(&state, Some(stream))?;
        let ops = state.capturing.remove(&stream.0).ok_or_else(|| Self::err(CAPTURE_UNMATCHED))?;
        let id = self.new_handle();
        state.graphs.insert(id, Arc::new(ops));
        Ok(GraphHandle(id))
    }

    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<bool> {
        let state = self.state();
        self.check_stream(&state, Some(stream))?;
        Ok(state.capturing.contains_key(&stream.0))
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        let mut state = self.state();
        let ops = state.graphs.get(&graph.0).cloned().ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?;
        let id = self.new_handle();
        state.graph_execs.insert(id, ops);
        Ok(GraphExecHandle(id))
    }

    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
        let ops = {
            let state = self.state();
            self.check_stream(&state, Some(stream))?;
            if state.capturing.contains_key(&stream.0) {
                return Err(Self::err(CAPTURE_UNSUPPORTED));
            }
            state.graph_execs.get(&exec.0).cloned().ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))?
        };
        for op in ops.iter() {
            // SAFETY: the ops were validated when captured; host pointers captured in a
            // graph must stay valid while it is replayed, as in CUDA.
            unsafe { self.run_op(op) }?;
        }
        Ok(())
    }

    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        self.state().graphs.remove(&graph.0).map(|_| ()).ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))
    }

    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        self.state()
            .graph_execs
            .remove(&exec.0)
            .map(|_| ())
            .ok_or_else(|| Self::err(CUDA_ERROR_INVALID_RESOURCE_HANDLE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code<T: std::fmt::Debug>(r: Result<T>) -> i32 {
        r.expect_err("expected an error").code()
    }

    #[test]
    fn copies_are_confined_to_live_allocations() {
        let b = HostBackend::new();
        let p = b.malloc(64).expect("malloc");
        let data = [7u8; 64];
        // SAFETY: data is valid for 64 bytes.
        unsafe { b.memcpy_htod(p, data.as_ptr(), 64, None) }.expect("in bounds");
        // SAFETY: as above; the backend must refuse before touching memory.
        assert_eq!(code(unsafe { b.memcpy_htod(p + 1, data.as_ptr(), 64, None) }), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(code(b.memcpy_dtod(p, 12345, 8, None)), CUDA_ERROR_INVALID_VALUE);
        let mut out = [0u8; 64];
        // SAFETY: out is valid for 64 bytes.
        unsafe { b.memcpy_dtoh(out.as_mut_ptr(), p, 64, None) }.expect("in bounds");
        assert_eq!(out, data);
        // SAFETY: p is ours and freed once; the second free must be refused.
        unsafe { b.free(p) }.expect("free");
        assert_eq!(code(unsafe { b.free(p) }), CUDA_ERROR_INVALID_VALUE);
        // SAFETY: out is valid; p is no longer an allocation.
        assert_eq!(code(unsafe { b.memcpy_dtoh(out.as_mut_ptr(), p, 1, None) }), CUDA_ERROR_INVALID_VALUE);
    }

    #[test]
    fn memory_accounting_and_out_of_memory() {
        let b = HostBackend::new();
        let (free0, total) = b.mem_get_info().expect("info");
        let p = b.malloc(1 << 20).expect("malloc");
        assert_eq!(b.mem_get_info().expect("info").0, free0 - (1 << 20));
        assert_eq!(code(b.malloc(total)), CUDA_ERROR_MEMORY_ALLOCATION);
        // SAFETY: ours, freed once.
        unsafe { b.free(p) }.expect("free");
        assert_eq!(b.mem_get_info().expect("info").0, free0);
    }

    #[test]
    fn memset_checks_alignment_and_width() {
        let b = HostBackend::new();
        let p = b.malloc(16).expect("malloc");
        b.memset(p, 0xABCD, 2, 8, None).expect("d16");
        let mut out = [0u16; 8];
        // SAFETY: out holds 16 bytes.
        unsafe { b.memcpy_dtoh(out.as_mut_ptr() as *mut u8, p, 16, None) }.expect("copy");
        assert_eq!(out, [0xABCD; 8]);
        assert_eq!(code(b.memset(p + 1, 0, 4, 2, None)), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(code(b.memset(p, 0, 3, 2, None)), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(code(b.memset(p, 0, 4, usize::MAX, None)), CUDA_ERROR_INVALID_VALUE);
    }

    #[test]
    fn events_time_in_order_and_handles_die() {
        let b = HostBackend::new();
        let s = b.stream_create(0).expect("stream");
        let (e0, e1) = (b.event_create(0).expect("event"), b.event_create(0).expect("event"));
        assert_eq!(code(b.event_elapsed_ms(e0, e1)), CUDA_ERROR_INVALID_RESOURCE_HANDLE);
        b.event_record(e0, s).expect("record");
        std::thread::sleep(std::time::Duration::from_millis(2));
        b.event_record(e1, s).expect("record");
        assert!(b.event_elapsed_ms(e0, e1).expect("elapsed") >= 1.0);
        // SAFETY: live handles, destroyed once; reuse must be refused.
        unsafe { b.stream_destroy(s) }.expect("destroy");
        assert_eq!(code(b.event_record(e0, s)), CUDA_ERROR_INVALID_RESOURCE_HANDLE);
        assert_eq!(code(unsafe { b.stream_destroy(s) }), CUDA_ERROR_INVALID_RESOURCE_HANDLE);
    }

    #[test]
    fn empty_operations_accept_null_pointers() {
        let b = HostBackend::new();
        b.memset(0, 0, 2, 0, None).expect("empty memset");
        b.memcpy_dtod(0, 0, 0, None).expect("empty copy");
        // SAFETY: zero bytes: nothing is read or written.
        unsafe { b.memcpy_htod(0, std::ptr::null(), 0, None) }.expect("empty upload");
    }

    #[test]
    fn device_ordinals_are_checked() {
        let b = HostBackend::new();
        assert_eq!(code(b.set_device(b.device_count().expect("count"))), CUDA_ERROR_INVALID_DEVICE);
        assert_eq!(code(b.set_device(-1)), CUDA_ERROR_INVALID_DEVICE);
        assert_eq!(b.get_device().expect("device"), 0);
    }
}
