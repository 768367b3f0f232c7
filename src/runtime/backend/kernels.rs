//! Kernels: the modules (code objects) that hold them, their attributes and occupancy, and
//! launches.

use crate::runtime::{
    DevicePtr, FunctionAttribute, FunctionHandle, KernelArgs, LaunchConfig, ModuleHandle, Result, StreamHandle,
};

pub trait Kernels {
    /// Loads a code object: PTX, cubin or fatbin (CUDA), HSACO (HIP), a kernels shared
    /// library (host).
    fn module_load(&self, image: &[u8]) -> Result<ModuleHandle>;
    /// # Safety
    /// `module` is live; its functions are not used afterwards.
    unsafe fn module_unload(&self, module: ModuleHandle) -> Result<()>;
    fn module_get_function(&self, module: ModuleHandle, name: &str) -> Result<FunctionHandle>;
    /// (address, size in bytes) of a global variable of the module.
    fn module_get_global(&self, module: ModuleHandle, name: &str) -> Result<(DevicePtr, usize)>;

    /// The size in bytes of each parameter, where the backend can tell (host kernels
    /// libraries; CUDA drivers from 12.4); None where it cannot.
    fn function_param_sizes(&self, _function: FunctionHandle) -> Result<Option<Vec<usize>>> {
        Ok(None)
    }
    fn function_attribute(&self, function: FunctionHandle, attribute: FunctionAttribute) -> Result<i32>;
    /// Any function attribute, by its `CUfunction_attribute` number.
    fn function_get_attribute(&self, function: FunctionHandle, attribute: i32) -> Result<i32>;
    /// Sets a settable function attribute (`cuFuncSetAttribute`).
    fn function_set_attribute(&self, function: FunctionHandle, attribute: i32, value: i32) -> Result<()>;
    /// The preferred L1/shared split for a function (`cuFuncSetCacheConfig`, a CUfunc_cache).
    fn function_set_cache_config(&self, function: FunctionHandle, config: i32) -> Result<()>;
    /// (minimum grid size, block size) for the highest occupancy.
    fn max_potential_block_size(
        &self,
        function: FunctionHandle,
        dynamic_shared: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)>;

    /// Launches `function`; the argument values are copied before this returns.
    /// # Safety
    /// `args` matches the kernel's parameters in number and layout, and any pointers in it
    /// are device memory the kernel may access; the function's context is current
    /// (`launch_device` returned its device).
    unsafe fn launch_kernel(
        &self,
        function: FunctionHandle,
        config: &LaunchConfig,
        stream: StreamHandle,
        args: &KernelArgs,
    ) -> Result<()>;
}
