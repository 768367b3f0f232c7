//! `ArrayStorage`: what a `pygpu.gpuarray.GPUArray` is made of in memory (the allocation it
//! keeps alive, the byte offset of element 0 in it, its shape, strides and dtype), as the
//! compiled base class that `GPUArray` subclasses. A kernel launch or a copy given an array
//! reads these fields directly: no look-up of the Python class, no Python attribute reads.
//!
//! The type is registered once, from a `PyType_Spec`, with its fields as plain object members
//! (`Py_T_OBJECT_EX`): Python reads and writes them as fast as `__slots__` (the interpreter's
//! attribute caches know member descriptors; a getter function would cost a call on every
//! `a.shape` of every operation), and a subclass sets them as PyCUDA's subclasses do, after
//! `GPUArray.__init__` or instead of it. Everything else a GPUArray holds (size, allocator,
//! base, stream order, ...) lives in the Python class.

use std::ffi::{c_int, c_void, CStr};
use std::mem::{offset_of, size_of};
use std::ptr;

use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyModule, PyType};

use super::memory::DeviceAllocation;
use crate::runtime::{DevicePtr, Error};

/// The fields, in the order of `RawStorage::fields`: (Python name, docstring).
const FIELDS: [(&CStr, &CStr); 5] = [
    (
        c"_alloc",
        c"What keeps the memory alive: a DeviceAllocation, a DevicePointer or an imported tensor (``gpudata`` gives PyCUDA's view of it).",
    ),
    (c"_offset", c"Bytes from the start of ``_alloc`` to element 0, an int."),
    (c"shape", c"The dimensions, a tuple of ints."),
    (c"strides", c"Bytes from one element to the next along each axis, as numpy's (may be negative)."),
    (c"dtype", c"The numpy dtype of the elements."),
];
const ALLOC: usize = 0;
const OFFSET: usize = 1;
const SHAPE: usize = 2;
const STRIDES: usize = 3;
const DTYPE: usize = 4;

const DOC: &CStr = c"The memory and layout of a GPUArray: ``_alloc`` (what keeps the memory alive: an allocation, a \
``DevicePointer`` or an imported tensor), ``_offset`` (bytes from its start to element 0), ``shape``, ``strides`` \
(bytes, may be negative or zero) and ``dtype``. ``GPUArray`` subclasses it; kernel launches and copies read an \
array's memory from these fields.";

/// An instance's memory: the object header, then one strong reference (or NULL: never set, or
/// deleted) per field. A Python subclass's own slots and dict follow, laid out by CPython.
#[repr(C)]
struct RawStorage {
    header: ffi::PyObject,
    fields: [*mut ffi::PyObject; FIELDS.len()],
}

static STORAGE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Drops every field's reference (the collector's `tp_clear`, and the last step of dealloc).
unsafe extern "C" fn clear(obj: *mut ffi::PyObject) -> c_int {
    // SAFETY: CPython calls this with an instance of the type (or of a subclass), whose memory
    // starts with RawStorage; each field is NULL or a strong reference, set to NULL before it is
    // released, so that code the release runs never sees a dangling field.
    unsafe {
        let raw = obj.cast::<RawStorage>();
        for i in 0..FIELDS.len() {
            let field = (*raw).fields[i];
            if !field.is_null() {
                (*raw).fields[i] = ptr::null_mut();
                ffi::Py_DECREF(field);
            }
        }
    }
    0
}

unsafe extern "C" fn traverse(obj: *mut ffi::PyObject, visit: ffi::visitproc, arg: *mut c_void) -> c_int {
    // SAFETY: as in `clear`; `visit` and `arg` are the collector's, called on live references.
    // An instance references its (heap) type, which the collector must see too.
    unsafe {
        let raw = obj.cast::<RawStorage>();
        for field in (*raw).fields {
            if !field.is_null() {
                let found = visit(field, arg);
                if found != 0 {
                    return found;
                }
            }
        }
        visit(ffi::Py_TYPE(obj).cast(), arg)
    }
}

