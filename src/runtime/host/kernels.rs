//! Modules and kernels on the host backend: loading, symbols, attributes, occupancy and launches.

use super::*;

impl Kernels for HostBackend {
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
        // A Function holds its module loaded (runtime::module), so none of these is in use.
        for (_, id) in state.module_functions.remove(&module.0).unwrap_or_default() {
            state.functions.remove(&id);
            state.function_settings.retain(|(f, _), _| *f != id);
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
        if let Some(&id) = self.state().module_functions.get(&module.0).and_then(|m| m.get(name)) {
            return Ok(FunctionHandle(id));
        }
        let function = Arc::new(library.function(name)?);
        let mut state = self.state();
        let id = match state.module_functions.get(&module.0).and_then(|m| m.get(name)) {
            Some(&id) => id, // another thread got there first
            None => {
                let id = self.new_handle();
                state.functions.insert(id, function);
                state.module_functions.entry(module.0).or_default().insert(name.to_string(), id);
                id
            }
        };
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
        self.submit(
            Some(stream),
            HostOp::Launch { function, config: *config, args: Box::new(args.clone()), uses: Vec::new() },
        )
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
}
