//! Errors as plain Rust values. A backend call fails with the raw integer code the
//! backend returned (never an enum: a newer driver may return a code we have never
//! seen); the Python layer turns these into exceptions in one place.

use std::fmt;

use super::BackendKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A backend API returned a non-zero status; `detail` is what we know beyond the code,
    /// where we know more: a JIT log, the name looked for, the launch configuration.
    Api { code: i32, backend: BackendKind, detail: Option<String> },
    /// No usable backend: the driver library is missing, too old, or not compiled in.
    Unavailable(String),
    /// The caller passed something the API cannot act on; the text says what to change.
    InvalidArgument(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn api(code: i32, backend: BackendKind) -> Self {
        Error::Api { code, backend, detail: None }
    }

    pub fn detailed(code: i32, backend: BackendKind, detail: impl Into<String>) -> Self {
        Error::Api { code, backend, detail: Some(detail.into()) }
    }

    /// This error with `more` added to what it says (a status code's error only; the others
    /// already say everything in their text).
    pub fn with_detail(self, more: String) -> Self {
        match self {
            Error::Api { code, backend, detail: None } => Error::detailed(code, backend, more),
            Error::Api { code, backend, detail: Some(detail) } => {
                Error::detailed(code, backend, format!("{detail}\n{more}"))
            }
            other => other,
        }
    }

    /// The status code as the runtime API reports it (0 is success).
    pub fn code(&self) -> i32 {
        match self {
            Error::Api { code, .. } => *code,
            Error::Unavailable(_) => CUDA_ERROR_INSUFFICIENT_DRIVER,
            Error::InvalidArgument(_) => CUDA_ERROR_INVALID_VALUE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api { code, backend, detail } => {
                write!(f, "{} ({}): {}", error_name(*backend, *code), code, error_string(*backend, *code))?;
                match detail.as_deref() {
                    Some(detail) if !detail.is_empty() => write!(f, "\n{detail}"),
                    _ => Ok(()),
                }
            }
            Error::Unavailable(msg) | Error::InvalidArgument(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

/// Declares each code once: its constant, its runtime name and its message, in `CUDA_ERRORS`.
macro_rules! error_codes {
    ($($constant:ident = $code:literal, $name:literal, $message:literal;)*) => {
        $(pub const $constant: i32 = $code;)*

        /// The CUDA runtime's names and messages (driver_types.h). The driver API uses the same
        /// numbers for these, so a driver status maps onto a runtime name directly; the host
        /// backend reports the same codes, and HIP numbers its common ones alike.
        pub const CUDA_ERRORS: &[(i32, &str, &str)] = &[$(($code, $name, $message),)*];
    };
}

error_codes! {
    CUDA_SUCCESS = 0, "cudaSuccess", "no error";
    CUDA_ERROR_INVALID_VALUE = 1, "cudaErrorInvalidValue", "invalid argument";
    CUDA_ERROR_MEMORY_ALLOCATION = 2, "cudaErrorMemoryAllocation", "out of memory";
    CUDA_ERROR_INITIALIZATION_ERROR = 3, "cudaErrorInitializationError", "initialization error";
    CUDA_ERROR_CUDART_UNLOADING = 4, "cudaErrorCudartUnloading", "driver shutting down";
    CUDA_ERROR_PROFILER_DISABLED = 5, "cudaErrorProfilerDisabled", "profiler disabled while using external profiling tool";
    CUDA_ERROR_INVALID_CONFIGURATION = 9, "cudaErrorInvalidConfiguration", "invalid configuration argument";
    CUDA_ERROR_INVALID_PITCH_VALUE = 12, "cudaErrorInvalidPitchValue", "invalid pitch argument";
    CUDA_ERROR_INVALID_SYMBOL = 13, "cudaErrorInvalidSymbol", "invalid device symbol";
    CUDA_ERROR_INVALID_DEVICE_POINTER = 17, "cudaErrorInvalidDevicePointer", "invalid device pointer";
    CUDA_ERROR_INVALID_MEMCPY_DIRECTION = 21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy";
    CUDA_ERROR_STUB_LIBRARY = 34, "cudaErrorStubLibrary", "CUDA driver is a stub library";
    CUDA_ERROR_INSUFFICIENT_DRIVER = 35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version";
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36, "cudaErrorCallRequiresNewerDriver", "API call is not supported in the installed CUDA driver";
    CUDA_ERROR_DEVICES_UNAVAILABLE = 46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable";
    CUDA_ERROR_INVALID_DEVICE_FUNCTION = 98, "cudaErrorInvalidDeviceFunction", "invalid device function";
    CUDA_ERROR_NO_DEVICE = 100, "cudaErrorNoDevice", "no CUDA-capable device is detected";
    CUDA_ERROR_INVALID_DEVICE = 101, "cudaErrorInvalidDevice", "invalid device ordinal";
    CUDA_ERROR_INVALID_KERNEL_IMAGE = 200, "cudaErrorInvalidKernelImage", "device kernel image is invalid";
    CUDA_ERROR_DEVICE_UNINITIALIZED = 201, "cudaErrorDeviceUninitialized", "invalid device context";
    CUDA_ERROR_NO_KERNEL_IMAGE_FOR_DEVICE = 209, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device";
    CUDA_ERROR_UNSUPPORTED_LIMIT = 215, "cudaErrorUnsupportedLimit", "limit is not supported on this architecture";
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217, "cudaErrorPeerAccessUnsupported", "peer access is not supported between these two devices";
    CUDA_ERROR_INVALID_PTX = 218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed";
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222, "cudaErrorUnsupportedPtxVersion", "the provided PTX was compiled with an unsupported toolchain.";
    CUDA_ERROR_INVALID_SOURCE = 300, "cudaErrorInvalidSource", "device kernel image is invalid";
    CUDA_ERROR_FILE_NOT_FOUND = 301, "cudaErrorFileNotFound", "file not found";
    CUDA_ERROR_INVALID_RESOURCE_HANDLE = 400, "cudaErrorInvalidResourceHandle", "invalid resource handle";
    CUDA_ERROR_ILLEGAL_STATE = 401, "cudaErrorIllegalState", "the operation cannot be performed in the present state";
    CUDA_ERROR_SYMBOL_NOT_FOUND = 500, "cudaErrorSymbolNotFound", "named symbol not found";
    CUDA_ERROR_NOT_READY = 600, "cudaErrorNotReady", "device not ready";
    CUDA_ERROR_ILLEGAL_ADDRESS = 700, "cudaErrorIllegalAddress", "an illegal memory access was encountered";
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch";
    CUDA_ERROR_LAUNCH_TIMEOUT = 702, "cudaErrorLaunchTimeout", "the launch timed out and was terminated";
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled";
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705, "cudaErrorPeerAccessNotEnabled", "peer access has not been enabled";
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709, "cudaErrorContextIsDestroyed", "context is destroyed";
    CUDA_ERROR_ASSERT = 710, "cudaErrorAssert", "device-side assert triggered";
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped";
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region";
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715, "cudaErrorIllegalInstruction", "an illegal instruction was encountered";
    CUDA_ERROR_MISALIGNED_ADDRESS = 716, "cudaErrorMisalignedAddress", "misaligned address";
    CUDA_ERROR_LAUNCH_FAILURE = 719, "cudaErrorLaunchFailure", "unspecified launch failure";
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch";
    CUDA_ERROR_NOT_PERMITTED = 800, "cudaErrorNotPermitted", "operation not permitted";
    CUDA_ERROR_NOT_SUPPORTED = 801, "cudaErrorNotSupported", "operation not supported";
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing";
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture";
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903, "cudaErrorStreamCaptureUnmatched", "capture was not initiated in this stream";
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream";
    CUDA_ERROR_TIMEOUT = 909, "cudaErrorTimeout", "wait operation timed out";
    CUDA_ERROR_UNKNOWN = 999, "cudaErrorUnknown", "unknown error";
}

fn cuda_entry(code: i32) -> Option<&'static (i32, &'static str, &'static str)> {
    CUDA_ERRORS.iter().find(|(c, _, _)| *c == code)
}

/// `cudaErrorInvalidDevice` for 101; codes outside the table keep their number visible.
pub fn error_name(backend: BackendKind, code: i32) -> String {
    if let Some(name) = super::backend_error_name(backend, code) {
        return name;
    }
    match cuda_entry(code) {
        Some((_, name, _)) => (*name).to_string(),
        None => format!("cudaErrorUnrecognized{code}"),
    }
}

pub fn error_string(backend: BackendKind, code: i32) -> String {
    if let Some(text) = super::backend_error_string(backend, code) {
        return text;
    }
    match cuda_entry(code) {
        Some((_, _, text)) => (*text).to_string(),
        None => format!("unrecognized error code {code}"),
    }
}

pub(crate) fn known_code(code: i32) -> bool {
    cuda_entry(code).is_some()
}

thread_local! {
    static LAST_ERROR: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

/// Remembers a failed call's code for `cudaGetLastError`, as the runtime API does; also
/// where destructors put the errors they may not raise.
pub fn record_error(code: i32) {
    if code != 0 {
        LAST_ERROR.with(|e| e.set(code));
    }
}

/// The last recorded code; `reset` clears it (cudaGetLastError) or not (cudaPeekAtLastError).
pub fn last_error(reset: bool) -> i32 {
    LAST_ERROR.with(|e| if reset { e.replace(0) } else { e.get() })
}
