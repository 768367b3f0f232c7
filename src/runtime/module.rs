//! A loaded code object and its kernels. A `Function` holds its `Module` through an `Arc`,
//! so the code stays loaded while any of its kernels can be launched (and while a graph
//! that captured one of them lives: see graph.rs).

use std::sync::Arc;

use super::context::Context;
use super::owned::Owned;
use super::stream::Stream;
use super::{
    DevicePtr, Error, FunctionAttribute, FunctionHandle, KernelArgs, LaunchConfig, ModuleHandle, Result, StreamHandle,
};

pub struct Module {
    ctx: Arc<Context>,
    owned: Owned<ModuleHandle>,
}

impl Module {
    /// Loads a code object: PTX, cubin or fatbin (CUDA), HSACO (HIP), a kernels shared
    /// library (host).
    pub fn load(ctx: &Arc<Context>, image: &[u8]) -> Result<Arc<Module>> {
        super::image::check_fits(image, ctx.backend().kind())?;
        let handle = ctx.backend().module_load(image)?;
        Ok(Arc::new(Module { ctx: ctx.clone(), owned: Owned::new(ctx.backend(), handle) }))
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn get_function(self: &Arc<Self>, name: &str) -> Result<Function> {
        let handle = self.ctx.backend().module_get_function(self.owned.get(), name)?;
        Ok(Function { module: self.clone(), handle, name: name.to_string() })
    }

    /// (device address, size in bytes) of a global variable.
    pub fn get_global(&self, name: &str) -> Result<(DevicePtr, usize)> {
        self.ctx.backend().module_get_global(self.owned.get(), name)
    }

    /// Unloads now and returns the status. Only the last owner has the `Module` itself
    /// (`Arc::try_unwrap`): while a `Function` or graph holds it, it stays loaded.
    pub fn close(self) -> Result<()> {
        self.owned.close()
    }
}

/// A kernel; launching it is `unsafe` only because the arguments must match its parameters.
pub struct Function {
    module: Arc<Module>,
    handle: FunctionHandle,
    name: String,
}

impl Function {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn handle(&self) -> FunctionHandle {
        self.handle
    }

    pub fn module(&self) -> &Arc<Module> {
        &self.module
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.module.ctx
    }

    /// The size in bytes of each parameter, where the backend can tell.
    pub fn param_sizes(&self) -> Result<Option<Vec<usize>>> {
        self.context().backend().function_param_sizes(self.handle)
    }

    pub fn attribute(&self, attribute: FunctionAttribute) -> Result<i32> {
        self.context().backend().function_attribute(self.handle, attribute)
    }

    /// A `CUfunction_attribute` by number (the driver surface's `Function.get_attribute`).
    pub fn get_attribute(&self, attribute: i32) -> Result<i32> {
        self.context().backend().function_get_attribute(self.handle, attribute)
    }

    /// Sets a settable `CUfunction_attribute`.
    pub fn set_attribute(&self, attribute: i32, value: i32) -> Result<()> {
        self.context().backend().function_set_attribute(self.handle, attribute, value)
    }

    /// The preferred split of on-chip memory (a `CUfunc_cache` value).
    pub fn set_cache_config(&self, config: i32) -> Result<()> {
        self.context().backend().function_set_cache_config(self.handle, config)
    }

    /// (minimum grid size, block size) for the highest occupancy.
    pub fn max_potential_block_size(&self, dynamic_shared: usize, block_limit: i32) -> Result<(i32, i32)> {
        self.context().backend().max_potential_block_size(self.handle, dynamic_shared, block_limit)
    }

    /// Launches on a pygpu stream; a graph being recorded on it keeps this kernel's code.
    /// # Safety
    /// `args` matches the kernel's parameters in number and layout, and any pointers in it
    /// are device memory the kernel may access.
    pub unsafe fn launch(&self, config: &LaunchConfig, stream: &Stream, args: &KernelArgs) -> Result<()> {
        let device = self.check_current_device()?;
        if stream.context().device() != device {
            return Err(Error::InvalidArgument(format!(
                "this stream belongs to device {}, but device {device} is current (kernel {} was loaded on it): \
                 launch on a stream of device {device}",
                stream.context().device(),
                self.name
            )));
        }
        stream.note_captured_launch(&self.module, args);
        // SAFETY: forwarded from this function's contract; the module is held by `self`, and
        // its context is current (check_current_device).
        unsafe { self.context().backend().launch_kernel(self.handle, config, stream.handle(), args) }
    }

    /// Launches on the default stream or a foreign stream's handle.
    /// # Safety
    /// As `launch`.
    pub unsafe fn launch_on(&self, config: &LaunchConfig, stream: StreamHandle, args: &KernelArgs) -> Result<()> {
        self.check_current_device()?;
        // SAFETY: forwarded from this function's contract; the module is held by `self`, and
        // its context is current (check_current_device).
        unsafe { self.context().backend().launch_kernel(self.handle, config, stream, args) }
    }

    /// The kernel's device, or an error while another is current (a CUDA function belongs to
    /// the context it was loaded in): a launch's one look at the current context, which makes
    /// the device's primary context current where the thread had none.
    fn check_current_device(&self) -> Result<i32> {
        let (device, current) = (self.context().device(), self.context().backend().launch_device()?);
        if current != device {
            return Err(Error::InvalidArgument(format!(
                "kernel {} was loaded on device {device}, but device {current} is current: launch it inside \
                 `with pygpu.Device({device})`, or load its module again on device {current}",
                self.name
            )));
        }
        Ok(device)
    }
}
