//! The runtime layer: one `Backend` trait with the CUDA runtime API's semantics, and the
//! three implementations behind it. Everything here is plain Rust (the Burgers demo's
//! compiled driver uses it directly); the Python bindings live in `crate::python`.
//!
//! Ownership: the safe types (`Context`, `Stream`, `Event`, `Module`, `Function`, `Graph`,
//! `GraphExec`, `DeviceBuffer`, `PinnedBuffer`) each own one backend object and release it
//! when dropped, recording a failure for cudaGetLastError instead of panicking; all hold
//! their device's `Arc<Context>`, a `Function` holds its `Module`, a graph the modules of
//! the kernels captured into it. The unsafe destroy calls are made in one place, `owned.rs`.
//!
//! Adding an operation: declare each new driver entry point in the backend's `sys.rs` only
//! (a row of `driver_api!` in `cuda/sys.rs`, loaded at start-up; an `extern` declaration in
//! `hip/sys.rs`), returning the raw `c_int` status. Then add the method to `Backend` with a
//! default body returning `self.unsupported("...")` where a backend may lack it, check the
//! arguments that every backend shares in a provided method here (as `memset` does), and
//! implement it in each `*/backend.rs`, wrapping the status with that backend's `check`.
//! Methods taking an opaque handle are safe (only a backend makes handles); methods that
//! take raw pointers or destroy a handle are `unsafe fn` with a `# Safety` section.

pub mod bin_pool;
pub mod block_cache;
pub mod context;
pub mod cuda;
mod environment;
pub mod error;
pub mod event;
pub mod graph;
pub mod handle;
#[cfg(feature = "hip")]
pub mod hip;
pub mod host;
mod image;
/// Lets a host-backend launch stop between blocks (Ctrl-C); see host::module.
pub use host::module::{offer_sigint_hook, run_interruptible};
pub mod kernel;
pub mod managed;
pub mod memory;
pub mod module;
pub mod oom_reserve;
mod owned;
pub mod pitched;
pub mod pool;
#[cfg(test)]
mod raii_tests;
pub mod rtc;
mod selection;
pub mod stream;

pub use context::Context;
pub use error::{Error, Result};
pub use event::Event;
pub use graph::{Graph, GraphExec};
pub use handle::{
    EventHandle, ForeignStream, FunctionHandle, GraphExecHandle, GraphHandle, ModuleHandle, StreamHandle,
    CUDA_STREAM_LEGACY, CUDA_STREAM_PER_THREAD,
};
pub use kernel::{FunctionAttribute, KernelArgs, LaunchConfig};
pub use managed::ManagedBuffer;
pub use memory::{DeviceBuffer, MemsetValue, PinnedBuffer};
pub use module::{Function, Module};
pub use selection::{active_backend, backend, in_forked_child, set_backend};
use selection::{backend_error_name, backend_error_string};
pub use stream::Stream;

