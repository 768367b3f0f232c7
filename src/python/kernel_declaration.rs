//! A kernel's parameters as its C declaration gives them (read from the source by
//! `pygpu._toolchain.kernel_declarations`), and what a plain call does with them: a Python number becomes
//! the parameter's C type (out of range raises), an array whose dtype is not the pointer's
//! element type is refused naming the parameter, a struct by value must have the declared
//! size, and arguments may be passed by the parameters' names.

use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyString, PyTuple};

use super::array_storage::Storage;
use super::errors::{must_propagate, warn_kernel_argument};
use super::kernel_args::{by_value_ndarray, numpy_scalar_kind, pack_any, pack_numpy_scalar, pack_struct, pointer_of};
use super::kernel_signature::ParamKind;
use super::managed::managed_array_pointer;
use super::memory::DeviceAllocation;
use crate::runtime::KernelArgs;

/// One parameter of a kernel, as `Function.parameters` lists them.
#[pyclass(module = "pygpu", frozen, get_all, eq)]
#[derive(Clone, Debug, PartialEq)]
pub struct KernelParameter {
    /// The parameter's name in the kernel's declaration (None: unnamed, or only its size is known).
    name: Option<String>,
    /// Its C type as declared, e.g. "const float *" (None: only its size is known).
    c_type: Option<String>,
    /// Its size in bytes (None: neither the declaration nor the backend gives it).
    size: Option<usize>,
}

#[pymethods]
impl KernelParameter {
    fn __repr__(&self) -> String {
        let show = |v: &Option<String>| v.as_deref().map_or("None".to_string(), |s| format!("'{s}'"));
        format!(
            "KernelParameter(name={}, c_type={}, size={})",
            show(&self.name),
            show(&self.c_type),
            self.size.map_or("None".to_string(), |s| s.to_string())
        )
    }
}

impl KernelParameter {
    pub(super) fn sized(size: usize) -> Self {
        KernelParameter { name: None, c_type: None, size: Some(size) }
    }
}

/// A value's type: one lane of a pointer's element type, or a scalar parameter's type.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lane {
    /// void, char, a struct, a type this reader does not know: any array may stand for it.
    Any,
    Int {
        size: usize,
        signed: bool,
    },
    Bool,
    Float(usize),
    Complex(usize),
}

impl Lane {
    /// The lane of numpy-style `kind` and `size`; None for a size no C type of that kind has
    /// here (the declaration is then not used for that parameter).
    fn new(kind: &str, size: usize) -> Option<Self> {
        Some(match (kind, size) {
            ("i", 1 | 2 | 4 | 8) => Lane::Int { size, signed: true },
            ("u", 1 | 2 | 4 | 8) => Lane::Int { size, signed: false },
            ("b", 1) => Lane::Bool,
            ("f", 2 | 4 | 8) => Lane::Float(size),
            ("c", 8 | 16) => Lane::Complex(size),
            ("*", _) => Lane::Any,
            _ => return None,
        })
    }

    /// What an array of numpy `kind`/`itemsize` is where this lane's elements are read,
    /// `lanes` at a time. The same type matches (signedness aside, which kernels reinterpret
    /// freely), and so do its vector (float4 over float32) and complex numbers as pairs of their
    /// parts (float* or float2* over complex64). Elements of the same size but another kind are
    /// a reinterpretation (PyCUDA's own tests pass a float32 array to an int*); of another
    /// size, a mistake.
    fn reads(self, lanes: usize, kind: u8, itemsize: usize) -> Elements {
        let matches = match (self, kind) {
            (Lane::Any, _) | (_, b'V') => true,
            (Lane::Int { size, .. }, b'i' | b'u') => itemsize == size,
            (Lane::Int { size: 1, .. } | Lane::Bool, b'b') => itemsize == 1,
            (Lane::Bool, b'i' | b'u') => itemsize == 1,
            (Lane::Float(size), b'f') => itemsize == size,
            (Lane::Float(size), b'c') => itemsize == 2 * size && (lanes == 1 || lanes.is_multiple_of(2)),
            (Lane::Complex(size), b'c') => itemsize == size,
            _ => false,
        };
        let size = match self {
            Lane::Any => 0,
            Lane::Int { size, .. } | Lane::Float(size) | Lane::Complex(size) => size,
            Lane::Bool => 1,
        };
        if matches {
            Elements::Match
        } else if itemsize == size || (matches!(self, Lane::Complex(_)) && kind == b'f' && 2 * itemsize == size) {
            Elements::Reinterpreted
        } else {
            Elements::Mismatch
        }
    }

