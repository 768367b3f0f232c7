//! Kernel arguments from Python: the values of a prepared call (types declared once, see
//! `kernel_signature`), and the any-object packing of a plain call, where objects of PyCUDA's
//! `ArgumentHandler` protocol (`driver.In`/`Out`/`InOut`) stand for their device memory.
//!
//! Launch-bound programs spend most of a launch here, so the common arguments are read
//! directly: a GPUArray by its allocation and offset, a numpy scalar by a type lookup and its
//! value (not through the buffer protocol, which builds an array per scalar).

use numpy::{PyArrayDescrMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyTuple, PyType};

use super::array_storage::Storage;
use super::buffer::HostView;
use super::int_args::{int_in_range, out_of_range};
use super::kernel_signature::ParamKind;
use super::memory::DeviceAllocation;
use crate::runtime::KernelArgs;

static NUMPY_GENERIC: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn numpy_generic(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    NUMPY_GENERIC.import(py, "numpy", "generic")
}

/// numpy dtype characters of the scalars packed by value (`ParamKind::from_char`); the others
/// (bool, float16, long double, ...) pack through the buffer protocol.
const NUMERIC_SCALAR_CHARS: &str = "bBhHiIlLqQfdFD";

fn numeric_scalar_kind(c: char) -> Option<ParamKind> {
    ParamKind::from_char(c).filter(|_| NUMERIC_SCALAR_CHARS.contains(c))
}

/// numpy's own scalar types, by type object address (numpy's types live as long as the
/// process), each with the kind its value packs as (None: bool, float16 and long double,
/// which pack through the buffer protocol); built on first use, read without a lock.
struct NumpyScalars {
    types: Vec<(usize, Option<ParamKind>)>,
    /// Whether values may be read in place: numpy's scalar objects hold their value right
    /// after the object header (`PyArrayScalar_VAL` in numpy's C API). Checked once against
    /// the general path on a sample of each type; where it fails, every value takes that path.
    in_place: bool,
}

static NUMPY_SCALARS: PyOnceLock<NumpyScalars> = PyOnceLock::new();

fn numpy_scalars(py: Python<'_>) -> PyResult<&NumpyScalars> {
    NUMPY_SCALARS.get_or_try_init(py, || {
        let dtype = py.import("numpy")?.getattr("dtype")?;
        let mut table = NumpyScalars { types: Vec::new(), in_place: true };
        for c in NUMERIC_SCALAR_CHARS.chars().chain("?egG".chars()) {
            let ty = dtype.call1((c.to_string(),))?.getattr("type")?;
            let kind = numeric_scalar_kind(c);
            if let Some(kind) = kind {
                let sample = ty.call1((3,))?;
                let mut expected = KernelArgs::new();
                // SAFETY: `sample` is an instance of numpy's scalar type for `kind`.
                table.in_place &= pack_value(&mut expected, kind, &sample, 0).is_ok()
                    && expected.values().next() == Some(unsafe { value_in_place(&sample, kind) });
            }
            table.types.push((ty.as_ptr() as usize, kind));
        }
        Ok::<_, PyErr>(table)
    })
}

/// A numpy scalar's value bytes, read where numpy keeps them.
/// # Safety
/// `obj` is an instance of numpy's own scalar type for `kind` (a numeric kind): such an object
/// has at least an object header and the value, so the bytes read lie inside it (and are the
/// value where the layout is numpy's, which `NumpyScalars::in_place` checks).
unsafe fn value_in_place<'a>(obj: &'a Bound<'_, PyAny>, kind: ParamKind) -> &'a [u8] {
    let size = match kind {
        ParamKind::I8 | ParamKind::U8 => 1,
        ParamKind::I16 | ParamKind::U16 => 2,
        ParamKind::I32 | ParamKind::U32 | ParamKind::F32 => 4,
        ParamKind::C128 => 16,
        _ => 8,
    };
    // SAFETY: see the contract; the slice lives as long as the borrow of `obj`.
    unsafe {
        std::slice::from_raw_parts((obj.as_ptr() as *const u8).add(std::mem::size_of::<pyo3::ffi::PyObject>()), size)
    }
}

/// `Some(kind)` when `obj`'s type is exactly one of numpy's scalar types (the kind None for
/// bool, float16, long double); None for anything else, subclasses included.
pub(super) fn numpy_scalar_kind(obj: &Bound<'_, PyAny>) -> PyResult<Option<Option<ParamKind>>> {
    let key = obj.get_type_ptr() as usize;
    Ok(numpy_scalars(obj.py())?.types.iter().find(|(k, _)| *k == key).map(|(_, kind)| *kind))
}

