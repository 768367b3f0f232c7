//! PyCUDA's `pycuda.tools.DeviceMemoryPool` and its `PooledDeviceAllocation` (the bins are
//! `runtime::bin_pool`). The allocation is a `DeviceAllocation`, so it goes wherever pygpu
//! takes one; freeing it, or losing its last reference, gives the block back to the pool.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::PyClassInitializer;

use super::memory::{byte_count, DeviceAllocation};
use crate::runtime::bin_pool::{alloc_size, bin_number, DeviceBinPool, PoolCounts};
use crate::runtime::Error;

/// Device memory held for reuse, on the device current when the pool was made.
#[pyclass(module = "pygpu", frozen)]
pub struct DeviceMemoryPool {
    pool: Arc<DeviceBinPool>,
}

/// A block of a `DeviceMemoryPool`: a `DeviceAllocation` whose `free()` gives it back.
#[pyclass(module = "pygpu", frozen, extends = DeviceAllocation)]
pub struct PooledDeviceAllocation;

impl DeviceMemoryPool {
    fn counts(&self) -> PoolCounts {
        self.pool.bins().counts()
    }
}

#[pymethods]
impl DeviceMemoryPool {
    #[new]
    fn py_new() -> PyResult<Self> {
        Ok(DeviceMemoryPool { pool: DeviceBinPool::new()? })
    }

    /// `size` bytes (a whole size class is reserved): a held block when one fits.
    fn allocate<'py>(&self, py: Python<'py>, size: isize) -> PyResult<Bound<'py, PooledDeviceAllocation>> {
        let size = byte_count(size)?;
        let block = self.pool.allocate(size)?;
        let parent = DeviceAllocation::wrap(block, size)?;
        Bound::new(py, PyClassInitializer::from(parent).add_subclass(PooledDeviceAllocation))
    }

    /// `allocate`, so that the pool itself can be passed as an allocator.
    fn __call__<'py>(&self, py: Python<'py>, size: isize) -> PyResult<Bound<'py, PooledDeviceAllocation>> {
        self.allocate(py, size)
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

    /// Bytes the pool has from the device: active and held blocks, whole size classes.
    #[getter]
    fn managed_bytes(&self) -> usize {
        self.counts().managed_bytes
    }

    /// Bytes of the blocks in use (whole size classes).
    #[getter]
    fn active_bytes(&self) -> usize {
        self.counts().active_bytes
    }

    /// The device the pool allocates on.
    #[getter]
    fn device(&self) -> i32 {
        self.pool.device()
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

    /// Frees the held blocks (the device may be waited for).
    fn free_held(&self, py: Python<'_>) {
        let pool = &self.pool;
        py.detach(|| pool.bins().free_held());
    }

    /// Frees the held blocks, and from now on frees each block as it is given back.
    /// Allocation still works, as PyCUDA's.
    fn stop_holding(&self, py: Python<'_>) {
        let pool = &self.pool;
        py.detach(|| pool.bins().stop_holding());
    }

    fn __repr__(&self) -> String {
        let c = self.counts();
        format!(
            "<DeviceMemoryPool on device {}: {} active, {} held blocks, {} bytes managed>",
            self.pool.device(),
            c.active_blocks,
            c.held_blocks,
            c.managed_bytes
        )
    }
}

impl Drop for DeviceMemoryPool {
    /// Blocks still in use outlive the pool object; they are freed as they come back.
    fn drop(&mut self) {
        self.pool.bins().stop_holding();
    }
}

#[pymethods]
impl PooledDeviceAllocation {
    fn __repr__(slf: PyRef<'_, Self>) -> String {
        let parent = slf.as_super();
        match parent.live_ptr() {
            Ok(ptr) => format!("<PooledDeviceAllocation of {} bytes at 0x{ptr:x}>", parent.bytes()),
            Err(_) => format!("<PooledDeviceAllocation of {} bytes (freed)>", parent.bytes()),
        }
    }
}