    /// numpy's name for an array of this lane's type, for messages.
    fn dtype_name(self) -> Option<String> {
        Some(match self {
            Lane::Any => return None,
            Lane::Int { size, signed } => format!("{}int{}", if signed { "" } else { "u" }, 8 * size),
            Lane::Bool => "bool".into(),
            Lane::Float(size) => format!("float{}", 8 * size),
            Lane::Complex(size) => format!("complex{}", 8 * size),
        })
    }
}

/// How an array's elements stand to a pointer's element type (`Lane::reads`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Elements {
    Match,
    /// Same size, another type: the kernel reinterprets the bits (a KernelArgumentWarning).
    Reinterpreted,
    Mismatch,
}

/// What a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Takes {
    Scalar(Lane),
    /// A pointer to `lanes` values of `lane` at a time (1 for a scalar element type).
    Pointer {
        lane: Lane,
        lanes: usize,
    },
    /// A struct or vector by value, `size` bytes aligned to `align`.
    Value {
        size: usize,
        align: usize,
    },
    /// A type of unknown size: packed as any call packs it (sizes checked where known).
    Unknown,
}

struct Param {
    name: Option<String>,
    c_type: String,
    takes: Takes,
}

impl Param {
    /// "float *x", "int n", "unsigned" (unnamed), as C declares it.
    fn declared(&self) -> String {
        match &self.name {
            Some(n) if self.c_type.ends_with('*') => format!("{}{n}", self.c_type),
            Some(n) => format!("{} {n}", self.c_type),
            None => self.c_type.clone(),
        }
    }

    /// "parameter 'x' (float *x)" or "parameter 2 (float *)" for messages.
    fn describe(&self, index: usize) -> String {
        match &self.name {
            Some(n) => format!("parameter '{n}' ({})", self.declared()),
            None => format!("parameter {index} ({})", self.declared()),
        }
    }
}

/// The declared parameters of one kernel.
pub(super) struct Declaration {
    params: Vec<Param>,
    /// `Function.parameters`: KernelParameter objects, built once.
    pub(super) parameters: Py<PyTuple>,
}

/// One parameter as `pygpu._toolchain.kernel_declarations` describes it.
pub(super) type Described = (Option<String>, String, String, usize, usize, Option<(String, usize, usize)>);

impl Declaration {
    /// The declaration `described` says, or None where it disagrees with the parameter sizes
    /// the backend reports (`sizes`): the source was read wrongly (a macro this reader does not
    /// expand, say), and the sizes alone are then the better guide.
    pub(super) fn new(py: Python<'_>, described: Vec<Described>, sizes: Option<&[usize]>) -> PyResult<Option<Self>> {
        if sizes.is_some_and(|s| s.len() != described.len()) {
            return Ok(None);
        }
        let mut params = Vec::with_capacity(described.len());
        let mut shown = Vec::with_capacity(described.len());
        for (i, (name, c_type, kind, size, align, pointee)) in described.into_iter().enumerate() {
            let backend_size = sizes.map(|s| s[i]);
            if size > 0 && backend_size.is_some_and(|b| b != size) {
                return Ok(None);
            }
            let takes = match (kind.as_str(), pointee) {
                ("P", Some((lane, lane_size, lanes))) => {
                    Takes::Pointer { lane: Lane::new(&lane, lane_size).unwrap_or(Lane::Any), lanes: lanes.max(1) }
                }
                ("V", _) => match size.max(backend_size.unwrap_or(0)) {
                    0 => Takes::Unknown,
                    size => Takes::Value { size, align: align.max(1) },
                },
                (kind, _) => Lane::new(kind, size).filter(|l| *l != Lane::Any).map_or(Takes::Unknown, Takes::Scalar),
            };
            let size = Some(size).filter(|&s| s > 0).or(backend_size);
            shown.push(KernelParameter { name: name.clone(), c_type: Some(c_type.clone()), size });
            params.push(Param { name, c_type, takes });
        }
        let parameters = PyTuple::new(py, shown.into_iter().map(|p| Py::new(py, p)).collect::<PyResult<Vec<_>>>()?)?;
        Ok(Some(Declaration { params, parameters: parameters.unbind() }))
    }

