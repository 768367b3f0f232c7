//! The HIP backend over the HIP runtime API (libamdhip64), compiled only with the `hip`
//! cargo feature. HIP's runtime already has the model the `Backend` traits describe —
//! one current device per host thread (hipSetDevice/hipGetDevice), each device's
//! primary context, a legacy null stream — so this is a thin, direct mapping.
//!
//! Why our own `extern` block instead of calling hip-runtime-sys's functions:
//! hip-runtime-sys 0.1.2 declares `hipError_t` as a Rust `#[repr(u32)] enum` (bindgen's
//! "rustified" enums; `#[non_exhaustive]` does not help here) and every function as
//! returning it. A library newer than the bindings may return a code that is not a
//! variant, and merely receiving such a value as that enum is undefined behaviour. So we
//! declare the few entry points we use with a raw `c_int` return (the C ABI of a C enum),
//! linking to the same `amdhip64`, and keep the crate for the pieces that are safe to
//! share: the handle and pointer types, `hipUUID`, and the enums we only ever *pass in*
//! (`hipMemcpyKind`, `hipDeviceAttribute_t`), whose values we choose ourselves.
//!
//! hipGetDeviceProperties is deliberately not used: `hipDeviceProp_t`'s layout changed
//! between ROCm releases (ROCm 6 renames the entry point to hipGetDevicePropertiesR0600
//! through a header macro), so a struct from bindings generated for another release could
//! be smaller than what the library writes. Individual queries
//! (hipDeviceGetName/Uuid/TotalMem/Attribute) have stable C signatures.
//!
//! Note: hip-runtime-sys links libamdhip64 at build time, so a build with `hip` needs the
//! ROCm runtime library present when the extension is loaded, GPU or not.

use std::ffi::{c_char, c_int, c_ushort, c_void, CStr};
use std::ptr::null_mut;

use super::pitched::PitchedCopy;
use super::{
    kernel::symbol_name, FunctionAttribute, FunctionHandle, GraphExecHandle, GraphHandle, KernelArgs, LaunchConfig,
    MemsetValue, ModuleHandle,
};
use super::{
    Backend, BackendKind, DeviceProperties, DevicePtr, Error, EventHandle, Result, StreamHandle, IPC_HANDLE_BYTES,
};
use super::{DeviceMemory, Devices, Graphs, HostMemory, Interprocess, Kernels, PeerAccess, PooledMemory, Streams};

mod attributes;
mod backend;
mod devices;
mod graphs;
mod host_memory;
mod ipc;
mod kernels;
mod memory;
mod streams;
pub(crate) mod sys;

use sys::*;
// HIP numbers these as CUDA does.
use super::error::{
    CUDA_ERROR_INVALID_VALUE as HIP_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_READY as HIP_ERROR_NOT_READY,
    CUDA_ERROR_NOT_SUPPORTED as HIP_ERROR_NOT_SUPPORTED, CUDA_ERROR_UNKNOWN as HIP_ERROR_UNKNOWN,
};

/// HIP's messages for the common codes. Some ROCm releases (5.2, which Debian bookworm
/// ships, for one) return the error's name from hipGetErrorString too; then we use these,
/// the wording of newer ROCm releases.
const HIP_MESSAGES: &[(c_int, &str)] = &[
    (0, "no error"),
    (1, "invalid argument"),
    (2, "out of memory"),
    (3, "initialization error"),
    (4, "driver shutting down"),
    (17, "invalid device pointer"),
    (21, "invalid copy direction for memcpy"),
    (35, "driver version is insufficient for runtime version"),
    (98, "invalid device function"),
    (100, "no ROCm-capable device is detected"),
    (101, "invalid device ordinal"),
    (200, "device kernel image is invalid"),
    (201, "invalid device context"),
    (209, "no kernel image is available for execution on the device"),
    (400, "invalid resource handle"),
    (401, "the operation cannot be performed in the present state"),
    (500, "named symbol not found"),
    (600, "device not ready"),
    (700, "an illegal memory access was encountered"),
    (701, "too many resources requested for launch"),
    (702, "the launch timed out and was terminated"),
    (709, "context is destroyed"),
    (710, "device-side assert triggered"),
    (719, "unspecified launch failure"),
    (720, "too many blocks in cooperative launch"),
    (801, "operation not supported"),
    (999, "unknown error"),
];

