//! Page-locked and registered host memory on the host backend: ordinary host memory, in the
//! registry so that copies and kernels accept it (and, mapped, address it).

use super::memory::LARGE_ALLOCATION;
use super::*;

impl HostMemory for HostBackend {
    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        if bytes >= LARGE_ALLOCATION && bytes > crate::runtime::memory::available_memory() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let layout = layout(bytes.max(1))?;
        // The `mapped` insert below cannot fail: see cpu_malloc.
        if !crate::runtime::oom_reserve::rearm() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        // SAFETY: non-zero size. From the system directly, as in cpu_malloc.
        let ptr = unsafe { std::alloc::GlobalAlloc::alloc_zeroed(&std::alloc::System, layout) };
        if ptr.is_null() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let mut state = self.state();
        // Out of memory is an error here, not an abort in the registry's growth.
        if state.host_allocations.try_reserve(1).is_err() {
            // SAFETY: allocated just above with this layout and not yet handed to anyone.
            unsafe { dealloc(ptr, layout) };
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        state.host_allocations.insert(ptr as usize, bytes.max(1));
        state.mapped.insert(ptr as u64, bytes.max(1));
        Ok(ptr)
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

    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8> {
        if flags & !(HOST_ALLOC_PORTABLE | HOST_ALLOC_DEVICEMAP | HOST_ALLOC_WRITECOMBINED) != 0 {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        // Host memory is already portable and mapped; write-combining has no CPU-side meaning here.
        self.host_alloc(bytes)
    }

    fn host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr> {
        let state = self.state();
        if Self::in_mapped(&state, ptr as u64, 1) {
            Ok(ptr as u64)
        } else {
            Err(Error::detailed(
                CUDA_ERROR_INVALID_VALUE,
                BackendKind::Host,
                "the address is not page-locked or registered host memory".to_string(),
            ))
        }
    }

    unsafe fn host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()> {
        let all = HOST_ALLOC_PORTABLE | HOST_ALLOC_DEVICEMAP | 0x4 | HOST_REGISTER_READ_ONLY;
        if ptr.is_null() || bytes == 0 || flags & !all != 0 {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        let start = ptr as u64;
        let end = start.checked_add(bytes as u64).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))?;
        let mut state = self.state();
        let overlaps = state.mapped.range(..end).next_back().is_some_and(|(s, n)| s + *n as u64 > start);
        if overlaps {
            return Err(Self::err(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED));
        }
        state.mapped.insert(start, bytes);
        state.registered.insert(ptr as usize, bytes);
        Ok(())
    }

    unsafe fn host_unregister(&self, ptr: *mut u8) -> Result<()> {
        let mut state = self.state();
        if state.registered.remove(&(ptr as usize)).is_none() {
            return Err(Self::err(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED));
        }
        state.mapped.remove(&(ptr as u64));
        Ok(())
    }
}
