//! Peer access: one device addressing another's memory, and copies between devices. A
//! backend that has neither says so once, from `Backend::peer_access`.

use crate::runtime::{DevicePtr, Result, StreamHandle};

/// A copy between devices: `bytes` from `src` on `src_device` to `dst` on `dst_device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCopy {
    pub dst: DevicePtr,
    pub dst_device: i32,
    pub src: DevicePtr,
    pub src_device: i32,
    pub bytes: usize,
}

pub trait PeerAccess: Send + Sync {
    /// Lets the current device address `peer`'s memory directly (`cuCtxEnablePeerAccess`
    /// with the peer's primary context); `flags` must be 0.
    fn enable_peer_access(&self, peer: i32, flags: u32) -> Result<()>;
    /// Undoes `enable_peer_access` (`cuCtxDisablePeerAccess`).
    fn disable_peer_access(&self, peer: i32) -> Result<()>;
    /// A copy between devices (`cuMemcpyPeer`, or `cuMemcpyPeerAsync` on `stream`); works
    /// without peer access (the driver stages it).
    fn memcpy_peer(&self, copy: &PeerCopy, stream: Option<StreamHandle>) -> Result<()>;
}
