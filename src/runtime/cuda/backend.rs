//! `Backend` for `CudaBackend`: what is not one concept's. Each concept's trait is implemented
//! in its file: devices.rs, memory.rs, host_memory.rs, pool.rs, streams.rs, module.rs
//! (kernels), graphs.rs, peer.rs, ipc.rs.

use std::path::Path;

use super::*;

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn peer_access(&self) -> Result<&dyn PeerAccess> {
        Ok(self)
    }

    fn start_device_records(&self, library: Option<&Path>) -> Result<()> {
        let library = library.ok_or_else(|| {
            Error::Unavailable("pygpu.profile() on the cuda backend needs CUPTI: pass its library".to_string())
        })?;
        self.ensure_context()?;
        cupti::start(library)
    }

    fn stop_device_records(&self) {
        // Work still running has no records yet. A failed wait (a faulted context) leaves
        // whatever CUPTI has.
        if self.ensure_context().is_ok() {
            // SAFETY: a context is current.
            let _ = unsafe { (self.api.cuCtxSynchronize)() };
        }
        cupti::stop();
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
