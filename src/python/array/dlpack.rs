//! DLPack capsules, written over the C ABI of `dlpack.h` (legacy `DLManagedTensor` and
//! `DLManagedTensorVersioned` 1.x). Export wraps any memory owned by a Python object;
//! import consumes a capsule (renaming it as the protocol says) into a `DLPackTensor`
//! that calls the producer's deleter when the last reference goes. Deleters and capsule
//! destructors never panic and never raise.

use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

pub const FLAG_READ_ONLY: u64 = 1 << 0;
pub const FLAG_IS_COPIED: u64 = 1 << 1;

const NAME_LEGACY: &CStr = c"dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";
const NAME_USED_LEGACY: &CStr = c"used_dltensor";
const NAME_USED_VERSIONED: &CStr = c"used_dltensor_versioned";

/// The DLPack version this module writes.
pub const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

// ---------------------------------------------------------------------------------------
// Export

/// What an exported managed tensor owns. `managed` comes first so that a pointer to the
/// box is a pointer to the managed tensor; shape/strides buffers never move once boxed.
#[repr(C)]
struct Exported<M> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    owner: Option<Py<PyAny>>,
}

/// Drops the owner reference: attached to Python when possible, otherwise pyo3 defers
/// the decref (or, during interpreter shutdown, leaks it), which is always safe.
fn release_owner(owner: Option<Py<PyAny>>) {
    if let Some(owner) = owner {
        let mut slot = Some(owner);
        if Python::try_attach(|_py| drop(slot.take())).is_none() {
            if let Some(owner) = slot.take() {
                // Not attachable (shutdown or GC traversal): let pyo3 defer or leak it.
                std::mem::forget(owner);
            }
        }
    }
}

/// The two managed-tensor layouts (legacy and versioned), so that one deleter, one
/// capsule destructor and one export path serve both.
trait ManagedTensor: Sized {
    /// The capsule name a producer gives it.
    const NAME: &'static CStr;
    /// A managed tensor describing `tensor`, whose deleter is `delete_exported::<Self>`.
    fn new(tensor: DLTensor, flags: u64) -> Self;
    fn dl_tensor(&mut self) -> &mut DLTensor;
    fn manager_ctx(&mut self) -> &mut *mut c_void;
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)>;
}

impl ManagedTensor for DLManagedTensor {
    const NAME: &'static CStr = NAME_LEGACY;
    fn new(tensor: DLTensor, _flags: u64) -> Self {
        DLManagedTensor { dl_tensor: tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_exported::<Self>) }
    }
    fn dl_tensor(&mut self) -> &mut DLTensor {
        &mut self.dl_tensor
    }
    fn manager_ctx(&mut self) -> &mut *mut c_void {
        &mut self.manager_ctx
    }
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
}

impl ManagedTensor for DLManagedTensorVersioned {
    const NAME: &'static CStr = NAME_VERSIONED;
    fn new(tensor: DLTensor, flags: u64) -> Self {
        DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_exported::<Self>),
            flags,
            dl_tensor: tensor,
        }
    }
    fn dl_tensor(&mut self) -> &mut DLTensor {
        &mut self.dl_tensor
    }
    fn manager_ctx(&mut self) -> &mut *mut c_void {
        &mut self.manager_ctx
    }
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
}

/// The deleter of a tensor we exported: drops the box that owns shape, strides and owner.
unsafe extern "C" fn delete_exported<M: ManagedTensor>(managed: *mut M) {
    if managed.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: manager_ctx is the Box<Exported<M>> leaked by export, and the protocol
        // calls the deleter exactly once.
        let ctx = unsafe { Box::from_raw(*(*managed).manager_ctx() as *mut Exported<M>) };
        let Exported { owner, .. } = *ctx;
        release_owner(owner);
    }));
}

/// The destructor of a capsule we produced: frees the tensor unless a consumer took it
/// (and renamed the capsule).
unsafe extern "C" fn capsule_destructor<M: ManagedTensor>(capsule: *mut ffi::PyObject) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called by Python with the GIL held on a live capsule; IsValid never
        // raises, and GetPointer with the matching name cannot fail.
        unsafe {
            if ffi::PyCapsule_IsValid(capsule, M::NAME.as_ptr()) == 1 {
                let managed = ffi::PyCapsule_GetPointer(capsule, M::NAME.as_ptr()) as *mut M;
                if !managed.is_null() {
                    if let Some(deleter) = (*managed).deleter() {
                        with_saved_error(|| deleter(managed));
                    }
                }
            }
        }
    }));
}

