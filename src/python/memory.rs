//! Device allocations, page-locked host memory and the copy/fill calls, with PyCUDA's
//! names (`mem_alloc`, `memcpy_htod`, ...). These raise on failure.

use std::ffi::{c_int, c_void};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::buffer::{fill_byte_view, release_byte_view, HostView};
use super::releasable::Releasable;
use super::stream::{stream_handle, CudaStream};
use crate::runtime::error::CUDA_ERROR_MEMORY_ALLOCATION;
use crate::runtime::memory::{DeviceBuffer, PinnedBuffer};
use crate::runtime::{backend, DevicePtr, Error, StreamHandle};

/// An out-of-memory error that says how much was asked for and how much the device had free,
/// so the message alone tells whether the request was absurd or the device was full.
fn out_of_memory_context(error: Error, bytes: usize) -> Error {
    if error.code() != CUDA_ERROR_MEMORY_ALLOCATION {
        return error;
    }
    let free = match backend().and_then(|b| b.mem_get_info()) {
        Ok((free, total)) => format!("{} free of {}", human_bytes(free), human_bytes(total)),
        Err(_) => "free memory unknown".to_string(),
    };
    let context = format!("asked for {} ({bytes} bytes); the device has {free}", human_bytes(bytes));
    match error {
        Error::Api { code, backend } => Error::Detailed { code, backend, detail: context },
        Error::Detailed { code, backend, detail } => {
            Error::Detailed { code, backend, detail: format!("{detail}\n{context}") }
        }
        other => other,
    }
}

fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Copies at least this large release the GIL while they run.
const RELEASE_GIL_BYTES: usize = 1 << 20;

/// Device memory owned by Python: freed with the last reference, or by `free()`.
#[pyclass(module = "pygpu", frozen, subclass)]
pub struct DeviceAllocation {
    buffer: Releasable<DeviceBuffer>,
    /// Kept after `free()` for repr and bounds messages.
    bytes: usize,
    ptr: DevicePtr,
    device: i32,
}

impl DeviceAllocation {
    pub fn new(bytes: usize) -> PyResult<Self> {
        Self::wrap(DeviceBuffer::new(bytes).map_err(|e| out_of_memory_context(e, bytes))?, bytes)
    }

    /// Memory from the caching pool, for allocations made on the user's behalf.
    pub fn pooled(bytes: usize) -> PyResult<Self> {
        Self::wrap(DeviceBuffer::pooled(bytes).map_err(|e| out_of_memory_context(e, bytes))?, bytes)
    }

    fn wrap(buffer: DeviceBuffer, bytes: usize) -> PyResult<Self> {
        Ok(DeviceAllocation {
            ptr: buffer.ptr(),
            bytes,
            device: buffer.device(),
            buffer: Releasable::new(buffer, "this DeviceAllocation"),
        })
    }

    /// The address, or the invalid-handle error once freed.
    pub fn live_ptr(&self) -> PyResult<DevicePtr> {
        self.buffer.with(|b| b.ptr())
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn device(&self) -> i32 {
        self.device
    }
}

#[pymethods]
impl DeviceAllocation {
    #[new]
    fn py_new(nbytes: isize) -> PyResult<Self> {
        DeviceAllocation::new(byte_count(nbytes)?)
    }

