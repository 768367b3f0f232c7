//! DLPack import: a consumed capsule (renamed as the protocol says) held as a `DLPackTensor`
//! that calls the producer's deleter when the last reference goes.

use super::*;

// ---------------------------------------------------------------------------------------
// Import

enum Managed {
    Legacy(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

/// Owns a consumed managed tensor and calls its deleter once, when dropped.
struct Owned(Managed);

// SAFETY: the protocol lets the deleter be called from any thread; the pointers are only
// read at import and passed to the deleter at drop.
unsafe impl Send for Owned {}
// SAFETY: no shared access touches the pointers after import.
unsafe impl Sync for Owned {}

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: we own the tensor (the capsule was renamed when we took it), so its
            // deleter runs exactly once, here.
            unsafe {
                match self.0 {
                    Managed::Legacy(m) => {
                        if let Some(d) = (*m).deleter {
                            d(m)
                        }
                    }
                    Managed::Versioned(m) => {
                        if let Some(d) = (*m).deleter {
                            d(m)
                        }
                    }
                }
            }
        }));
    }
}

impl Owned {
    /// The producer's Python owner when pygpu produced the tensor: a reference the GC must see,
    /// or a producer that keeps its consumer (a cycle) would never be collected.
    fn python_owner(&self) -> Option<&Py<PyAny>> {
        // SAFETY: the tensor is live (deleted only when self drops) and owned by self.
        unsafe {
            match self.0 {
                Managed::Legacy(m) => exported_owner(m),
                Managed::Versioned(m) => exported_owner(m),
            }
        }
    }
}

/// A tensor taken from a DLPack capsule. It owns the producer's memory reference: keep it
/// alive as long as the memory is used. `int(t)` is the address of element 0.
#[pyclass(module = "pygpu", frozen)]
pub struct DLPackTensor {
    _owned: Owned,
    /// The tensor's `data` (before `byte_offset`): the allocation it points into.
    data: u64,
    ptr: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
    dtype: (u8, u8, u16),
    device: (i32, i32),
    readonly: bool,
    version: Option<(u32, u32)>,
}

#[pymethods]
impl DLPackTensor {
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(owner) = self._owned.python_owner() {
            visit.call(owner)?;
        }
        Ok(())
    }
    /// Address of element 0 (data + byte_offset).
    #[getter]
    fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The DLTensor's `data` pointer (before `byte_offset`): what the producer allocated.
    #[getter]
    fn data(&self) -> u64 {
        self.data
    }

    fn __int__(&self) -> u64 {
        self.ptr
    }

    fn __index__(&self) -> u64 {
        self.ptr
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// Strides in bytes (C-contiguous ones when the producer gave none).
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.strides)
    }

    /// (code, bits, lanes) of the DLDataType.
    #[getter]
    fn dtype(&self) -> (u8, u8, u16) {
        self.dtype
    }

    /// (device_type, device_id)
    #[getter]
    fn device(&self) -> (i32, i32) {
        self.device
    }

    #[getter]
    fn device_id(&self) -> i32 {
        self.device.1
    }

    #[getter]
    fn readonly(&self) -> bool {
        self.readonly
    }

    /// (major, minor) for a versioned capsule, None for a legacy one.
    #[getter]
    fn version(&self) -> Option<(u32, u32)> {
        self.version
    }

    fn __repr__(&self) -> String {
        format!(
            "<DLPackTensor shape={:?} dtype={:?} device={:?} at 0x{:x}>",
            self.shape, self.dtype, self.device, self.ptr
        )
    }
}

/// A validated DLTensor: element-0 address, shape, byte strides, dtype, device.
struct TensorView {
    data: u64,
    ptr: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
    dtype: DLDataType,
    device: DLDevice,
}

/// Reads and validates a DLTensor; errors leave the capsule untouched.
///
/// # Safety
/// `t` points to a live DLTensor whose shape/strides arrays hold `ndim` entries.
unsafe fn read_tensor(t: *const DLTensor) -> PyResult<TensorView> {
    // SAFETY: the caller vouches for t.
    let t = unsafe { &*t };
    if t.ndim < 0 {
        return Err(PyBufferError::new_err(format!("DLPack tensor has a negative ndim ({})", t.ndim)));
    }
    let ndim = t.ndim as usize;
    if ndim > 64 {
        return Err(PyBufferError::new_err(format!("DLPack tensor has too many dimensions ({ndim})")));
    }
    if ndim > 0 && t.shape.is_null() {
        return Err(PyBufferError::new_err("DLPack tensor has no shape"));
    }
    let dtype = t.dtype;
    if dtype.lanes != 1 {
        return Err(PyBufferError::new_err(format!("DLPack vector dtypes (lanes={}) are not supported", dtype.lanes)));
    }
    if dtype.bits == 0 || dtype.bits % 8 != 0 {
        return Err(PyBufferError::new_err(format!("DLPack dtypes of {} bits are not supported", dtype.bits)));
    }
    let itemsize = i64::from(dtype.bits / 8);
    let shape: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        // SAFETY: shape holds ndim entries, per the caller.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec()
    };
    if let Some(d) = shape.iter().find(|&&d| d < 0) {
        return Err(PyValueError::new_err(format!("DLPack tensor has a negative extent ({d})")));
    }
    // Impossible values, not a protocol failure: ValueError, as for any tensor outside memory.
    let overflow = || PyValueError::new_err("DLPack tensor strides overflow 64-bit byte offsets");
    let strides: Vec<i64> = if t.strides.is_null() || ndim == 0 {
        let mut strides = vec![0i64; ndim];
        let mut acc = itemsize;
        for i in (0..ndim).rev() {
            strides[i] = acc;
            acc = acc.checked_mul(shape[i].max(1)).ok_or_else(overflow)?;
        }
        strides
    } else {
        // SAFETY: ndim entries, per the caller.
        let elements = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        elements.iter().map(|&s| s.checked_mul(itemsize).ok_or_else(overflow)).collect::<PyResult<_>>()?
    };
    let data = t.data as usize as u64;
    let ptr = data
        .checked_add(t.byte_offset)
        .ok_or_else(|| PyValueError::new_err("DLPack tensor's data + byte_offset overflows the address space"))?;
    Ok(TensorView { data, ptr, shape, strides, dtype, device: t.device })
}

