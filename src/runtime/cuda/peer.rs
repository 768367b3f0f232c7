//! Several devices: peer access between primary contexts (and to each other's memory pools),
//! and copies between devices.

use super::*;
use crate::runtime::PeerCopy;

impl CudaBackend {
    /// Lets `device` address blocks of `owner`'s default memory pool (or no longer).
    fn set_pool_access(&self, owner: i32, device: i32, flags: CUmemAccess_flags) -> Result<()> {
        let Some(pool) = self.memory_pool(owner)? else {
            return Ok(()); // no pools (PYGPU_MEMORY_POOL=0, or a driver without them)
        };
        let desc = CUmemAccessDesc {
            location: CUmemLocation { type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device },
            flags,
        };
        // SAFETY: pool is owner's default pool (alive with its context); one valid descriptor.
        check(unsafe { (self.api.cuMemPoolSetAccess)(pool, &desc, 1) })
    }
}

impl PeerAccess for CudaBackend {
    fn enable_peer_access(&self, peer: i32, flags: u32) -> Result<()> {
        self.ensure_context()?;
        let device = self.get_device()?;
        if peer == device {
            // As the runtime API answers (the driver's own code, 217, hides the cause).
            return Err(Error::api(CUDA_ERROR_INVALID_DEVICE, BackendKind::Cuda));
        }
        let peer_ctx = self.primary_context(peer)?;
        // SAFETY: a context is current and peer_ctx is a retained primary context.
        check(unsafe { (self.api.cuCtxEnablePeerAccess)(peer_ctx, flags) })?;
        // Context peer access covers cuMemAlloc memory only: GPUArrays come from the peer's
        // stream-ordered pool, whose blocks this device may address only once the pool says so.
        self.set_pool_access(peer, device, CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    }

    fn disable_peer_access(&self, peer: i32) -> Result<()> {
        self.ensure_context()?;
        let device = self.get_device()?;
        if peer == device {
            return Err(Error::api(CUDA_ERROR_INVALID_DEVICE, BackendKind::Cuda));
        }
        let peer_ctx = self.primary_context(peer)?;
        // SAFETY: a context is current and peer_ctx is a retained primary context.
        check(unsafe { (self.api.cuCtxDisablePeerAccess)(peer_ctx) })?;
        self.set_pool_access(peer, device, CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE)
    }

    fn memcpy_peer(&self, copy: &PeerCopy, s: Option<StreamHandle>) -> Result<()> {
        self.ensure_context()?;
        let PeerCopy { dst, dst_device, src, src_device, bytes } = *copy;
        self.note_stream(s);
        let (dst_ctx, src_ctx) = (self.primary_context(dst_device)?, self.primary_context(src_device)?);
        match s {
            // SAFETY: both contexts are retained primary contexts; the driver checks that the
            // ranges are device memory of those contexts.
            None => check(unsafe { (self.api.cuMemcpyPeer)(dst, dst_ctx, src, src_ctx, bytes) }),
            // SAFETY: as above; the stream is the caller's (checked to be of the current device).
            Some(_) => check(unsafe { (self.api.cuMemcpyPeerAsync)(dst, dst_ctx, src, src_ctx, bytes, stream(s)) }),
        }
    }
}
