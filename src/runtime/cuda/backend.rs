//! `Backend` for `CudaBackend`: each operation as the driver API call that performs it.

use super::*;
use crate::runtime::PeerCopy;

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn device_count(&self) -> Result<i32> {
        check(self.init_status)?;
        Ok(self.primary.len() as i32)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        let ctx = self.primary_context(device)?;
        // SAFETY: ctx is a retained primary context.
        check(unsafe { (self.api.cuCtxSetCurrent)(ctx) })
    }

    fn get_device(&self) -> Result<i32> {
        check(self.init_status)?;
        let mut ctx: CUcontext = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuCtxGetCurrent)(&mut ctx) })?;
        if ctx.is_null() {
            return Ok(0);
        }
        Ok(self.context_device(ctx)?.0)
    }

    fn launch_device(&self) -> Result<i32> {
        check(self.init_status)?;
        let ctx = self.ensure_context()?;
        Ok(self.context_device(ctx)?.0)
    }

    fn device_synchronize(&self) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: a context is current.
        check(unsafe { (self.api.cuCtxSynchronize)() })
    }

    fn device_properties(&self, device: i32) -> Result<DeviceProperties> {
        self.cuda_device_properties(device)
    }

    fn allocation_identity(&self, ptr: DevicePtr) -> Option<(DevicePtr, u64)> {
        self.cuda_allocation_identity(ptr)
    }

    fn allocation_extent(&self, ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
        self.cuda_allocation_extent(ptr)
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        self.ensure_context()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers; a context is current.
        check(unsafe { (self.api.cuMemGetInfo_v2)(&mut free, &mut total) })?;
        Ok((free, total))
    }

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        self.ensure_context()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; a context is current.
        self.allocating_during_capture(|| check(unsafe { (self.api.cuMemAlloc_v2)(&mut ptr, bytes) }))?;
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // SAFETY: the caller hands over an allocation of ours; the driver rejects others.
        check(unsafe { (self.api.cuMemFree_v2)(ptr) })
    }

    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        self.ensure_context()?;
        let mut ptr: *mut c_void = null_mut();
        // CU_MEMHOSTALLOC_PORTABLE: pinned for every context, as cudaMallocHost's memory is.
        // SAFETY: valid out-pointer.
        self.allocating_during_capture(|| check(unsafe { (self.api.cuMemHostAlloc)(&mut ptr, bytes.max(1), 0x1) }))?;
        Ok(ptr as *mut u8)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller hands over memory from host_alloc.
        check(unsafe { (self.api.cuMemFreeHost)(ptr as *mut c_void) })
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: *const u8, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_memcpy_htod(dst, src, bytes, s) }
    }

    unsafe fn memcpy_dtoh(&self, dst: *mut u8, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_memcpy_dtoh(dst, src, bytes, s) }
    }

    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        self.cuda_memcpy_dtod(dst, src, bytes, s)
    }

    fn memset_value(&self, dst: DevicePtr, value: MemsetValue, count: usize, s: Option<StreamHandle>) -> Result<()> {
        self.cuda_memset_value(dst, value, count, s)
    }

    fn stream_create(&self, flags: u32) -> Result<StreamHandle> {
        self.ensure_context()?;
        if flags & STREAM_NON_BLOCKING != 0 {
            self.note_unordered_streams()?;
        }
        let mut s: CUstream = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuStreamCreate)(&mut s, flags) })?;
        self.block_cache.stream_opened();
        Ok(StreamHandle(s as usize))
    }

    unsafe fn stream_destroy(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the caller hands over a live stream of ours.
        check(unsafe { (self.api.cuStreamDestroy_v2)(s.0 as CUstream) })?;
        self.block_cache.stream_closed();
        Ok(())
    }

    fn stream_synchronize(&self, s: StreamHandle) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the handle is one of ours (the Python layer keeps it alive).
        check(unsafe { (self.api.cuStreamSynchronize)(s.0 as CUstream) })
    }

    fn stream_query(&self, s: StreamHandle) -> Result<bool> {
        self.ensure_context()?;
        // SAFETY: as above.
        match unsafe { (self.api.cuStreamQuery)(s.0 as CUstream) } {
            0 => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Cuda)),
        }
    }

    fn stream_wait_event(&self, s: StreamHandle, e: EventHandle) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: live handles of ours.
        check(unsafe { (self.api.cuStreamWaitEvent)(s.0 as CUstream, e.0 as CUevent, 0) })
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        self.ensure_context()?;
        let mut e: CUevent = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuEventCreate)(&mut e, flags) })?;
        Ok(EventHandle(e as usize))
    }

    unsafe fn event_destroy(&self, e: EventHandle) -> Result<()> {
        // SAFETY: the caller hands over a live event of ours.
        check(unsafe { (self.api.cuEventDestroy_v2)(e.0 as CUevent) })
    }

    fn event_record(&self, e: EventHandle, s: StreamHandle) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: live handles of ours.
        check(unsafe { (self.api.cuEventRecord)(e.0 as CUevent, s.0 as CUstream) })
    }

    fn event_synchronize(&self, e: EventHandle) -> Result<()> {
        // SAFETY: a live handle of ours.
        check(unsafe { (self.api.cuEventSynchronize)(e.0 as CUevent) })
    }

    fn event_query(&self, e: EventHandle) -> Result<bool> {
        // SAFETY: a live handle of ours.
        match unsafe { (self.api.cuEventQuery)(e.0 as CUevent) } {
            0 => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Cuda)),
        }
    }

    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let mut ms: f32 = 0.0;
        // SAFETY: valid out-pointer; live handles of ours.
        check(unsafe { (self.api.cuEventElapsedTime)(&mut ms, start.0 as CUevent, end.0 as CUevent) })?;
        Ok(ms)
    }

    fn module_load(&self, image: &[u8]) -> Result<ModuleHandle> {
        self.cuda_module_load(image)
    }

    unsafe fn module_unload(&self, module: ModuleHandle) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller hands over a live module that nothing uses afterwards.
        check(unsafe { (self.api.cuModuleUnload)(module.0 as CUmodule) })
    }

    fn module_get_function(&self, module: ModuleHandle, name: &str) -> Result<FunctionHandle> {
        let cname = symbol_name(name)?;
        let mut function: CUfunction = null_mut();
        // SAFETY: live module (kept alive by its owner), NUL-terminated name, valid out-pointer.
        let code = unsafe { (self.api.cuModuleGetFunction)(&mut function, module.0 as CUmodule, cname.as_ptr()) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Cuda,
                detail: format!("no kernel named {name:?} in this module (is it extern \"C\"?)"),
            });
        }
        Ok(FunctionHandle(function as usize))
    }

    fn module_get_global(&self, module: ModuleHandle, name: &str) -> Result<(DevicePtr, usize)> {
        let cname = symbol_name(name)?;
        let (mut ptr, mut bytes): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: as for module_get_function.
        let code =
            unsafe { (self.api.cuModuleGetGlobal_v2)(&mut ptr, &mut bytes, module.0 as CUmodule, cname.as_ptr()) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Cuda,
                detail: format!("no global named {name:?} in this module"),
            });
        }
        Ok((ptr, bytes))
    }

    fn function_param_sizes(&self, function: FunctionHandle) -> Result<Option<Vec<usize>>> {
        let Some(param_info) = self.param_info else { return Ok(None) };
        let mut sizes = Vec::new();
        // The driver answers CUDA_ERROR_INVALID_VALUE past the last parameter.
        for index in 0..4096 {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: live function handle, valid out-pointers.
            if unsafe { param_info(function.0 as CUfunction, index, &mut offset, &mut size) } != 0 {
                break;
            }
            sizes.push(size);
        }
        Ok(Some(sizes))
    }

    fn function_attribute(&self, function: FunctionHandle, attribute: FunctionAttribute) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: live function handle, valid out-pointer.
        check(unsafe { (self.api.cuFuncGetAttribute)(&mut value, attribute as c_int, function.0 as CUfunction) })?;
        Ok(value)
    }

    fn max_potential_block_size(
        &self,
        function: FunctionHandle,
        dynamic_shared: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        self.cuda_max_potential_block_size(function, dynamic_shared, block_limit)
    }

    unsafe fn launch_kernel(
        &self,
        function: FunctionHandle,
        config: &LaunchConfig,
        s: StreamHandle,
        args: &KernelArgs,
    ) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_launch_kernel(function, config, s, args) }
    }

    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()> {
        self.ensure_context()?;
        // Relaxed: pygpu allocates on the user's behalf while a capture runs (page-locked staging
        // that set() and fill() hand to the graph, memory for results); in the thread-local
        // mode such a call would invalidate the capture (cudaErrorStreamCaptureInvalidated).
        // SAFETY: a live stream of ours.
        check(unsafe { (self.api.cuStreamBeginCapture_v2)(stream(Some(s)), CU_STREAM_CAPTURE_MODE_RELAXED) })
    }

    fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle> {
        let mut graph: CUgraph = null_mut();
        // SAFETY: a live stream; valid out-pointer.
        check(unsafe { (self.api.cuStreamEndCapture)(stream(Some(s)), &mut graph) })?;
        Ok(GraphHandle(graph as usize))
    }

    fn stream_is_capturing(&self, s: StreamHandle) -> Result<bool> {
        let mut status: c_int = 0;
        // SAFETY: a live stream; valid out-pointer.
        check(unsafe { (self.api.cuStreamIsCapturing)(stream(Some(s)), &mut status) })?;
        Ok(status != 0)
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        self.ensure_context()?;
        let mut exec: CUgraphExec = null_mut();
        // SAFETY: a live graph; valid out-pointer.
        check(unsafe { (self.api.cuGraphInstantiateWithFlags)(&mut exec, graph.0 as CUgraph, 0) })?;
        Ok(GraphExecHandle(exec as usize))
    }

    fn graph_launch(&self, exec: GraphExecHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { (self.api.cuGraphLaunch)(exec.0 as CUgraphExec, stream(Some(s))) })
    }

    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        // SAFETY: the caller hands over a live graph.
        check(unsafe { (self.api.cuGraphDestroy)(graph.0 as CUgraph) })
    }

    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        // SAFETY: the caller hands over a live executable graph.
        check(unsafe { (self.api.cuGraphExecDestroy)(exec.0 as CUgraphExec) })
    }

    fn error_string(&self, code: i32) -> Option<String> {
        // Our table first (the runtime's wording); the driver knows codes newer than it.
        if crate::runtime::error::known_code(code) {
            return None;
        }
        self.driver_text(self.api.cuGetErrorString, code)
    }

    fn error_name(&self, code: i32) -> Option<String> {
        if crate::runtime::error::known_code(code) {
            return None;
        }
        self.driver_text(self.api.cuGetErrorName, code)
    }

    fn driver_version(&self) -> Result<i32> {
        let mut version: c_int = 0;
        // SAFETY: valid out-pointer; needs no cuInit.
        check(unsafe { (self.api.cuDriverGetVersion)(&mut version) })?;
        Ok(version)
    }

    fn device_attribute(&self, device: i32, attribute: i32) -> Result<i32> {
        check(self.init_status)?;
        let mut dev: CUdevice = 0;
        // SAFETY: valid out-pointer; the driver validates the ordinal.
        check(unsafe { (self.api.cuDeviceGet)(&mut dev, device) })?;
        let mut value: c_int = 0;
        // SAFETY: valid out-pointer; the driver rejects unknown attributes with INVALID_VALUE.
        check(unsafe { (self.api.cuDeviceGetAttribute)(&mut value, attribute, dev) })?;
        Ok(value)
    }

    fn function_get_attribute(&self, function: FunctionHandle, attribute: i32) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: live function handle, valid out-pointer; the driver validates the attribute.
        check(unsafe { (self.api.cuFuncGetAttribute)(&mut value, attribute, function.0 as CUfunction) })?;
        Ok(value)
    }

    fn function_set_attribute(&self, function: FunctionHandle, attribute: i32, value: i32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: live function handle; the driver validates attribute and value.
        check(unsafe { (self.api.cuFuncSetAttribute)(function.0 as CUfunction, attribute, value) })
    }

    fn function_set_cache_config(&self, function: FunctionHandle, config: i32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: live function handle; the driver validates the configuration.
        check(unsafe { (self.api.cuFuncSetCacheConfig)(function.0 as CUfunction, config) })
    }

    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8> {
        self.ensure_context()?;
        let mut ptr: *mut c_void = null_mut();
        // PORTABLE is always added: with one primary context per device, memory pinned for
        // only the current one would be a trap when the current device changes.
        // SAFETY: valid out-pointer; the driver validates the flags.
        check(unsafe { (self.api.cuMemHostAlloc)(&mut ptr, bytes.max(1), flags | HOST_ALLOC_PORTABLE) })?;
        Ok(ptr as *mut u8)
    }

    fn host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr> {
        self.ensure_context()?;
        let mut device: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the driver checks that ptr is mapped page-locked memory.
        check(unsafe { (self.api.cuMemHostGetDevicePointer_v2)(&mut device, ptr as *mut c_void, 0) })?;
        Ok(device)
    }

    unsafe fn host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller vouches that ptr is valid for bytes until unregistered.
        check(unsafe { (self.api.cuMemHostRegister_v2)(ptr as *mut c_void, bytes, flags | HOST_ALLOC_PORTABLE) })
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller hands over a registration of ours; the driver rejects others.
        check(unsafe { (self.api.cuMemHostUnregister)(ptr as *mut c_void) })
    }

    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.ensure_context()?;
        let mut handle = CUipcMemHandle { reserved: [0; IPC_HANDLE_BYTES] };
        // SAFETY: valid out-pointer; the driver checks that ptr is device memory of its own.
        check(unsafe { (self.api.cuIpcGetMemHandle)(&mut handle, ptr) })?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; IPC_HANDLE_BYTES], flags: u32) -> Result<DevicePtr> {
        self.ensure_context()?;
        let handle = CUipcMemHandle { reserved: handle.map(|b| b as c_char) };
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the handle is opaque bytes the driver validates.
        check(unsafe { (self.api.cuIpcOpenMemHandle_v2)(&mut ptr, handle, flags) })?;
        Ok(ptr)
    }

    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the caller hands over a mapping from ipc_open_mem_handle.
        check(unsafe { (self.api.cuIpcCloseMemHandle)(ptr) })
    }

    unsafe fn memcpy_pitched(&self, copy: &PitchedCopy, s: Option<StreamHandle>) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_memcpy_pitched(copy, s) }
    }

    fn context_get_limit(&self, limit: i32) -> Result<usize> {
        self.ensure_context()?;
        let mut value: usize = 0;
        // SAFETY: valid out-pointer; a context is current; the driver validates the limit.
        check(unsafe { (self.api.cuCtxGetLimit)(&mut value, limit) })?;
        Ok(value)
    }

    fn context_set_limit(&self, limit: i32, value: usize) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: a context is current; the driver validates limit and value.
        check(unsafe { (self.api.cuCtxSetLimit)(limit, value) })
    }

    fn context_api_version(&self) -> Result<u32> {
        self.ensure_context()?;
        let mut version: c_uint = 0;
        // SAFETY: valid out-pointer; a null context asks about the current one, which exists.
        check(unsafe { (self.api.cuCtxGetApiVersion)(null_mut(), &mut version) })?;
        Ok(version)
    }

    fn malloc_managed(&self, bytes: usize, flags: u32) -> Result<DevicePtr> {
        self.ensure_context()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; a context is current; the driver validates size and flags.
        check(unsafe { (self.api.cuMemAllocManaged)(&mut ptr, bytes, flags) })?;
        Ok(ptr)
    }

    fn stream_attach_mem(&self, s: StreamHandle, ptr: DevicePtr, bytes: usize, flags: u32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the stream handle came from this backend; the driver validates the range
        // (it must be managed memory) and the flags.
        check(unsafe { (self.api.cuStreamAttachMemAsync)(s.0 as CUstream, ptr, bytes, flags) })
    }

    fn context_get_cache_config(&self) -> Result<i32> {
        self.ensure_context()?;
        let mut config: c_int = 0;
        // SAFETY: valid out-pointer; a context is current.
        check(unsafe { (self.api.cuCtxGetCacheConfig)(&mut config) })?;
        Ok(config)
    }

    fn context_set_cache_config(&self, config: i32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: a context is current; the driver validates the configuration.
        check(unsafe { (self.api.cuCtxSetCacheConfig)(config) })
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> Result<bool> {
        check(self.init_status)?;
        let (mut dev, mut peer_dev): (CUdevice, CUdevice) = (0, 0);
        // SAFETY: valid out-pointers; the driver validates the ordinals.
        check(unsafe { (self.api.cuDeviceGet)(&mut dev, device) })?;
        // SAFETY: as above.
        check(unsafe { (self.api.cuDeviceGet)(&mut peer_dev, peer) })?;
        let mut can: c_int = 0;
        // SAFETY: valid out-pointer and device handles.
        check(unsafe { (self.api.cuDeviceCanAccessPeer)(&mut can, dev, peer_dev) })?;
        Ok(can != 0)
    }

    fn pool_malloc(&self, bytes: usize, s: StreamHandle) -> Result<(DevicePtr, u64)> {
        self.cuda_pool_malloc(bytes, s)
    }

    unsafe fn pool_free(&self, ptr: DevicePtr, bytes: usize, ticket: u64, device: i32, s: StreamHandle) -> Result<()> {
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_pool_free(ptr, bytes, ticket, device, s) }
    }

    fn pool_trim(&self, device: i32) -> Result<()> {
        self.cuda_pool_trim(device)
    }

    fn pool_note_unordered_stream(&self) -> Result<()> {
        self.note_unordered_streams()
    }

    fn pool_note_per_thread_stream(&self) {
        if !self.per_thread_stream_used.swap(true, Ordering::AcqRel) {
            self.block_cache.stream_opened();
        }
    }

    fn pool_reserved_bytes(&self, device: i32) -> Result<Option<usize>> {
        self.cuda_pool_reserved_bytes(device)
    }

    fn enable_peer_access(&self, peer: i32, flags: u32) -> Result<()> {
        self.cuda_enable_peer_access(peer, flags)
    }

    fn disable_peer_access(&self, peer: i32) -> Result<()> {
        self.cuda_disable_peer_access(peer)
    }

    fn memcpy_peer(&self, copy: &PeerCopy, stream: Option<StreamHandle>) -> Result<()> {
        self.cuda_memcpy_peer(copy, stream)
    }

    fn ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.cuda_ipc_get_event_handle(event)
    }

    fn ipc_open_event_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle> {
        self.cuda_ipc_open_event_handle(handle)
    }
}
