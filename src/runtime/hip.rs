//! The HIP backend over the HIP runtime API (libamdhip64), compiled only with the `hip`
//! cargo feature. HIP's runtime already has the model the `Backend` trait describes —
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

use std::ffi::{c_char, c_int, c_uint, c_ushort, c_void, CStr};
use std::ptr::null_mut;

use hip_runtime_sys::{
    hipDeviceAttribute_t, hipDevice_t, hipEvent_t, hipFunction_t, hipGraphExec_t, hipGraph_t, hipMemcpyKind,
    hipModule_t, hipStream_t, hipUUID,
};

use super::cuda::symbol_name;
use super::kernel::{
    FunctionAttribute, FunctionHandle, GraphExecHandle, GraphHandle, KernelArgs, LaunchConfig, ModuleHandle,
};
use super::{Backend, BackendKind, DeviceProperties, DevicePtr, Error, EventHandle, Result, StreamHandle};

/// The raw FFI. Every function returns its `hipError_t` as a plain `c_int` (see the
/// module comment). Signatures follow hip_runtime_api.h (checked against ROCm 5.2's
/// header and hip-runtime-sys 0.1.2's bindings).
mod ffi {
    use super::*;

    pub const HIP_ERROR_NOT_READY: c_int = 600;
    pub const HIP_ERROR_NOT_SUPPORTED: c_int = 801;
    pub const HIP_ERROR_UNKNOWN: c_int = 999;
    /// hipHostMallocPortable: pinned for every device, as cudaMallocHost's memory is.
    pub const HIP_HOST_MALLOC_PORTABLE: c_uint = 0x1;

