//! Integers from Python for parameters narrower than Python's int. The bare conversion of an
//! out-of-range value says only "out of range integral type conversion attempted"; these say
//! what the value was for, the value, and the range the parameter takes.

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;

/// An integer type's range, for messages.
pub trait IntRange {
    /// What the C parameter is, in words ("an unsigned 8-bit integer").
    const KIND: &'static str;
    const MIN: i128;
    const MAX: i128;
}

macro_rules! int_ranges {
    ($($t:ty => $kind:literal),* $(,)?) => {
        $(impl IntRange for $t {
            const KIND: &'static str = $kind;
            const MIN: i128 = <$t>::MIN as i128;
            const MAX: i128 = <$t>::MAX as i128;
        })*
    };
}

int_ranges!(
    i8 => "a signed 8-bit integer",
    u8 => "an unsigned 8-bit integer",
    i16 => "a signed 16-bit integer",
    u16 => "an unsigned 16-bit integer",
    i32 => "a signed 32-bit integer",
    u32 => "an unsigned 32-bit integer",
    i64 => "a signed 64-bit integer",
    u64 => "an unsigned 64-bit integer",
);

/// `error`, raised converting `obj` to T for `what` ("argument 2", "memset_d8's value"): an
/// OverflowError that says so and gives T's range; a TypeError (not an integer) with `what` in
/// front; any other error (from the object's own `__index__`) as it is. Called only on the
/// failure path.
pub fn out_of_range<T: IntRange>(obj: &Bound<'_, PyAny>, error: PyErr, what: impl FnOnce() -> String) -> PyErr {
    let py = obj.py();
    if error.is_instance_of::<PyTypeError>(py) {
        let wrapped = PyTypeError::new_err(format!("{}: {}", what(), error.value(py)));
        wrapped.set_cause(py, Some(error));
        return wrapped;
    }
    if !error.is_instance_of::<PyOverflowError>(py) {
        return error;
    }
    let given = obj.repr().map_or_else(|_| "the value".to_string(), |r| r.to_string());
    PyOverflowError::new_err(format!(
        "{} takes {}, from {} to {}; {given} is out of that range",
        what(),
        T::KIND,
        T::MIN,
        T::MAX
    ))
}

/// `obj` as T, or out_of_range's error.
pub fn int_in_range<'a, 'py, T>(obj: &'a Bound<'py, PyAny>, what: impl FnOnce() -> String) -> PyResult<T>
where
    T: IntRange + FromPyObject<'a, 'py>,
{
    obj.extract::<T>().map_err(|e| out_of_range::<T>(obj, e.into(), what))
}