    fn __int__(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    fn __index__(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    #[getter]
    fn ptr(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.bytes
    }

    #[getter(device)]
    fn py_device(&self) -> i32 {
        self.device
    }

    #[getter]
    fn freed(&self) -> bool {
        self.buffer.is_released()
    }

    /// Releases the memory now; later use raises. Idempotent.
    fn free(&self) -> PyResult<()> {
        drop(self.buffer.take());
        Ok(())
    }

    fn __repr__(&self) -> String {
        if self.freed() {
            format!("<DeviceAllocation of {} bytes (freed)>", self.bytes)
        } else {
            format!("<DeviceAllocation of {} bytes at 0x{:x} on device {}>", self.bytes, self.ptr, self.device)
        }
    }

    // No buffer protocol, on the host backend either: numpy would take a DeviceAllocation for
    // its bytes, so `np.intp(alloc)` (PyCUDA's idiom for pointer arithmetic) would be an array
    // of them instead of the address that __index__ gives on every backend.
}

/// Page-locked host memory exposing the buffer protocol; `pagelocked_empty` wraps it in
/// a numpy array, which keeps it alive.
#[pyclass(module = "pygpu", frozen)]
pub struct HostAllocation {
    buffer: PinnedBuffer,
    flags: u32,
}

#[pymethods]
impl HostAllocation {
    /// `flags` combine `host_alloc_flags`: PORTABLE (1), DEVICEMAP (2), WRITECOMBINED (4).
    #[new]
    #[pyo3(signature = (nbytes, flags = 0))]
    fn py_new(nbytes: isize, flags: u32) -> PyResult<Self> {
        if flags & !0x7 != 0 {
            return Err(Error::InvalidArgument(format!(
                "host allocation flags {flags:#x}: only PORTABLE (1), DEVICEMAP (2) and WRITECOMBINED (4) exist"
            ))
            .into());
        }
        Ok(HostAllocation { buffer: PinnedBuffer::with_flags(byte_count(nbytes)?, flags)?, flags })
    }

    #[getter]
    fn flags(&self) -> u32 {
        self.flags
    }

    /// The address kernels use for this memory (mapped page-locked memory).
    fn get_device_pointer(&self) -> PyResult<DevicePtr> {
        Ok(self.buffer.device_pointer()?)
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.buffer.bytes()
    }

    #[getter]
    fn ptr(&self) -> usize {
        self.buffer.as_ptr() as usize
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let (ptr, bytes) = (slf.get().buffer.as_ptr() as *mut c_void, slf.get().buffer.bytes());
        // SAFETY: the pinned buffer lives as long as slf, which the view references.
        unsafe { fill_byte_view(view, flags, ptr, bytes, slf.into_any()) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: view was filled by fill_byte_view.
        unsafe { release_byte_view(view) }
    }
}

pub fn byte_count(nbytes: isize) -> PyResult<usize> {
    usize::try_from(nbytes)
        .map_err(|_| Error::InvalidArgument(format!("a size cannot be negative (got {nbytes})")).into())
}

/// A device address from a DeviceAllocation, or any object convertible to int (as PyCUDA
/// accepts), with the allocation's size when known for bounds checks.
pub fn device_address(obj: &Bound<'_, PyAny>) -> PyResult<(DevicePtr, Option<usize>)> {
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        let a = a.get();
        return Ok((a.live_ptr()?, Some(a.bytes)));
    }
    if let Ok(v) = obj.extract::<u64>() {
        return Ok((v, None));
    }
    if obj.hasattr("__int__")? {
        if let Ok(v) = obj.call_method0("__int__").and_then(|v| v.extract::<u64>()) {
            return Ok((v, None));
        }
    }
    Err(PyTypeError::new_err(format!(
        "expected a device pointer (DeviceAllocation or a non-negative int), got {}",
        obj.get_type().name()?
    )))
}

fn check_fits(what: &str, bytes: usize, capacity: Option<usize>) -> PyResult<()> {
    match capacity {
        Some(cap) if bytes > cap => Err(Error::InvalidArgument(format!(
            "{what}: {bytes} bytes do not fit in a device allocation of {cap} bytes"
        ))
        .into()),
        _ => Ok(()),
    }
}

fn run_copy<F>(py: Python<'_>, bytes: usize, asynchronous: bool, copy: F) -> PyResult<()>
where
    F: FnOnce() -> crate::runtime::Result<()> + Send,
{
    // Async copies return quickly; only big synchronous ones are worth a GIL release.
    if bytes >= RELEASE_GIL_BYTES && !asynchronous {
        Ok(py.detach(copy)?)
    } else {
        Ok(copy()?)
    }
}

fn optional_stream(stream: Option<&Bound<'_, CudaStream>>) -> PyResult<Option<StreamHandle>> {
    stream.map(|s| stream_handle(Some(s))).transpose()
}

/// Allocates `nbytes` of device memory.
#[pyfunction]
pub fn mem_alloc(nbytes: isize) -> PyResult<DeviceAllocation> {
    DeviceAllocation::new(byte_count(nbytes)?)
}

/// Allocates `nbytes` from the caching memory pool (what GPUArray uses); freed, stream-
/// ordered, back to the pool. Plain `mem_alloc` where `PYGPU_MEMORY_POOL=0`.
#[pyfunction]
pub fn pool_alloc(nbytes: isize) -> PyResult<DeviceAllocation> {
    DeviceAllocation::pooled(byte_count(nbytes)?)
}

/// (free, total) bytes of the current device.
#[pyfunction]
pub fn mem_get_info() -> PyResult<(usize, usize)> {
    Ok(backend()?.mem_get_info()?)
}

/// Copies the whole of the C-contiguous host buffer `src` to the device address `dest`.
#[pyfunction]
#[pyo3(signature = (dest, src, stream = None))]
pub fn memcpy_htod(
    py: Python<'_>,
    dest: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let (dst, capacity) = device_address(dest)?;
    let buf = HostView::get(src, false)?;
    let bytes = buf.len();
    check_fits("memcpy_htod", bytes, capacity)?;
    let s = optional_stream(stream)?;
    let b = backend()?;
    let src_addr = buf.ptr() as usize;
    // SAFETY: buf holds the exporter's buffer (and so its memory) until after the copy;
    // an async copy from pageable memory returns only once the source was staged.
    run_copy(py, bytes, s.is_some(), move || unsafe { b.memcpy_htod(dst, src_addr as *const u8, bytes, s) })
}

/// Fills the whole C-contiguous writable host buffer `dest` from the device address `src`.
#[pyfunction]
#[pyo3(signature = (dest, src, stream = None))]
pub fn memcpy_dtoh(
    py: Python<'_>,
    dest: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let (src_ptr, capacity) = device_address(src)?;
    let buf = HostView::get(dest, true)?;
    let bytes = buf.len();
    check_fits("memcpy_dtoh", bytes, capacity)?;
    let s = optional_stream(stream)?;
    let b = backend()?;
    let dst_addr = buf.ptr() as usize;
    // SAFETY: buf keeps the writable destination alive until after the copy returns; an
    // async copy into pageable memory completes before returning, and into pinned memory
    // the caller owns the buffer until the stream is synchronised, as in CUDA.
    run_copy(py, bytes, s.is_some(), move || unsafe { b.memcpy_dtoh(dst_addr as *mut u8, src_ptr, bytes, s) })
}

/// Copies `size` bytes between device addresses (default: the smaller allocation).
#[pyfunction]
#[pyo3(signature = (dest, src, size = None, stream = None))]
pub fn memcpy_dtod(
    py: Python<'_>,
    dest: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    size: Option<isize>,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let (dst, dst_cap) = device_address(dest)?;
    let (src_ptr, src_cap) = device_address(src)?;
    let bytes = match size {
        Some(n) => byte_count(n)?,
        None => match (dst_cap, src_cap) {
            (Some(a), Some(b)) => a.min(b),
            _ => {
                return Err(Error::InvalidArgument(
                    "memcpy_dtod needs size= when an address is a plain int".to_string(),
                )
                .into())
            }
        },
    };
    check_fits("memcpy_dtod destination", bytes, dst_cap)?;
    check_fits("memcpy_dtod source", bytes, src_cap)?;
    let s = optional_stream(stream)?;
    let b = backend()?;
    run_copy(py, bytes, s.is_some(), move || b.memcpy_dtod(dst, src_ptr, bytes, s))
}

fn memset(
    dest: &Bound<'_, PyAny>,
    value: u32,
    element_size: usize,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let (dst, capacity) = device_address(dest)?;
    let count = byte_count(count)?;
    let bytes =
        count.checked_mul(element_size).ok_or_else(|| Error::InvalidArgument("memset count overflows".to_string()))?;
    check_fits("memset", bytes, capacity)?;
    let s = optional_stream(stream)?;
    Ok(backend()?.memset(dst, value, element_size, count, s)?)
}

/// Sets `count` bytes to `value`.
#[pyfunction]
#[pyo3(signature = (dest, value, count, stream = None))]
pub fn memset_d8(
    dest: &Bound<'_, PyAny>,
    value: u8,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    memset(dest, value.into(), 1, count, stream)
}

/// Sets `count` 16-bit words to `value`.
#[pyfunction]
#[pyo3(signature = (dest, value, count, stream = None))]
pub fn memset_d16(
    dest: &Bound<'_, PyAny>,
    value: u16,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    memset(dest, value.into(), 2, count, stream)
}

/// Sets `count` 32-bit words to `value`.
#[pyfunction]
#[pyo3(signature = (dest, value, count, stream = None))]
pub fn memset_d32(
    dest: &Bound<'_, PyAny>,
    value: u32,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    memset(dest, value, 4, count, stream)
}
