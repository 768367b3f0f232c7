//! What a backend provides, one trait per concept, with the CUDA runtime API's semantics:
//! `Devices`, `DeviceMemory`, `HostMemory`, `PooledMemory`, `Streams` (and events),
//! `Kernels` (modules and launches), `Graphs` (capture and replay), `Interprocess`, and
//! `PeerAccess`, which a backend may lack as a whole. `Backend` is their supertrait: the
//! selected backend (`active_backend()`) offers every operation on one object.
//!
//! Adding an operation: declare each new driver entry point in the backend's `sys.rs` only
//! (a row of `driver_api!` in `cuda/sys.rs`, loaded at start-up; an `extern` declaration in
//! `hip/sys.rs`), returning the raw `c_int` status. Then add the method to its concept's
//! trait, check the arguments that every backend shares in a provided method there (as
//! `DeviceMemory::memset` does), and implement it in each backend's file for that concept,
//! wrapping the status with that backend's `check`. A backend that cannot perform it returns
//! `self.unsupported("...")` from its own impl: the traits carry no "unsupported" defaults,
//! and a concept a backend lacks altogether is an accessor on `Backend` (as `peer_access`),
//! so that the backend says so once. Methods taking an opaque handle are safe (only a
//! backend makes handles); methods that take raw pointers or destroy a handle are
//! `unsafe fn` with a `# Safety` section.

mod devices;
mod graphs;
mod host_memory;
mod ipc;
mod kernels;
mod memory;
mod peer;
mod pool;
mod streams;

pub use devices::{DeviceProperties, Devices, DEVICE_ATTRIBUTE_MAX};
pub use graphs::{ConditionalKind, GraphNode, Graphs};
pub use host_memory::{
    HostMemory, HOST_ALLOC_DEVICEMAP, HOST_ALLOC_PORTABLE, HOST_ALLOC_WRITECOMBINED, HOST_REGISTER_READ_ONLY,
};
pub use ipc::{Interprocess, IPC_HANDLE_BYTES};
pub use kernels::Kernels;
pub use memory::{DeviceMemory, MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE};
pub use peer::{PeerAccess, PeerCopy};
pub use pool::PooledMemory;
pub use streams::{Streams, EVENT_BLOCKING_SYNC, EVENT_DISABLE_TIMING, EVENT_INTERPROCESS, STREAM_NON_BLOCKING};

use std::path::Path;

use crate::runtime::{BackendKind, Error, Result};

/// Every operation of one backend: a current device per host thread, memory of the
/// device's primary context, ordered streams.
pub trait Backend:
    Devices + DeviceMemory + HostMemory + PooledMemory + Streams + Kernels + Graphs + Interprocess + Send + Sync
{
    fn kind(&self) -> BackendKind;

    /// Peer access and copies between devices, or the one error saying this backend has none.
    fn peer_access(&self) -> Result<&dyn PeerAccess>;

    /// Starts the device's own records of its work for a `pygpu.profile()` recording that
    /// `runtime::activity` has started (`library`: the profiling library to load, where the
    /// backend needs one). A backend that notes its work itself does nothing here.
    fn start_device_records(&self, library: Option<&Path>) -> Result<()>;

    /// Waits for the current device and hands the records of all work issued so far to
    /// `runtime::activity`, then stops the device's records. Never fails: what could not be
    /// read is missing from the recording.
    fn stop_device_records(&self);

    /// The error for an operation this backend does not implement.
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
}
