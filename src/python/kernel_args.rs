//! Kernel arguments from Python: PyCUDA's prepared-call type strings (`ParamKind`), and
//! the any-object packing of a plain call, where `In`/`Out`/`InOut` (`ArgumentHandler`)
//! stage host arrays through device memory.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple, PyType};

use super::buffer::HostView;
use super::memory::DeviceAllocation;
use crate::runtime::memory::DeviceBuffer;
use crate::runtime::{backend, KernelArgs, StreamHandle};

/// A parameter type of a prepared function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ParamKind {
    Pointer,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    C64,
    C128,
}

impl ParamKind {
    /// struct-module characters, as PyCUDA's prepare() takes them.
    fn from_char(c: char) -> Option<Self> {
        Some(match c {
            'P' => ParamKind::Pointer,
            'b' => ParamKind::I8,
            'B' | '?' => ParamKind::U8,
            'h' => ParamKind::I16,
            'H' => ParamKind::U16,
            'i' => ParamKind::I32,
            'I' => ParamKind::U32,
            'l' | 'q' => ParamKind::I64,
            'L' | 'Q' => ParamKind::U64,
            'f' => ParamKind::F32,
            'd' => ParamKind::F64,
            'F' => ParamKind::C64,
            'D' => ParamKind::C128,
            _ => return None,
        })
    }

    /// numpy dtype characters (np.dtype(x).char); np.intp stands for a pointer, as in PyCUDA.
    fn from_dtype_char(c: char) -> Option<Self> {
        match c {
            'p' => Some(ParamKind::Pointer),
            'l' | 'q' => Some(ParamKind::I64),
            'L' | 'Q' => Some(ParamKind::U64),
            _ => Self::from_char(c),
        }
    }
}

pub(super) fn parse_signature(arg_types: &Bound<'_, PyAny>) -> PyResult<Vec<ParamKind>> {
    let bad = |what: String| {
        PyValueError::new_err(format!("prepare(): {what}; use struct characters such as \"PiPd\" or numpy types"))
    };
    if let Ok(s) = arg_types.cast::<PyString>() {
        return s
            .to_str()?
            .chars()
            .map(|c| ParamKind::from_char(c).ok_or_else(|| bad(format!("unknown type character {c:?}"))))
            .collect();
    }
    let numpy = arg_types.py().import("numpy")?;
    let mut kinds = Vec::new();
    for item in arg_types.try_iter()? {
        let item = item?;
        if let Ok(s) = item.cast::<PyString>() {
            let s = s.to_str()?;
            let mut chars = s.chars();
            match (chars.next().and_then(ParamKind::from_char), chars.next()) {
                (Some(k), None) => kinds.push(k),
                _ => return Err(bad(format!("unknown type {s:?}"))),
            }
            continue;
        }
        let dtype = numpy.call_method1("dtype", (&item,)).map_err(|_| bad(format!("{item} is not a type")))?;
        let c: String = dtype.getattr("char")?.extract()?;
        let kind = c
            .chars()
            .next()
            .and_then(ParamKind::from_dtype_char)
            .ok_or_else(|| bad(format!("unsupported type {item}")))?;
        kinds.push(kind);
    }
    Ok(kinds)
}

static NUMPY_GENERIC: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn numpy_generic(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    NUMPY_GENERIC.import(py, "numpy", "generic")
}

/// Host arrays staged through device memory for one launch (PyCUDA's In/Out/InOut).
#[pyclass(module = "pygpu", frozen, subclass)]
pub struct ArgumentHandler {
    #[pyo3(get)]
    array: Py<PyAny>,
    copy_in: bool,
    copy_out: bool,
}

#[pymethods]
impl ArgumentHandler {
    #[getter]
    fn direction(&self) -> &'static str {
        match (self.copy_in, self.copy_out) {
            (true, false) => "in",
            (false, true) => "out",
            _ => "inout",
        }
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let shape =
            slf.get().array.bind(slf.py()).getattr("shape").map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
        Ok(format!("{}(array of shape {shape})", slf.get_type().name()?))
    }

    /// direction: "in", "out" or "inout".
    #[new]
    fn new(array: &Bound<'_, PyAny>, direction: &str) -> PyResult<Self> {
        let (copy_in, copy_out) = match direction {
            "in" => (true, false),
            "out" => (false, true),
            "inout" => (true, true),
            other => {
                return Err(PyValueError::new_err(format!("direction must be 'in', 'out' or 'inout', not {other:?}")))
            }
        };
        HostView::get(array, copy_out)?;
        Ok(ArgumentHandler { array: array.clone().unbind(), copy_in, copy_out })
    }
}

/// Device staging for one In/Out/InOut argument.
pub(super) struct Staged {
    buffer: DeviceBuffer,
    host: Py<PyAny>,
    copy_out: bool,
}

/// Packs one argument of an unprepared call.
pub(super) fn pack_any(
    args: &mut KernelArgs,
    staged: &mut Vec<Staged>,
    obj: &Bound<'_, PyAny>,
    index: usize,
) -> PyResult<()> {
    let py = obj.py();
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        return Ok(args.push(a.get().live_ptr()?)?);
    }
    if obj.is_instance(numpy_generic(py)?)? {
        return Ok(args.push_bytes(HostView::get(obj, false)?.bytes())?);
    }
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "argument {index} is a Python {}: a kernel needs a sized type, e.g. numpy.int32(x) or numpy.float64(x), \
             or declare the types once with prepare()",
            obj.get_type().name()?
        )));
    }
    if let Ok(h) = obj.cast::<ArgumentHandler>() {
        return stage(args, staged, h.get());
    }
    Ok(args.push(pointer_of(obj, index)?)?)
}

