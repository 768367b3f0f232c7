//! `Backend` for `HostBackend`: each operation checked against the registry, then done on the CPU.

use super::*;
use crate::runtime::{PeerCopy, MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE};

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
        self.cpu_malloc_pages(bytes)
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cpu_free(ptr) }
    }

    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        self.cpu_host_alloc(bytes)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        let mut state = self.state();
        state.mapped.remove(&(ptr as u64));
        let Some(bytes) = state.host_allocations.remove(&(ptr as usize)) else {
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

    fn stream_create(&self, _flags: u32) -> Result<StreamHandle> {
        let id = self.new_handle();
        let device = CURRENT_DEVICE.with(|d| d.get());
        self.state().streams.insert(id, device);
        Ok(StreamHandle(id))
    }

    unsafe fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
        let mut state = self.state();
        // A capture in progress ends with its stream (CUDA invalidates it likewise).
        state.capturing.remove(&stream.0);
        match state.streams.remove(&stream.0) {
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
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cpu_module_unload(module) }
    }

    fn module_get_function(&self, module: ModuleHandle, name: &str) -> Result<FunctionHandle> {
        self.cpu_module_get_function(module, name)
    }

    fn module_get_global(&self, module: ModuleHandle, name: &str) -> Result<(DevicePtr, usize)> {
        self.cpu_module_get_global(module, name)
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
        self.cpu_max_potential_block_size(function, _dynamic_shared, block_limit)
    }

    unsafe fn launch_kernel(
        &self,
        function: FunctionHandle,
        config: &LaunchConfig,
        stream: StreamHandle,
        args: &KernelArgs,
    ) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cpu_launch_kernel(function, config, stream, args) }
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

    fn driver_version(&self) -> Result<i32> {
        Ok(HOST_DRIVER_VERSION)
    }

    fn device_attribute(&self, device: i32, attribute: i32) -> Result<i32> {
        let props = self.device_properties(device)?;
        attributes::device_attribute(attribute, &props).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))
    }

    fn function_get_attribute(&self, function: FunctionHandle, attribute: i32) -> Result<i32> {
        self.cpu_function_get_attribute(function, attribute)
    }

    fn function_set_attribute(&self, function: FunctionHandle, attribute: i32, value: i32) -> Result<()> {
        self.cpu_function_set_attribute(function, attribute, value)
    }

    fn function_set_cache_config(&self, function: FunctionHandle, config: i32) -> Result<()> {
        self.cpu_function_set_cache_config(function, config)
    }

    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8> {
        if flags & !(HOST_ALLOC_PORTABLE | HOST_ALLOC_DEVICEMAP | HOST_ALLOC_WRITECOMBINED) != 0 {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        // Host memory is already portable and mapped; write-combining has no CPU-side meaning here.
        self.host_alloc(bytes)
    }

    fn host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr> {
        self.cpu_host_get_device_pointer(ptr)
    }

    unsafe fn host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cpu_host_register(ptr, bytes, flags) }
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<()> {
        let mut state = self.state();
        if state.registered.remove(&(ptr as usize)).is_none() {
            return Err(Self::err(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED));
        }
        state.mapped.remove(&(ptr as u64));
        Ok(())
    }

    unsafe fn memcpy_pitched(&self, copy: &PitchedCopy, stream: Option<StreamHandle>) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cpu_memcpy_pitched(copy, stream) }
    }

    fn context_get_limit(&self, limit: i32) -> Result<usize> {
        let default = default_limit(limit).ok_or(Self::err(CUDA_ERROR_UNSUPPORTED_LIMIT))?;
        Ok(self.state().limits.get(&limit).copied().unwrap_or(default))
    }

    fn context_set_limit(&self, limit: i32, value: usize) -> Result<()> {
        default_limit(limit).ok_or(Self::err(CUDA_ERROR_UNSUPPORTED_LIMIT))?;
        // Recorded and reported back, as a GPU does; host kernels take their stacks and heap
        // from the process, so the values do not constrain them.
        self.state().limits.insert(limit, value);
        Ok(())
    }

    fn context_api_version(&self) -> Result<u32> {
        // What CUDA 12 drivers report: the context API has not changed since CUDA 3.2.
        Ok(3020)
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

    fn context_get_cache_config(&self) -> Result<i32> {
        Ok(self.state().cache_config)
    }

    fn context_set_cache_config(&self, config: i32) -> Result<()> {
        if !(0..=3).contains(&config) {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        self.state().cache_config = config;
        Ok(())
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> Result<bool> {
        for d in [device, peer] {
            if !(0..self.device_count).contains(&d) {
                return Err(Self::err(CUDA_ERROR_INVALID_DEVICE));
            }
        }
        // All host devices share the process's memory; like CUDA, a device is not its own peer.
        Ok(device != peer)
    }

    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.cpu_ipc_get_mem_handle(ptr)
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; IPC_HANDLE_BYTES], flags: u32) -> Result<DevicePtr> {
        self.cpu_ipc_open_mem_handle(handle, flags)
    }

    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cpu_ipc_close_mem_handle(ptr) }
    }

    fn pool_malloc(&self, bytes: usize, _stream: StreamHandle) -> Result<(DevicePtr, u64)> {
        if bytes == 0 {
            return Ok((0, 0));
        }
        let class = crate::runtime::pool::size_class(bytes).ok_or_else(|| Self::err(CUDA_ERROR_MEMORY_ALLOCATION))?;
        let device = CURRENT_DEVICE.with(|d| d.get());
        let mut cache = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        // Out of memory is an error here, not an abort in a map's growth.
        if !cache.reserve_handout() || !crate::runtime::oom_reserve::rearm() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        if let Some(ptr) = cache.take(device, class, bytes) {
            return Ok((ptr, 0));
        }
        let ptr = self.cpu_malloc(class)?;
        cache.add_live(ptr, device, class, bytes);
        Ok((ptr, 0))
    }

    unsafe fn pool_free(
        &self,
        ptr: DevicePtr,
        _bytes: usize,
        _ticket: u64,
        _device: i32,
        _s: StreamHandle,
    ) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        // Work on host streams has already run, so the block is idle now, unless a kernel on
        // another thread still uses it: then it goes back to the cache when the kernel ends.
        let mut cache = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut state = self.state();
            if state.running_launches > 0 {
                // Where even this list cannot grow (memory ran out), the block stays handed
                // out for good: a leak, not an abort, and never memory a kernel still uses.
                if state.deferred_pool_frees.try_reserve(1).is_ok() {
                    state.deferred_pool_frees.push(ptr);
                }
                return Ok(());
            }
        }
        match cache.give_back(ptr) {
            pool::GiveBack::Cached => Ok(()),
            pool::GiveBack::Release => {
                drop(cache);
                // SAFETY: the block came from cpu_malloc and the pool just dropped it from its
                // books, so it is freed exactly once, here.
                unsafe { self.cpu_free(ptr) }
            }
            pool::GiveBack::Unknown => Err(Self::err(CUDA_ERROR_INVALID_VALUE)),
        }
    }

    fn pool_trim(&self, device: i32) -> Result<()> {
        // One block at a time, the pool's lock released before each free (the pool's lock
        // comes before the registry's): trimming runs when memory ran out, so it allocates nothing.
        loop {
            let Some(ptr) = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop_idle(device) else {
                return Ok(());
            };
            // SAFETY: an idle block came from malloc and was just removed from the cache,
            // so nothing hands it out again; it is freed exactly once.
            unsafe { self.free(ptr) }?;
        }
    }

    fn pool_reserved_bytes(&self, device: i32) -> Result<Option<usize>> {
        Ok(Some(self.pool.lock().unwrap_or_else(|e| e.into_inner()).reserved(device)))
    }

    fn enable_peer_access(&self, peer: i32, flags: u32) -> Result<()> {
        self.cpu_enable_peer_access(peer, flags)
    }

    fn disable_peer_access(&self, peer: i32) -> Result<()> {
        self.cpu_disable_peer_access(peer)
    }

    fn memcpy_peer(&self, copy: &PeerCopy, stream: Option<StreamHandle>) -> Result<()> {
        self.cpu_memcpy_peer(copy, stream)
    }

    fn ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.cpu_ipc_get_event_handle(event)
    }

    fn ipc_open_event_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle> {
        self.cpu_ipc_open_event_handle(handle)
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

/// The CUDA version whose runtime semantics the host backend follows: that of the bindings
/// pygpu is built against (pygpu.driver.get_version()).
const HOST_DRIVER_VERSION: i32 = 12080;

/// A GPU's default for each CUlimit (CUDA's documented defaults), None for unknown limits.
fn default_limit(limit: i32) -> Option<usize> {
    Some(match limit {
        0 => 1024,    // STACK_SIZE
        1 => 1 << 20, // PRINTF_FIFO_SIZE
        2 => 8 << 20, // MALLOC_HEAP_SIZE
        3 => 2,       // DEV_RUNTIME_SYNC_DEPTH
        4 => 2048,    // DEV_RUNTIME_PENDING_LAUNCH_COUNT
        5 => 32,      // MAX_L2_FETCH_GRANULARITY
        6 => 0,       // PERSISTING_L2_CACHE_SIZE
        _ => return None,
    })
}
