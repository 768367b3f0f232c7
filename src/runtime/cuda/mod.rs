//! The CUDA backend over the driver API, loaded at run time from libcuda: building needs
//! no toolkit, running needs only the NVIDIA driver. It keeps the runtime API's model —
//! each device's primary context, one current device per host thread — so device
//! pointers are shared with CuPy, PyTorch and runtime-API C++ in the same process.
//!
//! cudarc supplies the driver's types and library names. We resolve the entry points
//! ourselves, typed to return a raw `i32`: cudarc's loader panics on a missing library
//! and its `CUresult` enum cannot hold a code a newer driver might return.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use libloading::Library;

use super::activity::{self, ActivityKind};
use super::block_cache::BlockCache;
use super::error::{CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_NOT_READY};
use super::pitched::{Memory, PitchedCopy, PitchedSide};
use super::{
    kernel::symbol_name, FunctionAttribute, FunctionHandle, GraphExecHandle, GraphHandle, KernelArgs, LaunchConfig,
    MemsetValue, ModuleHandle,
};
use super::{
    Backend, BackendKind, DeviceProperties, DevicePtr, Error, EventHandle, Result, StreamHandle, HOST_ALLOC_PORTABLE,
    IPC_HANDLE_BYTES, STREAM_NON_BLOCKING,
};
use super::{DeviceMemory, Devices, Graphs, HostMemory, Interprocess, Kernels, PeerAccess, PooledMemory, Streams};

/// The oldest driver whose API we rely on: CUDA 12.0.
const MIN_DRIVER_VERSION: c_int = 12000;

mod backend;
mod copy;
mod cupti;
mod devices;
mod graphs;
mod host_memory;
mod ipc;
mod memory;
mod module;
mod peer;
mod pitched_copy;
mod pool;
mod streams;
pub(crate) mod sys;

use sys::*;

pub struct CudaBackend {
    api: DriverApi,
    param_info: Option<ParamInfoFn>,
    /// None where the driver predates conditional nodes (CUDA 12.3).
    conditionals: Option<ConditionalApi>,
    /// The kernel that hands a conditional node its flag, loaded once per context:
    /// (context, function) as addresses.
    latches: std::sync::Mutex<Vec<(usize, usize)>>,
    /// Kept so the function pointers in `api` stay valid for the life of the process.
    _lib: Library,
    /// Each device's primary context (as an address), retained on first use and never
    /// released, like the runtime API's.
    primary: Vec<OnceLock<usize>>,
    /// A failed cuInit is reported by every call, as the runtime API does.
    init_status: c_int,
    /// Each device's default memory pool (as an address), set up on first pooled
    /// allocation; 0 where the device has no stream-ordered pools.
    pools: Vec<OnceLock<usize>>,
    /// Set once a stream that does not synchronise with the legacy default stream exists
    /// (non-blocking or foreign): pooled frees then wait for the device first.
    unordered_streams: AtomicBool,
    /// Set once the per-thread default stream was used (counted once in `block_cache`).
    per_thread_stream_used: AtomicBool,
    /// Freed pool blocks reused without a driver call while that is ordered.
    block_cache: BlockCache,
    /// Each device's properties, read from the driver once: they never change, and repeated
    /// queries grew host memory in the driver (issue 13: +94 MiB over 10k `cudaDeviceProp`).
    properties: Vec<OnceLock<DeviceProperties>>,
}

fn check(code: c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::api(code, BackendKind::Cuda))
    }
}

fn stream(s: Option<StreamHandle>) -> CUstream {
    s.map_or(null_mut(), |s| s.0 as CUstream)
}

