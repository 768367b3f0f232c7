//! Device memory: allocation, copies and fills (synchronous, or ordered on a stream), 2-D/3-D
//! copies, managed memory, and what the backend knows of the allocation holding an address.

use crate::runtime::pitched::PitchedCopy;
use crate::runtime::{DevicePtr, MemsetValue, Result, StreamHandle};

/// `CUmemAttach_flags` of managed memory (the same numbers in HIP): any stream may access it,
/// only the host, or only the stream it is attached to.
pub const MEM_ATTACH_GLOBAL: u32 = 0x1;
pub const MEM_ATTACH_HOST: u32 = 0x2;
pub const MEM_ATTACH_SINGLE: u32 = 0x4;

/// Functions taking raw host addresses are `unsafe`: the caller vouches that they are valid
/// for `bytes`; device addresses are checked by the backend (the driver for CUDA/HIP, an
/// allocation registry on the host backend).
pub trait DeviceMemory {
    fn malloc(&self, bytes: usize) -> Result<DevicePtr>;
    /// # Safety
    /// `ptr` came from `malloc` of this backend and nothing uses it afterwards.
    unsafe fn free(&self, ptr: DevicePtr) -> Result<()>;

    /// Copies `bytes` from host memory to the device; synchronous when `stream` is None.
    /// # Safety
    /// `src` is valid for reads of `bytes` until the copy has completed.
    unsafe fn memcpy_htod(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()>;
    /// # Safety
    /// `dst` is valid for writes of `bytes` until the copy has completed.
    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()>;
    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: Option<StreamHandle>) -> Result<()>;
    /// Fills `count` elements of `element_size` (1, 2 or 4) bytes with `value`. The
    /// arguments are checked here, once for every backend; backends implement `memset_value`.
    fn memset(
        &self,
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()> {
        self.memset_value(dst, MemsetValue::new(value, element_size)?, count, stream)
    }
    /// Fills `count` elements with `value`, at its width. Call `memset` instead.
    fn memset_value(
        &self,
        dst: DevicePtr,
        value: MemsetValue,
        count: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()>;
    /// A 2-D/3-D copy between pitched host and device memory (`cuMemcpy2D`/`cuMemcpy3D`);
    /// synchronous when `stream` is None. A backend without a native one copies row by row
    /// with the linear copies (`PitchedCopy::by_rows`).
    /// # Safety
    /// Host sides are valid for the bytes the copy touches until the copy has completed.
    unsafe fn memcpy_pitched(&self, copy: &PitchedCopy, stream: Option<StreamHandle>) -> Result<()>;

    /// Managed (unified) memory on the current device (`cuMemAllocManaged`): one address valid
    /// on the host and on the device, released by `free`. `flags` is CU_MEM_ATTACH_GLOBAL (1) or
    /// CU_MEM_ATTACH_HOST (2); `bytes` is not 0.
    fn malloc_managed(&self, bytes: usize, flags: u32) -> Result<DevicePtr>;
    /// Changes which streams may access the managed allocation at `ptr` (`cuStreamAttachMemAsync`,
    /// stream-ordered); `bytes` is 0 or the whole allocation, `flags` one CU_MEM_ATTACH_* value.
    fn stream_attach_mem(&self, stream: StreamHandle, ptr: DevicePtr, bytes: usize, flags: u32) -> Result<()>;

    /// Whether `[ptr, ptr + bytes)` lies inside one live allocation (or page-locked or
    /// registered host memory), where the backend keeps a registry (host); None where it
    /// cannot tell.
    fn span_is_device_memory(&self, _ptr: DevicePtr, _bytes: usize) -> Option<bool> {
        None
    }
    /// An identity of the live allocation that holds `ptr`, which a later allocation at the
    /// same address does not share (as far as the backend can tell); None where `ptr` lies in
    /// no allocation the backend knows. Graphs compare it at replay (`GraphExec::launch`).
    fn allocation_identity(&self, _ptr: DevicePtr) -> Option<(DevicePtr, u64)> {
        None
    }
    /// (start, bytes) of the allocation that holds `ptr`, as far as the backend knows, for
    /// checking an imported tensor's extent: on the host backend a live pooled block's bytes
    /// are those asked for (not its size class), an idle one (freed memory the pool keeps)
    /// has 0, and page-locked or registered host memory counts; CUDA asks the driver for the
    /// allocation's range. None where no allocation is known to hold `ptr` (foreign memory,
    /// or a backend that cannot tell).
    fn allocation_extent(&self, _ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
        None
    }
}