/// Boxes the tensor with what it borrows and wraps it in a capsule (NULL with a Python
/// error set if the capsule could not be made).
fn export<M: ManagedTensor>(
    ptr: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
    dtype: DLDataType,
    device: DLDevice,
    flags: u64,
    owner: Py<PyAny>,
) -> *mut ffi::PyObject {
    let empty = DLTensor {
        data: std::ptr::null_mut(),
        device,
        ndim: 0,
        dtype,
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let mut boxed = Box::new(Exported { managed: M::new(empty, flags), shape, strides, owner: Some(owner) });
    // The shape/strides buffers are boxed now and never move: point the tensor at them.
    let Exported { managed, shape, strides, .. } = &mut *boxed;
    *managed.dl_tensor() = tensor(ptr, shape, strides, dtype, device);
    let raw = Box::into_raw(boxed);
    // SAFETY: raw is a live box; it is its own manager context. The capsule takes it; its
    // destructor (or the consumer, after renaming) calls the deleter, which reclaims the
    // box exactly once.
    unsafe { *(*raw).managed.manager_ctx() = raw as *mut c_void };
    // SAFETY: the name is static; the destructor matches the name.
    let capsule = unsafe { ffi::PyCapsule_New(raw as *mut c_void, M::NAME.as_ptr(), Some(capsule_destructor::<M>)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not created, so nobody else owns raw. `Exported` is
        // repr(C) with the managed tensor first, so raw is also a pointer to it.
        unsafe { delete_exported::<M>(raw as *mut M) };
    }
    capsule
}

/// Runs `f` with any pending Python exception set aside (a destructor may run while one
/// is being raised, and the owner's finaliser must not clobber it).
fn with_saved_error(f: impl FnOnce()) {
    let (mut t, mut v, mut tb) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the GIL is held (capsule destructors run under it); Fetch/Restore are paired.
    unsafe { ffi::PyErr_Fetch(&mut t, &mut v, &mut tb) };
    f();
    // SAFETY: restores exactly what was fetched (possibly nothing).
    unsafe { ffi::PyErr_Restore(t, v, tb) };
}

fn tensor(ptr: u64, shape: &mut [i64], strides: &mut [i64], dtype: DLDataType, device: DLDevice) -> DLTensor {
    DLTensor {
        data: ptr as usize as *mut c_void,
        device,
        ndim: shape.len() as i32,
        dtype,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

/// A DLPack capsule for memory at `ptr` kept alive by `owner`. `strides` are in elements.
/// `versioned` gives a "dltensor_versioned" (1.x) capsule, otherwise a legacy "dltensor".
#[pyfunction]
#[pyo3(signature = (owner, ptr, shape, strides, dtype_code, dtype_bits, device_type, device_id, versioned, readonly = false, copied = false))]
#[allow(clippy::too_many_arguments)]
pub fn dlpack_capsule(
    py: Python<'_>,
    owner: Py<PyAny>,
    ptr: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
    dtype_code: u8,
    dtype_bits: u8,
    device_type: i32,
    device_id: i32,
    versioned: bool,
    readonly: bool,
    copied: bool,
) -> PyResult<Py<PyAny>> {
    if shape.len() != strides.len() {
        return Err(PyValueError::new_err("shape and strides must have the same length"));
    }
    if shape.len() > i32::MAX as usize || shape.iter().any(|&d| d < 0) {
        return Err(PyValueError::new_err("shape entries must be non-negative"));
    }
    if !versioned && readonly {
        return Err(PyBufferError::new_err(
            "cannot export a read-only array as a legacy DLPack capsule, which cannot say it is read-only; \
             ask for max_version=(1, 0) or newer",
        ));
    }
    let dtype = DLDataType { code: dtype_code, bits: dtype_bits, lanes: 1 };
    let device = DLDevice { device_type, device_id };
    let capsule = if versioned {
        let flags = if readonly { FLAG_READ_ONLY } else { 0 } | if copied { FLAG_IS_COPIED } else { 0 };
        export::<DLManagedTensorVersioned>(ptr, shape, strides, dtype, device, flags, owner)
    } else {
        export::<DLManagedTensor>(ptr, shape, strides, dtype, device, 0, owner)
    };
    // SAFETY: a new reference, or NULL with the Python error set.
    Ok(unsafe { Bound::from_owned_ptr_or_err(py, capsule) }?.unbind())
}

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

/// A tensor taken from a DLPack capsule. It owns the producer's memory reference: keep it
/// alive as long as the memory is used. `int(t)` is the address of element 0.
#[pyclass(module = "pygpu", frozen)]
pub struct DLPackTensor {
    _owned: Owned,
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
    /// Address of element 0 (data + byte_offset).
    #[getter]
    fn ptr(&self) -> u64 {
        self.ptr
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
        return Err(PyBufferError::new_err(format!("DLPack tensor has a negative extent ({d})")));
    }
    let overflow = || PyBufferError::new_err("DLPack tensor strides overflow");
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
    let ptr = (t.data as usize as u64)
        .checked_add(t.byte_offset)
        .ok_or_else(|| PyBufferError::new_err("DLPack tensor's data + byte_offset overflows"))?;
    Ok(TensorView { ptr, shape, strides, dtype, device: t.device })
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
    let TensorView { ptr, shape, strides, dtype, device } = unsafe { read_tensor(tensor_ptr) }?;
    let used = if versioned { NAME_USED_VERSIONED } else { NAME_USED_LEGACY };
    // SAFETY: a static name; from now on the capsule's destructor leaves the tensor alone.
    if unsafe { ffi::PyCapsule_SetName(obj, used.as_ptr()) } != 0 {
        return Err(
            PyErr::take(capsule.py()).unwrap_or_else(|| PyBufferError::new_err("could not consume the capsule"))
        );
    }
    Ok(DLPackTensor {
        _owned: Owned(managed),
        ptr,
        shape,
        strides,
        dtype: (dtype.code, dtype.bits, dtype.lanes),
        device: (device.device_type, device.device_id),
        readonly,
        version,
    })
}
