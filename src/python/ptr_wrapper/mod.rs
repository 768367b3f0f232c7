//! `pointer_wrapper_<dtype>`: an address as a Python object. Safe wrappers point into host
//! memory that the wrapper keeps alive and may be read with `get()`; unsafe ones (device
//! pointers, bare integers) only travel as `int()`.

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// What every dtype's wrapper holds.
pub struct Pointer {
    pub address: u64,
    /// Elements readable through a safe pointer (0 for unsafe ones).
    pub count: usize,
    pub safe: bool,
    /// Keeps the pointed-to memory alive.
    pub owner: Option<Py<PyAny>>,
}

impl Pointer {
    pub fn unsafe_device(address: u64, owner: Option<Py<PyAny>>) -> Self {
        Pointer { address, count: 0, safe: false, owner }
    }

    /// # Safety of the result
    /// Reading is sound because a safe pointer's owner is a C-contiguous numpy array of
    /// `count` elements of `T`, kept alive by `owner`.
    pub fn read<T: Copy>(&self, index: usize, type_name: &str) -> PyResult<T> {
        if !self.safe {
            return Err(PyValueError::new_err(format!(
                "{type_name} at 0x{:x} is unsafe (a device or foreign address) and cannot be read \
                 from the host; copy the data to the host first",
                self.address
            )));
        }
        if index >= self.count {
            return Err(PyIndexError::new_err(format!(
                "index {index} is out of range for a pointer to {} elements",
                self.count
            )));
        }
        // SAFETY: safe pointers own a live, aligned, C-contiguous buffer of `count`
        // elements of T (checked at construction), and index < count.
        Ok(unsafe { std::ptr::read((self.address as *const T).add(index)) })
    }
}

macro_rules! pointer_wrapper {
    ($name:ident, $pyname:literal, $t:ty) => {
        /// PyGPU's typed pointer: from a numpy array of this dtype, a safe pointer to its data
        /// (`get(i)` reads element i; it keeps the array alive); from an int address, an unsafe
        /// one that is only passed on (to a kernel, or to C code), never dereferenced.
        #[doc = concat!($pyname, " objects come from `DeviceArray_<dtype>.host_data()` and `.device_data()`.")]
        #[pyclass(name = $pyname, module = "pygpu", frozen)]
        pub struct $name(pub $crate::python::ptr_wrapper::Pointer);

        #[pymethods]
        impl $name {
            /// From a numpy array of this dtype (safe: readable with get()), or an int
            /// address (unsafe: passed on, never dereferenced).
            #[new]
            fn new(target: &Bound<'_, PyAny>) -> PyResult<Self> {
                use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
                if let Ok(array) = target.cast::<PyArrayDyn<$t>>() {
                    if !array.is_c_contiguous() {
                        return Err(PyValueError::new_err(concat!(
                            $pyname,
                            " needs a C-contiguous array: pass numpy.ascontiguousarray(a)"
                        )));
                    }
                    return Ok($name($crate::python::ptr_wrapper::Pointer {
                        address: array.data() as u64,
                        count: array.len(),
                        safe: true,
                        owner: Some(target.clone().unbind()),
                    }));
                }
                match target.extract::<u64>() {
                    Ok(address) => {
                        return Ok($name($crate::python::ptr_wrapper::Pointer::unsafe_device(address, None)));
                    }
                    Err(e) if $crate::python::errors::must_propagate(target.py(), &e) => return Err(e),
                    Err(_) => {}
                }
                Err(PyTypeError::new_err(format!(
                    concat!($pyname, " wraps a numpy array of dtype ", stringify!($t), " or an int address, not {}"),
                    target.get_type().name()?
                )))
            }

            /// The owner is visible to the garbage collector (a cycle through it is collected).
            fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
                if let Some(owner) = &self.0.owner {
                    visit.call(owner)?;
                }
                Ok(())
            }

            fn __int__(&self) -> u64 {
                self.0.address
            }

            fn __index__(&self) -> u64 {
                self.0.address
            }

            /// True for host memory the wrapper keeps alive (only those can be read with `get`);
            /// False for a device or bare address.
            fn is_safe(&self) -> bool {
                self.0.safe
            }

            /// The element at `index` of a safe (host, owned) pointer.
            #[pyo3(signature = (index = 0))]
            fn get(&self, index: usize) -> PyResult<$t> {
                self.0.read::<$t>(index, $pyname)
            }

            fn __repr__(&self) -> String {
                format!("<{} 0x{:x} ({})>", $pyname, self.0.address, if self.0.safe { "safe" } else { "unsafe" })
            }
        }
    };
}

/// One class per row of the dtype table.
macro_rules! pointer_wrapper_of {
    ($t:ty, $array:ident, $arrayname:literal, $name:ident, $pyname:literal) => {
        pointer_wrapper!($name, $pyname, $t);
    };
}

crate::python::dtypes::for_each_dtype!(pointer_wrapper_of);