/// The kind an instance of a subclass of a numpy scalar type packs as, by its dtype; None for
/// other objects and for kinds read through the buffer protocol.
fn numpy_subclass_kind(obj: &Bound<'_, PyAny>) -> PyResult<Option<ParamKind>> {
    let py = obj.py();
    if !obj.is_instance(numpy_generic(py)?)? {
        return Ok(None);
    }
    let c: String = obj.getattr(pyo3::intern!(py, "dtype"))?.getattr(pyo3::intern!(py, "char"))?.extract()?;
    let mut chars = c.chars();
    Ok(match (chars.next(), chars.next()) {
        (Some(c), None) => numeric_scalar_kind(c),
        _ => None,
    })
}

/// The device address of element 0 of a GPUArray (an `ArrayStorage`), read from its storage;
/// None for other objects. A freed allocation raises.
fn gpuarray_ptr(obj: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    Storage::of(obj).map(|storage| storage.device_pointer()).transpose()
}

/// Packs one argument of an unprepared call.
/// An object of PyCUDA's `ArgumentHandler` protocol (`driver.In`/`Out`/`InOut`, or a client's
/// own subclass) goes in as the address `get_device_alloc()` gives and is added to `handlers`,
/// whose `pre_call`/`post_call` the launch calls around it (`call_handlers`).
pub(super) fn pack_any<'py>(
    args: &mut KernelArgs,
    handlers: &mut Vec<Bound<'py, PyAny>>,
    obj: &Bound<'py, PyAny>,
    index: usize,
) -> PyResult<()> {
    let py = obj.py();
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        return Ok(args.push(a.get().live_ptr()?)?);
    }
    match numpy_scalar_kind(obj)? {
        Some(Some(kind)) => return pack_numpy_scalar(args, kind, kind, obj, index),
        Some(None) => return Ok(args.push_bytes(HostView::get(obj, false)?.bytes())?),
        None => {}
    }
    if let Some(ptr) = gpuarray_ptr(obj)? {
        return Ok(args.push(ptr)?);
    }
    if let Some(kind) = numpy_subclass_kind(obj)? {
        return pack_prepared(args, kind, obj, index);
    }
    if obj.is_instance(numpy_generic(py)?)? || by_value_ndarray(obj)? {
        return Ok(args.push_bytes(HostView::get(obj, false)?.bytes())?);
    }
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "argument {index} is a Python {}: a kernel needs a sized type, e.g. numpy.int32(x) or numpy.float64(x), \
             or declare the types once with prepare()",
            obj.get_type().name()?
        )));
    }
    if !obj.is_instance_of::<PyInt>() {
        if let Some(get) = obj.getattr_opt(pyo3::intern!(py, "get_device_alloc"))? {
            args.push(pointer_of(&get.call0()?, index)?)?;
            handlers.push(obj.clone());
            return Ok(());
        }
    }
    Ok(args.push(pointer_of(obj, index)?)?)
}

/// Calls `method` ("pre_call" or "post_call") with the launch's stream (None for the default
/// stream) on each handler that has it, in argument order, as PyCUDA does around a launch.
pub(super) fn call_handlers(
    handlers: &[Bound<'_, PyAny>],
    method: &Bound<'_, pyo3::types::PyString>,
    stream: &Bound<'_, PyAny>,
) -> PyResult<()> {
    for h in handlers {
        if let Some(call) = h.getattr_opt(method)? {
            call.call1((stream,))?;
        }
    }
    Ok(())
}

/// Whether `obj` is a host numpy array that a launch passes by value, as PyCUDA passes every
/// ndarray: a 0-d or one-element array (a scalar kept as an array) or a structured one (a
/// struct). A larger host array is refused by `pointer_of`, which names what to pass instead:
/// sending its bytes would hide a forgotten `to_gpu`.
pub(super) fn by_value_ndarray(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Ok(array) = obj.cast::<numpy::PyUntypedArray>() else { return Ok(false) };
    Ok(array.ndim() == 0 || array.len() == 1 || array.dtype().has_fields())
}

/// The device address an array-like or pointer-like argument stands for.
pub(super) fn pointer_of(obj: &Bound<'_, PyAny>, index: usize) -> PyResult<u64> {
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        return a.get().live_ptr();
    }
    // A plain int address (PyCUDA code passes `a.ptr` or `int(a.gpudata)`): taken as it is,
    // before the attribute lookups below, which cost microseconds on an int.
    if let Ok(address) = obj.cast::<PyInt>() {
        return address.extract::<u64>().map_err(|_| not_a_pointer(obj, index));
    }
    if let Some(ptr) = gpuarray_ptr(obj)? {
        return Ok(ptr);
    }
    // getattr_opt: a missing attribute is None, not a raised (and formatted) AttributeError;
    // an attribute that exists but fails (a freed allocation, Ctrl-C) is the cause to report.
    if let Some(ptr) = obj.getattr_opt(pyo3::intern!(obj.py(), "ptr"))? {
        if let Ok(p) = ptr.extract::<u64>() {
            return Ok(p);
        }
    }
    // PyCUDA takes any object with a gpudata attribute (an allocation or an address) as its array.
    if let Some(gpudata) = obj.getattr_opt(pyo3::intern!(obj.py(), "gpudata"))? {
        if let Ok(a) = gpudata.cast::<DeviceAllocation>() {
            return a.get().live_ptr();
        }
        match gpudata.call_method0(pyo3::intern!(obj.py(), "__int__")).and_then(|v| v.extract::<u64>()) {
            Ok(p) => return Ok(p),
            // No __int__ is "not an address" too; Ctrl-C or the user's own error is reported.
            Err(e)
                if super::errors::must_propagate(obj.py(), &e)
                    && !e.is_instance_of::<pyo3::exceptions::PyAttributeError>(obj.py()) =>
            {
                return Err(e)
            }
            Err(_) => {}
        }
    }
    if let Some(cai) = obj.getattr_opt(pyo3::intern!(obj.py(), "__cuda_array_interface__"))? {
        let data = cai.get_item("data")?;
        return data.get_item(0)?.extract::<u64>();
    }
    if let Some(ptr) = super::managed::managed_array_pointer(obj)? {
        return Ok(ptr);
    }
    obj.extract::<u64>().map_err(|_| not_a_pointer(obj, index))
}

