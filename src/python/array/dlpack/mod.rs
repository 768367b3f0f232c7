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

/// Drops the owner reference from a deleter, which a consumer may call from any state of the
/// calling thread. CPython's own `PyGILState_Ensure` decides whether this thread holds the GIL,
/// not PyO3's count of its frames: a consumer can release the GIL or switch thread states below
/// one of our frames (PyTorch does, when dropping our import of a tensor it made from our export
/// frees its Python object first), and a decref made while PyO3 believed the thread attached left
/// the owner, and its device memory, alive for good. During interpreter shutdown the reference
/// is leaked, which is always safe.
fn release_owner(owner: Option<Py<PyAny>>) {
    let Some(owner) = owner else { return };
    // SAFETY: Py_IsInitialized may be called in any state. PyGILState_Ensure makes this thread
    // hold the GIL with a valid thread state (taking it if another thread state or none held
    // it), so the decref, and any deallocation it runs, is made as the C API requires; Release
    // restores the state Ensure found. `into_ptr` hands over our strong reference, released once.
    unsafe {
        if ffi::Py_IsInitialized() == 0 {
            std::mem::forget(owner);
            return;
        }
        let state = ffi::PyGILState_Ensure();
        ffi::Py_DecRef(owner.into_ptr());
        ffi::PyGILState_Release(state);
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

/// The Python owner inside a managed tensor that this module exported (None for another
/// producer's tensor, whose manager context is opaque), for the garbage collector's traversal.
///
/// # Safety
/// `managed` is a live managed tensor, owned by the caller (not yet deleted).
unsafe fn exported_owner<M: ManagedTensor>(managed: *mut M) -> Option<&'static Py<PyAny>> {
    // SAFETY: per the contract; the deleter tells whether the context is our Exported box.
    unsafe {
        let ours = (*managed)
            .deleter()
            .is_some_and(|d| std::ptr::fn_addr_eq(d, delete_exported::<M> as unsafe extern "C" fn(*mut M)));
        if !ours {
            return None;
        }
        let ctx = *(*managed).manager_ctx() as *const Exported<M>;
        (*ctx).owner.as_ref()
    }
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

mod import;

pub use import::{dlpack_from_capsule, DLPackTensor};
