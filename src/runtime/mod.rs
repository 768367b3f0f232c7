//! The runtime layer: the `Backend` traits with the CUDA runtime API's semantics (one per
//! concept, in `backend/`), and the three implementations behind them. Everything here is
//! plain Rust (the Burgers demo's compiled driver uses it directly); the Python bindings
//! live in `crate::python`.
//!
//! Ownership: the safe types (`Context`, `Stream`, `Event`, `Module`, `Function`, `Graph`,
//! `GraphExec`, `DeviceBuffer`, `PinnedBuffer`) each own one backend object and release it
//! when dropped, recording a failure for cudaGetLastError instead of panicking; all hold
//! their device's `Arc<Context>`, a `Function` holds its `Module`, a graph the modules of
//! the kernels captured into it. The unsafe destroy calls are made in one place, `owned.rs`.

pub mod activity;
pub mod backend;
pub mod bin_pool;
pub mod block_cache;
pub mod capabilities;
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

pub use backend::{
    Backend, ConditionalKind, DeviceMemory, DeviceProperties, Devices, GraphNode, Graphs, HostMemory, Interprocess,
    Kernels, PeerAccess, PeerCopy, PooledMemory, Streams, DEVICE_ATTRIBUTE_MAX, EVENT_BLOCKING_SYNC,
    EVENT_DISABLE_TIMING, EVENT_INTERPROCESS, HOST_ALLOC_DEVICEMAP, HOST_ALLOC_PORTABLE, HOST_ALLOC_WRITECOMBINED,
    HOST_REGISTER_READ_ONLY, IPC_HANDLE_BYTES, MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE,
    STREAM_NON_BLOCKING,
};
pub use context::Context;
pub use error::{Error, Result};
pub use event::Event;
pub use graph::{Graph, GraphExec};
pub use handle::{
    EventHandle, ForeignStream, FunctionHandle, GraphExecHandle, GraphHandle, GraphNodeHandle, ModuleHandle,
    StreamHandle, CUDA_STREAM_LEGACY, CUDA_STREAM_PER_THREAD,
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