/// The HIP runtime; all its state (current device, contexts, streams) is the library's.
pub struct HipBackend {
    /// hipRuntimeGetVersion's answer, e.g. 50221153 for ROCm 5.2.
    runtime_version: i32,
}

fn check(code: c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::api(code, BackendKind::Hip))
    }
}

fn stream(s: Option<StreamHandle>) -> hipStream_t {
    s.map_or(null_mut(), |s| s.0 as hipStream_t)
}

fn dev_ptr(p: DevicePtr) -> *mut c_void {
    p as usize as *mut c_void
}

/// Copies a string the HIP runtime hands back.
/// # Safety
/// `text` is null or points to a NUL-terminated string that outlives the call.
unsafe fn static_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated, as our caller vouches.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

impl HipBackend {
    /// Succeeds whenever the HIP runtime answers, even with no AMD GPU: device calls then
    /// report HIP's own error (hipErrorNoDevice from device_count), as the runtime does.
    pub fn new() -> Result<Self> {
        let mut version: c_int = 0;
        // SAFETY: valid out-pointer; needs no device and no initialised context.
        let status = unsafe { hipRuntimeGetVersion(&mut version) };
        if status != 0 {
            return Err(Error::Unavailable(format!(
                "the HIP runtime (libamdhip64) is not usable: hipRuntimeGetVersion failed with {} ({status}); \
                 check the ROCm installation, or use another backend",
                Self::name_of(status)
            )));
        }
        Ok(HipBackend { runtime_version: version })
    }

    /// hipRuntimeGetVersion's value (HIP_VERSION: major * 10^7 + minor * 10^5 + patch).
    pub fn runtime_version(&self) -> i32 {
        self.runtime_version
    }

    fn name_of(code: c_int) -> String {
        // SAFETY: hipGetErrorName accepts any value (unknown ones map to "hipErrorUnknown")
        // and returns a static NUL-terminated literal, which static_text may read.
        let name = unsafe { static_text(hipGetErrorName(code)) };
        match name {
            // Keep the number of a code this runtime does not know visible, as error.rs does.
            Some(n) if n == "hipErrorUnknown" && code != HIP_ERROR_UNKNOWN => format!("hipErrorUnrecognized{code}"),
            Some(n) => n,
            None => format!("hipErrorUnrecognized{code}"),
        }
    }

    fn string_of(code: c_int) -> String {
        let name = Self::name_of(code);
        if name.starts_with("hipErrorUnrecognized") {
            return format!("unrecognized error code {code}");
        }
        // SAFETY: hipGetErrorString accepts any value and returns a static NUL-terminated
        // literal, which static_text may read.
        let text = unsafe { static_text(hipGetErrorString(code)) };
        match text {
            // Older ROCm answers with the name again; prefer a real message where we have one.
            Some(t) if t != name => t,
            other => {
                HIP_MESSAGES.iter().find(|(c, _)| *c == code).map(|(_, m)| (*m).to_string()).or(other).unwrap_or(name)
            }
        }
    }

    fn attribute(&self, attr: hipDeviceAttribute_t, device: c_int) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: valid out-pointer; attr is a variant of the crate's enum, whose values
        // match the library's header for the attributes we query; the runtime validates device.
        check(unsafe { hipDeviceGetAttribute(&mut value, attr, device) })?;
        Ok(value)
    }

    /// Synchronous when `s` is None (hipMemcpy), else ordered on the stream.
    /// # Safety
    /// Whichever of `dst`/`src` is a host pointer (per `kind`) is valid for `bytes` until
    /// the copy has completed.
    unsafe fn memcpy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        kind: hipMemcpyKind,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        // SAFETY: our caller vouches for the host side; the runtime validates device
        // addresses and the stream handle.
        check(unsafe {
            match s {
                None => hipMemcpy(dst, src, bytes, kind),
                Some(_) => hipMemcpyAsync(dst, src, bytes, kind, stream(s)),
            }
        })
    }
}

#[cfg(test)]
mod tests;