fn not_a_pointer(obj: &Bound<'_, PyAny>, index: usize) -> PyErr {
    if let Ok(array) = obj.cast::<numpy::PyUntypedArray>() {
        let shape = pyo3::types::PyTuple::new(obj.py(), array.shape()).map(|t| t.to_string()).unwrap_or_default();
        return PyTypeError::new_err(format!(
            "argument {index} is a host numpy array of shape {shape}, not a device pointer: a kernel reads device \
             memory, so copy it there first (gpuarray.to_gpu(a)) or pass driver.In(a), driver.Out(a) or \
             driver.InOut(a)"
        ));
    }
    PyTypeError::new_err(format!(
        "argument {index} ({}) is not a device pointer, an array with __cuda_array_interface__, or a numpy scalar",
        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
    ))
}

/// The address of an allocation or array (anything but a number), None for other objects.
fn device_object_pointer(obj: &Bound<'_, PyAny>, index: usize) -> Option<PyResult<u64>> {
    let py = obj.py();
    let is_array = obj.cast::<DeviceAllocation>().is_ok()
        || obj.hasattr(pyo3::intern!(py, "ptr")).unwrap_or(false)
        || obj.hasattr(pyo3::intern!(py, "__cuda_array_interface__")).unwrap_or(false);
    is_array.then(|| pointer_of(obj, index))
}

pub(super) fn pack_prepared(
    args: &mut KernelArgs,
    kind: ParamKind,
    obj: &Bound<'_, PyAny>,
    index: usize,
) -> PyResult<()> {
    // A numpy scalar of the parameter's own type (or a 64-bit integer for a pointer) is read
    // in place: extracting it goes through __index__ or __complex__, which builds an object.
    // Python's own numbers (the common case) skip the lookup.
    let python_number = obj.is_exact_instance_of::<PyInt>() || obj.is_exact_instance_of::<PyFloat>();
    if !python_number {
        if let Some(Some(own)) = numpy_scalar_kind(obj)? {
            return pack_numpy_scalar(args, own, kind, obj, index);
        }
    }
    pack_value(args, kind, obj, index)
}

/// Packs `obj`, an instance of numpy's own scalar type for `own`, as a `kind` parameter: in
/// place where `own` is `kind` (or a 64-bit integer for a pointer), else converted.
pub(super) fn pack_numpy_scalar(
    args: &mut KernelArgs,
    own: ParamKind,
    kind: ParamKind,
    obj: &Bound<'_, PyAny>,
    index: usize,
) -> PyResult<()> {
    let fits = own == kind || (kind == ParamKind::Pointer && matches!(own, ParamKind::I64 | ParamKind::U64));
    if fits && numpy_scalars(obj.py())?.in_place {
        // SAFETY: obj's type is numpy's scalar type for `own`.
        return Ok(args.push_bytes(unsafe { value_in_place(obj, own) })?);
    }
    pack_value(args, kind, obj, index)
}