/// The device address an array-like or pointer-like argument stands for.
fn pointer_of(obj: &Bound<'_, PyAny>, index: usize) -> PyResult<u64> {
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        return a.get().live_ptr();
    }
    match obj.getattr(pyo3::intern!(obj.py(), "ptr")) {
        Ok(ptr) => {
            if let Ok(p) = ptr.extract::<u64>() {
                return Ok(p);
            }
        }
        // `.ptr` exists but failed (a freed allocation, Ctrl-C): that is the cause to report.
        Err(e) if !e.is_instance_of::<pyo3::exceptions::PyAttributeError>(obj.py()) => return Err(e),
        Err(_) => {}
    }
    if let Ok(cai) = obj.getattr(pyo3::intern!(obj.py(), "__cuda_array_interface__")) {
        let data = cai.get_item("data")?;
        return data.get_item(0)?.extract::<u64>();
    }
    obj.extract::<u64>().map_err(|_| {
        PyTypeError::new_err(format!(
            "argument {index} ({}) is not a device pointer, an array with __cuda_array_interface__, or a numpy scalar",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

/// The address of an allocation or array (anything but a number), None for other objects.
fn device_object_pointer(obj: &Bound<'_, PyAny>, index: usize) -> Option<PyResult<u64>> {
    let py = obj.py();
    let is_array = obj.cast::<DeviceAllocation>().is_ok()
        || obj.hasattr(pyo3::intern!(py, "ptr")).unwrap_or(false)
        || obj.hasattr(pyo3::intern!(py, "__cuda_array_interface__")).unwrap_or(false);
    is_array.then(|| pointer_of(obj, index))
}

fn stage(args: &mut KernelArgs, staged: &mut Vec<Staged>, h: &ArgumentHandler) -> PyResult<()> {
    Python::attach(|py| {
        let buffer = HostView::get(h.array.bind(py), h.copy_out)?;
        let device = DeviceBuffer::new(buffer.len())?;
        if h.copy_in {
            // SAFETY: the view is readable for len() bytes while it lives; synchronous copy.
            unsafe { device.backend().memcpy_htod(device.ptr(), buffer.ptr(), buffer.len(), None) }?;
        }
        args.push(device.ptr())?;
        staged.push(Staged { buffer: device, host: h.array.clone_ref(py), copy_out: h.copy_out });
        Ok(())
    })
}

/// Copies Out/InOut arguments back once the launch has finished.
pub(super) fn unstage(py: Python<'_>, staged: Vec<Staged>, stream: StreamHandle) -> PyResult<()> {
    if staged.is_empty() {
        return Ok(());
    }
    let b = backend()?;
    py.detach(|| b.stream_synchronize(stream))?;
    for s in staged.into_iter().filter(|s| s.copy_out) {
        let buffer = HostView::get(s.host.bind(py), true)?;
        let bytes = buffer.len().min(s.buffer.bytes());
        // SAFETY: the writable view holds len() bytes; the copy is synchronous.
        unsafe { b.memcpy_dtoh(buffer.ptr(), s.buffer.ptr(), bytes, None) }?;
    }
    Ok(())
}

pub(super) fn pack_prepared(
    args: &mut KernelArgs,
    kind: ParamKind,
    obj: &Bound<'_, PyAny>,
    index: usize,
) -> PyResult<()> {
    let r = match kind {
        ParamKind::Pointer => args.push(pointer_of(obj, index)?),
        ParamKind::I8 => args.push(obj.extract::<i8>()?),
        ParamKind::U8 => args.push(obj.extract::<u8>()?),
        ParamKind::I16 => args.push(obj.extract::<i16>()?),
        ParamKind::U16 => args.push(obj.extract::<u16>()?),
        ParamKind::I32 => args.push(obj.extract::<i32>()?),
        ParamKind::U32 => args.push(obj.extract::<u32>()?),
        // np.intp is int64's type on LP64 platforms, so a prepared 64-bit integer may be a pointer
        // parameter (PyCUDA's idiom): take an array or allocation there by its address.
        ParamKind::I64 => match obj.extract::<i64>() {
            Ok(v) => args.push(v),
            Err(e) => args.push(device_object_pointer(obj, index).ok_or(e)?? as i64),
        },
        ParamKind::U64 => match obj.extract::<u64>() {
            Ok(v) => args.push(v),
            Err(e) => args.push(device_object_pointer(obj, index).ok_or(e)??),
        },
        ParamKind::F32 => args.push(obj.extract::<f64>()? as f32),
        ParamKind::F64 => args.push(obj.extract::<f64>()?),
        ParamKind::C64 => {
            let c = obj.extract::<num_complex::Complex64>()?;
            args.push(num_complex::Complex32::new(c.re as f32, c.im as f32))
        }
        ParamKind::C128 => args.push(obj.extract::<num_complex::Complex64>()?),
    };
    Ok(r?)
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
        for (slot, item) in out.iter_mut().zip(t.iter()) {
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
