//! Modules and kernels: loading an image with the JIT's log on failure, occupancy, launches.

use super::*;

impl Kernels for CudaBackend {
    fn module_load(&self, image: &[u8]) -> Result<ModuleHandle> {
        self.ensure_context()?;
        // PTX is text and must be NUL-terminated; a trailing NUL is harmless for binaries.
        let mut data = Vec::with_capacity(image.len() + 1);
        data.extend_from_slice(image);
        data.push(0);
        let mut info_log = vec![0u8; JIT_LOG_BYTES];
        let mut error_log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            CU_JIT_INFO_LOG_BUFFER,
            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            CU_JIT_ERROR_LOG_BUFFER,
            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // Option values are passed as pointer-sized words: buffers, and sizes cast to pointers.
        let mut values = [
            info_log.as_mut_ptr() as *mut c_void,
            JIT_LOG_BYTES as *mut c_void,
            error_log.as_mut_ptr() as *mut c_void,
            JIT_LOG_BYTES as *mut c_void,
        ];
        let mut module: CUmodule = null_mut();
        // SAFETY: data is a NUL-terminated image; the log buffers live across the call and
        // their sizes are given; options and values have the same length.
        let code = unsafe {
            (self.api.cuModuleLoadDataEx)(
                &mut module,
                data.as_ptr() as *const c_void,
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if code != 0 {
            let log = |buf: &[u8]| {
                String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(buf.len())])
                    .trim()
                    .to_string()
            };
            let detail =
                [log(&error_log), log(&info_log)].into_iter().filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n");
            return Err(Error::detailed(
                code,
                BackendKind::Cuda,
                if detail.is_empty() { "the JIT log is empty".to_string() } else { format!("JIT log:\n{detail}") },
            ));
        }
        Ok(ModuleHandle(module as usize))
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
            return Err(Error::detailed(
                code,
                BackendKind::Cuda,
                format!("no kernel named {name:?} in this module (is it extern \"C\"?)"),
            ));
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
            return Err(Error::detailed(code, BackendKind::Cuda, format!("no global named {name:?} in this module")));
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
        self.ensure_context()?;
        let (mut grid, mut block): (c_int, c_int) = (0, 0);
        // SAFETY: live function handle, valid out-pointers, no per-block-size callback.
        check(unsafe {
            (self.api.cuOccupancyMaxPotentialBlockSize)(
                &mut grid,
                &mut block,
                function.0 as CUfunction,
                null_mut(),
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
        self.note_stream(Some(s));
        args.with_pointers(|pointers| {
            // SAFETY: the caller vouches that args match the kernel and that its context is
            // current; the driver copies the values before returning, so `pointers` need only
            // live across the call.
            check(unsafe {
                (self.api.cuLaunchKernel)(
                    function.0 as CUfunction,
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
}