/// Packs `obj` as a `kind` parameter by converting it (Python numbers, numpy scalars of other
/// types, arrays and allocations for pointers).
fn pack_value(args: &mut KernelArgs, kind: ParamKind, obj: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
    let what = || format!("argument {index}");
    let r = match kind {
        ParamKind::Pointer => args.push(pointer_of(obj, index)?),
        ParamKind::I8 => args.push(int_in_range::<i8>(obj, what)?),
        // "?" (bool) is a byte too: numpy.bool_ has no __index__.
        ParamKind::U8 => match obj.extract::<u8>() {
            Ok(v) => args.push(v),
            Err(e) => args.push(u8::from(obj.extract::<bool>().map_err(|_| out_of_range::<u8>(obj, e, what))?)),
        },
        ParamKind::I16 => args.push(int_in_range::<i16>(obj, what)?),
        ParamKind::U16 => args.push(int_in_range::<u16>(obj, what)?),
        ParamKind::I32 => args.push(int_in_range::<i32>(obj, what)?),
        ParamKind::U32 => args.push(int_in_range::<u32>(obj, what)?),
        // np.intp is int64's type on LP64 platforms, so a prepared 64-bit integer may be a pointer
        // parameter (PyCUDA's idiom): take an array or allocation there by its address.
        ParamKind::I64 => match obj.extract::<i64>() {
            Ok(v) => args.push(v),
            Err(e) => {
                args.push(device_object_pointer(obj, index).ok_or_else(|| out_of_range::<i64>(obj, e, what))?? as i64)
            }
        },
        ParamKind::U64 => match obj.extract::<u64>() {
            Ok(v) => args.push(v),
            Err(e) => args.push(device_object_pointer(obj, index).ok_or_else(|| out_of_range::<u64>(obj, e, what))??),
        },
        ParamKind::F32 => args.push(obj.extract::<f64>()? as f32),
        ParamKind::F64 => args.push(obj.extract::<f64>()?),
        ParamKind::C64 => {
            let c = obj.extract::<num_complex::Complex64>()?;
            args.push(num_complex::Complex32::new(c.re as f32, c.im as f32))
        }
        ParamKind::C128 => args.push(obj.extract::<num_complex::Complex64>()?),
        ParamKind::Struct { size, .. } => {
            return pack_struct(args, size, obj, &|| format!("argument {index} was prepared as a"))
        }
    };
    Ok(r?)
}

/// A by-value struct argument: its bytes (a numpy structured scalar, a 0-d record array,
/// bytes, any C-contiguous buffer) must be exactly `size`. `subject` begins the messages
/// ("argument 2 was prepared as a", "f(): argument 2 for parameter 'p' (pair p) takes a"),
/// written only when one is needed.
pub(super) fn pack_struct(
    args: &mut KernelArgs,
    size: usize,
    obj: &Bound<'_, PyAny>,
    subject: &dyn Fn() -> String,
) -> PyResult<()> {
    let type_name = || obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    let wrong_size = |got: usize| {
        PyValueError::new_err(format!(
            "{} {size}-byte struct but a {} of {got} bytes was given: pass a numpy scalar of the struct's dtype",
            subject(),
            type_name()
        ))
    };
    if let Ok(b) = obj.cast::<PyBytes>() {
        let bytes = b.as_bytes();
        if bytes.len() != size {
            return Err(wrong_size(bytes.len()));
        }
        return Ok(args.push_bytes(bytes)?);
    }
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "{} {size}-byte struct, not a number: pass a numpy scalar of the struct's dtype (e.g. \
             pygpu.gpuarray.vec.make_float3(x, y, z))",
            subject()
        )));
    }
    let view = HostView::get(obj, false).map_err(|_| {
        PyTypeError::new_err(format!(
            "{} {size}-byte struct: pass a numpy scalar of the struct's dtype, not a {}",
            subject(),
            type_name()
        ))
    })?;
    if view.len() != size {
        return Err(wrong_size(view.len()));
    }
    Ok(args.push_bytes(view.bytes())?)
}

/// (x, y, z) from an int or a tuple of 1 to 3 positive ints; missing entries are 1.
pub(super) fn dims(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<[u32; 3]> {
    let bad = || {
        PyValueError::new_err(format!("{what} must be a positive int or a tuple of 1 to 3 positive ints, not {obj}"))
    };
    let positive = |v: i64| u32::try_from(v).ok().filter(|v| *v > 0).ok_or_else(bad);
    let mut out = [1u32; 3];
    // Tuples first, item by item: trying them as an int would raise (and build) a
    // TypeError on every launch.
    if let Ok(t) = obj.cast::<PyTuple>() {
        if t.is_empty() || t.len() > 3 {
            return Err(bad());
        }
        for (slot, item) in out.iter_mut().zip(t.iter_borrowed()) {
            *slot = positive(item.extract::<i64>().map_err(|_| bad())?)?;
        }
        return Ok(out);
    }
    let values: Vec<i64> =
        if let Ok(n) = obj.extract::<i64>() { vec![n] } else { obj.extract::<Vec<i64>>().map_err(|_| bad())? };
    if values.is_empty() || values.len() > 3 {
        return Err(bad());
    }
    for (slot, v) in out.iter_mut().zip(values) {
        *slot = positive(v)?;
    }
    Ok(out)
}
