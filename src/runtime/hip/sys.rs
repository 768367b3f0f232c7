//! The HIP runtime's raw interface. Every function returns its `hipError_t` as a plain
//! `c_int` (see `super`'s module comment). Signatures follow hip_runtime_api.h (checked
//! against ROCm 5.2's header and hip-runtime-sys 0.1.2's bindings). Only declarations live here.

use std::ffi::{c_char, c_int, c_uint, c_ushort, c_void};

pub(crate) use hip_runtime_sys::{
    hipDeviceAttribute_t, hipDevice_t, hipEvent_t, hipFunction_t, hipGraphExec_t, hipGraph_t, hipIpcMemHandle_t,
    hipMemcpyKind, hipModule_t, hipStream_t, hipUUID,
};

/// hipHostMallocPortable: pinned for every device, as cudaMallocHost's memory is.
pub(crate) const HIP_HOST_MALLOC_PORTABLE: c_uint = 0x1;

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
    pub fn hipMallocManaged(ptr: *mut *mut c_void, bytes: usize, flags: c_uint) -> c_int;
    pub fn hipStreamAttachMemAsync(stream: hipStream_t, ptr: *mut c_void, bytes: usize, flags: c_uint) -> c_int;
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

    pub fn hipDriverGetVersion(version: *mut c_int) -> c_int;
    pub fn hipHostGetDevicePointer(device: *mut *mut c_void, host: *mut c_void, flags: c_uint) -> c_int;
    pub fn hipHostRegister(host: *mut c_void, bytes: usize, flags: c_uint) -> c_int;
    pub fn hipHostUnregister(host: *mut c_void) -> c_int;
    pub fn hipIpcGetMemHandle(handle: *mut hipIpcMemHandle_t, device: *mut c_void) -> c_int;
    pub fn hipIpcOpenMemHandle(device: *mut *mut c_void, handle: hipIpcMemHandle_t, flags: c_uint) -> c_int;
    pub fn hipIpcCloseMemHandle(device: *mut c_void) -> c_int;
    // hipLimit_t and hipFuncCache_t are C enums with CUDA's numbers for the values we pass.
    pub fn hipDeviceGetLimit(value: *mut usize, limit: c_int) -> c_int;
    pub fn hipDeviceGetCacheConfig(config: *mut c_int) -> c_int;
    pub fn hipDeviceSetCacheConfig(config: c_int) -> c_int;
    pub fn hipDeviceCanAccessPeer(can: *mut c_int, device: c_int, peer: c_int) -> c_int;
}
