//! `pygpu.get_default_memory_pool()`: the statistics and controls of the caching allocator
//! (`runtime::pool`) that GPUArray allocates from, with CuPy's method names.

use pyo3::prelude::*;

use super::memory::byte_count;
use crate::runtime::backend;
use crate::runtime::pool::default_pool;

/// The process-wide device memory pool, over all devices. A handle: every instance
/// controls the same pool.
#[pyclass(module = "pygpu", frozen)]
pub struct MemoryPool;

#[pymethods]
impl MemoryPool {
    /// Bytes of live allocations from the pool.
    fn used_bytes(&self) -> usize {
        default_pool().used_bytes()
    }

    /// Bytes the pool holds from the devices: in use plus cached for reuse.
    fn total_bytes(&self) -> PyResult<usize> {
        Ok(default_pool().total_bytes(backend()?)?)
    }

    /// Bytes cached for reuse: held, not in use.
    fn free_bytes(&self) -> PyResult<usize> {
        let pool = default_pool();
        Ok(pool.total_bytes(backend()?)?.saturating_sub(pool.used_bytes()))
    }

    /// Returns every cached block to the devices (waiting for the frees still queued).
    fn free_all_blocks(&self, py: Python<'_>) -> PyResult<()> {
        let b = backend()?;
        Ok(py.detach(|| default_pool().free_all_blocks(b))?)
    }

    /// Caps the bytes in use; an allocation past it raises CudaMemoryError. 0 removes the cap.
    fn set_limit(&self, size: isize) -> PyResult<()> {
        default_pool().set_limit(byte_count(size)?);
        Ok(())
    }

    /// The cap on bytes in use, 0 for none.
    fn get_limit(&self) -> usize {
        default_pool().limit()
    }

    /// False when PYGPU_MEMORY_POOL=0 turned pooling off (allocations are plain cuMemAlloc).
    #[getter]
    fn enabled(&self) -> bool {
        default_pool().enabled()
    }

    fn __repr__(&self) -> String {
        let pool = default_pool();
        format!(
            "<MemoryPool enabled={} used_bytes={}>",
            if pool.enabled() { "True" } else { "False" },
            pool.used_bytes()
        )
    }
}

/// The pool GPUArray allocates from.
#[pyfunction]
pub fn get_default_memory_pool() -> MemoryPool {
    MemoryPool
}