/// A device address. On the host backend it is an ordinary host address.
pub type DevicePtr = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    Cuda,
    Hip,
    Host,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Hip => "hip",
            BackendKind::Host => "host",
        }
    }

    fn parse(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "cuda" => Ok(BackendKind::Cuda),
            "hip" => Ok(BackendKind::Hip),
            "host" => Ok(BackendKind::Host),
            other => {
                Err(Error::InvalidArgument(format!("unknown backend '{other}': choose one of 'cuda', 'hip', 'host'")))
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeviceProperties {
    pub name: String,
    pub uuid: [u8; 16],
    pub pci_bus_id: i32,
    pub pci_device_id: i32,
    pub pci_domain_id: i32,
    pub total_global_mem: usize,
    pub major: i32,
    pub minor: i32,
    pub multi_processor_count: i32,
}

/// Stream creation flag: the stream does not synchronize with the legacy default stream.
pub const STREAM_NON_BLOCKING: u32 = 0x1;
/// Event creation flags, numbered as in the CUDA runtime.
pub const EVENT_BLOCKING_SYNC: u32 = 0x1;
pub const EVENT_DISABLE_TIMING: u32 = 0x2;
/// The event can be shared with other processes (`ipc_get_event_handle`); needs DISABLE_TIMING.
pub const EVENT_INTERPROCESS: u32 = 0x4;

/// The operations every backend provides, with the CUDA runtime API's semantics: a
/// current device per host thread, memory of the device's primary context, ordered
/// streams. Functions taking raw addresses are `unsafe`: the caller vouches that host
/// pointers are valid for `bytes`; device addresses are checked by the backend (the
/// driver for CUDA/HIP, an allocation registry on the host backend).
pub trait Backend: Send + Sync {
    fn kind(&self) -> BackendKind;

    fn device_count(&self) -> Result<i32>;
    fn set_device(&self, device: i32) -> Result<()>;
    fn get_device(&self) -> Result<i32>;
    /// The current device for a kernel launch: as `get_device`, but where the thread has no
    /// context current yet, device 0's primary one is made current first (as the runtime's
    /// first call on a thread does), so that `launch_kernel` finds one.
    fn launch_device(&self) -> Result<i32> {
        self.get_device()
    }
    fn device_synchronize(&self) -> Result<()>;
    fn device_properties(&self, device: i32) -> Result<DeviceProperties>;
    /// (free, total) bytes of the current device.
    fn mem_get_info(&self) -> Result<(usize, usize)>;

    fn malloc(&self, bytes: usize) -> Result<DevicePtr>;
    /// # Safety
    /// `ptr` came from `malloc` of this backend and nothing uses it afterwards.
    unsafe fn free(&self, ptr: DevicePtr) -> Result<()>;
    /// Page-locked host memory (ordinary host memory on the host backend).
    fn host_alloc(&self, bytes: usize) -> Result<*mut u8>;
    /// # Safety
    /// `ptr` came from `host_alloc` of this backend and nothing uses it afterwards.
    unsafe fn host_free(&self, ptr: *mut u8) -> Result<()>;

    /// Copies `bytes` from host memory to the device; synchronous when `stream` is None.
    /// # Safety
    /// `src` is valid for reads of `bytes` until the copy has completed.
    unsafe fn memcpy_htod(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()>;
    /// # Safety
    /// `dst` is valid for writes of `bytes` until the copy has completed.
    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()>;
    fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: Option<StreamHandle>) -> Result<()>;
    /// Fills `count` elements of `element_size` (1, 2 or 4) bytes with `value`. The
    /// arguments are checked here, once for every backend; backends implement `memset_value`.
    fn memset(
        &self,
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()> {
        self.memset_value(dst, MemsetValue::new(value, element_size)?, count, stream)
    }
    /// Fills `count` elements with `value`, at its width. Call `memset` instead.
    fn memset_value(
        &self,
        dst: DevicePtr,
        value: MemsetValue,
        count: usize,
        stream: Option<StreamHandle>,
    ) -> Result<()>;

    fn stream_create(&self, flags: u32) -> Result<StreamHandle>;
    /// # Safety
    /// `stream` is live and nothing uses it afterwards.
    unsafe fn stream_destroy(&self, stream: StreamHandle) -> Result<()>;
    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()>;
    /// Ok(true) when all work on the stream has completed.
    fn stream_query(&self, stream: StreamHandle) -> Result<bool>;
    fn stream_wait_event(&self, stream: StreamHandle, event: EventHandle) -> Result<()>;

    fn event_create(&self, flags: u32) -> Result<EventHandle>;
    /// # Safety
    /// `event` is live and nothing uses it afterwards.
    unsafe fn event_destroy(&self, event: EventHandle) -> Result<()>;
    fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()>;
    fn event_synchronize(&self, event: EventHandle) -> Result<()>;
    fn event_query(&self, event: EventHandle) -> Result<bool>;
    fn event_elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f32>;

    /// Loads a code object: PTX, cubin or fatbin (CUDA), HSACO (HIP), a kernels shared
    /// library (host).
    fn module_load(&self, _image: &[u8]) -> Result<ModuleHandle> {
        Err(self.unsupported("loading kernels"))
    }
    /// # Safety
    /// `module` is live; its functions are not used afterwards.
    unsafe fn module_unload(&self, _module: ModuleHandle) -> Result<()> {
        Err(self.unsupported("loading kernels"))
    }
    fn module_get_function(&self, _module: ModuleHandle, _name: &str) -> Result<FunctionHandle> {
        Err(self.unsupported("loading kernels"))
    }
    /// (address, size in bytes) of a global variable of the module.
    fn module_get_global(&self, _module: ModuleHandle, _name: &str) -> Result<(DevicePtr, usize)> {
        Err(self.unsupported("loading kernels"))
    }
    /// The size in bytes of each parameter, where the backend can tell (host kernels
    /// libraries; CUDA drivers from 12.4).
    fn function_param_sizes(&self, _function: FunctionHandle) -> Result<Option<Vec<usize>>> {
        Ok(None)
    }
    fn function_attribute(&self, _function: FunctionHandle, _attribute: FunctionAttribute) -> Result<i32> {
        Err(self.unsupported("kernel attributes"))
    }
    /// (minimum grid size, block size) for the highest occupancy.
    fn max_potential_block_size(
        &self,
        _function: FunctionHandle,
        _dynamic_shared: usize,
        _block_limit: i32,
    ) -> Result<(i32, i32)> {
        Err(self.unsupported("occupancy queries"))
    }
    /// Launches `function`; the argument values are copied before this returns.
    /// # Safety
    /// `args` matches the kernel's parameters in number and layout, and any pointers in it
    /// are device memory the kernel may access; the function's context is current
    /// (`launch_device` returned its device).
    unsafe fn launch_kernel(
        &self,
        _function: FunctionHandle,
        _config: &LaunchConfig,
        _stream: StreamHandle,
        _args: &KernelArgs,
    ) -> Result<()> {
        Err(self.unsupported("kernel launches"))
    }

    /// Starts recording the stream's work into a graph instead of running it.
    fn stream_begin_capture(&self, _stream: StreamHandle) -> Result<()> {
        Err(self.unsupported("graphs"))
    }
    fn stream_end_capture(&self, _stream: StreamHandle) -> Result<GraphHandle> {
        Err(self.unsupported("graphs"))
    }
    fn stream_is_capturing(&self, _stream: StreamHandle) -> Result<bool> {
        Ok(false)
    }
    fn graph_instantiate(&self, _graph: GraphHandle) -> Result<GraphExecHandle> {
        Err(self.unsupported("graphs"))
    }
    fn graph_launch(&self, _exec: GraphExecHandle, _stream: StreamHandle) -> Result<()> {
        Err(self.unsupported("graphs"))
    }
    /// # Safety
    /// `graph` is live and not used afterwards.
    unsafe fn graph_destroy(&self, _graph: GraphHandle) -> Result<()> {
        Err(self.unsupported("graphs"))
    }
    /// # Safety
    /// `exec` is live and not used afterwards.
    unsafe fn graph_exec_destroy(&self, _exec: GraphExecHandle) -> Result<()> {
        Err(self.unsupported("graphs"))
    }

    fn unsupported(&self, what: &str) -> Error {
        Error::Unavailable(format!("{what} is not implemented on the {} backend yet", self.kind().name()))
    }

    /// The backend's own name/message for a code, where it differs from the CUDA table.
    fn error_name(&self, _code: i32) -> Option<String> {
        None
    }
    fn error_string(&self, _code: i32) -> Option<String> {
        None
    }

    // --- PyCUDA's driver surface (pygpu.driver) -------------------------------------

    /// The CUDA version the driver supports, encoded as CUDA does (1000 * major + 10 * minor).
    fn driver_version(&self) -> Result<i32> {
        Err(self.unsupported("the driver version"))
    }
    /// Any device attribute, by its `CUdevice_attribute` number.
    fn device_attribute(&self, _device: i32, _attribute: i32) -> Result<i32> {
        Err(self.unsupported("device attributes"))
    }
    /// Any function attribute, by its `CUfunction_attribute` number.
    fn function_get_attribute(&self, function: FunctionHandle, attribute: i32) -> Result<i32> {
        match function_attribute_from_raw(attribute) {
            Some(a) => self.function_attribute(function, a),
            None => Err(self.unsupported(&format!("function attribute {attribute}"))),
        }
    }
    /// Sets a settable function attribute (`cuFuncSetAttribute`).
    fn function_set_attribute(&self, _function: FunctionHandle, _attribute: i32, _value: i32) -> Result<()> {
        Err(self.unsupported("setting function attributes"))
    }
    /// The preferred L1/shared split for a function (`cuFuncSetCacheConfig`, a CUfunc_cache).
    fn function_set_cache_config(&self, _function: FunctionHandle, _config: i32) -> Result<()> {
        Err(self.unsupported("function cache configurations"))
    }
    /// Page-locked host memory with `CU_MEMHOSTALLOC_*` flags (PORTABLE 1, DEVICEMAP 2,
    /// WRITECOMBINED 4).
    fn host_alloc_flags(&self, bytes: usize, flags: u32) -> Result<*mut u8> {
        if flags & !HOST_ALLOC_PORTABLE != 0 {
            return Err(self.unsupported("page-locked memory flags other than PORTABLE"));
        }
        self.host_alloc(bytes)
    }
    /// The device address of mapped page-locked host memory (`cuMemHostGetDevicePointer`).
    fn host_get_device_pointer(&self, _ptr: *mut u8) -> Result<DevicePtr> {
        Err(self.unsupported("mapped host memory"))
    }
    /// Page-locks (and maps) existing host memory (`cuMemHostRegister`, CU_MEMHOSTREGISTER_* flags).
    /// # Safety
    /// `ptr` is valid for `bytes` until `host_unregister`.
    unsafe fn host_register(&self, _ptr: *mut u8, _bytes: usize, _flags: u32) -> Result<()> {
        Err(self.unsupported("registering host memory"))
    }
    /// # Safety
    /// `ptr` was registered by `host_register` and no copy or kernel uses it any more.
    unsafe fn host_unregister(&self, _ptr: *mut u8) -> Result<()> {
        Err(self.unsupported("registering host memory"))
    }
    /// An interprocess handle for the allocation that holds `ptr` (`cuIpcGetMemHandle`).
    fn ipc_get_mem_handle(&self, _ptr: DevicePtr) -> Result<[u8; IPC_HANDLE_BYTES]> {
        Err(self.unsupported("interprocess memory handles"))
    }
    /// Maps another process's allocation (`cuIpcOpenMemHandle`, CU_IPC_MEM_* flags).
    fn ipc_open_mem_handle(&self, _handle: &[u8; IPC_HANDLE_BYTES], _flags: u32) -> Result<DevicePtr> {
        Err(self.unsupported("interprocess memory handles"))
    }
    /// # Safety
    /// `ptr` came from `ipc_open_mem_handle` and nothing uses it afterwards.
    unsafe fn ipc_close_mem_handle(&self, _ptr: DevicePtr) -> Result<()> {
        Err(self.unsupported("interprocess memory handles"))
    }
    /// A resource limit of the current device's context (`cuCtxGetLimit`, a CUlimit number).
    fn context_get_limit(&self, _limit: i32) -> Result<usize> {
        Err(self.unsupported("context limits"))
    }
    fn context_set_limit(&self, _limit: i32, _value: usize) -> Result<()> {
        Err(self.unsupported("context limits"))
    }
    /// The current device's preferred L1/shared split (`cuCtxGetCacheConfig`, a CUfunc_cache).
    fn context_get_cache_config(&self) -> Result<i32> {
        Err(self.unsupported("cache configurations"))
    }
    fn context_set_cache_config(&self, _config: i32) -> Result<()> {
        Err(self.unsupported("cache configurations"))
    }
    /// The current context's API version (`cuCtxGetApiVersion`, e.g. 3020).
    fn context_api_version(&self) -> Result<u32> {
        Err(self.unsupported("context API versions"))
    }
    /// Managed (unified) memory on the current device (`cuMemAllocManaged`): one address valid
    /// on the host and on the device, released by `free`. `flags` is CU_MEM_ATTACH_GLOBAL (1) or
    /// CU_MEM_ATTACH_HOST (2); `bytes` is not 0.
    fn malloc_managed(&self, _bytes: usize, _flags: u32) -> Result<DevicePtr> {
        Err(self.unsupported("managed memory"))
    }
    /// Changes which streams may access the managed allocation at `ptr` (`cuStreamAttachMemAsync`,
    /// stream-ordered); `bytes` is 0 or the whole allocation, `flags` one CU_MEM_ATTACH_* value.
    fn stream_attach_mem(&self, _stream: StreamHandle, _ptr: DevicePtr, _bytes: usize, _flags: u32) -> Result<()> {
        Err(self.unsupported("managed memory"))
    }
    /// Whether `device` can address memory of `peer` directly (`cuDeviceCanAccessPeer`).
    fn device_can_access_peer(&self, _device: i32, _peer: i32) -> Result<bool> {
        Err(self.unsupported("peer access queries"))
    }
    /// A 2-D/3-D copy between pitched host and device memory (`cuMemcpy2D`/`cuMemcpy3D`);
    /// synchronous when `stream` is None. By default row by row with the linear copies.
    /// # Safety
    /// Host sides are valid for the bytes the copy touches until the copy has completed.
    unsafe fn memcpy_pitched(&self, copy: &pitched::PitchedCopy, stream: Option<StreamHandle>) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { copy.by_rows(self, stream) }
    }

    // --- The stream-ordered memory pool behind `pool::MemoryPool` ----------------------

    /// Allocates from the current device's memory pool, ordered on `stream`: the block may
    /// be one freed earlier on that stream, reused without waiting. Returns the block and a
    /// ticket to hand back to `pool_free` with it (where the backend caches blocks itself:
    /// `block_cache`). By default an ordinary `malloc`, where the backend caches nothing.
    fn pool_malloc(&self, bytes: usize, _stream: StreamHandle) -> Result<(DevicePtr, u64)> {
        Ok((self.malloc(bytes)?, 0))
    }
    /// Gives a block back to `device`'s pool, ordered on `stream` (after the work already
    /// queued there). By default an ordinary `free`.
    /// # Safety
    /// `ptr` and `ticket` came from one `pool_malloc` of this backend on `device` for
    /// `bytes`, and no work queued after this call (on any stream) uses the block.
    unsafe fn pool_free(
        &self,
        ptr: DevicePtr,
        _bytes: usize,
        _ticket: u64,
        _device: i32,
        _stream: StreamHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller; the default pool_malloc is malloc.
        unsafe { self.free(ptr) }
    }
    /// Returns `device`'s cached, unused blocks to the system.
    fn pool_trim(&self, _device: i32) -> Result<()> {
        Ok(())
    }
    /// The bytes `device`'s pool holds from the system (in use and cached), or None where
    /// the backend caches nothing.
    fn pool_reserved_bytes(&self, _device: i32) -> Result<Option<usize>> {
        Ok(None)
    }
    /// Says that work may run on a stream that does not synchronise with the legacy default
    /// stream (another library's): from then on pooled blocks are freed only once the device
    /// is idle, as cuMemFree does, since such work cannot be ordered before the free.
    fn pool_note_unordered_stream(&self) -> Result<()> {
        Ok(())
    }
    /// Says that work may run on CUDA's per-thread default stream, which is ordered with the
    /// legacy default stream but not with another thread's: blocks are no longer reused
    /// without the backend's stream-ordered free.
    fn pool_note_per_thread_stream(&self) {}

    // --- Several devices and processes: peer access, peer copies, event IPC ---------------

    /// Lets the current device address `peer`'s memory directly (`cuCtxEnablePeerAccess`
    /// with the peer's primary context); `flags` must be 0.
    fn enable_peer_access(&self, _peer: i32, _flags: u32) -> Result<()> {
        Err(self.unsupported("peer access"))
    }
    /// Undoes `enable_peer_access` (`cuCtxDisablePeerAccess`).
    fn disable_peer_access(&self, _peer: i32) -> Result<()> {
        Err(self.unsupported("peer access"))
    }
    /// A copy between devices (`cuMemcpyPeer`, or `cuMemcpyPeerAsync` on `stream`); works
    /// without peer access (the driver stages it).
    fn memcpy_peer(&self, _copy: &PeerCopy, _stream: Option<StreamHandle>) -> Result<()> {
        Err(self.unsupported("peer copies"))
    }
    /// The interprocess handle of an event made with `EVENT_INTERPROCESS` (`cuIpcGetEventHandle`).
    fn ipc_get_event_handle(&self, _event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]> {
        Err(self.unsupported("interprocess events"))
    }
    /// Opens another process's event (`cuIpcOpenEventHandle`); `event_destroy` releases it.
    fn ipc_open_event_handle(&self, _handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle> {
        Err(self.unsupported("interprocess events"))
    }
    /// Whether `[ptr, ptr + bytes)` lies inside one live allocation (or page-locked or
    /// registered host memory), where the backend keeps a registry (host); None where it
    /// cannot tell.
    fn span_is_device_memory(&self, _ptr: DevicePtr, _bytes: usize) -> Option<bool> {
        None
    }
    /// An identity of the live allocation that holds `ptr`, which a later allocation at the
    /// same address does not share (as far as the backend can tell); None where `ptr` lies in
    /// no allocation the backend knows. Graphs compare it at replay (`GraphExec::launch`).
    fn allocation_identity(&self, _ptr: DevicePtr) -> Option<(DevicePtr, u64)> {
        None
    }
    /// (start, bytes) of the allocation that holds `ptr`, as far as the backend knows, for
    /// checking an imported tensor's extent: on the host backend a live pooled block's bytes
    /// are those asked for (not its size class), an idle one (freed memory the pool keeps)
    /// has 0, and page-locked or registered host memory counts; CUDA asks the driver for the
    /// allocation's range. None where no allocation is known to hold `ptr` (foreign memory,
    /// or a backend that cannot tell).
    fn allocation_extent(&self, _ptr: DevicePtr) -> Option<(DevicePtr, usize)> {
        None
    }
}

/// The typed attribute for a `CUfunction_attribute` number the `function_attribute` call knows.
pub(crate) fn function_attribute_from_raw(attribute: i32) -> Option<FunctionAttribute> {
    [
        FunctionAttribute::MaxThreadsPerBlock,
        FunctionAttribute::SharedSizeBytes,
        FunctionAttribute::ConstSizeBytes,
        FunctionAttribute::LocalSizeBytes,
        FunctionAttribute::NumRegs,
        FunctionAttribute::PtxVersion,
        FunctionAttribute::BinaryVersion,
    ]
    .into_iter()
    .find(|a| *a as i32 == attribute)
}

/// A copy between devices: `bytes` from `src` on `src_device` to `dst` on `dst_device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCopy {
    pub dst: DevicePtr,
    pub dst_device: i32,
    pub src: DevicePtr,
    pub src_device: i32,
    pub bytes: usize,
}

/// `CU_MEMHOSTALLOC_*` / `CU_MEMHOSTREGISTER_*` flags (the same numbers in HIP).
pub const HOST_ALLOC_PORTABLE: u32 = 0x1;
pub const HOST_ALLOC_DEVICEMAP: u32 = 0x2;
pub const HOST_ALLOC_WRITECOMBINED: u32 = 0x4;
pub const HOST_REGISTER_READ_ONLY: u32 = 0x8;
/// `CUmemAttach_flags` of managed memory (the same numbers in HIP): any stream may access it,
/// only the host, or only the stream it is attached to.
pub const MEM_ATTACH_GLOBAL: u32 = 0x1;
pub const MEM_ATTACH_HOST: u32 = 0x2;
pub const MEM_ATTACH_SINGLE: u32 = 0x4;
/// The highest `CUdevice_attribute` number of CUDA 12.8 (`CU_DEVICE_ATTRIBUTE_MAX` is 144).
pub const DEVICE_ATTRIBUTE_MAX: i32 = 143;
/// `CU_IPC_HANDLE_SIZE`: an interprocess handle's bytes (64 in CUDA and HIP).
pub const IPC_HANDLE_BYTES: usize = 64;
