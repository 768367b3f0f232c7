//! Device allocations, page-locked host memory and the copy/fill calls, with PyCUDA's
//! names (`mem_alloc`, `memcpy_htod`, ...). These raise on failure.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyInt;

use super::array_storage::Storage;
use super::buffer::{fill_byte_view, release_byte_view, HostView};
use super::int_args::int_in_range;
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
    error.with_detail(context)
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
    /// Live zero-copy exports of the address (`AllocationExport`s): `free()` refuses while
    /// any lives, since a consumer (a numpy array, a DLPack tensor) may still use the memory.
    exports: AtomicUsize,
}

impl DeviceAllocation {
    pub fn new(bytes: usize) -> PyResult<Self> {
        Self::wrap(DeviceBuffer::new(bytes).map_err(|e| out_of_memory_context(e, bytes))?, bytes)
    }

    /// Memory from the caching pool, for allocations made on the user's behalf.
    pub fn pooled(bytes: usize) -> PyResult<Self> {
        Self::wrap(DeviceBuffer::pooled(bytes).map_err(|e| out_of_memory_context(e, bytes))?, bytes)
    }

    pub fn wrap(buffer: DeviceBuffer, bytes: usize) -> PyResult<Self> {
        Ok(DeviceAllocation {
            ptr: buffer.ptr(),
            bytes,
            device: buffer.device(),
            buffer: Releasable::new(buffer, "this DeviceAllocation"),
            exports: AtomicUsize::new(0),
        })
    }

    /// The address, or the invalid-handle error once freed.
    pub fn live_ptr(&self) -> PyResult<DevicePtr> {
        self.buffer.check_live()?;
        Ok(self.ptr)
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

    /// The device address; raises once freed.
    #[getter]
    fn ptr(&self) -> PyResult<DevicePtr> {
        self.live_ptr()
    }

    /// The size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.bytes
    }

    /// The ordinal of the device the memory is on.
    #[getter(device)]
    fn py_device(&self) -> i32 {
        self.device
    }

    /// Whether the memory was released (by `free()`).
    #[getter]
    fn freed(&self) -> bool {
        self.buffer.is_released()
    }

    /// Releases the memory now; later use raises. Idempotent. Raises BufferError while a
    /// zero-copy export of the address (numpy array, DLPack tensor) is alive.
    fn free(&self, py: Python<'_>) -> PyResult<()> {
        let live = self.exports.load(Ordering::Acquire);
        if live > 0 && !self.buffer.is_released() {
            return Err(PyBufferError::new_err(format!(
                "cannot free this DeviceAllocation of {} bytes: {live} zero-copy export(s) of its memory \
                 (numpy arrays from __array_interface__, DLPack tensors, CUDA Array Interface consumers) \
                 may still use it. Delete them (and the GPUArray they came from); the memory is then \
                 freed with its last reference",
                self.bytes
            )));
        }
        let buffer = self.buffer.take();
        // Without the GIL: on the host backend a free waits for kernels still running on
        // other threads, which need the GIL to check for Ctrl-C.
        py.detach(move || drop(buffer));
        Ok(())
    }

