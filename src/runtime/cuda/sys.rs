//! The CUDA driver's raw interface: the entry points we load from libcuda, typed to return
//! a raw `c_int` (cudarc's `CUresult` enum cannot hold a code a newer driver might return),
//! and the constants we pass. Only declarations live here; the logic is in `super`.

use std::ffi::{c_char, c_int, c_uint, c_void};

pub(crate) use cudarc::driver::sys::{
    CUDA_KERNEL_NODE_PARAMS_v2, CUgraphConditionalHandle, CUgraphNode, CUDA_MEMSET_NODE_PARAMS,
};
pub(crate) use cudarc::driver::sys::{
    CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUevent, CUfunction, CUgraph, CUgraphExec, CUipcEventHandle,
    CUipcMemHandle, CUmemAccessDesc, CUmemAccess_flags, CUmemLocation, CUmemLocationType, CUmemoryPool, CUmemorytype,
    CUmodule, CUstream, CUuuid, CUDA_MEMCPY2D, CUDA_MEMCPY3D,
};
use libloading::Library;

macro_rules! driver_api {
    ($($name:ident($($arg:ty),*);)*) => {
        #[allow(non_snake_case)]
        pub(crate) struct DriverApi {
            $(pub(crate) $name: unsafe extern "C" fn($($arg),*) -> c_int,)*
        }

        impl DriverApi {
            /// # Safety
            /// `lib` is the NVIDIA driver library, whose symbols have these C signatures.
            pub(crate) unsafe fn load(lib: &Library) -> std::result::Result<Self, String> {
                Ok(DriverApi {
                    // SAFETY: our caller vouches that `lib` is the driver and these are its signatures.
                    $($name: unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) -> c_int>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                        .map_err(|e| format!("the NVIDIA driver lacks {}: {e}", stringify!($name)))?
                    },)*
                })
            }
        }
    };
}

