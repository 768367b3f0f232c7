//! Device, pinned and registered memory on the host backend (all of it host memory), and pitched copies.

use super::*;

impl HostBackend {
    pub(super) fn cpu_malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut state = self.state();
        if bytes > self.total_memory.saturating_sub(state.allocated_bytes) {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let layout = layout(bytes)?;
        // SAFETY: the layout has a non-zero size. Zeroed so that no stale data of an
        // earlier allocation is ever observable, as on a GPU with a fresh context.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let device = CURRENT_DEVICE.with(|d| d.get());
        state.allocations.insert(ptr as u64, (bytes, device));
        state.allocated_bytes += bytes;
        Ok(ptr as u64)
    }

    pub(super) unsafe fn cpu_free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        let mut state = self.state();
        if Self::is_ipc_mapping(&state, ptr) {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE)); // closed with its IPCMemoryHandle
        }
        let Some((bytes, _)) = state.allocations.remove(&ptr) else {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        };
        state.allocated_bytes -= bytes;
        // SAFETY: removed from the registry just now, so unmapped at most once.
        if unsafe { Self::unmap_pages(&mut state, ptr) } {
            return Ok(());
        }
        // SAFETY: ptr was returned by alloc_zeroed with this layout (the registry says so)
        // and has just been removed from it, so it is freed exactly once.
        unsafe { dealloc(ptr as *mut u8, layout(bytes)?) };
        Ok(())
    }

    pub(super) fn cpu_host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        let layout = layout(bytes.max(1))?;
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Self::err(CUDA_ERROR_MEMORY_ALLOCATION));
        }
        let mut state = self.state();
        state.host_allocations.insert(ptr as usize, bytes.max(1));
        state.mapped.insert(ptr as u64, bytes.max(1));
        Ok(ptr)
    }

    pub(super) fn cpu_host_get_device_pointer(&self, ptr: *mut u8) -> Result<DevicePtr> {
        let state = self.state();
        if Self::in_mapped(&state, ptr as u64, 1) {
            Ok(ptr as u64)
        } else {
            Err(Error::Detailed {
                code: CUDA_ERROR_INVALID_VALUE,
                backend: BackendKind::Host,
                detail: "the address is not page-locked or registered host memory".to_string(),
            })
        }
    }

    pub(super) unsafe fn cpu_host_register(&self, ptr: *mut u8, bytes: usize, flags: u32) -> Result<()> {
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

    pub(super) unsafe fn cpu_memcpy_pitched(&self, copy: &PitchedCopy, stream: Option<StreamHandle>) -> Result<()> {
        copy.validate()?;
        if copy.is_empty() {
            return Ok(());
        }
        // Every row lies between the first byte and the end of the last row: when that span is
        // inside one allocation, no row copy can fail half-way through.
        for side in [&copy.src, &copy.dst] {
            if let Memory::Device(base) = side.memory {
                let first = side.offset(0, 0).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))?;
                let end = copy.end(side).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))?;
                let start = base.checked_add(first as u64).ok_or(Self::err(CUDA_ERROR_INVALID_VALUE))?;
                self.check_range(&self.state(), start, end - first)?;
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { copy.by_rows(self, stream) }
    }
}