unsafe extern "C" fn dealloc(obj: *mut ffi::PyObject) {
    // SAFETY: CPython calls this once, when the last reference is gone (after a subclass's own
    // slots were cleared by its dealloc). The instance stops being tracked before its fields
    // go, is freed by its type's tp_free, and gives back the reference every instance of a heap
    // type holds to it. PyType_GetSlot returns the type's tp_free, a `freefunc`.
    unsafe {
        let ty = ffi::Py_TYPE(obj);
        ffi::PyObject_GC_UnTrack(obj.cast());
        clear(obj);
        let free: ffi::freefunc = std::mem::transmute(ffi::PyType_GetSlot(ty, ffi::Py_tp_free));
        free(obj.cast());
        ffi::Py_DECREF(ty.cast());
    }
}

/// Creates the type and adds it to the module as `ArrayStorage` (once, at module init).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let mut members: Vec<ffi::PyMemberDef> = FIELDS
        .iter()
        .enumerate()
        .map(|(i, (name, doc))| ffi::PyMemberDef {
            name: name.as_ptr(),
            type_code: ffi::Py_T_OBJECT_EX,
            offset: (offset_of!(RawStorage, fields) + i * size_of::<*mut ffi::PyObject>()) as ffi::Py_ssize_t,
            flags: 0,
            doc: doc.as_ptr(),
        })
        .collect();
    members.push(ffi::PyMemberDef::default());
    let dealloc_fn: ffi::destructor = dealloc;
    let traverse_fn: ffi::traverseproc = traverse;
    let clear_fn: ffi::inquiry = clear;
    let new_fn: ffi::newfunc = ffi::PyType_GenericNew;
    let free_fn: ffi::freefunc = ffi::PyObject_GC_Del;
    let mut slots = [
        ffi::PyType_Slot { slot: ffi::Py_tp_doc, pfunc: DOC.as_ptr() as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_members, pfunc: members.as_mut_ptr().cast() },
        ffi::PyType_Slot { slot: ffi::Py_tp_new, pfunc: new_fn as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_dealloc, pfunc: dealloc_fn as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_traverse, pfunc: traverse_fn as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_clear, pfunc: clear_fn as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_free, pfunc: free_fn as *mut c_void },
        ffi::PyType_Slot::default(),
    ];
    let mut spec = ffi::PyType_Spec {
        name: c"pygpu.ArrayStorage".as_ptr(),
        basicsize: size_of::<RawStorage>() as c_int,
        itemsize: 0,
        flags: (ffi::Py_TPFLAGS_DEFAULT
            | ffi::Py_TPFLAGS_BASETYPE
            | ffi::Py_TPFLAGS_HAVE_GC
            | ffi::Py_TPFLAGS_IMMUTABLETYPE) as _,
        slots: slots.as_mut_ptr(),
    };
    // SAFETY: the spec, its slots and members are valid for the call, which copies the slots,
    // the members and the doc into the new type; the name and the members' names and docs are
    // 'static C strings it keeps pointing to. A new reference or NULL with an error set.
    let ty = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpec(&mut spec))? };
    let ty = ty.cast_into::<PyType>()?;
    m.add("ArrayStorage", &ty)?;
    // Another interpreter's or a repeated init: the first registered type stays the one checked.
    let _ = STORAGE_TYPE.set(py, ty.unbind());
    Ok(())
}

/// A borrowed view of an `ArrayStorage` instance's fields (a GPUArray).
pub struct Storage<'a, 'py> {
    obj: &'a Bound<'py, PyAny>,
}

impl<'a, 'py> Storage<'a, 'py> {
    /// `obj` as a storage, where it is an instance of `ArrayStorage` (a GPUArray); None otherwise.
    pub fn of(obj: &'a Bound<'py, PyAny>) -> Option<Self> {
        let ty = STORAGE_TYPE.get(obj.py())?;
        // SAFETY: both are live objects; the check reads their types only.
        let is_storage = unsafe { ffi::PyObject_TypeCheck(obj.as_ptr(), ty.as_ptr().cast()) } != 0;
        is_storage.then_some(Self { obj })
    }

