//! Modules and kernels: loading an image with the JIT's log on failure, occupancy, launches.

use super::*;

impl CudaBackend {
    pub(super) fn cuda_module_load(&self, image: &[u8]) -> Result<ModuleHandle> {
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
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Cuda,
                detail: if detail.is_empty() {
                    "the JIT log is empty".to_string()
                } else {
                    format!("JIT log:\n{detail}")
                },
            });
        }
        Ok(ModuleHandle(module as usize))
    }

    pub(super) fn cuda_max_potential_block_size(
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

    pub(super) unsafe fn cuda_launch_kernel(
        &self,
        function: FunctionHandle,
        config: &LaunchConfig,
        s: StreamHandle,
        args: &KernelArgs,
    ) -> Result<()> {
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
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
}