impl CudaBackend {
    pub fn new() -> Result<Self> {
        let candidates = cudarc::get_lib_name_candidates("cuda");
        // SAFETY: loading the NVIDIA driver runs only its own initialisers.
        let lib = candidates.iter().find_map(|name| unsafe { Library::new(name) }.ok()).ok_or_else(|| {
            Error::Unavailable(format!(
                "the NVIDIA driver library was not found (looked for libcuda.so.1 and {} other names); \
                     install the NVIDIA driver, or use another backend",
                candidates.len() - 1
            ))
        })?;
        // SAFETY: lib is the driver library; the table's signatures match cuda.h.
        let api = unsafe { DriverApi::load(&lib) }
            .map_err(|e| Error::Unavailable(format!("{e}; pygpu needs an NVIDIA driver for CUDA 12.0 or newer")))?;
        let mut version: c_int = 0;
        // SAFETY: valid out-pointer.
        unsafe { (api.cuDriverGetVersion)(&mut version) };
        if version < MIN_DRIVER_VERSION {
            return Err(Error::Unavailable(format!(
                "the NVIDIA driver supports CUDA {}.{}; pygpu needs CUDA 12.0 or newer: update the driver",
                version / 1000,
                (version % 1000) / 10
            )));
        }
        // SAFETY: plain driver call.
        let init_status = unsafe { (api.cuInit)(0) };
        let mut count: c_int = 0;
        if init_status == 0 {
            // SAFETY: valid out-pointer.
            unsafe { (api.cuDeviceGetCount)(&mut count) };
        }
        // SAFETY: the symbol, where present, has the ParamInfoFn signature (cuda.h, 12.4+).
        let param_info = unsafe { lib.get::<ParamInfoFn>(b"cuFuncGetParamInfo\0") }.ok().map(|f| *f);
        // SAFETY: lib is the driver library.
        let conditionals = unsafe { ConditionalApi::load(&lib) };
        Ok(CudaBackend {
            api,
            param_info,
            conditionals,
            latches: std::sync::Mutex::new(Vec::new()),
            _lib: lib,
            primary: (0..count.max(0)).map(|_| OnceLock::new()).collect(),
            init_status,
            pools: (0..count.max(0)).map(|_| OnceLock::new()).collect(),
            unordered_streams: AtomicBool::new(false),
            per_thread_stream_used: AtomicBool::new(false),
            block_cache: BlockCache::default(),
            properties: (0..count.max(0)).map(|_| OnceLock::new()).collect(),
        })
    }

    fn primary_context(&self, device: i32) -> Result<CUcontext> {
        check(self.init_status)?;
        let slot = usize::try_from(device)
            .ok()
            .and_then(|d| self.primary.get(d))
            .ok_or(Error::api(CUDA_ERROR_INVALID_DEVICE, BackendKind::Cuda))?;
        if let Some(ctx) = slot.get() {
            return Ok(*ctx as CUcontext);
        }
        let mut ctx: CUcontext = null_mut();
        // SAFETY: device is a valid ordinal (checked against the count above).
        check(unsafe { (self.api.cuDevicePrimaryCtxRetain)(&mut ctx, device) })?;
        // Two threads may race to retain; the loser's extra reference is harmless, as
        // primary contexts are never released by us.
        Ok(*slot.get_or_init(|| ctx as usize) as CUcontext)
    }

    /// Before work is issued on `s`: while a `pygpu.profile()` recording runs, tells CUPTI's
    /// records of it which stream it is (one atomic load otherwise).
    #[inline]
    fn note_stream(&self, s: Option<StreamHandle>) {
        if activity::recording() {
            self.note_stream_for_records(s);
        }
    }

    #[cold]
    #[inline(never)]
    fn note_stream_for_records(&self, s: Option<StreamHandle>) {
        let mut ctx: CUcontext = null_mut();
        // SAFETY: valid out-pointer.
        if unsafe { (self.api.cuCtxGetCurrent)(&mut ctx) } == 0 && !ctx.is_null() {
            cupti::note_stream(ctx, s.map(|s| s.0));
        }
    }

