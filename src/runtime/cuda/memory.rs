//! Device memory through the driver: allocation, managed memory, what the driver knows of an
//! address's allocation; the copies and fills themselves are in copy.rs (linear, with
//! page-locked staging) and pitched_copy.rs (2-D/3-D).

use super::*;

impl DeviceMemory for CudaBackend {
    /// (ptr, the driver's buffer ID of the allocation holding it), None where the driver
    /// knows no allocation at `ptr` (a scalar argument, freed memory).
    fn allocation_identity(&self, ptr: DevicePtr) -> Option<(DevicePtr, u64)> {
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
    fn allocation_extent(&self, ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
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

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        self.ensure_context()?;
        let mut ptr: CUdeviceptr = 0;
        activity::noted(ActivityKind::Alloc, 0, bytes as u64, || {
            // SAFETY: valid out-pointer; a context is current.
            self.allocating_during_capture(|| check(unsafe { (self.api.cuMemAlloc_v2)(&mut ptr, bytes) }))
        })?;
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // The driver does not say the size without another call: 0 bytes (unknown).
        // SAFETY: the caller hands over an allocation of ours; the driver rejects others.
        activity::noted(ActivityKind::Free, 0, 0, || check(unsafe { (self.api.cuMemFree_v2)(ptr) }))
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: *const u8, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        self.note_stream(s);
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_memcpy_htod(dst, src, bytes, s) }
    }

    unsafe fn memcpy_dtoh(&self, dst: *mut u8, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        self.note_stream(s);
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_memcpy_dtoh(dst, src, bytes, s) }
    }

    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        self.note_stream(s);
        self.cuda_memcpy_dtod(dst, src, bytes, s)
    }

    fn memset_value(&self, dst: DevicePtr, value: MemsetValue, count: usize, s: Option<StreamHandle>) -> Result<()> {
        self.note_stream(s);
        self.cuda_memset_value(dst, value, count, s)
    }

    unsafe fn memcpy_pitched(&self, copy: &PitchedCopy, s: Option<StreamHandle>) -> Result<()> {
        self.note_stream(s);
        // SAFETY: the same contract, forwarded from the caller.
        unsafe { self.cuda_memcpy_pitched(copy, s) }
    }

    fn malloc_managed(&self, bytes: usize, flags: u32) -> Result<DevicePtr> {
        self.ensure_context()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; a context is current; the driver validates size and flags.
        check(unsafe { (self.api.cuMemAllocManaged)(&mut ptr, bytes, flags) })?;
        Ok(ptr)
    }

    fn stream_attach_mem(&self, s: StreamHandle, ptr: DevicePtr, bytes: usize, flags: u32) -> Result<()> {
        self.ensure_context()?;
        // SAFETY: the stream handle came from this backend; the driver validates the range
        // (it must be managed memory) and the flags.
        check(unsafe { (self.api.cuStreamAttachMemAsync)(s.0 as CUstream, ptr, bytes, flags) })
    }
}