    /// A field's value (a new reference, so that Python code run later cannot free it under
    /// us), None where it was never set.
    fn field(&self, index: usize) -> Option<Bound<'py, PyAny>> {
        // SAFETY: `of` checked that the object is an instance of the type, whose memory starts
        // with RawStorage; the GIL is held, and the field is NULL or a live strong reference.
        unsafe {
            let value = (*self.obj.as_ptr().cast::<RawStorage>()).fields[index];
            Bound::from_borrowed_ptr_or_opt(self.obj.py(), value)
        }
    }

    /// The device address of element 0. A freed allocation raises, as its `ptr` does.
    pub fn device_pointer(&self) -> PyResult<DevicePtr> {
        let alloc = self.field(ALLOC).ok_or_else(no_memory)?;
        let base = match alloc.cast::<DeviceAllocation>() {
            Ok(a) => a.get().live_ptr()?,
            // A DevicePointer or an imported tensor: its address, re-read each time.
            Err(_) => alloc.extract::<DevicePtr>()?,
        };
        let offset: i64 = self.field(OFFSET).ok_or_else(no_memory)?.extract()?;
        base.checked_add_signed(offset).ok_or_else(|| {
            PyValueError::new_err(format!(
                "element 0 of this array (offset {offset} from address {base:#x}) lies outside the address space"
            ))
        })
    }

    /// The dtype, where one is set (and is a numpy dtype).
    pub fn dtype(&self) -> Option<Bound<'py, PyArrayDescr>> {
        self.field(DTYPE)?.cast_into::<PyArrayDescr>().ok()
    }

    /// (address of element 0, bytes of the elements) of a C- or Fortran-contiguous array: the one
    /// span of device memory a copy call takes. A strided array raises, naming what to pass.
    pub fn contiguous_span(&self) -> PyResult<(DevicePtr, usize)> {
        let layout = |index: usize, what: &str| -> PyResult<Vec<isize>> {
            self.field(index).ok_or_else(no_memory)?.extract().map_err(|_| bad_layout(what))
        };
        let shape = layout(SHAPE, "shape")?;
        let strides = layout(STRIDES, "strides")?;
        let itemsize = self.dtype().ok_or_else(no_memory)?.itemsize();
        if shape.len() != strides.len() || shape.iter().any(|&d| d < 0) {
            return Err(bad_layout("shape and strides"));
        }
        let size =
            shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d as usize)).ok_or_else(|| bad_layout("shape"))?;
        let axes = || shape.iter().zip(&strides);
        if size != 0 && !(dense(axes().rev(), itemsize) || dense(axes(), itemsize)) {
            return Err(Error::InvalidArgument(
                "a non-contiguous GPUArray is not one span of device memory: pass a contiguous one \
                 (a.copy()) or use its methods (get, set)"
                    .to_string(),
            )
            .into());
        }
        let bytes = size.checked_mul(itemsize).ok_or_else(|| bad_layout("shape"))?;
        Ok((self.device_pointer()?, bytes))
    }
}

/// Whether axes given innermost first step through memory as one dense run of `itemsize`-byte
/// elements (axes of length 1 step anywhere, as numpy's contiguity flags have it).
fn dense<'a>(axes: impl Iterator<Item = (&'a isize, &'a isize)>, itemsize: usize) -> bool {
    let mut expected = itemsize as isize;
    for (&d, &s) in axes {
        if d != 1 {
            if s != expected {
                return false;
            }
            expected = expected.saturating_mul(d);
        }
    }
    true
}

fn no_memory() -> PyErr {
    PyValueError::new_err(
        "this GPUArray has no memory: a subclass's __init__ must call GPUArray.__init__(self, shape, dtype, ...) \
         first",
    )
}

fn bad_layout(what: &str) -> PyErr {
    PyValueError::new_err(format!("this GPUArray's {what} is not a tuple of ints matching its dimensions"))
}