    /// Makes sure the calling thread has a current context, as the runtime API does
    /// lazily (the primary context of device 0 unless one was set), and returns it.
    fn ensure_context(&self) -> Result<CUcontext> {
        let mut ctx: CUcontext = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuCtxGetCurrent)(&mut ctx) })?;
        if ctx.is_null() {
            ctx = self.primary_context(0)?;
            // SAFETY: ctx is a retained, live primary context.
            check(unsafe { (self.api.cuCtxSetCurrent)(ctx) })?;
        }
        Ok(ctx)
    }

    /// The device of `ctx`, the current (non-null) context, and whether `ctx` is that device's
    /// primary context rather than one another library made.
    fn context_device(&self, ctx: CUcontext) -> Result<(i32, bool)> {
        // One of the primary contexts we retained (and never release) names its device
        // without a second driver call; any other context is the driver's to say.
        if let Some(device) = self.primary.iter().position(|slot| slot.get() == Some(&(ctx as usize))) {
            return Ok((device as i32, true));
        }
        let mut device: CUdevice = 0;
        // SAFETY: a context is current; valid out-pointer.
        check(unsafe { (self.api.cuCtxGetDevice)(&mut device) })?;
        Ok((device, false))
    }

    /// `device`'s default memory pool, its release threshold raised so freed blocks stay
    /// cached; None where the device lacks stream-ordered pools (then pooled memory is
    /// plain cuMemAlloc).
    fn memory_pool(&self, device: i32) -> Result<Option<CUmemoryPool>> {
        let slot = usize::try_from(device)
            .ok()
            .and_then(|d| self.pools.get(d))
            .ok_or(Error::api(CUDA_ERROR_INVALID_DEVICE, BackendKind::Cuda))?;
        if let Some(pool) = slot.get() {
            return Ok((*pool != 0).then_some(*pool as CUmemoryPool));
        }
        let mut supported: c_int = 0;
        // SAFETY: valid out-pointer; device is a valid ordinal (checked above).
        check(unsafe {
            (self.api.cuDeviceGetAttribute)(&mut supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device)
        })?;
        let mut pool: CUmemoryPool = null_mut();
        if supported != 0 {
            // SAFETY: valid out-pointer and device.
            check(unsafe { (self.api.cuDeviceGetDefaultMemPool)(&mut pool, device) })?;
            let mut threshold: u64 = u64::MAX;
            // SAFETY: the attribute takes a cuuint64_t, which threshold is.
            check(unsafe {
                (self.api.cuMemPoolSetAttribute)(
                    pool,
                    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut threshold as *mut u64).cast(),
                )
            })?;
        }
        // Racing threads set the same attribute on the same pool: either value is right.
        let pool = *slot.get_or_init(|| pool as usize);
        Ok((pool != 0).then_some(pool as CUmemoryPool))
    }

    /// Marks that unordered streams exist; the first time, waits for every device with a pool,
    /// so that no block freed earlier (ordered only on the legacy stream) is still in use
    /// when work on the new stream may get it.
    fn note_unordered_streams(&self) -> Result<()> {
        if self.unordered_streams.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Blocks cached so far are idle once the devices are (below); none is cached after.
        self.block_cache.stream_opened();
        for (device, slot) in self.pools.iter().enumerate() {
            if slot.get().is_some_and(|pool| *pool != 0) {
                self.in_device_context(device as i32, || {
                    // SAFETY: the device's context is current.
                    check(unsafe { (self.api.cuCtxSynchronize)() })
                })?;
            }
        }
        Ok(())
    }

    /// Runs `f` with a context of `device` current: the caller's if it is one (a context the
    /// user made current orders its own legacy stream), else the device's primary context,
    /// restoring the caller's after.
    fn in_device_context<T>(&self, device: i32, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let target = self.primary_context(device)?;
        let mut current: CUcontext = null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { (self.api.cuCtxGetCurrent)(&mut current) })?;
        if current == target || (!current.is_null() && self.get_device()? == device) {
            return f();
        }
        // SAFETY: target is a retained, live primary context.
        check(unsafe { (self.api.cuCtxSetCurrent)(target) })?;
        let result = f();
        // SAFETY: current was the thread's context (or null) a moment ago.
        let restored = check(unsafe { (self.api.cuCtxSetCurrent)(current) });
        result.and_then(|value| restored.map(|()| value))
    }

    fn driver_text(&self, f: unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int, code: i32) -> Option<String> {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: on success the driver returns a static NUL-terminated string.
        let status = unsafe { f(code, &mut text) };
        if status != 0 || text.is_null() {
            return None;
        }
        // SAFETY: non-null, static and NUL-terminated (see above).
        Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
    }

    fn attribute(&self, attr: CUdevice_attribute, device: CUdevice) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: valid out-pointer; the driver validates device and attribute.
        check(unsafe { (self.api.cuDeviceGetAttribute)(&mut value, attr as c_int, device) })?;
        Ok(value)
    }
}
