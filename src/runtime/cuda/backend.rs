//! `Backend` for `CudaBackend`: what is not one concept's. Each concept's trait is implemented
//! in its file: devices.rs, memory.rs, host_memory.rs, pool.rs, streams.rs, module.rs
//! (kernels), graphs.rs, peer.rs, ipc.rs.

use super::*;

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn peer_access(&self) -> Result<&dyn PeerAccess> {
        Ok(self)
    }

    fn error_string(&self, code: i32) -> Option<String> {
        // Our table first (the runtime's wording); the driver knows codes newer than it.
        if crate::runtime::error::known_code(code) {
            return None;
        }
        self.driver_text(self.api.cuGetErrorString, code)
    }

    fn error_name(&self, code: i32) -> Option<String> {
        if crate::runtime::error::known_code(code) {
            return None;
        }
        self.driver_text(self.api.cuGetErrorName, code)
    }
}
