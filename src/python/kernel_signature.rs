//! A prepared function's parameter types, as PyCUDA's `Function.prepare(arg_types)` takes
//! them: struct-module format strings ("PiPd", "12s" for a 12-byte struct, counts such as
//! "2i"), or a list of numpy types and dtypes, where a structured dtype is a struct passed by
//! value whose layout must be the one a C compiler gives it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::runtime::kernel::MAX_ARGUMENT_BYTES;

/// A parameter type of a prepared function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ParamKind {
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
    /// A struct (or any fixed-size value) passed by value: `size` bytes aligned to `align`.
    Struct {
        size: usize,
        align: usize,
    },
}

impl ParamKind {
    /// struct-module characters, as PyCUDA's prepare() takes them.
    pub(crate) fn from_char(c: char) -> Option<Self> {
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

fn bad(what: String) -> PyErr {
    PyValueError::new_err(format!(
        "prepare(): {what}; use struct characters such as \"PiPd\" (\"12s\" for a 12-byte struct) or numpy \
         types and dtypes (a structured dtype for a struct)"
    ))
}

/// A struct whose layout disagrees with the kernel's or C's.
fn layout_error(what: String) -> PyErr {
    PyValueError::new_err(format!("prepare(): {what}"))
}

fn struct_kind(size: usize, align: usize) -> PyResult<ParamKind> {
    if size == 0 || size > MAX_ARGUMENT_BYTES {
        return Err(bad(format!("a struct argument must have 1 to {MAX_ARGUMENT_BYTES} bytes, not {size}")));
    }
    Ok(ParamKind::Struct { size, align })
}

/// A struct-module format: characters, each with an optional repeat count; "Ns" is one
/// N-byte value (a struct), as in the struct module. Native byte order and alignment only.
fn parse_format(format: &str, kinds: &mut Vec<ParamKind>) -> PyResult<()> {
    let mut count: Option<usize> = None;
    for c in format.chars() {
        if let Some(d) = c.to_digit(10) {
            let n = count.unwrap_or(0).checked_mul(10).and_then(|n| n.checked_add(d as usize));
            count = Some(
                n.filter(|&n| n <= MAX_ARGUMENT_BYTES).ok_or_else(|| bad(format!("count too large in {format:?}")))?,
            );
            continue;
        }
        if c.is_whitespace() || (c == '@' && kinds.is_empty() && count.is_none()) {
            continue;
        }
        let n = count.take().unwrap_or(1);
        if c == 's' {
            kinds.push(struct_kind(n, 1)?);
            continue;
        }
        let kind = ParamKind::from_char(c).ok_or_else(|| bad(format!("unknown type character {c:?} in {format:?}")))?;
        kinds.extend(std::iter::repeat_n(kind, n));
    }
    if count.is_some() {
        return Err(bad(format!("{format:?} ends with a count and no type character")));
    }
    Ok(())
}

/// (size, alignment) a C compiler gives the type of numpy dtype `dtype`; for a structured
/// dtype, an error unless numpy's field offsets and item size are C's (numpy packs fields
/// unless the dtype was made with `align=True`).
fn c_layout(dtype: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    let py = dtype.py();
    let itemsize: usize = dtype.getattr(pyo3::intern!(py, "itemsize"))?.extract()?;
    let subdtype = dtype.getattr(pyo3::intern!(py, "subdtype"))?;
    if !subdtype.is_none() {
        let (base, _shape): (Bound<'_, PyAny>, Bound<'_, PyAny>) = subdtype.extract()?;
        let (_, align) = c_layout(&base)?;
        return Ok((itemsize, align));
    }
    let names = dtype.getattr(pyo3::intern!(py, "names"))?;
    if names.is_none() {
        let kind: String = dtype.getattr(pyo3::intern!(py, "kind"))?.extract()?;
        return Ok(match kind.as_str() {
            "V" => (itemsize, 1),
            "c" => (itemsize, (itemsize / 2).max(1)),
            _ => (itemsize, itemsize.max(1)),
        });
    }
    let fields = dtype.getattr(pyo3::intern!(py, "fields"))?;
    let mut placed: Vec<(usize, String, usize, usize)> = Vec::new();
    for name in names.try_iter()? {
        let name = name?;
        let field = fields.get_item(&name)?.cast_into::<PyTuple>()?;
        let offset: usize = field.get_item(1)?.extract()?;
        let (size, align) = c_layout(&field.get_item(0)?)?;
        placed.push((offset, name.extract()?, size, align));
    }
    placed.sort_by_key(|p| p.0);
    let mut end = 0usize;
    let mut struct_align = 1usize;
    for (offset, name, size, align) in placed {
        let c_offset = end.next_multiple_of(align);
        if offset != c_offset {
            return Err(layout_error(format!(
                "field {name:?} of {dtype} is at byte {offset} in numpy but at byte {c_offset} in the C struct: \
                 build the dtype with align=True (numpy.dtype(fields, align=True)) or add the padding C has"
            )));
        }
        end = offset + size;
        struct_align = struct_align.max(align);
    }
    let c_size = end.next_multiple_of(struct_align);
    if itemsize != c_size {
        return Err(layout_error(format!(
            "{dtype} has {itemsize} bytes in numpy but {c_size} in C (trailing padding to its {struct_align}-byte \
             alignment): build the dtype with align=True"
        )));
    }
    Ok((itemsize, struct_align))
}

fn dtype_kind(numpy: &Bound<'_, PyModule>, item: &Bound<'_, PyAny>) -> PyResult<ParamKind> {
    let dtype = numpy.call_method1("dtype", (item,)).map_err(|_| bad(format!("{item} is not a type")))?;
    let c: String = dtype.getattr("char")?.extract()?;
    if c == "V" {
        let (size, align) = c_layout(&dtype)?;
        return struct_kind(size, align);
    }
    c.chars().next().and_then(ParamKind::from_dtype_char).ok_or_else(|| bad(format!("unsupported type {item}")))
}

pub(crate) fn parse_signature(arg_types: &Bound<'_, PyAny>) -> PyResult<Vec<ParamKind>> {
    let mut kinds = Vec::new();
    if let Ok(s) = arg_types.cast::<PyString>() {
        parse_format(s.to_str()?, &mut kinds)?;
        return Ok(kinds);
    }
    let numpy = arg_types.py().import("numpy")?;
    let items = arg_types.try_iter().map_err(|_| bad(format!("{arg_types} is neither a str nor a list of types")))?;
    for item in items {
        let item = item?;
        if let Ok(s) = item.cast::<PyString>() {
            parse_format(s.to_str()?, &mut kinds)?;
        } else {
            kinds.push(dtype_kind(&numpy, &item)?);
        }
    }
    Ok(kinds)
}

/// Refuses a signature whose structs do not have the sizes of the kernel's parameters, where
/// the backend knows them (a scalar mismatch is refused at the call, as for unprepared calls).
pub(crate) fn check_structs(name: &str, kinds: &[ParamKind], param_sizes: Option<&[usize]>) -> PyResult<()> {
    let Some(expected) = param_sizes else { return Ok(()) };
    for (i, kind) in kinds.iter().enumerate() {
        let ParamKind::Struct { size, .. } = kind else { continue };
        match expected.get(i) {
            Some(&e) if e == *size => {}
            Some(&e) => {
                return Err(layout_error(format!(
                    "argument {i} is declared as a {size}-byte struct but parameter {i} of {name} has {e} bytes \
                     (check the dtype's fields and padding against the kernel's C struct)"
                )))
            }
            None => {
                return Err(layout_error(format!(
                    "argument {i} is declared as a struct but {name} takes only {} parameters",
                    expected.len()
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(format: &str) -> Option<Vec<ParamKind>> {
        let mut kinds = Vec::new();
        parse_format(format, &mut kinds).ok().map(|_| kinds)
    }

    #[test]
    fn formats_take_counts_and_struct_sizes() {
        use ParamKind::*;
        assert_eq!(parsed("PiPd"), Some(vec![Pointer, I32, Pointer, F64]));
        assert_eq!(parsed("2i 12s"), Some(vec![I32, I32, Struct { size: 12, align: 1 }]));
        assert_eq!(parsed("@Q"), Some(vec![U64]));
        assert_eq!(parsed("3"), None);
        assert_eq!(parsed("Pz"), None);
        assert_eq!(parsed("0s"), None);
        assert_eq!(parsed("5000s"), None);
    }
}