/// Consumes a DLPack capsule ("dltensor" or "dltensor_versioned" 1.x), renaming it to
/// "used_..." so that its producer's memory is now owned by the returned tensor.
#[pyfunction]
pub fn dlpack_from_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<DLPackTensor> {
    let obj = capsule.as_ptr();
    // SAFETY: obj is a live object (borrowed from `capsule`).
    if unsafe { ffi::PyCapsule_CheckExact(obj) } == 0 {
        return Err(PyTypeError::new_err(format!(
            "expected a DLPack capsule (PyCapsule), got {}",
            capsule.get_type().name()?
        )));
    }
    // SAFETY: obj is a capsule; the name is NULL or a NUL-terminated string it owns.
    let name_ptr = unsafe { ffi::PyCapsule_GetName(obj) };
    if name_ptr.is_null() {
        // Clears any error GetName may have set.
        let _ = PyErr::take(capsule.py());
        return Err(PyValueError::new_err("this capsule has no name, so it is not a DLPack capsule"));
    }
    // SAFETY: non-null, NUL-terminated, alive as long as the capsule.
    let name = unsafe { CStr::from_ptr(name_ptr) };
    if name == NAME_USED_LEGACY || name == NAME_USED_VERSIONED {
        return Err(PyValueError::new_err(
            "this DLPack capsule has already been consumed (each capsule can be imported once; call __dlpack__() again)",
        ));
    }
    let versioned = if name == NAME_VERSIONED {
        true
    } else if name == NAME_LEGACY {
        false
    } else {
        return Err(PyValueError::new_err(format!(
            "a capsule named {:?} is not a DLPack capsule (expected \"dltensor\" or \"dltensor_versioned\")",
            name.to_string_lossy()
        )));
    };
    // SAFETY: the name is the capsule's own, so GetPointer cannot fail on a name mismatch.
    let raw = unsafe { ffi::PyCapsule_GetPointer(obj, name_ptr) };
    if raw.is_null() {
        let _ = PyErr::take(capsule.py());
        return Err(PyBufferError::new_err("this DLPack capsule holds a null tensor"));
    }
    let (managed, tensor_ptr, readonly, version) = if versioned {
        let m = raw as *mut DLManagedTensorVersioned;
        // SAFETY: a "dltensor_versioned" capsule holds a DLManagedTensorVersioned.
        let (v, flags) = unsafe { ((*m).version, (*m).flags) };
        if v.major != 1 {
            return Err(PyBufferError::new_err(format!(
                "DLPack {}.{} is not supported: pygpu reads DLPack 1.x",
                v.major, v.minor
            )));
        }
        // SAFETY: as above; addr_of avoids creating an intermediate reference.
        (
            Managed::Versioned(m),
            unsafe { std::ptr::addr_of!((*m).dl_tensor) },
            flags & FLAG_READ_ONLY != 0,
            Some((v.major, v.minor)),
        )
    } else {
        let m = raw as *mut DLManagedTensor;
        // SAFETY: a "dltensor" capsule holds a DLManagedTensor.
        (Managed::Legacy(m), unsafe { std::ptr::addr_of!((*m).dl_tensor) }, false, None)
    };
    // SAFETY: the producer guarantees a well-formed tensor while the capsule lives.
    let TensorView { data, ptr, shape, strides, dtype, device } = unsafe { read_tensor(tensor_ptr) }?;
    let used = if versioned { NAME_USED_VERSIONED } else { NAME_USED_LEGACY };
    // SAFETY: a static name; from now on the capsule's destructor leaves the tensor alone.
    if unsafe { ffi::PyCapsule_SetName(obj, used.as_ptr()) } != 0 {
        return Err(
            PyErr::take(capsule.py()).unwrap_or_else(|| PyBufferError::new_err("could not consume the capsule"))
        );
    }
    Ok(DLPackTensor {
        _owned: Owned(managed),
        data,
        ptr,
        shape,
        strides,
        dtype: (dtype.code, dtype.bits, dtype.lanes),
        device: (device.device_type, device.device_id),
        readonly,
        version,
    })
}