    /// A lease that makes `free()` refuse until it is dropped: held by whatever hands the
    /// address to a consumer that cannot be told about a free (numpy, DLPack). `what` names
    /// the export in free()'s error.
    fn _export(slf: &Bound<'_, Self>) -> PyResult<AllocationExport> {
        slf.get().buffer.with(DeviceBuffer::mark_shared)?;
        slf.get().exports.fetch_add(1, Ordering::AcqRel);
        Ok(AllocationExport { allocation: slf.clone().unbind() })
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

/// One live zero-copy export of a DeviceAllocation (see `DeviceAllocation._export`); keeps
/// the allocation alive and `free()` refused until it goes away.
#[pyclass(module = "pygpu", frozen)]
pub struct AllocationExport {
    allocation: Py<DeviceAllocation>,
}

#[pymethods]
impl AllocationExport {
    #[getter]
    fn allocation(&self, py: Python<'_>) -> Py<DeviceAllocation> {
        self.allocation.clone_ref(py)
    }
}

impl Drop for AllocationExport {
    fn drop(&mut self) {
        // The allocation is alive: this object holds a reference to it (frozen, so no GIL
        // is needed to reach the counter).
        self.allocation.get().exports.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `flags` if they combine `host_alloc_flags` only (PORTABLE, DEVICEMAP, WRITECOMBINED).
pub(super) fn host_alloc_flags(flags: u32) -> Result<u32, Error> {
    if flags & !0x7 != 0 {
        return Err(Error::InvalidArgument(format!(
            "host allocation flags {flags:#x}: only PORTABLE (1), DEVICEMAP (2) and WRITECOMBINED (4) exist"
        )));
    }
    Ok(flags)
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
        let flags = host_alloc_flags(flags)?;
        Ok(HostAllocation { buffer: PinnedBuffer::with_flags(byte_count(nbytes)?, flags)?, flags })
    }

    /// The `host_alloc_flags` it was allocated with.
    #[getter]
    fn flags(&self) -> u32 {
        self.flags
    }

    /// The address kernels use for this memory (mapped page-locked memory).
    fn get_device_pointer(&self) -> PyResult<DevicePtr> {
        Ok(self.buffer.device_pointer()?)
    }

    /// The size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.buffer.bytes()
    }

    /// The host address (see `get_device_pointer` for the address kernels use).
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

/// A device address from a DeviceAllocation, a GPUArray (its `.ptr`, bounded by its bytes), or
/// an object with `__index__` (an int, `np.intp`, a DevicePointer), as PyCUDA accepts, with the
/// memory's size when known for bounds checks. `__int__` alone is not an address: a one-element
/// array or a float converts with it to its *value*.
pub fn device_address(obj: &Bound<'_, PyAny>) -> PyResult<(DevicePtr, Option<usize>)> {
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        let a = a.get();
        return Ok((a.live_ptr()?, Some(a.bytes)));
    }
    // A plain int (the demo's snapshot row address): no GPUArray lookup, which costs a
    // microsecond a call.
    if let Ok(value) = obj.cast::<PyInt>() {
        return value.extract::<u64>().map(|v| (v, None)).map_err(|_| not_an_address(value.as_any()));
    }
    // A GPUArray: its storage's address and bytes (one span: a contiguous array only).
    if let Some(storage) = Storage::of(obj) {
        let (ptr, bytes) = storage.contiguous_span()?;
        return Ok((ptr, Some(bytes)));
    }
    // SAFETY: obj is a live object; PyNumber_Index returns a new reference or NULL with an error set.
    let index = unsafe { Bound::from_owned_ptr_or_err(obj.py(), ffi::PyNumber_Index(obj.as_ptr())) };
    match index {
        // A TypeError, as before: the argument is not an address (tests/test_memory.py).
        Ok(value) => value.extract::<u64>().map(|v| (v, None)).map_err(|_| not_an_address(&value)),
        // Errors other than "no __index__" (a freed allocation, KeyboardInterrupt) say what is wrong.
        Err(e) if !e.is_instance_of::<PyTypeError>(obj.py()) => Err(e),
        Err(_) => Err(PyTypeError::new_err(format!(
            "expected a device pointer (DeviceAllocation, GPUArray or an int address), got {}",
            obj.get_type().name()?
        ))),
    }
}

fn not_an_address(value: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "a device address must be a non-negative 64-bit integer, got {}",
        value.repr().map(|r| r.to_string()).unwrap_or_default()
    ))
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

fn run_copy<F>(py: Python<'_>, bytes: usize, copy: F) -> PyResult<()>
where
    F: FnOnce() -> crate::runtime::Result<()> + Send,
{
    // Asynchronous ones too: from pageable memory they copy the data (staged) before returning.
    if bytes >= RELEASE_GIL_BYTES {
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

/// Whether `[ptr, ptr + nbytes)` lies inside one live pygpu allocation (or page-locked or
/// registered host memory): True/False where the backend keeps a registry (host), None where
/// it cannot tell (GPU backends).
#[pyfunction]
pub fn is_device_memory(ptr: u64, nbytes: isize) -> PyResult<Option<bool>> {
    Ok(backend()?.span_is_device_memory(ptr, byte_count(nbytes)?))
}

/// (start, bytes) of the allocation that holds address `ptr`, where the backend knows one:
/// a live pygpu allocation on the host backend (a pooled block's bytes as asked for; 0 for an
/// idle pool block, memory already freed), page-locked or registered host memory, or on CUDA
/// the driver's allocation; None otherwise. Imports check a tensor's extent against it.
#[pyfunction]
pub fn allocation_extent(ptr: u64) -> PyResult<Option<(u64, usize)>> {
    Ok(backend()?.allocation_extent(ptr))
}

/// Whether every page of host memory `[ptr, ptr + nbytes)` is mapped in this process (Linux;
/// None elsewhere). Foreign CPU tensors are checked with it before numpy reads them: it refuses
/// addresses that cannot be memory at all, not memory that belongs to someone else.
#[pyfunction]
pub fn host_span_is_mapped(ptr: u64, nbytes: u64) -> Option<bool> {
    crate::runtime::memory::host_span_is_mapped(ptr, nbytes)
}

/// (free, total) bytes of the current device.
#[pyfunction]
pub fn mem_get_info() -> super::errors::CallResult<(usize, usize)> {
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
    run_copy(py, bytes, move || unsafe { b.memcpy_htod(dst, src_addr as *const u8, bytes, s) })
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
    run_copy(py, bytes, move || unsafe { b.memcpy_dtoh(dst_addr as *mut u8, src_ptr, bytes, s) })
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
    run_copy(py, bytes, move || b.memcpy_dtod(dst, src_ptr, bytes, s))
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
    value: &Bound<'_, PyAny>,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let value = int_in_range::<u8>(value, || "memset_d8's value".to_string())?;
    memset(dest, value.into(), 1, count, stream)
}

/// Sets `count` 16-bit words to `value`.
#[pyfunction]
#[pyo3(signature = (dest, value, count, stream = None))]
pub fn memset_d16(
    dest: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let value = int_in_range::<u16>(value, || "memset_d16's value".to_string())?;
    memset(dest, value.into(), 2, count, stream)
}

/// Sets `count` 32-bit words to `value`.
#[pyfunction]
#[pyo3(signature = (dest, value, count, stream = None))]
pub fn memset_d32(
    dest: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> PyResult<()> {
    let value = int_in_range::<u32>(value, || "memset_d32's value".to_string())?;
    memset(dest, value, 4, count, stream)
}