    /// The argument list of a call: the positional arguments, then the keyword arguments in
    /// their parameters' places, refused as Python refuses a function's arguments.
    pub(super) fn bind<'py>(
        &self,
        kernel: &str,
        args: &Bound<'py, PyTuple>,
        keywords: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let n = self.params.len();
        if args.len() > n {
            return Err(PyTypeError::new_err(format!(
                "{kernel}() takes {n} argument{} ({}) but {} were given",
                if n == 1 { "" } else { "s" },
                self.signature(),
                args.len()
            )));
        }
        let mut slots: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(Some).collect();
        slots.resize(n, None);
        for (key, value) in keywords.into_iter().flat_map(|k| k.iter()) {
            let key = key.cast_into::<PyString>()?;
            let key = key.to_str()?;
            let Some(i) = self.params.iter().position(|p| p.name.as_deref() == Some(key)) else {
                return Err(PyTypeError::new_err(format!(
                    "{kernel}() got an unexpected keyword argument '{key}'; its parameters are ({})",
                    self.signature()
                )));
            };
            if slots[i].is_some() {
                return Err(PyTypeError::new_err(format!("{kernel}() got multiple values for argument '{key}'")));
            }
            slots[i] = Some(value);
        }
        let missing: Vec<String> = self
            .params
            .iter()
            .zip(&slots)
            .enumerate()
            .filter(|(_, (_, s))| s.is_none())
            .map(|(i, (p, _))| p.name.as_ref().map_or_else(|| format!("#{i}"), |n| format!("'{n}'")))
            .collect();
        if !missing.is_empty() {
            return Err(PyTypeError::new_err(format!(
                "{kernel}() missing {} required argument{}: {} (it takes {})",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                self.signature()
            )));
        }
        Ok(slots.into_iter().flatten().collect())
    }

    /// "float *x, int n" for messages.
    fn signature(&self) -> String {
        self.params.iter().map(Param::declared).collect::<Vec<_>>().join(", ")
    }

    /// Packs the bound arguments (`bind`), checked and converted against the declaration.
    pub(super) fn pack<'py>(
        &self,
        kernel: &str,
        args: &mut KernelArgs,
        handlers: &mut Vec<Bound<'py, PyAny>>,
        values: &[Bound<'py, PyAny>],
    ) -> PyResult<()> {
        for (i, (param, value)) in self.params.iter().zip(values).enumerate() {
            let call = Call { kernel, param, index: i };
            match param.takes {
                Takes::Unknown => pack_any(args, handlers, value, i)?,
                Takes::Pointer { lane, lanes } => call.pointer(args, handlers, lane, lanes, value)?,
                Takes::Scalar(lane) => call.scalar(args, lane, value)?,
                Takes::Value { size, .. } => call.value(args, size, value)?,
            }
        }
        Ok(())
    }

    /// The types prepare() takes when given none: what this declaration says, or None for a
    /// parameter whose type is unknown.
    pub(super) fn prepared_kinds(&self, sizes: Option<&[usize]>) -> Result<Vec<ParamKind>, String> {
        let kind = |(i, p): (usize, &Param)| -> Result<ParamKind, String> {
            Ok(match p.takes {
                Takes::Pointer { .. } => ParamKind::Pointer,
                Takes::Scalar(Lane::Int { size, signed }) => match (size, signed) {
                    (1, true) => ParamKind::I8,
                    (1, false) => ParamKind::U8,
                    (2, true) => ParamKind::I16,
                    (2, false) => ParamKind::U16,
                    (4, true) => ParamKind::I32,
                    (4, false) => ParamKind::U32,
                    (8, true) => ParamKind::I64,
                    (8, false) => ParamKind::U64,
                    _ => return Err(p.describe(i)),
                },
                Takes::Scalar(Lane::Bool) => ParamKind::U8,
                Takes::Scalar(Lane::Float(4)) => ParamKind::F32,
                Takes::Scalar(Lane::Float(8)) => ParamKind::F64,
                Takes::Scalar(Lane::Complex(8)) => ParamKind::C64,
                Takes::Scalar(Lane::Complex(16)) => ParamKind::C128,
                Takes::Value { size, align } => ParamKind::Struct { size, align },
                Takes::Scalar(Lane::Float(size)) => ParamKind::Struct { size, align: size },
                _ => match sizes.and_then(|s| s.get(i)) {
                    Some(&size) => ParamKind::Struct { size, align: 1 },
                    None => return Err(p.describe(i)),
                },
            })
        };
        self.params.iter().enumerate().map(kind).collect()
    }
}

