//! `Backend` for `HipBackend`: each operation as the HIP runtime call that performs it.

use super::*;

impl Backend for HipBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Hip
    }

    fn device_count(&self) -> Result<i32> {
        let mut count: c_int = 0;
        // SAFETY: valid out-pointer. With no AMD GPU this returns hipErrorNoDevice (100).
        check(unsafe { hipGetDeviceCount(&mut count) })?;
        Ok(count)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        // SAFETY: plain runtime call; the runtime validates the ordinal.
        check(unsafe { hipSetDevice(device) })
    }

    fn get_device(&self) -> Result<i32> {
        let mut device: c_int = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipGetDevice(&mut device) })?;
        Ok(device)
    }

    fn device_synchronize(&self) -> Result<()> {
        // SAFETY: plain runtime call on the calling thread's current device.
        check(unsafe { hipDeviceSynchronize() })
    }

    fn device_properties(&self, device: i32) -> Result<DeviceProperties> {
        let mut dev: hipDevice_t = 0;
        // SAFETY: valid out-pointer; the runtime validates the ordinal.
        check(unsafe { hipDeviceGet(&mut dev, device) })?;
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds 256 bytes, we pass one less than that so the last byte
        // stays 0 whatever the runtime writes.
        check(unsafe { hipDeviceGetName(name.as_mut_ptr(), (name.len() - 1) as c_int, dev) })?;
        // SAFETY: NUL-terminated within the buffer (its last byte is still 0).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut uuid = hipUUID { bytes: [0; 16] };
        // SAFETY: valid out-pointer to a 16-byte hipUUID.
        let uuid = match unsafe { hipDeviceGetUuid(&mut uuid, dev) } {
            0 => uuid.bytes.map(|b| b as u8),
            // Some devices/runtimes have no UUID to report; leave it zero as CUDA would
            // for a device without one, rather than failing the whole query.
            HIP_ERROR_NOT_SUPPORTED => [0; 16],
            code => return Err(Error::api(code, BackendKind::Hip)),
        };
        let mut total: usize = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipDeviceTotalMem(&mut total, dev) })?;
        use hipDeviceAttribute_t::*;
        Ok(DeviceProperties {
            name,
            uuid,
            pci_bus_id: self.attribute(hipDeviceAttributePciBusId, device)?,
            pci_device_id: self.attribute(hipDeviceAttributePciDeviceId, device)?,
            pci_domain_id: self.attribute(hipDeviceAttributePciDomainID, device)?,
            total_global_mem: total,
            major: self.attribute(hipDeviceAttributeComputeCapabilityMajor, device)?,
            minor: self.attribute(hipDeviceAttributeComputeCapabilityMinor, device)?,
            multi_processor_count: self.attribute(hipDeviceAttributeMultiprocessorCount, device)?,
        })
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers; applies to the current device.
        check(unsafe { hipMemGetInfo(&mut free, &mut total) })?;
        Ok((free, total))
    }

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { hipMalloc(&mut ptr, bytes) })?;
        Ok(ptr as usize as DevicePtr)
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        // SAFETY: the caller hands over an allocation of ours; the runtime rejects others.
        check(unsafe { hipFree(dev_ptr(ptr)) })
    }

    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; at least one byte so the pointer is a real allocation.
        check(unsafe { hipHostMalloc(&mut ptr, bytes.max(1), HIP_HOST_MALLOC_PORTABLE) })?;
        Ok(ptr as *mut u8)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        // SAFETY: the caller hands over memory from host_alloc.
        check(unsafe { hipHostFree(ptr as *mut c_void) })
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: *const u8, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for src, which is all memcpy asks.
        unsafe { self.memcpy(dev_ptr(dst), src as *const c_void, bytes, hipMemcpyKind::hipMemcpyHostToDevice, s) }
    }

    unsafe fn memcpy_dtoh(&self, dst: *mut u8, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for dst, which is all memcpy asks.
        unsafe { self.memcpy(dst as *mut c_void, dev_ptr(src), bytes, hipMemcpyKind::hipMemcpyDeviceToHost, s) }
    }

    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: no host memory is involved; the runtime validates both device addresses.
        unsafe { self.memcpy(dev_ptr(dst), dev_ptr(src), bytes, hipMemcpyKind::hipMemcpyDeviceToDevice, s) }
    }

    fn memset_value(&self, dst: DevicePtr, value: MemsetValue, count: usize, s: Option<StreamHandle>) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let d = dev_ptr(dst);
        // SAFETY: only device addresses and a stream handle, which the runtime validates.
        check(unsafe {
            match value {
                MemsetValue::U8(v) => hipMemsetD8Async(d, v, count, stream(s)),
                MemsetValue::U16(v) => hipMemsetD16Async(d, v as c_ushort, count, stream(s)),
                // Same 32 bits, as the C signature takes an int.
                MemsetValue::U32(v) => hipMemsetD32Async(d, v as c_int, count, stream(s)),
            }
        })?;
        if s.is_none() {
            // Synchronous semantics, as cudaMemset on the default stream is to the host.
            // SAFETY: the null stream always exists.
            check(unsafe { hipStreamSynchronize(null_mut()) })?;
        }
        Ok(())
    }

    fn stream_create(&self, flags: u32) -> Result<StreamHandle> {
        let mut s: hipStream_t = null_mut();
        // SAFETY: valid out-pointer; hipStreamNonBlocking is 0x1 like STREAM_NON_BLOCKING.
        check(unsafe { hipStreamCreateWithFlags(&mut s, flags) })?;
        Ok(StreamHandle(s as usize))
    }

    unsafe fn stream_destroy(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the caller hands over a live stream of ours.
        check(unsafe { hipStreamDestroy(s.0 as hipStream_t) })
    }

    fn stream_synchronize(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the handle is one of ours (the Python layer keeps it alive) or null.
        check(unsafe { hipStreamSynchronize(s.0 as hipStream_t) })
    }

    fn stream_query(&self, s: StreamHandle) -> Result<bool> {
        // SAFETY: as above.
        match unsafe { hipStreamQuery(s.0 as hipStream_t) } {
            0 => Ok(true),
            HIP_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Hip)),
        }
    }

    fn stream_wait_event(&self, s: StreamHandle, e: EventHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipStreamWaitEvent(s.0 as hipStream_t, e.0 as hipEvent_t, 0) })
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        let mut e: hipEvent_t = null_mut();
        // SAFETY: valid out-pointer; hipEventBlockingSync/DisableTiming have CUDA's values.
        check(unsafe { hipEventCreateWithFlags(&mut e, flags) })?;
        Ok(EventHandle(e as usize))
    }

    unsafe fn event_destroy(&self, e: EventHandle) -> Result<()> {
        // SAFETY: the caller hands over a live event of ours.
        check(unsafe { hipEventDestroy(e.0 as hipEvent_t) })
    }

    fn event_record(&self, e: EventHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipEventRecord(e.0 as hipEvent_t, s.0 as hipStream_t) })
    }

    fn event_synchronize(&self, e: EventHandle) -> Result<()> {
        // SAFETY: a live handle of ours.
        check(unsafe { hipEventSynchronize(e.0 as hipEvent_t) })
    }

    fn event_query(&self, e: EventHandle) -> Result<bool> {
        // SAFETY: a live handle of ours.
        match unsafe { hipEventQuery(e.0 as hipEvent_t) } {
            0 => Ok(true),
            HIP_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Hip)),
        }
    }

    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let mut ms: f32 = 0.0;
        // SAFETY: valid out-pointer; live handles of ours.
        check(unsafe { hipEventElapsedTime(&mut ms, start.0 as hipEvent_t, end.0 as hipEvent_t) })?;
        Ok(ms)
    }

    fn module_load(&self, image: &[u8]) -> Result<ModuleHandle> {
        let mut module: hipModule_t = null_mut();
        // SAFETY: image is a readable code object; HIP copies what it needs before returning.
        let code = unsafe { hipModuleLoadData(&mut module, image.as_ptr() as *const c_void) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Hip,
                detail: "the HSACO code object did not load (is it built for this GPU's architecture?)".to_string(),
            });
        }
        Ok(ModuleHandle(module as usize))
    }

    unsafe fn module_unload(&self, module: ModuleHandle) -> Result<()> {
        // SAFETY: the caller hands over a live module that nothing uses afterwards.
        check(unsafe { hipModuleUnload(module.0 as hipModule_t) })
    }

    fn module_get_function(&self, module: ModuleHandle, name: &str) -> Result<FunctionHandle> {
        let cname = symbol_name(name)?;
        let mut function: hipFunction_t = null_mut();
        // SAFETY: live module, NUL-terminated name, valid out-pointer.
        let code = unsafe { hipModuleGetFunction(&mut function, module.0 as hipModule_t, cname.as_ptr()) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Hip,
                detail: format!("no kernel named {name:?} in this module"),
            });
        }
        Ok(FunctionHandle(function as usize))
    }

    fn module_get_global(&self, module: ModuleHandle, name: &str) -> Result<(DevicePtr, usize)> {
        let cname = symbol_name(name)?;
        let (mut ptr, mut bytes): (*mut c_void, usize) = (null_mut(), 0);
        // SAFETY: live module, NUL-terminated name, valid out-pointers.
        let code = unsafe { hipModuleGetGlobal(&mut ptr, &mut bytes, module.0 as hipModule_t, cname.as_ptr()) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Hip,
                detail: format!("no global named {name:?} in this module"),
            });
        }
        Ok((ptr as DevicePtr, bytes))
    }

    fn function_attribute(&self, function: FunctionHandle, attribute: FunctionAttribute) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: live function, valid out-pointer; the attribute numbers match HIP's.
        check(unsafe { hipFuncGetAttribute(&mut value, attribute as c_int, function.0 as hipFunction_t) })?;
        Ok(value)
    }

    fn max_potential_block_size(
        &self,
        function: FunctionHandle,
        dynamic_shared: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        let (mut grid, mut block): (c_int, c_int) = (0, 0);
        // SAFETY: live function, valid out-pointers.
        check(unsafe {
            hipModuleOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                function.0 as hipFunction_t,
                dynamic_shared,
                block_limit,
            )
        })?;
        Ok((grid, block))
    }

    unsafe fn launch_kernel(
        &self,
        function: FunctionHandle,
        config: &LaunchConfig,
        s: StreamHandle,
        args: &KernelArgs,
    ) -> Result<()> {
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        args.with_pointers(|pointers| {
            // SAFETY: the caller vouches that args match the kernel; HIP copies the values
            // before returning.
            check(unsafe {
                hipModuleLaunchKernel(
                    function.0 as hipFunction_t,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    config.shared_bytes,
                    stream(Some(s)),
                    if pointers.is_empty() { null_mut() } else { pointers.as_mut_ptr() },
                    null_mut(),
                )
            })
        })
    }

    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()> {
        // hipStreamCaptureModeThreadLocal = 1, as in CUDA.
        // SAFETY: a live stream of ours.
        check(unsafe { hipStreamBeginCapture(stream(Some(s)), 1) })
    }

    fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle> {
        let mut graph: hipGraph_t = null_mut();
        // SAFETY: a live stream, valid out-pointer.
        check(unsafe { hipStreamEndCapture(stream(Some(s)), &mut graph) })?;
        Ok(GraphHandle(graph as usize))
    }

    fn stream_is_capturing(&self, s: StreamHandle) -> Result<bool> {
        let mut status: c_int = 0;
        // SAFETY: a live stream, valid out-pointer.
        check(unsafe { hipStreamIsCapturing(stream(Some(s)), &mut status) })?;
        Ok(status != 0)
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        let mut exec: hipGraphExec_t = null_mut();
        // SAFETY: a live graph, valid out-pointer, no error node or log requested.
        check(unsafe { hipGraphInstantiate(&mut exec, graph.0 as hipGraph_t, null_mut(), null_mut(), 0) })?;
        Ok(GraphExecHandle(exec as usize))
    }

    fn graph_launch(&self, exec: GraphExecHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipGraphLaunch(exec.0 as hipGraphExec_t, stream(Some(s))) })
    }

    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        // SAFETY: the caller hands over a live graph.
        check(unsafe { hipGraphDestroy(graph.0 as hipGraph_t) })
    }

    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        // SAFETY: the caller hands over a live executable graph.
        check(unsafe { hipGraphExecDestroy(exec.0 as hipGraphExec_t) })
    }

    fn error_name(&self, code: i32) -> Option<String> {
        Some(Self::name_of(code))
    }

    fn error_string(&self, code: i32) -> Option<String> {
        Some(Self::string_of(code))
    }

    fn driver_version(&self) -> Result<i32> {
        let mut version: c_int = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipDriverGetVersion(&mut version) })?;
        Ok(version)
    }

    fn device_attribute(&self, device: i32, attribute: i32) -> Result<i32> {
        match attributes::hip_attribute(attribute) {
            Some(hip) => self.attribute(hip, device),
            // No HIP counterpart: reported as the runtime reports what it does not support.
            None => Err(Error::api(HIP_ERROR_NOT_SUPPORTED, BackendKind::Hip)),
        }
    }

    fn function_get_attribute(&self, function: FunctionHandle, attribute: i32) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: live function handle, valid out-pointer; hipFunction_attribute numbers are
        // CUDA's, and the runtime validates them.
        check(unsafe { hipFuncGetAttribute(&mut value, attribute, function.0 as hipFunction_t) })?;
        Ok(value)
    }

    fn function_set_cache_config(&self, _function: FunctionHandle, config: i32) -> Result<()> {
        // AMD GPUs do not split L1 and LDS: HIP documents the cache preference as a no-op.
        if (0..=3).contains(&config) {
            Ok(())
        } else {
            Err(Error::api(HIP_ERROR_INVALID_VALUE, BackendKind::Hip))
        }
    }

    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8> {
        let mut ptr: *mut c_void = null_mut();
        // hipHostMalloc's Portable/Mapped/WriteCombined flags have CUDA's numbers.
        // SAFETY: valid out-pointer; the runtime validates the flags.
        check(unsafe { hipHostMalloc(&mut ptr, bytes.max(1), flags | HIP_HOST_MALLOC_PORTABLE) })?;
        Ok(ptr as *mut u8)
    }

    fn host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr> {
        let mut device: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; the runtime checks that ptr is mapped host memory.
        check(unsafe { hipHostGetDevicePointer(&mut device, ptr as *mut c_void, 0) })?;
        Ok(device as DevicePtr)
    }

    unsafe fn host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()> {
        // SAFETY: the caller vouches that ptr is valid for bytes until unregistered; the
        // hipHostRegister flags have CUDA's numbers.
        check(unsafe { hipHostRegister(ptr as *mut c_void, bytes, flags | HIP_HOST_MALLOC_PORTABLE) })
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<()> {
        // SAFETY: the caller hands over a registration of ours; the runtime rejects others.
        check(unsafe { hipHostUnregister(ptr as *mut c_void) })
    }

    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]> {
        let mut handle = hipIpcMemHandle_t { reserved: [0; IPC_HANDLE_BYTES] };
        // SAFETY: valid out-pointer; the runtime checks that ptr is device memory.
        check(unsafe { hipIpcGetMemHandle(&mut handle, ptr as *mut c_void) })?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; IPC_HANDLE_BYTES], flags: u32) -> Result<DevicePtr> {
        let handle = hipIpcMemHandle_t { reserved: handle.map(|b| b as c_char) };
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; the handle is opaque bytes the runtime validates.
        check(unsafe { hipIpcOpenMemHandle(&mut ptr, handle, flags) })?;
        Ok(ptr as DevicePtr)
    }

    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: the caller hands over a mapping from ipc_open_mem_handle.
        check(unsafe { hipIpcCloseMemHandle(ptr as *mut c_void) })
    }

    fn context_get_limit(&self, limit: i32) -> Result<usize> {
        hip_limit(limit)?;
        let mut value: usize = 0;
        // SAFETY: valid out-pointer; the limit is one of hipLimit_t's (checked above).
        check(unsafe { hipDeviceGetLimit(&mut value, limit) })?;
        Ok(value)
    }

    // context_set_limit keeps the trait's "unsupported": hipDeviceSetLimit is missing from
    // ROCm 5.2's libamdhip64, which the hip feature links against.

    fn malloc_managed(&self, bytes: usize, flags: u32) -> Result<DevicePtr> {
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; the runtime validates size and flags.
        check(unsafe { hipMallocManaged(&mut ptr, bytes, flags) })?;
        Ok(ptr as usize as DevicePtr)
    }

    fn stream_attach_mem(&self, s: StreamHandle, ptr: DevicePtr, bytes: usize, flags: u32) -> Result<()> {
        // SAFETY: the stream handle came from this backend; the runtime validates the range
        // (managed memory) and the flags.
        check(unsafe { hipStreamAttachMemAsync(s.0 as hipStream_t, ptr as usize as *mut c_void, bytes, flags) })
    }

    fn context_get_cache_config(&self) -> Result<i32> {
        let mut config: c_int = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipDeviceGetCacheConfig(&mut config) })?;
        Ok(config)
    }

    fn context_set_cache_config(&self, config: i32) -> Result<()> {
        if !(0..=3).contains(&config) {
            return Err(Error::api(HIP_ERROR_INVALID_VALUE, BackendKind::Hip));
        }
        // SAFETY: config is one of hipFuncCache_t's values (checked above).
        check(unsafe { hipDeviceSetCacheConfig(config) })
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> Result<bool> {
        let mut can: c_int = 0;
        // SAFETY: valid out-pointer; the runtime validates the ordinals.
        check(unsafe { hipDeviceCanAccessPeer(&mut can, device, peer) })?;
        Ok(can != 0)
    }
}

/// HIP has CUDA's first three limits (stack, printf FIFO, malloc heap) and no others.
fn hip_limit(limit: i32) -> Result<()> {
    if (0..=2).contains(&limit) {
        Ok(())
    } else {
        Err(Error::api(HIP_ERROR_NOT_SUPPORTED, BackendKind::Hip))
    }
}
