//! Linear copies and memsets, synchronous or ordered on a stream.

use super::*;

impl CudaBackend {
    pub(super) unsafe fn cuda_memcpy_htod(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // SAFETY: the caller vouches for src; the driver validates dst.
        check(unsafe {
            match s {
                None => (self.api.cuMemcpyHtoD_v2)(dst, src as *const c_void, bytes),
                Some(_) => (self.api.cuMemcpyHtoDAsync_v2)(dst, src as *const c_void, bytes, stream(s)),
            }
        })
    }

    pub(super) unsafe fn cuda_memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // SAFETY: the caller vouches for dst; the driver validates src.
        check(unsafe {
            match s {
                None => (self.api.cuMemcpyDtoH_v2)(dst as *mut c_void, src, bytes),
                Some(_) => (self.api.cuMemcpyDtoHAsync_v2)(dst as *mut c_void, src, bytes, stream(s)),
            }
        })
    }

    pub(super) fn cuda_memcpy_dtod(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // SAFETY: only device addresses, which the driver validates.
        check(unsafe {
            match s {
                None => (self.api.cuMemcpyDtoD_v2)(dst, src, bytes),
                Some(_) => (self.api.cuMemcpyDtoDAsync_v2)(dst, src, bytes, stream(s)),
            }
        })
    }

    pub(super) fn cuda_memset_value(
        &self,
        dst: DevicePtr,
        value: MemsetValue,
        count: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        self.ensure_context()?;
        // SAFETY: only device addresses, which the driver validates.
        check(unsafe {
            match value {
                MemsetValue::U8(v) => (self.api.cuMemsetD8Async)(dst, v, count, stream(s)),
                MemsetValue::U16(v) => (self.api.cuMemsetD16Async)(dst, v, count, stream(s)),
                MemsetValue::U32(v) => (self.api.cuMemsetD32Async)(dst, v, count, stream(s)),
            }
        })?;
        if s.is_none() {
            // Synchronous semantics, as cudaMemset on the default stream is to the host.
            // SAFETY: a context is current.
            check(unsafe { (self.api.cuStreamSynchronize)(null_mut()) })?;
        }
        Ok(())
    }
}