/// One argument of a call, for the checks and their messages.
struct Call<'a> {
    kernel: &'a str,
    param: &'a Param,
    index: usize,
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

/// The numpy dtype of an array-like argument, where it has one (a GPUArray's, read from its
/// storage).
fn array_dtype<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyArrayDescr>>> {
    if let Some(storage) = Storage::of(obj) {
        return Ok(storage.dtype());
    }
    let Some(dtype) = obj.getattr_opt(pyo3::intern!(obj.py(), "dtype"))? else { return Ok(None) };
    Ok(dtype.cast_into::<PyArrayDescr>().ok())
}

impl Call<'_> {
    fn prefix(&self) -> String {
        format!("{}(): argument {} for {}", self.kernel, self.index, self.param.describe(self.index))
    }

    fn refuse(&self, what: impl std::fmt::Display) -> PyErr {
        PyTypeError::new_err(format!("{} {what}", self.prefix()))
    }

    /// Refuses an array whose elements are not of the pointer's element type, and warns where
    /// they only have its size.
    fn check_elements(&self, lane: Lane, lanes: usize, array: &Bound<'_, PyAny>) -> PyResult<()> {
        let Some(dtype) = array_dtype(array)? else { return Ok(()) };
        let wanted =
            || lane.dtype_name().map_or(String::new(), |d| format!("an array of {d}, e.g. a.astype(numpy.{d}),"));
        // The dtype is formatted (a Python call) only for a message: a matching array costs none.
        match lane.reads(lanes, dtype.kind(), dtype.itemsize()) {
            Elements::Match => Ok(()),
            Elements::Reinterpreted => warn_kernel_argument(
                array.py(),
                &format!(
                    "{} is an array of {dtype}, whose elements the kernel reads as {}: pass {} or a.view() of the \
                     parameter's type if the bits are meant",
                    self.prefix(),
                    self.param.c_type.trim_end_matches('*').trim_end(),
                    wanted()
                ),
            ),
            Elements::Mismatch => Err(self.refuse(format!(
                "is an array of {dtype}: pass {} or declare the parameter with the array's element type",
                wanted()
            ))),
        }
    }

    fn pointer<'py>(
        &self,
        args: &mut KernelArgs,
        handlers: &mut Vec<Bound<'py, PyAny>>,
        lane: Lane,
        lanes: usize,
        obj: &Bound<'py, PyAny>,
    ) -> PyResult<()> {
        let py = obj.py();
        if let Ok(a) = obj.cast::<DeviceAllocation>() {
            return Ok(args.push(a.get().live_ptr()?)?);
        }
        if let Some(storage) = Storage::of(obj) {
            self.check_elements(lane, lanes, obj)?;
            return Ok(args.push(storage.device_pointer()?)?);
        }
        // An address (PyCUDA code passes `int(a.gpudata)` or numpy.intp(a.gpudata)).
        if obj.is_exact_instance_of::<PyInt>() {
            let address = obj.extract::<u64>().map_err(|_| self.refuse(format!("is {obj}, not a device address")))?;
            return Ok(args.push(address)?);
        }
        if let Some(kind) = numpy_scalar_kind(obj)? {
            return match kind {
                Some(ParamKind::I64) => Ok(args.push(obj.extract::<i64>()? as u64)?),
                Some(ParamKind::U64) => Ok(args.push(obj.extract::<u64>()?)?),
                _ => Err(self.refuse(format!("is a numpy {}, not a device pointer", type_name(obj)))),
            };
        }
        if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyComplex>() || obj.is_instance_of::<PyBool>() {
            return Err(self.refuse(format!("is a Python {}, not a device pointer", type_name(obj))));
        }
        if let Ok(array) = obj.cast::<PyUntypedArray>() {
            // A numpy array in managed memory is device memory too.
            if let Some(address) = managed_array_pointer(obj)? {
                self.check_elements(lane, lanes, obj)?;
                return Ok(args.push(address)?);
            }
            let shape = PyTuple::new(py, numpy::PyUntypedArrayMethods::shape(array))?;
            return Err(self.refuse(format!(
                "is a host numpy array of shape {shape}, not a device pointer: a kernel reads device memory, so \
                 copy it there first (gpuarray.to_gpu(a)) or pass driver.In(a), driver.Out(a) or driver.InOut(a)"
            )));
        }
        if let Some(get) = obj.getattr_opt(pyo3::intern!(py, "get_device_alloc"))? {
            if let Some(array) = obj.getattr_opt(pyo3::intern!(py, "array"))? {
                self.check_elements(lane, lanes, &array)?;
            }
            args.push(pointer_of(&get.call0()?, self.index)?)?;
            handlers.push(obj.clone());
            return Ok(());
        }
        self.check_elements(lane, lanes, obj)?;
        Ok(args.push(pointer_of(obj, self.index)?)?)
    }

    fn scalar(&self, args: &mut KernelArgs, lane: Lane, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let numpy_kind = numpy_scalar_kind(obj)?;
        // A numpy scalar of the parameter's own type goes in as it is.
        if let (Some(Some(own)), Some(kind)) = (numpy_kind, prepared_kind(lane)) {
            if own == kind {
                return pack_numpy_scalar(args, own, own, obj, self.index);
            }
        }
        // A 0-d or one-element host array stands for its element, as PyCUDA passes it.
        if obj.cast::<PyUntypedArray>().is_ok() && by_value_ndarray(obj)? {
            return self.scalar(args, lane, &obj.call_method0(pyo3::intern!(obj.py(), "item"))?);
        }
        let r = match lane {
            Lane::Int { size, signed } => {
                let v = self.integer(obj)?;
                let (low, high) = int_range(size, signed);
                if v < low || v > high {
                    return Err(PyOverflowError::new_err(format!(
                        "{} is {v}, out of the range of {} ({low} to {high})",
                        self.prefix(),
                        self.param.c_type
                    )));
                }
                args.push_bytes(&v.to_le_bytes()[..size])
            }
            Lane::Bool => {
                let v = self.integer(obj)?;
                if !(0..=1).contains(&v) {
                    return Err(PyOverflowError::new_err(format!("{} is {v}, not a bool (0 or 1)", self.prefix())));
                }
                args.push(v as u8)
            }
            Lane::Float(size) => {
                // numpy's complex scalars convert to float by dropping the imaginary part: refused.
                let is_complex = obj.is_instance_of::<PyComplex>()
                    || match numpy_kind {
                        Some(Some(kind)) => matches!(kind, ParamKind::C64 | ParamKind::C128),
                        Some(None) => array_dtype(obj)?.is_some_and(|dtype| dtype.kind() == b'c'),
                        None => false,
                    };
                if is_complex {
                    return Err(self.refuse(format!("is the complex number {obj}: the parameter takes a real number")));
                }
                let v = obj.extract::<f64>().map_err(|e| {
                    if must_propagate(obj.py(), &e) {
                        e
                    } else {
                        self.refuse(format!("is a {}, not a number", type_name(obj)))
                    }
                })?;
                match size {
                    4 if v.is_finite() && v.abs() > f64::from(f32::MAX) => {
                        return Err(PyOverflowError::new_err(format!(
                            "{} is {v}, out of the range of float (about ±3.4e38)",
                            self.prefix()
                        )))
                    }
                    4 => args.push(v as f32),
                    8 => args.push(v),
                    _ => {
                        // half: values from 65520 on round to infinity; numpy rounds the others.
                        if v.is_finite() && v.abs() >= 65520.0 {
                            return Err(PyOverflowError::new_err(format!(
                                "{} is {v}, out of the range of half (±65504)",
                                self.prefix()
                            )));
                        }
                        let half = obj.py().import("numpy")?.getattr("float16")?.call1((v,))?;
                        return pack_struct(args, size, &half, &|| format!("{} takes a", self.prefix()));
                    }
                }
            }
            Lane::Complex(size) => {
                let v = obj.extract::<num_complex::Complex64>().map_err(|e| {
                    if must_propagate(obj.py(), &e) {
                        e
                    } else {
                        self.refuse(format!("is a {}, not a number", type_name(obj)))
                    }
                })?;
                if size == 8 {
                    args.push(num_complex::Complex32::new(v.re as f32, v.im as f32))
                } else {
                    args.push(v)
                }
            }
            Lane::Any => return pack_any(args, &mut Vec::new(), obj, self.index),
        };
        Ok(r?)
    }

    /// An integer argument's value: Python ints and bools, numpy integers and bools, anything
    /// with `__index__`.
    fn integer(&self, obj: &Bound<'_, PyAny>) -> PyResult<i128> {
        match obj.extract::<i128>() {
            Ok(v) => return Ok(v),
            Err(e) if must_propagate(obj.py(), &e) => return Err(e),
            Err(_) => {}
        }
        if obj.is_instance_of::<PyBool>() || matches!(numpy_scalar_kind(obj)?, Some(None)) {
            if let Ok(b) = obj.extract::<bool>() {
                return Ok(i128::from(b));
            }
        }
        Err(self.refuse(format!("is {} ({}): the parameter takes an integer", obj.repr()?, type_name(obj))))
    }

    fn value(&self, args: &mut KernelArgs, size: usize, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        pack_struct(args, size, obj, &|| format!("{} takes a", self.prefix()))
    }
}

