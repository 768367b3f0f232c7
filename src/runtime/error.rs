//! Errors as plain Rust values. A backend call fails with the raw integer code the
//! backend returned (never an enum: a newer driver may return a code we have never
//! seen); the Python layer turns these into exceptions in one place.

use std::fmt;

use super::BackendKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A backend API returned a non-zero status.
    Api { code: i32, backend: BackendKind },
    /// A backend API failed and we know more than its code: a JIT log, the name looked
    /// for, the launch configuration.
    Detailed { code: i32, backend: BackendKind, detail: String },
    /// No usable backend: the driver library is missing, too old, or not compiled in.
    Unavailable(String),
    /// The caller passed something the API cannot act on; the text says what to change.
    InvalidArgument(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn api(code: i32, backend: BackendKind) -> Self {
        Error::Api { code, backend }
    }

    /// The status code as the runtime API reports it (0 is success).
    pub fn code(&self) -> i32 {
        match self {
            Error::Api { code, .. } | Error::Detailed { code, .. } => *code,
            Error::Unavailable(_) => CUDA_ERROR_INSUFFICIENT_DRIVER,
            Error::InvalidArgument(_) => CUDA_ERROR_INVALID_VALUE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api { code, backend } => {
                write!(f, "{} ({}): {}", error_name(*backend, *code), code, error_string(*backend, *code))
            }
            Error::Detailed { code, backend, detail } => write!(
                f,
                "{} ({}): {}{}{}",
                error_name(*backend, *code),
                code,
                error_string(*backend, *code),
                if detail.is_empty() { "" } else { "\n" },
                detail
            ),
            Error::Unavailable(msg) | Error::InvalidArgument(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

pub const CUDA_SUCCESS: i32 = 0;
pub const CUDA_ERROR_INVALID_VALUE: i32 = 1;
pub const CUDA_ERROR_MEMORY_ALLOCATION: i32 = 2;
pub const CUDA_ERROR_INSUFFICIENT_DRIVER: i32 = 35;
pub const CUDA_ERROR_NO_DEVICE: i32 = 100;
pub const CUDA_ERROR_INVALID_DEVICE: i32 = 101;
pub const CUDA_ERROR_INVALID_RESOURCE_HANDLE: i32 = 400;
pub const CUDA_ERROR_NOT_READY: i32 = 600;

/// The CUDA runtime's names and messages (driver_types.h). The driver API uses the same
/// numbers for these, so a driver status maps onto a runtime name directly; the host
/// backend reports the same codes.
const CUDA_ERRORS: &[(i32, &str, &str)] = &[
    (0, "cudaSuccess", "no error"),
    (1, "cudaErrorInvalidValue", "invalid argument"),
    (2, "cudaErrorMemoryAllocation", "out of memory"),
    (3, "cudaErrorInitializationError", "initialization error"),
    (4, "cudaErrorCudartUnloading", "driver shutting down"),
    (5, "cudaErrorProfilerDisabled", "profiler disabled while using external profiling tool"),
    (9, "cudaErrorInvalidConfiguration", "invalid configuration argument"),
    (12, "cudaErrorInvalidPitchValue", "invalid pitch argument"),
    (13, "cudaErrorInvalidSymbol", "invalid device symbol"),
    (17, "cudaErrorInvalidDevicePointer", "invalid device pointer"),
    (21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"),
    (34, "cudaErrorStubLibrary", "CUDA driver is a stub library"),
    (35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"),
    (36, "cudaErrorCallRequiresNewerDriver", "API call is not supported in the installed CUDA driver"),
    (46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"),
    (98, "cudaErrorInvalidDeviceFunction", "invalid device function"),
    (100, "cudaErrorNoDevice", "no CUDA-capable device is detected"),
    (101, "cudaErrorInvalidDevice", "invalid device ordinal"),
    (200, "cudaErrorInvalidKernelImage", "device kernel image is invalid"),
    (201, "cudaErrorDeviceUninitialized", "invalid device context"),
    (209, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device"),
    (218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed"),
    (222, "cudaErrorUnsupportedPtxVersion", "the provided PTX was compiled with an unsupported toolchain."),
    (300, "cudaErrorInvalidSource", "device kernel image is invalid"),
    (301, "cudaErrorFileNotFound", "file not found"),
    (400, "cudaErrorInvalidResourceHandle", "invalid resource handle"),
    (401, "cudaErrorIllegalState", "the operation cannot be performed in the present state"),
    (500, "cudaErrorSymbolNotFound", "named symbol not found"),
    (600, "cudaErrorNotReady", "device not ready"),
    (700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"),
    (701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"),
    (702, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"),
    (709, "cudaErrorContextIsDestroyed", "context is destroyed"),
    (710, "cudaErrorAssert", "device-side assert triggered"),
    (715, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"),
    (716, "cudaErrorMisalignedAddress", "misaligned address"),
    (719, "cudaErrorLaunchFailure", "unspecified launch failure"),
    (720, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"),
    (800, "cudaErrorNotPermitted", "operation not permitted"),
    (801, "cudaErrorNotSupported", "operation not supported"),
    (900, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"),
    (901, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"),
    (
        906,
        "cudaErrorStreamCaptureImplicit",
        "operation would make the legacy stream depend on a capturing blocking stream",
    ),
    (909, "cudaErrorTimeout", "wait operation timed out"),
    (999, "cudaErrorUnknown", "unknown error"),
];

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
