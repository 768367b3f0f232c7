//! Device memory through the HIP runtime: allocation, copies, fills, managed memory.

use super::*;

impl DeviceMemory for HipBackend {
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { hipMalloc(&mut ptr, bytes) })?;
        Ok(ptr as usize as DevicePtr)
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        // SAFETY: the caller hands over an allocation of ours; the runtime rejects others.
        check(unsafe { hipFree(dev_ptr(ptr)) })
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: *const u8, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for src, which is all memcpy asks.
        unsafe { self.memcpy(dev_ptr(dst), src as *const c_void, bytes, hipMemcpyKind::hipMemcpyHostToDevice, s) }
    }

    unsafe fn memcpy_dtoh(&self, dst: *mut u8, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for dst, which is all memcpy asks.
        unsafe { self.memcpy(dst as *mut c_void, dev_ptr(src), bytes, hipMemcpyKind::hipMemcpyDeviceToHost, s) }
    }

    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: no host memory is involved; the runtime validates both device addresses.
        unsafe { self.memcpy(dev_ptr(dst), dev_ptr(src), bytes, hipMemcpyKind::hipMemcpyDeviceToDevice, s) }
    }

    fn memset_value(&self, dst: DevicePtr, value: MemsetValue, count: usize, s: Option<StreamHandle>) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let d = dev_ptr(dst);
        // SAFETY: only device addresses and a stream handle, which the runtime validates.
        check(unsafe {
            match value {
                MemsetValue::U8(v) => hipMemsetD8Async(d, v, count, stream(s)),
                MemsetValue::U16(v) => hipMemsetD16Async(d, v as c_ushort, count, stream(s)),
                // Same 32 bits, as the C signature takes an int.
                MemsetValue::U32(v) => hipMemsetD32Async(d, v as c_int, count, stream(s)),
            }
        })?;
        if s.is_none() {
            // Synchronous semantics, as cudaMemset on the default stream is to the host.
            // SAFETY: the null stream always exists.
            check(unsafe { hipStreamSynchronize(null_mut()) })?;
        }
        Ok(())
    }

    fn malloc_managed(&self, bytes: usize, flags: u32) -> Result<DevicePtr> {
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; the runtime validates size and flags.
        check(unsafe { hipMallocManaged(&mut ptr, bytes, flags) })?;
        Ok(ptr as usize as DevicePtr)
    }

    fn stream_attach_mem(&self, s: StreamHandle, ptr: DevicePtr, bytes: usize, flags: u32) -> Result<()> {
        // SAFETY: the stream handle came from this backend; the runtime validates the range
        // (managed memory) and the flags.
        check(unsafe { hipStreamAttachMemAsync(s.0 as hipStream_t, ptr as usize as *mut c_void, bytes, flags) })
    }

    unsafe fn memcpy_pitched(&self, copy: &PitchedCopy, s: Option<StreamHandle>) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { copy.by_rows(self, s) }
    }
}

/// No pool of HIP's own: each block an ordinary hipMalloc, given back by hipFree.
impl PooledMemory for HipBackend {}
