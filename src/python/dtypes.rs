//! The element types of the typed classes, listed once: each row gives the Rust element
//! type, the `DeviceArray_<dtype>` class and the `pointer_wrapper_<dtype>` class with their
//! Python names. `array` and `ptr_wrapper` generate their classes from this table; the
//! export list in `lib.rs` and the `.pyi` name the same classes.

/// Calls `$callback!(element type, array class, array name, pointer class, pointer name)`
/// for every dtype.
macro_rules! for_each_dtype {
    ($callback:ident) => {
        $callback!(i16, DeviceArrayInt16, "DeviceArray_int16", PointerWrapperInt16, "pointer_wrapper_int16");
        $callback!(i32, DeviceArrayInt32, "DeviceArray_int32", PointerWrapperInt32, "pointer_wrapper_int32");
        $callback!(i64, DeviceArrayInt64, "DeviceArray_int64", PointerWrapperInt64, "pointer_wrapper_int64");
        $callback!(u16, DeviceArrayUint16, "DeviceArray_uint16", PointerWrapperUint16, "pointer_wrapper_uint16");
        $callback!(u32, DeviceArrayUint32, "DeviceArray_uint32", PointerWrapperUint32, "pointer_wrapper_uint32");
        $callback!(u64, DeviceArrayUint64, "DeviceArray_uint64", PointerWrapperUint64, "pointer_wrapper_uint64");
        $callback!(f32, DeviceArrayFloat32, "DeviceArray_float32", PointerWrapperFloat32, "pointer_wrapper_float32");
        $callback!(f64, DeviceArrayFloat64, "DeviceArray_float64", PointerWrapperFloat64, "pointer_wrapper_float64");
        $callback!(
            num_complex::Complex32,
            DeviceArrayComplex64,
            "DeviceArray_complex64",
            PointerWrapperComplex64,
            "pointer_wrapper_complex64"
        );
        $callback!(
            num_complex::Complex64,
            DeviceArrayComplex128,
            "DeviceArray_complex128",
            PointerWrapperComplex128,
            "pointer_wrapper_complex128"
        );
    };
}

pub(crate) use for_each_dtype;
