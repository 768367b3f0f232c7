//! `DeviceArray_<dtype>`, PyGPU's low-level array: a host side that aliases a numpy array
//! and a contiguous device side that `allocate()` creates. Calls that touch the device
//! return the status object and remember it in `last_status()`; misuse raises.

pub mod dlpack;

use numpy::{Element, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::python::errors::{must_propagate, CudaStatus};
use crate::python::stream::{stream_handle, CudaStream};
use crate::runtime::memory::DeviceBuffer;
use crate::runtime::{backend, Result as RtResult};

/// The dtype-independent part of every `DeviceArray_<dtype>`.
pub struct ArrayCore<T: Element> {
    pub host: Py<PyArrayDyn<T>>,
    pub device: Option<DeviceBuffer>,
    pub last_status: i32,
}

impl<T: Element + Copy> ArrayCore<T> {
    /// From a numpy array of exactly this dtype (aliased), or from a shape (zeros).
    pub fn new(source: &Bound<'_, PyAny>, type_name: &str) -> PyResult<Self> {
        let py = source.py();
        if let Ok(array) = source.cast::<PyArrayDyn<T>>() {
            return Ok(ArrayCore { host: array.clone().unbind(), device: None, last_status: 0 });
        }
        if let Ok(array) = source.cast::<numpy::PyUntypedArray>() {
            return Err(PyTypeError::new_err(format!(
                "{type_name} needs an array of dtype {}, got {}: use the DeviceArray_ of that dtype or a.astype(...)",
                numpy::dtype::<T>(py).str()?,
                array.dtype().str()?
            )));
        }
        let not_a_shape =
            || PyTypeError::new_err(format!("{type_name} takes a numpy array or a shape (tuple of non-negative ints)"));
        let shape: Vec<usize> = match source.extract::<usize>() {
            Ok(n) => vec![n],
            // KeyboardInterrupt from __index__ (and any error of the user's own code) is not "not a shape".
            Err(e) if must_propagate(py, &e) => return Err(e),
            // bytes and bytearray are sequences of small ints, but never a shape (numpy refuses them too).
            Err(_) if source.is_instance_of::<PyBytes>() || source.is_instance_of::<PyByteArray>() => {
                return Err(not_a_shape());
            }
            Err(_) => {
                source.extract::<Vec<usize>>().map_err(|e| if must_propagate(py, &e) { e } else { not_a_shape() })?
            }
        };
        let total = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        match total.and_then(|n| n.checked_mul(std::mem::size_of::<T>())) {
            Some(bytes) if bytes <= isize::MAX as usize => {
                // numpy.zeros promises memory lazily; touching more than there is would be an OOM kill.
                if bytes > crate::runtime::memory::available_memory() {
                    return Err(pyo3::exceptions::PyMemoryError::new_err(format!(
                        "{type_name} of shape {shape:?} needs {bytes} bytes of host memory, more than is available"
                    )));
                }
            }
            _ => return Err(PyValueError::new_err(format!("shape {shape:?} is too large"))),
        }
        // Through numpy.zeros rather than PyArray::zeros, which panics when the allocation fails.
        let host =
            py.import("numpy")?.call_method1("zeros", (shape, numpy::dtype::<T>(py)))?.cast_into::<PyArrayDyn<T>>()?;
        Ok(ArrayCore { host: host.unbind(), device: None, last_status: 0 })
    }

    /// Elements of T in the host array, which `check_dtype` says are still T.
    fn elements(&self, py: Python<'_>) -> usize {
        self.host.bind(py).len()
    }

    fn byte_size(&self, py: Python<'_>) -> usize {
        self.elements(py) * std::mem::size_of::<T>()
    }

    /// Elements, once the host array's dtype is checked to be T still (see `check_dtype`).
    pub fn size(&self, py: Python<'_>, type_name: &str) -> PyResult<usize> {
        self.check_dtype(py, type_name)?;
        Ok(self.elements(py))
    }

    pub fn nbytes(&self, py: Python<'_>, type_name: &str) -> PyResult<usize> {
        self.check_dtype(py, type_name)?;
        Ok(self.byte_size(py))
    }

    pub fn shape(&self, py: Python<'_>, type_name: &str) -> PyResult<Vec<usize>> {
        self.check_dtype(py, type_name)?;
        Ok(self.raw_shape(py))
    }

    /// The host array's shape, whatever its dtype now is (for repr).
    pub fn raw_shape(&self, py: Python<'_>) -> Vec<usize> {
        self.host.bind(py).shape().to_vec()
    }

    /// Strides in bytes of the (C-contiguous) device copy.
    pub fn strides(&self, py: Python<'_>, type_name: &str) -> PyResult<Vec<usize>> {
        let shape = self.shape(py, type_name)?;
        let mut strides = vec![std::mem::size_of::<T>(); shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * shape[i + 1].max(1);
        }
        Ok(strides)
    }

    fn status(&mut self, result: RtResult<()>) -> PyResult<CudaStatus> {
        let status = CudaStatus::from_result(&result)?;
        self.last_status = status.code();
        Ok(status)
    }

    pub fn allocate(&mut self, py: Python<'_>, type_name: &str) -> PyResult<CudaStatus> {
        if self.device.is_some() {
            return self.status(Ok(()));
        }
        let bytes = self.nbytes(py, type_name)?;
        let result = DeviceBuffer::new(bytes).map(|b| {
            self.device = Some(b);
        });
        self.status(result)
    }

    fn device_ptr(&self, type_name: &str) -> PyResult<u64> {
        self.device.as_ref().map(|b| b.ptr()).ok_or_else(|| {
            PyValueError::new_err(format!("this {type_name} has no device memory yet: call allocate() first"))
        })
    }

    /// Checks, on every copy, that the host array still is what the device side was made
    /// for: numpy lets `a.dtype = ...` and `a.resize(...)` change it in place, and a copy
    /// sized by the old layout would run past the host (or device) memory.
    fn check_host(&self, py: Python<'_>, type_name: &str) -> PyResult<()> {
        self.check_dtype(py, type_name)?;
        let host = self.host.bind(py);
        let host_bytes = host.len().checked_mul(std::mem::size_of::<T>());
        match &self.device {
            Some(device) if host_bytes != Some(device.bytes()) => Err(PyValueError::new_err(format!(
                "the host array of this {type_name} now holds {} bytes (it was resized in place) but the \
                 device side holds {}: make a new {type_name} for the new shape",
                host_bytes.map_or_else(|| "too many".to_string(), |b| b.to_string()),
                device.bytes()
            ))),
            _ => Ok(()),
        }
    }

    /// The host array's dtype is still T: numpy lets `a.dtype = ...` reinterpret it in place,
    /// after which its element count no longer counts T's (size, nbytes, shape and strides
    /// would disagree with each other and with the device side), so they raise instead.
    fn check_dtype(&self, py: Python<'_>, type_name: &str) -> PyResult<()> {
        let host = self.host.bind(py);
        let expected = numpy::dtype::<T>(py);
        if host.dtype().is_equiv_to(&expected) {
            return Ok(());
        }
        Err(PyTypeError::new_err(format!(
            "the host array of this {type_name} now has dtype {} (it was changed in place); \
             this {type_name} holds {} only: restore the dtype or make a new DeviceArray_ of the new dtype",
            host.dtype().str()?,
            expected.str()?
        )))
    }

    pub fn to_device(
        &mut self,
        py: Python<'_>,
        stream: Option<&Bound<'_, CudaStream>>,
        type_name: &str,
    ) -> PyResult<CudaStatus> {
        let dst = self.device_ptr(type_name)?;
        self.check_host(py, type_name)?;
        let s = stream.map(|s| stream_handle(Some(s))).transpose()?;
        let host = self
            .host
            .bind(py)
            .try_readonly()
            .map_err(|e| PyValueError::new_err(format!("cannot read the host array of this {type_name}: {e}")))?;
        let bytes = self.byte_size(py);
        let b = backend()?;
        // as_slice() also accepts Fortran order; the device copy is always C order.
        let contiguous = if host.is_c_contiguous() { host.as_slice().ok() } else { None };
        let result = match contiguous {
            // SAFETY: the readonly borrow keeps the contiguous host data alive and
            // unaliased by writers for the duration of the (staged) copy.
            Some(slice) => unsafe { b.memcpy_htod(dst, slice.as_ptr() as *const u8, bytes, s) },
            None => {
                // Gather a strided host array in logical (C) order first.
                let gathered: Vec<T> = host.as_array().iter().copied().collect();
                // SAFETY: `gathered` outlives the copy; for async copies from pageable
                // memory the driver stages the data before returning.
                unsafe { b.memcpy_htod(dst, gathered.as_ptr() as *const u8, bytes, s) }
            }
        };
        drop(host);
        self.status(result)
    }

    pub fn to_host(
        &mut self,
        py: Python<'_>,
        stream: Option<&Bound<'_, CudaStream>>,
        type_name: &str,
    ) -> PyResult<CudaStatus> {
        let src = self.device_ptr(type_name)?;
        self.check_host(py, type_name)?;
        let s = stream.map(|s| stream_handle(Some(s))).transpose()?;
        let bytes = self.byte_size(py);
        let b = backend()?;
        let host = self.host.bind(py);
        let mut host = host
            .try_readwrite()
            .map_err(|e| PyValueError::new_err(format!("cannot write into the host array of this {type_name}: {e}")))?;
        let c_order = host.is_c_contiguous();
        let result = match host.as_slice_mut().ok().filter(|_| c_order) {
            // SAFETY: the read-write borrow gives exclusive access to the contiguous host
            // data; device-to-pageable copies complete before returning.
            Some(slice) => unsafe { b.memcpy_dtoh(slice.as_mut_ptr() as *mut u8, src, bytes, s) },
            None => {
                let mut staged: Vec<T> = host.as_array().iter().copied().collect();
                // SAFETY: `staged` has exactly `bytes` bytes and outlives the copy, which
                // completes before returning (pageable destination).
                let r = unsafe { b.memcpy_dtoh(staged.as_mut_ptr() as *mut u8, src, bytes, s) };
                if r.is_ok() {
                    // Scatter back in logical order into the strided array.
                    for (dst, value) in host.as_array_mut().iter_mut().zip(staged.drain(..)) {
                        *dst = value;
                    }
                }
                r
            }
        };
        drop(host);
        self.status(result)
    }
}

macro_rules! device_array {
    ($name:ident, $pyname:literal, $t:ty, $ptr:ident) => {
        /// PyGPU's typed device array: a host numpy array paired with device memory of its size.
        ///
        #[doc = concat!($pyname, "(a) aliases `a`, a numpy array of exactly this dtype (", $pyname, "(shape): a new")]
        /// zeroed one); `allocate()` makes the device side, `to_device()` and `to_host()` copy between
        /// them, and each returns a cudaError status. `host_array()` is the numpy array,
        /// `device_data()` the device pointer to pass to kernels.
        #[pyclass(name = $pyname, module = "pygpu")]
        pub struct $name($crate::python::array::ArrayCore<$t>);

        // to_device/to_host are PyGPU's names, not conversions of self.
        #[allow(clippy::wrong_self_convention)]
        #[pymethods]
        impl $name {
            #[new]
            fn new(source: &Bound<'_, PyAny>) -> PyResult<Self> {
                Ok($name($crate::python::array::ArrayCore::new(source, $pyname)?))
            }

            /// Allocates the device side (once); returns the status.
            fn allocate(&mut self, py: Python<'_>) -> PyResult<CudaStatus> {
                self.0.allocate(py, $pyname)
            }

            /// Copies the host array to the device.
            #[pyo3(signature = (stream = None))]
            fn to_device(&mut self, py: Python<'_>, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<CudaStatus> {
                self.0.to_device(py, stream, $pyname)
            }

            /// Copies the device data back into the host array.
            #[pyo3(signature = (stream = None))]
            fn to_host(&mut self, py: Python<'_>, stream: Option<&Bound<'_, CudaStream>>) -> PyResult<CudaStatus> {
                self.0.to_host(py, stream, $pyname)
            }

            /// PyGPU's host side: a safe pointer wrapper to the host array (readable with
            /// `get(i)`, keeps the array alive). The numpy array itself is `host_array()`.
            fn host_data(&self, py: Python<'_>) -> PyResult<$crate::python::ptr_wrapper::$ptr> {
                let host = self.0.host.bind(py);
                if !host.is_c_contiguous() {
                    return Err(PyValueError::new_err(concat!(
                        "the host array of this ",
                        $pyname,
                        " is not C-contiguous, so no pointer covers it: use host_array() for the numpy array"
                    )));
                }
                Ok($crate::python::ptr_wrapper::$ptr($crate::python::ptr_wrapper::Pointer {
                    address: host.data() as u64,
                    count: host.len(),
                    safe: true,
                    owner: Some(host.clone().into_any().unbind()),
                }))
            }

            /// The numpy array this object aliases (its host side).
            fn host_array(&self, py: Python<'_>) -> Py<numpy::PyArrayDyn<$t>> {
                self.0.host.clone_ref(py)
            }

            /// An unsafe pointer wrapper to the device side (keeps this array alive).
            fn device_data(slf: &Bound<'_, Self>) -> PyResult<$crate::python::ptr_wrapper::$ptr> {
                let ptr = slf.borrow().0.device.as_ref().map(|b| b.ptr()).ok_or_else(|| {
                    PyValueError::new_err(concat!("this ", $pyname, " has no device memory yet: call allocate() first"))
                })?;
                Ok($crate::python::ptr_wrapper::$ptr($crate::python::ptr_wrapper::Pointer::unsafe_device(
                    ptr,
                    Some(slf.clone().into_any().unbind()),
                )))
            }

            /// Elements of the host array (TypeError once its dtype was changed in place).
            fn size(&self, py: Python<'_>) -> PyResult<usize> {
                self.0.size(py, $pyname)
            }

            /// Bytes of the host array, as the device side holds them.
            fn nbytes(&self, py: Python<'_>) -> PyResult<usize> {
                self.0.nbytes(py, $pyname)
            }

            /// The host array's shape.
            fn shape(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
                self.0.shape(py, $pyname)
            }

            /// Strides in bytes of the C-contiguous device side.
            fn strides(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
                self.0.strides(py, $pyname)
            }

            /// Whether the device side exists (`allocate()` was called).
            fn allocated(&self) -> bool {
                self.0.device.is_some()
            }

            /// The status of the last call that touched the device (`allocate`, `to_device`, `to_host`).
            fn last_status(&self) -> CudaStatus {
                CudaStatus::from_code(self.0.last_status)
            }

            fn __repr__(&self, py: Python<'_>) -> String {
                format!("<{} shape={:?} allocated={}>", $pyname, self.0.raw_shape(py), self.0.device.is_some())
            }
        }
    };
}

/// One class per row of the dtype table.
macro_rules! device_array_of {
    ($t:ty, $name:ident, $pyname:literal, $ptr:ident, $ptrname:literal) => {
        device_array!($name, $pyname, $t, $ptr);
    };
}

crate::python::dtypes::for_each_dtype!(device_array_of);
