//! Several devices: peer access between primary contexts, copies between devices, and
//! events shared with other processes.

use super::*;
use crate::runtime::PeerCopy;

impl CudaBackend {
    pub(super) fn cuda_enable_peer_access(&self, peer: i32, flags: u32) -> Result<()> {
        self.ensure_context()?;
        let peer_ctx = self.primary_context(peer)?;
        // SAFETY: a context is current and peer_ctx is a retained primary context.
        check(unsafe { (self.api.cuCtxEnablePeerAccess)(peer_ctx, flags) })
    }

    pub(super) fn cuda_disable_peer_access(&self, peer: i32) -> Result<()> {
        self.ensure_context()?;
        let peer_ctx = self.primary_context(peer)?;
        // SAFETY: a context is current and peer_ctx is a retained primary context.
        check(unsafe { (self.api.cuCtxDisablePeerAccess)(peer_ctx) })
    }

    pub(super) fn cuda_memcpy_peer(&self, copy: &PeerCopy, s: Option<StreamHandle>) -> Result<()> {
        self.ensure_context()?;
        let PeerCopy { dst, dst_device, src, src_device, bytes } = *copy;
        let (dst_ctx, src_ctx) = (self.primary_context(dst_device)?, self.primary_context(src_device)?);
        match s {
            // SAFETY: both contexts are retained primary contexts; the driver checks that the
            // ranges are device memory of those contexts.
            None => check(unsafe { (self.api.cuMemcpyPeer)(dst, dst_ctx, src, src_ctx, bytes) }),
            // SAFETY: as above; the stream is the caller's (checked to be of the current device).
            Some(_) => check(unsafe { (self.api.cuMemcpyPeerAsync)(dst, dst_ctx, src, src_ctx, bytes, stream(s)) }),
        }
    }

    pub(super) fn cuda_ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.ensure_context()?;
        let mut handle = CUipcEventHandle { reserved: [0; IPC_HANDLE_BYTES] };
        // SAFETY: valid out-pointer; the event is a live handle of ours (the driver checks its flags).
        check(unsafe { (self.api.cuIpcGetEventHandle)(&mut handle, event.0 as CUevent) })?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    pub(super) fn cuda_ipc_open_event_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<EventHandle> {
        self.ensure_context()?;
        let handle = CUipcEventHandle { reserved: handle.map(|b| b as c_char) };
        let mut event: CUevent = null_mut();
        // SAFETY: valid out-pointer; the handle is opaque bytes the driver validates.
        check(unsafe { (self.api.cuIpcOpenEventHandle)(&mut event, handle) })?;
        Ok(EventHandle(event as usize))
    }
}
