//! Modules (HSACO code objects), kernel attributes, occupancy and launches through the HIP runtime.

use super::*;

impl Kernels for HipBackend {
    fn module_load(&self, image: &[u8]) -> Result<ModuleHandle> {
        let mut module: hipModule_t = null_mut();
        // SAFETY: image is a readable code object; HIP copies what it needs before returning.
        let code = unsafe { hipModuleLoadData(&mut module, image.as_ptr() as *const c_void) };
        if code != 0 {
            return Err(Error::detailed(
                code,
                BackendKind::Hip,
                "the HSACO code object did not load (is it built for this GPU's architecture?)".to_string(),
            ));
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
            return Err(Error::detailed(code, BackendKind::Hip, format!("no kernel named {name:?} in this module")));
        }
        Ok(FunctionHandle(function as usize))
    }

    fn module_get_global(&self, module: ModuleHandle, name: &str) -> Result<(DevicePtr, usize)> {
        let cname = symbol_name(name)?;
        let (mut ptr, mut bytes): (*mut c_void, usize) = (null_mut(), 0);
        // SAFETY: live module, NUL-terminated name, valid out-pointers.
        let code = unsafe { hipModuleGetGlobal(&mut ptr, &mut bytes, module.0 as hipModule_t, cname.as_ptr()) };
        if code != 0 {
            return Err(Error::detailed(code, BackendKind::Hip, format!("no global named {name:?} in this module")));
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

    fn function_set_attribute(&self, _function: FunctionHandle, _attribute: i32, _value: i32) -> Result<()> {
        Err(self.unsupported("setting function attributes"))
    }
}