/// The prepared kind of a scalar lane, for numpy scalars of exactly that type.
fn prepared_kind(lane: Lane) -> Option<ParamKind> {
    Some(match lane {
        Lane::Int { size: 1, signed: true } => ParamKind::I8,
        Lane::Int { size: 1, signed: false } => ParamKind::U8,
        Lane::Int { size: 2, signed: true } => ParamKind::I16,
        Lane::Int { size: 2, signed: false } => ParamKind::U16,
        Lane::Int { size: 4, signed: true } => ParamKind::I32,
        Lane::Int { size: 4, signed: false } => ParamKind::U32,
        Lane::Int { size: 8, signed: true } => ParamKind::I64,
        Lane::Int { size: 8, signed: false } => ParamKind::U64,
        Lane::Float(4) => ParamKind::F32,
        Lane::Float(8) => ParamKind::F64,
        Lane::Complex(8) => ParamKind::C64,
        Lane::Complex(16) => ParamKind::C128,
        _ => return None,
    })
}

/// The smallest and largest value of a C integer of `size` bytes.
fn int_range(size: usize, signed: bool) -> (i128, i128) {
    let bits = 8 * size as u32;
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_match_pointers_by_element_type() {
        use Elements::*;
        let float = Lane::Float(4);
        assert_eq!(float.reads(1, b'f', 4), Match);
        assert_eq!(float.reads(1, b'f', 8), Mismatch, "float* on float64");
        assert_eq!(float.reads(1, b'i', 4), Reinterpreted, "float* on int32");
        assert_eq!(float.reads(1, b'c', 8), Match, "float* on complex64: interleaved parts");
        assert_eq!(float.reads(2, b'c', 8), Match, "float2* on complex64");
        assert_eq!(float.reads(4, b'f', 4), Match, "float4* on float32");
        assert_eq!(Lane::Int { size: 4, signed: false }.reads(1, b'i', 4), Match, "signedness is not checked");
        assert_eq!(Lane::Int { size: 4, signed: true }.reads(1, b'i', 8), Mismatch);
        assert_eq!(Lane::Any.reads(1, b'f', 8), Match);
        assert_eq!(Lane::Complex(16).reads(1, b'c', 16), Match);
        assert_eq!(Lane::Complex(16).reads(1, b'c', 8), Mismatch);
        assert_eq!(Lane::Complex(8).reads(1, b'f', 4), Reinterpreted, "complex<float>* over float32 pairs");
    }

    #[test]
    fn integer_ranges() {
        assert_eq!(int_range(1, true), (-128, 127));
        assert_eq!(int_range(4, false), (0, u32::MAX as i128));
        assert_eq!(int_range(8, true), (i64::MIN as i128, i64::MAX as i128));
        assert_eq!(int_range(8, false), (0, u64::MAX as i128));
    }
}
