//! `Backend` for `HipBackend`: what is not one concept's. Each concept's trait is implemented
//! in its file: devices.rs, memory.rs (with the pool), host_memory.rs, streams.rs, kernels.rs,
//! graphs.rs, ipc.rs; peer access is not implemented.

use std::path::Path;

use super::*;

impl Backend for HipBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Hip
    }

    fn peer_access(&self) -> Result<&dyn PeerAccess> {
        // hipDeviceEnablePeerAccess and hipMemcpyPeer are not wired up: one answer for all of it.
        Err(self.unsupported("peer access"))
    }

    fn start_device_records(&self, _library: Option<&Path>) -> Result<()> {
        Err(self.unsupported("pygpu.profile() (roctracer's records)"))
    }

    fn stop_device_records(&self) {}

    fn error_name(&self, code: i32) -> Option<String> {
        Some(Self::name_of(code))
    }

    fn error_string(&self, code: i32) -> Option<String> {
        Some(Self::string_of(code))
    }
}
