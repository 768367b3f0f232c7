//! What stream capture needs of the driver beyond begin/end: allocations made while this
//! thread captures, and the identity of allocations a graph uses, checked at replay.

use super::*;

impl CudaBackend {
    /// Runs the allocation `alloc` with this thread's capture mode relaxed. pygpu's own
    /// captures are relaxed already; a global or thread-local capture begun by another library
    /// prohibits cuMemAlloc and cuMemHostAlloc on the capturing thread
    /// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), yet work captured here needs memory that
    /// outlives the capture (`set()` of a strided array stages through a device copy that the
    /// graph keeps). An allocation is not stream work, so relaxing the mode for it alone is
    /// what the driver documents the exchange for; the previous mode is restored after.
    pub(super) fn allocating_during_capture<T>(&self, alloc: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut mode: c_int = CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: valid in/out pointer; the call only swaps this thread's mode.
        check(unsafe { (self.api.cuThreadExchangeStreamCaptureMode)(&mut mode) })?;
        let result = alloc();
        // SAFETY: as above; `mode` now holds the previous mode, which goes back. Swapping a
        // mode this call just set cannot fail short of a broken driver; the allocation's
        // result is what the caller must get either way (an error here would leak it).
        unsafe { (self.api.cuThreadExchangeStreamCaptureMode)(&mut mode) };
        result
    }

    /// (ptr, the driver's buffer ID of the allocation holding it), None where the driver
    /// knows no allocation at `ptr` (a scalar argument, freed memory).
    pub(super) fn cuda_allocation_identity(&self, ptr: DevicePtr) -> Option<(DevicePtr, u64)> {
        let mut id: u64 = 0;
        // SAFETY: valid out-pointer of the attribute's type (unsigned long long); the driver
        // only looks the address up and fails for addresses it does not know.
        let code = unsafe {
            (self.api.cuPointerGetAttribute)((&mut id as *mut u64).cast(), CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr)
        };
        (code == 0).then_some((ptr, id))
    }

    /// (start, bytes) of the driver's allocation holding `ptr` (`CU_POINTER_ATTRIBUTE_RANGE_*`),
    /// None where the driver knows no allocation there (pageable host memory, a bogus address).
    pub(super) fn cuda_allocation_extent(&self, ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
        self.ensure_context().ok()?;
        let (mut start, mut bytes): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers of the attributes' types (CUdeviceptr, size_t); the driver
        // only looks the address up and fails for addresses it does not know.
        let codes = unsafe {
            [
                (self.api.cuPointerGetAttribute)(
                    (&mut start as *mut CUdeviceptr).cast(),
                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                    ptr,
                ),
                (self.api.cuPointerGetAttribute)(
                    (&mut bytes as *mut usize).cast(),
                    CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                    ptr,
                ),
            ]
        };
        (codes == [0, 0] && start <= ptr).then_some((start, bytes))
    }
}
