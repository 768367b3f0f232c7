//! PyCUDA's `pycuda.tools.PageLockedMemoryPool`: page-locked host memory held for reuse,
//! handed out as numpy arrays whose base is a `PooledHostAllocation`; the block goes back
//! to the pool when the array and every view of it are gone.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use numpy::PyArrayDescrMethods;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

use super::buffer::{fill_byte_view, raw_memory_dtype, release_byte_view};
use super::memory::{byte_count, host_alloc_flags};
use crate::runtime::bin_pool::{alloc_size, bin_number, size_class, BinPool, PoolCounts};
use crate::runtime::memory::PinnedBuffer;
use crate::runtime::Error;

/// Page-locked host memory held for reuse.
#[pyclass(module = "pygpu", frozen)]
pub struct PageLockedMemoryPool {
    pool: Arc<BinPool<PinnedBuffer>>,
    /// The `CU_MEMHOSTALLOC_*` flags of every block (from the pool's `PageLockedAllocator`).
    flags: u32,
}

/// A block of a `PageLockedMemoryPool`, exporting its bytes as a buffer; given back to the
/// pool when it goes away.
#[pyclass(module = "pygpu", frozen)]
pub struct PooledHostAllocation {
    block: Option<PinnedBuffer>,
    pool: Arc<BinPool<PinnedBuffer>>,
    bin: u32,
    /// The bytes asked for (the block may be larger).
    size: usize,
}

static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The dimensions of `shape` (an int or a sequence of ints), each non-negative.
fn dimensions(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims: Vec<isize> = match shape.extract::<isize>() {
        Ok(n) => vec![n],
        Err(e) if super::errors::must_propagate(shape.py(), &e) => return Err(e),
        Err(_) => shape.extract()?,
    };
    dims.into_iter()
        .map(|d| {
            byte_count(d)
                .map_err(|_| Error::InvalidArgument(format!("shape entries must be non-negative, got {shape}")).into())
        })
        .collect()
}

impl PageLockedMemoryPool {
    fn counts(&self) -> PoolCounts {
        self.pool.counts()
    }
}

#[pymethods]
impl PageLockedMemoryPool {
    /// `allocator`: a `pygpu.tools.PageLockedAllocator` (or anything with an integer `flags`
    /// combining `host_alloc_flags`), whose flags every block is allocated with.
    #[new]
    #[pyo3(signature = (allocator = None))]
    fn py_new(allocator: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let flags = match allocator {
            None => 0,
            Some(a) => {
                let flags = a.getattr("flags").and_then(|f| f.extract::<u32>()).map_err(|_| {
                    Error::InvalidArgument(format!(
                        "allocator must be a PageLockedAllocator (an object with integer flags), not {}",
                        a.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
                    ))
                })?;
                host_alloc_flags(flags)?
            }
        };
        Ok(PageLockedMemoryPool { pool: Arc::new(BinPool::default()), flags })
    }

    /// An uninitialised numpy array of `shape` and `dtype` in pooled page-locked memory.
    #[pyo3(signature = (shape, dtype, order = "C"))]
    fn allocate<'py>(
        &self,
        py: Python<'py>,
        shape: &Bound<'py, PyAny>,
        dtype: &Bound<'py, PyAny>,
        order: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        if order != "C" && order != "F" {
            return Err(Error::InvalidArgument(format!("order must be 'C' or 'F', not {order:?}")).into());
        }
        let dims = dimensions(shape)?;
        // The shared check: recycled bytes must never be handed out as PyObject pointers.
        let dtype = raw_memory_dtype(dtype, "PageLockedMemoryPool.allocate")?;
        let itemsize = dtype.itemsize();
        let size = dims
            .iter()
            .try_fold(itemsize, |acc, d| acc.checked_mul(*d))
            .ok_or_else(|| Error::InvalidArgument(format!("an array of shape {shape} is too large")))?;
        let (bin, bytes) = size_class(size)?;
        let flags = self.flags;
        let block = py.detach(|| self.pool.take(bin, bytes, |b| PinnedBuffer::with_flags(b, flags)))?;
        let owner = Bound::new(py, PooledHostAllocation { block: Some(block), pool: self.pool.clone(), bin, size })?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("buffer", owner)?;
        kwargs.set_item("order", order)?;
        NDARRAY.import(py, "numpy", "ndarray")?.call((dims, dtype), Some(&kwargs))
    }

    /// Blocks freed by the program and kept for reuse.
    #[getter]
    fn held_blocks(&self) -> usize {
        self.counts().held_blocks
    }

    /// Blocks in use by the program.
    #[getter]
    fn active_blocks(&self) -> usize {
        self.counts().active_blocks
    }

    /// Bytes the pool has allocated: active and held blocks, whole size classes.
    #[getter]
    fn managed_bytes(&self) -> usize {
        self.counts().managed_bytes
    }

    /// Bytes of the blocks in use (whole size classes).
    #[getter]
    fn active_bytes(&self) -> usize {
        self.counts().active_bytes
    }

    /// The size class of a request of `size` bytes (PyCUDA's numbering).
    #[staticmethod]
    fn bin_number(size: isize) -> PyResult<u32> {
        Ok(bin_number(byte_count(size)?))
    }

    /// The bytes a block of size class `bin_nr` holds.
    #[staticmethod]
    fn alloc_size(bin_nr: u32) -> PyResult<usize> {
        alloc_size(bin_nr)
            .ok_or_else(|| Error::InvalidArgument(format!("size class {bin_nr} is past the address space")).into())
    }

    /// Frees the held blocks.
    fn free_held(&self, py: Python<'_>) {
        py.detach(|| self.pool.free_held());
    }

    /// Frees the held blocks, and from now on frees each block as it is given back.
    fn stop_holding(&self, py: Python<'_>) {
        py.detach(|| self.pool.stop_holding());
    }

    fn __repr__(&self) -> String {
        let c = self.counts();
        format!(
            "<PageLockedMemoryPool: {} active, {} held blocks, {} bytes managed>",
            c.active_blocks, c.held_blocks, c.managed_bytes
        )
    }
}

impl Drop for PageLockedMemoryPool {
    /// Blocks still in use outlive the pool object; they are freed as they come back.
    fn drop(&mut self) {
        self.pool.stop_holding();
    }
}

#[pymethods]
impl PooledHostAllocation {
    /// The host address of the block.
    #[getter]
    fn ptr(&self) -> usize {
        self.block.as_ref().map_or(0, |b| b.as_ptr() as usize)
    }

    /// The bytes asked for.
    #[getter]
    fn nbytes(&self) -> usize {
        self.size
    }

    /// The address kernels use for the block (mapped memory: a pool whose allocator has
    /// `host_alloc_flags.DEVICEMAP`).
    fn get_device_pointer(&self) -> PyResult<usize> {
        let block = self.block.as_ref().ok_or(Error::InvalidArgument("the block was given back".to_string()))?;
        Ok(block.device_pointer()? as usize)
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let ptr = slf.get().ptr() as *mut c_void;
        let size = slf.get().size;
        // SAFETY: the block is owned by slf until it is dropped, and the view references slf;
        // the view covers the `size` bytes asked for, within the block.
        unsafe { fill_byte_view(view, flags, ptr, size, slf.into_any()) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: view was filled by fill_byte_view.
        unsafe { release_byte_view(view) }
    }
}

impl Drop for PooledHostAllocation {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            let bytes = block.bytes();
            self.pool.give_back(block, self.bin, bytes);
        }
    }
}
