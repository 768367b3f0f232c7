//! `Backend` for `HostBackend`: what is not one concept's. Each concept's trait is implemented
//! in its file: devices.rs, memory.rs, host_memory.rs, pool.rs, streams.rs, kernels.rs,
//! graphs.rs, peer.rs, ipc.rs.

use std::path::Path;

use super::*;

impl Backend for HostBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    fn peer_access(&self) -> Result<&dyn PeerAccess> {
        Ok(self)
    }

    // The host backend notes each operation as it runs it (see `runtime::activity`).
    fn start_device_records(&self, _library: Option<&Path>) -> Result<()> {
        Ok(())
    }

    fn stop_device_records(&self) {}
}