driver_api! {
    cuInit(c_uint);
    cuDriverGetVersion(*mut c_int);
    cuGetErrorName(c_int, *mut *const c_char);
    cuGetErrorString(c_int, *mut *const c_char);
    cuDeviceGetCount(*mut c_int);
    cuDeviceGet(*mut CUdevice, c_int);
    cuDeviceGetName(*mut c_char, c_int, CUdevice);
    cuDeviceGetUuid_v2(*mut CUuuid, CUdevice);
    cuDeviceGetAttribute(*mut c_int, c_int, CUdevice);
    cuDeviceTotalMem_v2(*mut usize, CUdevice);
    cuDevicePrimaryCtxRetain(*mut CUcontext, CUdevice);
    cuCtxGetCurrent(*mut CUcontext);
    cuCtxSetCurrent(CUcontext);
    cuCtxGetDevice(*mut CUdevice);
    cuCtxSynchronize();
    cuMemGetInfo_v2(*mut usize, *mut usize);
    cuMemAlloc_v2(*mut CUdeviceptr, usize);
    cuMemFree_v2(CUdeviceptr);
    cuMemHostAlloc(*mut *mut c_void, usize, c_uint);
    cuMemFreeHost(*mut c_void);
    cuMemcpyHtoD_v2(CUdeviceptr, *const c_void, usize);
    cuMemcpyDtoH_v2(*mut c_void, CUdeviceptr, usize);
    cuMemcpyDtoD_v2(CUdeviceptr, CUdeviceptr, usize);
    cuMemcpyHtoDAsync_v2(CUdeviceptr, *const c_void, usize, CUstream);
    cuMemcpyDtoHAsync_v2(*mut c_void, CUdeviceptr, usize, CUstream);
    cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, usize, CUstream);
    cuMemsetD8Async(CUdeviceptr, u8, usize, CUstream);
    cuMemsetD16Async(CUdeviceptr, u16, usize, CUstream);
    cuMemsetD32Async(CUdeviceptr, c_uint, usize, CUstream);
    cuStreamCreate(*mut CUstream, c_uint);
    cuStreamDestroy_v2(CUstream);
    cuStreamSynchronize(CUstream);
    cuStreamQuery(CUstream);
    cuStreamWaitEvent(CUstream, CUevent, c_uint);
    cuEventCreate(*mut CUevent, c_uint);
    cuEventDestroy_v2(CUevent);
    cuEventRecord(CUevent, CUstream);
    cuEventSynchronize(CUevent);
    cuEventQuery(CUevent);
    cuEventElapsedTime(*mut f32, CUevent, CUevent);
    cuModuleLoadDataEx(*mut CUmodule, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
    cuModuleUnload(CUmodule);
    cuModuleGetFunction(*mut CUfunction, CUmodule, *const c_char);
    cuModuleGetGlobal_v2(*mut CUdeviceptr, *mut usize, CUmodule, *const c_char);
    cuFuncGetAttribute(*mut c_int, c_int, CUfunction);
    cuOccupancyMaxPotentialBlockSize(*mut c_int, *mut c_int, CUfunction, *mut c_void, usize, c_int);
    cuLaunchKernel(CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream, *mut *mut c_void, *mut *mut c_void);
    cuStreamBeginCapture_v2(CUstream, c_int);
    cuStreamEndCapture(CUstream, *mut CUgraph);
    cuStreamIsCapturing(CUstream, *mut c_int);
    cuGraphInstantiateWithFlags(*mut CUgraphExec, CUgraph, u64);
    cuGraphLaunch(CUgraphExec, CUstream);
    cuGraphDestroy(CUgraph);
    cuGraphExecDestroy(CUgraphExec);
    cuGraphCreate(*mut CUgraph, c_uint);
    cuGraphAddEmptyNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize);
    cuGraphAddKernelNode_v2(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const CUDA_KERNEL_NODE_PARAMS_v2);
    cuGraphAddMemcpyNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const CUDA_MEMCPY3D, CUcontext);
    cuGraphAddMemsetNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const CUDA_MEMSET_NODE_PARAMS, CUcontext);
    cuGraphAddChildGraphNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, CUgraph);
    cuGraphAddEventRecordNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, CUevent);
    cuGraphAddEventWaitNode(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, CUevent);
    cuGraphExecKernelNodeSetParams_v2(CUgraphExec, CUgraphNode, *const CUDA_KERNEL_NODE_PARAMS_v2);
    cuGraphExecMemcpyNodeSetParams(CUgraphExec, CUgraphNode, *const CUDA_MEMCPY3D, CUcontext);
    cuGraphExecMemsetNodeSetParams(CUgraphExec, CUgraphNode, *const CUDA_MEMSET_NODE_PARAMS, CUcontext);
    cuFuncSetAttribute(CUfunction, c_int, c_int);
    cuFuncSetCacheConfig(CUfunction, c_int);
    cuMemHostGetDevicePointer_v2(*mut CUdeviceptr, *mut c_void, c_uint);
    cuMemHostRegister_v2(*mut c_void, usize, c_uint);
    cuMemHostUnregister(*mut c_void);
    cuIpcGetMemHandle(*mut CUipcMemHandle, CUdeviceptr);
    cuIpcOpenMemHandle_v2(*mut CUdeviceptr, CUipcMemHandle, c_uint);
    cuIpcCloseMemHandle(CUdeviceptr);
    cuMemcpy2D_v2(*const CUDA_MEMCPY2D);
    cuMemcpy2DAsync_v2(*const CUDA_MEMCPY2D, CUstream);
    cuMemcpy3D_v2(*const CUDA_MEMCPY3D);
    cuMemcpy3DAsync_v2(*const CUDA_MEMCPY3D, CUstream);
    cuCtxGetLimit(*mut usize, c_int);
    cuCtxSetLimit(c_int, usize);
    cuCtxGetCacheConfig(*mut c_int);
    cuCtxSetCacheConfig(c_int);
    cuDeviceCanAccessPeer(*mut c_int, CUdevice, CUdevice);
    cuMemAllocAsync(*mut CUdeviceptr, usize, CUstream);
    cuMemFreeAsync(CUdeviceptr, CUstream);
    cuDeviceGetDefaultMemPool(*mut CUmemoryPool, CUdevice);
    cuMemPoolSetAttribute(CUmemoryPool, c_int, *mut c_void);
    cuMemPoolGetAttribute(CUmemoryPool, c_int, *mut c_void);
    cuMemPoolTrimTo(CUmemoryPool, usize);
    cuMemPoolSetAccess(CUmemoryPool, *const CUmemAccessDesc, usize);
    cuCtxEnablePeerAccess(CUcontext, c_uint);
    cuCtxDisablePeerAccess(CUcontext);
    cuMemcpyPeer(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize);
    cuMemcpyPeerAsync(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize, CUstream);
    cuIpcGetEventHandle(*mut CUipcEventHandle, CUevent);
    cuIpcOpenEventHandle(*mut CUevent, CUipcEventHandle);
    cuPointerGetAttribute(*mut c_void, c_int, CUdeviceptr);
    cuMemAllocManaged(*mut CUdeviceptr, usize, c_uint);
    cuStreamAttachMemAsync(CUstream, CUdeviceptr, usize, c_uint);
    cuCtxGetApiVersion(CUcontext, *mut c_uint);
    cuThreadExchangeStreamCaptureMode(*mut c_int);
}

/// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`: the device has stream-ordered pools.
pub(crate) const CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: c_int = 115;
/// `CUmemPool_attribute`s (cuuint64_t values): the bytes a pool keeps cached when
/// synchronising, and the bytes it holds from the device.
pub(crate) const CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: c_int = 4;
pub(crate) const CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: c_int = 5;

/// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`: fails for pageable host memory (which the driver
/// does not know), so copies can tell it from page-locked memory.
pub(crate) const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
/// `CU_POINTER_ATTRIBUTE_BUFFER_ID` (u64): unique to each allocation for the process's life.
pub(crate) const CU_POINTER_ATTRIBUTE_BUFFER_ID: c_int = 7;
/// `CU_POINTER_ATTRIBUTE_RANGE_START_ADDR` (CUdeviceptr): where the allocation holding a pointer starts.
pub(crate) const CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
/// `CU_POINTER_ATTRIBUTE_RANGE_SIZE` (size_t): the bytes of the allocation holding a pointer.
pub(crate) const CU_POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;

/// JIT options of cuModuleLoadDataEx (CUjit_option).
pub(crate) const CU_JIT_INFO_LOG_BUFFER: c_int = 3;
pub(crate) const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: c_int = 4;
pub(crate) const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
pub(crate) const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
pub(crate) const JIT_LOG_BYTES: usize = 16 * 1024;
/// No call of this thread is prohibited during a capture (cuThreadExchangeStreamCaptureMode).
pub(crate) const CU_STREAM_CAPTURE_MODE_RELAXED: c_int = 2;

/// cuFuncGetParamInfo exists from CUDA 12.4 drivers on; older ones simply skip the check.
pub(crate) type ParamInfoFn = unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> c_int;

/// Conditional nodes' entry points (CUDA 12.3+), loaded where the driver has them.
#[allow(non_snake_case)]
pub(crate) struct ConditionalApi {
    pub(crate) cuGraphConditionalHandleCreate:
        unsafe extern "C" fn(*mut CUgraphConditionalHandle, CUgraph, CUcontext, c_uint, c_uint) -> c_int,
    pub(crate) cuGraphAddNode:
        unsafe extern "C" fn(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *mut ConditionalNodeParams) -> c_int,
}

/// cuda.h's `CUgraphNodeParams` (256 bytes: a type, then a union) with the union read as its
/// `CUDA_CONDITIONAL_NODE_PARAMS` member. Our own struct: cudarc's union holds enums that have
/// no all-zero value, so it cannot be built zeroed.
#[repr(C)]
pub(crate) struct ConditionalNodeParams {
    pub(crate) node_type: c_uint,
    pub(crate) reserved0: [c_int; 3],
    pub(crate) handle: CUgraphConditionalHandle,
    pub(crate) conditional_type: c_uint,
    /// How many body graphs (1: while and if without else).
    pub(crate) size: c_uint,
    /// Set by the driver: its array of the node's `size` body graphs.
    pub(crate) bodies: *mut CUgraph,
    pub(crate) ctx: CUcontext,
    /// The union is 29 eight-byte words; the conditional member uses the first four.
    pub(crate) rest_of_union: [i64; 25],
    pub(crate) reserved2: i64,
}

/// `CU_GRAPH_NODE_TYPE_CONDITIONAL` and `CUgraphConditionalNodeType`'s if and while (cuda.h).
pub(crate) const CU_GRAPH_NODE_TYPE_CONDITIONAL: c_uint = 13;
pub(crate) const CU_GRAPH_COND_TYPE_IF: c_uint = 0;
pub(crate) const CU_GRAPH_COND_TYPE_WHILE: c_uint = 1;

const _: () = assert!(std::mem::size_of::<ConditionalNodeParams>() == 256);
const _: () = assert!(
    std::mem::size_of::<ConditionalNodeParams>() == std::mem::size_of::<cudarc::driver::sys::CUgraphNodeParams>()
);

impl ConditionalApi {
    /// # Safety
    /// `lib` is the NVIDIA driver library.
    pub(crate) unsafe fn load(lib: &Library) -> Option<Self> {
        // SAFETY: our caller vouches that `lib` is the driver; the signatures are cuda.h's.
        unsafe {
            Some(ConditionalApi {
                cuGraphConditionalHandleCreate: *lib.get(b"cuGraphConditionalHandleCreate\0").ok()?,
                cuGraphAddNode: *lib.get(b"cuGraphAddNode\0").ok()?,
            })
        }
    }
}