    #[link(name = "amdhip64")]
    unsafe extern "C" {
        pub fn hipRuntimeGetVersion(version: *mut c_int) -> c_int;
        // Take the code as c_int: the C functions take a C enum, which is an int.
        pub fn hipGetErrorName(code: c_int) -> *const c_char;
        pub fn hipGetErrorString(code: c_int) -> *const c_char;

        pub fn hipGetDeviceCount(count: *mut c_int) -> c_int;
        pub fn hipSetDevice(device: c_int) -> c_int;
        pub fn hipGetDevice(device: *mut c_int) -> c_int;
        pub fn hipDeviceSynchronize() -> c_int;
        pub fn hipDeviceGet(device: *mut hipDevice_t, ordinal: c_int) -> c_int;
        pub fn hipDeviceGetName(name: *mut c_char, len: c_int, device: hipDevice_t) -> c_int;
        pub fn hipDeviceGetUuid(uuid: *mut hipUUID, device: hipDevice_t) -> c_int;
        pub fn hipDeviceTotalMem(bytes: *mut usize, device: hipDevice_t) -> c_int;
        pub fn hipDeviceGetAttribute(value: *mut c_int, attr: hipDeviceAttribute_t, device: c_int) -> c_int;
        pub fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> c_int;

        pub fn hipMalloc(ptr: *mut *mut c_void, bytes: usize) -> c_int;
        pub fn hipFree(ptr: *mut c_void) -> c_int;
        pub fn hipHostMalloc(ptr: *mut *mut c_void, bytes: usize, flags: c_uint) -> c_int;
        pub fn hipHostFree(ptr: *mut c_void) -> c_int;
        pub fn hipMemcpy(dst: *mut c_void, src: *const c_void, bytes: usize, kind: hipMemcpyKind) -> c_int;
        pub fn hipMemcpyAsync(
            dst: *mut c_void,
            src: *const c_void,
            bytes: usize,
            kind: hipMemcpyKind,
            stream: hipStream_t,
        ) -> c_int;
        pub fn hipMemsetD8Async(dst: *mut c_void, value: u8, count: usize, stream: hipStream_t) -> c_int;
        pub fn hipMemsetD16Async(dst: *mut c_void, value: c_ushort, count: usize, stream: hipStream_t) -> c_int;
        pub fn hipMemsetD32Async(dst: *mut c_void, value: c_int, count: usize, stream: hipStream_t) -> c_int;

        pub fn hipStreamCreateWithFlags(stream: *mut hipStream_t, flags: c_uint) -> c_int;
        pub fn hipStreamDestroy(stream: hipStream_t) -> c_int;
        pub fn hipStreamSynchronize(stream: hipStream_t) -> c_int;
        pub fn hipStreamQuery(stream: hipStream_t) -> c_int;
        pub fn hipStreamWaitEvent(stream: hipStream_t, event: hipEvent_t, flags: c_uint) -> c_int;

        pub fn hipEventCreateWithFlags(event: *mut hipEvent_t, flags: c_uint) -> c_int;
        pub fn hipEventDestroy(event: hipEvent_t) -> c_int;
        pub fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> c_int;
        pub fn hipEventSynchronize(event: hipEvent_t) -> c_int;
        pub fn hipEventQuery(event: hipEvent_t) -> c_int;
        pub fn hipEventElapsedTime(ms: *mut f32, start: hipEvent_t, stop: hipEvent_t) -> c_int;

        pub fn hipModuleLoadData(module: *mut hipModule_t, image: *const c_void) -> c_int;
        pub fn hipModuleUnload(module: hipModule_t) -> c_int;
        pub fn hipModuleGetFunction(function: *mut hipFunction_t, module: hipModule_t, name: *const c_char) -> c_int;
        pub fn hipModuleGetGlobal(
            ptr: *mut *mut c_void,
            bytes: *mut usize,
            module: hipModule_t,
            name: *const c_char,
        ) -> c_int;
        // Enum parameters and out-values as c_int, for the reason in the module comment.
        pub fn hipFuncGetAttribute(value: *mut c_int, attribute: c_int, function: hipFunction_t) -> c_int;
        pub fn hipModuleOccupancyMaxPotentialBlockSize(
            grid: *mut c_int,
            block: *mut c_int,
            function: hipFunction_t,
            dynamic_shared: usize,
            block_limit: c_int,
        ) -> c_int;
        pub fn hipModuleLaunchKernel(
            function: hipFunction_t,
            gx: c_uint,
            gy: c_uint,
            gz: c_uint,
            bx: c_uint,
            by: c_uint,
            bz: c_uint,
            shared: c_uint,
            stream: hipStream_t,
            params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> c_int;
        pub fn hipStreamBeginCapture(stream: hipStream_t, mode: c_int) -> c_int;
        pub fn hipStreamEndCapture(stream: hipStream_t, graph: *mut hipGraph_t) -> c_int;
        pub fn hipStreamIsCapturing(stream: hipStream_t, status: *mut c_int) -> c_int;
        pub fn hipGraphInstantiate(
            exec: *mut hipGraphExec_t,
            graph: hipGraph_t,
            error_node: *mut c_void,
            log: *mut c_char,
            log_bytes: usize,
        ) -> c_int;
        pub fn hipGraphLaunch(exec: hipGraphExec_t, stream: hipStream_t) -> c_int;
        pub fn hipGraphDestroy(graph: hipGraph_t) -> c_int;
        pub fn hipGraphExecDestroy(exec: hipGraphExec_t) -> c_int;
    }
}

use ffi::*;

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

impl Backend for HipBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Hip
    }

    fn device_count(&self) -> Result<i32> {
        let mut count: c_int = 0;
        // SAFETY: valid out-pointer. With no AMD GPU this returns hipErrorNoDevice (100).
        check(unsafe { hipGetDeviceCount(&mut count) })?;
        Ok(count)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        // SAFETY: plain runtime call; the runtime validates the ordinal.
        check(unsafe { hipSetDevice(device) })
    }

    fn get_device(&self) -> Result<i32> {
        let mut device: c_int = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipGetDevice(&mut device) })?;
        Ok(device)
    }

    fn device_synchronize(&self) -> Result<()> {
        // SAFETY: plain runtime call on the calling thread's current device.
        check(unsafe { hipDeviceSynchronize() })
    }

    fn device_properties(&self, device: i32) -> Result<DeviceProperties> {
        let mut dev: hipDevice_t = 0;
        // SAFETY: valid out-pointer; the runtime validates the ordinal.
        check(unsafe { hipDeviceGet(&mut dev, device) })?;
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds 256 bytes, we pass one less than that so the last byte
        // stays 0 whatever the runtime writes.
        check(unsafe { hipDeviceGetName(name.as_mut_ptr(), (name.len() - 1) as c_int, dev) })?;
        // SAFETY: NUL-terminated within the buffer (its last byte is still 0).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut uuid = hipUUID { bytes: [0; 16] };
        // SAFETY: valid out-pointer to a 16-byte hipUUID.
        let uuid = match unsafe { hipDeviceGetUuid(&mut uuid, dev) } {
            0 => uuid.bytes.map(|b| b as u8),
            // Some devices/runtimes have no UUID to report; leave it zero as CUDA would
            // for a device without one, rather than failing the whole query.
            HIP_ERROR_NOT_SUPPORTED => [0; 16],
            code => return Err(Error::api(code, BackendKind::Hip)),
        };
        let mut total: usize = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { hipDeviceTotalMem(&mut total, dev) })?;
        use hipDeviceAttribute_t::*;
        Ok(DeviceProperties {
            name,
            uuid,
            pci_bus_id: self.attribute(hipDeviceAttributePciBusId, device)?,
            pci_device_id: self.attribute(hipDeviceAttributePciDeviceId, device)?,
            pci_domain_id: self.attribute(hipDeviceAttributePciDomainID, device)?,
            total_global_mem: total,
            major: self.attribute(hipDeviceAttributeComputeCapabilityMajor, device)?,
            minor: self.attribute(hipDeviceAttributeComputeCapabilityMinor, device)?,
            multi_processor_count: self.attribute(hipDeviceAttributeMultiprocessorCount, device)?,
        })
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers; applies to the current device.
        check(unsafe { hipMemGetInfo(&mut free, &mut total) })?;
        Ok((free, total))
    }

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { hipMalloc(&mut ptr, bytes) })?;
        Ok(ptr as usize as DevicePtr)
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        // SAFETY: the caller hands over an allocation of ours; the runtime rejects others.
        check(unsafe { hipFree(dev_ptr(ptr)) })
    }

    fn host_alloc(&self, bytes: usize) -> Result<*mut u8> {
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: valid out-pointer; at least one byte so the pointer is a real allocation.
        check(unsafe { hipHostMalloc(&mut ptr, bytes.max(1), HIP_HOST_MALLOC_PORTABLE) })?;
        Ok(ptr as *mut u8)
    }

    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        // SAFETY: the caller hands over memory from host_alloc.
        check(unsafe { hipHostFree(ptr as *mut c_void) })
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: *const u8, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for src, which is all memcpy asks.
        unsafe { self.memcpy(dev_ptr(dst), src as *const c_void, bytes, hipMemcpyKind::hipMemcpyHostToDevice, s) }
    }

    unsafe fn memcpy_dtoh(&self, dst: *mut u8, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for dst, which is all memcpy asks.
        unsafe { self.memcpy(dst as *mut c_void, dev_ptr(src), bytes, hipMemcpyKind::hipMemcpyDeviceToHost, s) }
    }

    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: Option<StreamHandle>) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: no host memory is involved; the runtime validates both device addresses.
        unsafe { self.memcpy(dev_ptr(dst), dev_ptr(src), bytes, hipMemcpyKind::hipMemcpyDeviceToDevice, s) }
    }

    fn memset(
        &self,
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
        s: Option<StreamHandle>,
    ) -> Result<()> {
        if !matches!(element_size, 1 | 2 | 4) {
            return Err(Error::InvalidArgument(format!("memset element size must be 1, 2 or 4, not {element_size}")));
        }
        if count == 0 {
            return Ok(());
        }
        let d = dev_ptr(dst);
        // SAFETY: only device addresses and a stream handle, which the runtime validates.
        check(unsafe {
            match element_size {
                1 => hipMemsetD8Async(d, value as u8, count, stream(s)),
                2 => hipMemsetD16Async(d, value as c_ushort, count, stream(s)),
                // Same 32 bits, as the C signature takes an int.
                _ => hipMemsetD32Async(d, value as c_int, count, stream(s)),
            }
        })?;
        if s.is_none() {
            // Synchronous semantics, as cudaMemset on the default stream is to the host.
            // SAFETY: the null stream always exists.
            check(unsafe { hipStreamSynchronize(null_mut()) })?;
        }
        Ok(())
    }

    fn stream_create(&self, flags: u32) -> Result<StreamHandle> {
        let mut s: hipStream_t = null_mut();
        // SAFETY: valid out-pointer; hipStreamNonBlocking is 0x1 like STREAM_NON_BLOCKING.
        check(unsafe { hipStreamCreateWithFlags(&mut s, flags) })?;
        Ok(StreamHandle(s as usize))
    }

    unsafe fn stream_destroy(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the caller hands over a live stream of ours.
        check(unsafe { hipStreamDestroy(s.0 as hipStream_t) })
    }

    fn stream_synchronize(&self, s: StreamHandle) -> Result<()> {
        // SAFETY: the handle is one of ours (the Python layer keeps it alive) or null.
        check(unsafe { hipStreamSynchronize(s.0 as hipStream_t) })
    }

    fn stream_query(&self, s: StreamHandle) -> Result<bool> {
        // SAFETY: as above.
        match unsafe { hipStreamQuery(s.0 as hipStream_t) } {
            0 => Ok(true),
            HIP_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Hip)),
        }
    }

    fn stream_wait_event(&self, s: StreamHandle, e: EventHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipStreamWaitEvent(s.0 as hipStream_t, e.0 as hipEvent_t, 0) })
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        let mut e: hipEvent_t = null_mut();
        // SAFETY: valid out-pointer; hipEventBlockingSync/DisableTiming have CUDA's values.
        check(unsafe { hipEventCreateWithFlags(&mut e, flags) })?;
        Ok(EventHandle(e as usize))
    }

    unsafe fn event_destroy(&self, e: EventHandle) -> Result<()> {
        // SAFETY: the caller hands over a live event of ours.
        check(unsafe { hipEventDestroy(e.0 as hipEvent_t) })
    }

    fn event_record(&self, e: EventHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipEventRecord(e.0 as hipEvent_t, s.0 as hipStream_t) })
    }

    fn event_synchronize(&self, e: EventHandle) -> Result<()> {
        // SAFETY: a live handle of ours.
        check(unsafe { hipEventSynchronize(e.0 as hipEvent_t) })
    }

    fn event_query(&self, e: EventHandle) -> Result<bool> {
        // SAFETY: a live handle of ours.
        match unsafe { hipEventQuery(e.0 as hipEvent_t) } {
            0 => Ok(true),
            HIP_ERROR_NOT_READY => Ok(false),
            code => Err(Error::api(code, BackendKind::Hip)),
        }
    }

    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let mut ms: f32 = 0.0;
        // SAFETY: valid out-pointer; live handles of ours.
        check(unsafe { hipEventElapsedTime(&mut ms, start.0 as hipEvent_t, end.0 as hipEvent_t) })?;
        Ok(ms)
    }

    fn module_load(&self, image: &[u8]) -> Result<ModuleHandle> {
        let mut module: hipModule_t = null_mut();
        // SAFETY: image is a readable code object; HIP copies what it needs before returning.
        let code = unsafe { hipModuleLoadData(&mut module, image.as_ptr() as *const c_void) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Hip,
                detail: "the HSACO code object did not load (is it built for this GPU's architecture?)".to_string(),
            });
        }
        Ok(ModuleHandle(module as usize))
    }

    unsafe fn module_unload(&self, module: ModuleHandle) -> Result<()> {
        // SAFETY: the caller hands over a live module that nothing uses afterwards.
        check(unsafe { hipModuleUnload(module.0 as hipModule_t) })
    }

    fn module_get_function(&self, module: ModuleHandle, name: &str) -> Result<FunctionHandle> {
        let cname = symbol_name(name)?;
        let mut function: hipFunction_t = null_mut();
        // SAFETY: live module, NUL-terminated name, valid out-pointer.
        let code = unsafe { hipModuleGetFunction(&mut function, module.0 as hipModule_t, cname.as_ptr()) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Hip,
                detail: format!("no kernel named {name:?} in this module"),
            });
        }
        Ok(FunctionHandle(function as usize))
    }

    fn module_get_global(&self, module: ModuleHandle, name: &str) -> Result<(DevicePtr, usize)> {
        let cname = symbol_name(name)?;
        let (mut ptr, mut bytes): (*mut c_void, usize) = (null_mut(), 0);
        // SAFETY: live module, NUL-terminated name, valid out-pointers.
        let code = unsafe { hipModuleGetGlobal(&mut ptr, &mut bytes, module.0 as hipModule_t, cname.as_ptr()) };
        if code != 0 {
            return Err(Error::Detailed {
                code,
                backend: BackendKind::Hip,
                detail: format!("no global named {name:?} in this module"),
            });
        }
        Ok((ptr as DevicePtr, bytes))
    }

    fn function_attribute(&self, function: FunctionHandle, attribute: FunctionAttribute) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: live function, valid out-pointer; the attribute numbers match HIP's.
        check(unsafe { hipFuncGetAttribute(&mut value, attribute as c_int, function.0 as hipFunction_t) })?;
        Ok(value)
    }

    fn max_potential_block_size(
        &self,
        function: FunctionHandle,
        dynamic_shared: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        let (mut grid, mut block): (c_int, c_int) = (0, 0);
        // SAFETY: live function, valid out-pointers.
        check(unsafe {
            hipModuleOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                function.0 as hipFunction_t,
                dynamic_shared,
                block_limit,
            )
        })?;
        Ok((grid, block))
    }

    unsafe fn launch_kernel(
        &self,
        function: FunctionHandle,
        config: &LaunchConfig,
        s: StreamHandle,
        args: &KernelArgs,
    ) -> Result<()> {
        let mut pointers = args.pointers();
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        // SAFETY: the caller vouches that args match the kernel; HIP copies the values
        // before returning.
        check(unsafe {
            hipModuleLaunchKernel(
                function.0 as hipFunction_t,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                config.shared_bytes,
                stream(Some(s)),
                if pointers.is_empty() { null_mut() } else { pointers.as_mut_ptr() },
                null_mut(),
            )
        })
    }

    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()> {
        // hipStreamCaptureModeThreadLocal = 1, as in CUDA.
        // SAFETY: a live stream of ours.
        check(unsafe { hipStreamBeginCapture(stream(Some(s)), 1) })
    }

    fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle> {
        let mut graph: hipGraph_t = null_mut();
        // SAFETY: a live stream, valid out-pointer.
        check(unsafe { hipStreamEndCapture(stream(Some(s)), &mut graph) })?;
        Ok(GraphHandle(graph as usize))
    }

    fn stream_is_capturing(&self, s: StreamHandle) -> Result<bool> {
        let mut status: c_int = 0;
        // SAFETY: a live stream, valid out-pointer.
        check(unsafe { hipStreamIsCapturing(stream(Some(s)), &mut status) })?;
        Ok(status != 0)
    }

    fn graph_instantiate(&self, graph: GraphHandle) -> Result<GraphExecHandle> {
        let mut exec: hipGraphExec_t = null_mut();
        // SAFETY: a live graph, valid out-pointer, no error node or log requested.
        check(unsafe { hipGraphInstantiate(&mut exec, graph.0 as hipGraph_t, null_mut(), null_mut(), 0) })?;
        Ok(GraphExecHandle(exec as usize))
    }

    fn graph_launch(&self, exec: GraphExecHandle, s: StreamHandle) -> Result<()> {
        // SAFETY: live handles of ours.
        check(unsafe { hipGraphLaunch(exec.0 as hipGraphExec_t, stream(Some(s))) })
    }

    unsafe fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        // SAFETY: the caller hands over a live graph.
        check(unsafe { hipGraphDestroy(graph.0 as hipGraph_t) })
    }

    unsafe fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        // SAFETY: the caller hands over a live executable graph.
        check(unsafe { hipGraphExecDestroy(exec.0 as hipGraphExec_t) })
    }

    fn error_name(&self, code: i32) -> Option<String> {
        Some(Self::name_of(code))
    }

    fn error_string(&self, code: i32) -> Option<String> {
        Some(Self::string_of(code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime;

    /// HIP's names are used in messages only while HIP is the active backend (see
    /// `runtime::backend_error_name`), so the tests make it the active one.
    fn activate_hip() {
        runtime::set_backend("hip").expect("set_backend(\"hip\")");
        let active = runtime::backend().expect("the HIP backend starts without a GPU");
        assert_eq!(active.kind(), BackendKind::Hip);
    }

    #[test]
    fn device_count_is_a_clean_hip_error_without_a_gpu() {
        activate_hip();
        let hip = HipBackend::new().expect("HipBackend::new() succeeds when libamdhip64 loads");
        assert!(hip.runtime_version() > 0);
        match hip.device_count() {
            Ok(n) => assert!(n > 0, "device_count returned Ok({n})"),
            Err(e @ Error::Api { code: 100, backend: BackendKind::Hip }) => {
                let text = e.to_string();
                println!("device_count() error: {text}");
                assert!(text.contains("hipErrorNoDevice"), "{text}");
                assert_eq!(text, "hipErrorNoDevice (100): no ROCm-capable device is detected");
                assert_eq!(e.code(), 100);
            }
            Err(other) => panic!("unexpected error from device_count: {other:?} ({other})"),
        }
    }

    #[test]
    fn error_names_come_from_hip() {
        let hip = HipBackend::new().expect("HipBackend::new()");
        assert_eq!(hip.error_name(100).as_deref(), Some("hipErrorNoDevice"));
        assert_eq!(hip.error_string(100).as_deref(), Some("no ROCm-capable device is detected"));
        assert_eq!(hip.error_name(600).as_deref(), Some("hipErrorNotReady"));
        assert_eq!(hip.error_name(999).as_deref(), Some("hipErrorUnknown"));
        // A code the runtime does not know keeps its number visible.
        assert_eq!(hip.error_name(123456).as_deref(), Some("hipErrorUnrecognized123456"));
        assert_eq!(hip.error_string(123456).as_deref(), Some("unrecognized error code 123456"));
    }

    #[test]
    fn device_calls_without_a_gpu_fail_with_hip_codes() {
        activate_hip();
        let hip = HipBackend::new().expect("HipBackend::new()");
        if hip.device_count().is_ok() {
            return; // covered by round_trip_on_a_gpu
        }
        assert_eq!(hip.malloc(0), Ok(0));
        assert!(matches!(hip.memset(0, 0, 3, 1, None), Err(Error::InvalidArgument(_))));
        for (what, result) in [
            ("set_device", hip.set_device(0).map(|_| ())),
            ("get_device", hip.get_device().map(|_| ())),
            ("malloc", hip.malloc(1024).map(|_| ())),
            ("mem_get_info", hip.mem_get_info().map(|_| ())),
            ("device_properties", hip.device_properties(0).map(|_| ())),
            ("stream_create", hip.stream_create(0).map(|_| ())),
            ("event_create", hip.event_create(0).map(|_| ())),
        ] {
            match result {
                Err(e @ Error::Api { backend: BackendKind::Hip, code }) => {
                    assert_ne!(code, 0);
                    println!("{what}: {e}");
                    assert!(e.to_string().starts_with("hipError"), "{what}: {e}");
                }
                other => panic!("{what}: expected a HIP error without a GPU, got {other:?}"),
            }
        }
    }

    /// Runs only where an AMD GPU is present.
    #[test]
    fn round_trip_on_a_gpu() {
        let hip = HipBackend::new().expect("HipBackend::new()");
        let Ok(n) = hip.device_count() else { return };
        assert!(n > 0);
        hip.set_device(0).expect("set_device");
        assert_eq!(hip.get_device(), Ok(0));
        let props = hip.device_properties(0).expect("device_properties");
        assert!(!props.name.is_empty() && props.total_global_mem > 0 && props.multi_processor_count > 0);
        let src: Vec<u32> = (0..1024).collect();
        let bytes = src.len() * 4;
        let d = hip.malloc(bytes).expect("malloc");
        let s = hip.stream_create(runtime::STREAM_NON_BLOCKING).expect("stream_create");
        let (e0, e1) = (hip.event_create(0).expect("event"), hip.event_create(0).expect("event"));
        hip.event_record(e0, s).expect("record");
        // SAFETY: src lives until the stream is synchronized below.
        unsafe { hip.memcpy_htod(d, src.as_ptr() as *const u8, bytes, Some(s)) }.expect("htod");
        hip.event_record(e1, s).expect("record");
        hip.stream_synchronize(s).expect("sync");
        assert_eq!(hip.stream_query(s), Ok(true));
        assert!(hip.event_elapsed_ms(e0, e1).expect("elapsed") >= 0.0);
        let mut back = vec![0u32; src.len()];
        // SAFETY: back is valid for bytes; the copy is synchronous.
        unsafe { hip.memcpy_dtoh(back.as_mut_ptr() as *mut u8, d, bytes, None) }.expect("dtoh");
        assert_eq!(back, src);
        hip.memset(d, 0xABCD_1234, 4, 16, None).expect("memset32");
        hip.memset(d, 0x7F, 1, 4, None).expect("memset8");
        // SAFETY: as above.
        unsafe { hip.memcpy_dtoh(back.as_mut_ptr() as *mut u8, d, bytes, None) }.expect("dtoh");
        assert_eq!(back[0], 0x7F7F_7F7F);
        assert_eq!(back[1..16], [0xABCD_1234; 15]);
        assert_eq!(back[16], 16);
        // SAFETY: handles and allocation are ours and unused afterwards.
        unsafe {
            hip.event_destroy(e0).expect("event_destroy");
            hip.event_destroy(e1).expect("event_destroy");
            hip.stream_destroy(s).expect("stream_destroy");
            hip.free(d).expect("free");
        }
    }
}
