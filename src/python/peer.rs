//! Several devices in one process: peer access between the current device and another, and
//! copies between devices. These calls raise; `status_api` gives PyGPU's status-returning
//! names (`cudaMemcpyPeer`, ...) over them.

use pyo3::prelude::*;

use super::errors::CallResult;
use super::memory::{byte_count, device_address, DeviceAllocation};
use super::stream::{stream_handle, CudaStream};
use crate::runtime::{backend, Error, PeerCopy};

/// Synchronous copies at least this large let other Python threads run.
const RELEASE_GIL_BYTES: usize = 1 << 20;

/// Lets the current device address `peer_device`'s memory directly (flags must be 0).
#[pyfunction]
#[pyo3(signature = (peer_device, flags = 0))]
pub fn device_enable_peer_access(peer_device: i32, flags: u32) -> CallResult<()> {
    Ok(backend()?.peer_access()?.enable_peer_access(peer_device, flags)?)
}

/// Stops the current device addressing `peer_device`'s memory directly (undoes
/// device_enable_peer_access).
#[pyfunction]
pub fn device_disable_peer_access(peer_device: i32) -> CallResult<()> {
    Ok(backend()?.peer_access()?.disable_peer_access(peer_device)?)
}

/// Copies `count` bytes from `src` on `src_device` to `dst` on `dst_device`, waiting for it.
#[pyfunction]
pub fn memcpy_peer(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    dst_device: i32,
    src: &Bound<'_, PyAny>,
    src_device: i32,
    count: isize,
) -> CallResult<()> {
    peer_copy(py, dst, dst_device, src, src_device, count, None)
}

/// The same, ordered on `stream` (of the current device; None: the legacy default stream).
#[pyfunction]
#[pyo3(signature = (dst, dst_device, src, src_device, count, stream = None))]
pub fn memcpy_peer_async(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    dst_device: i32,
    src: &Bound<'_, PyAny>,
    src_device: i32,
    count: isize,
    stream: Option<&Bound<'_, CudaStream>>,
) -> CallResult<()> {
    let stream = Some(stream_handle(stream)?);
    peer_copy(py, dst, dst_device, src, src_device, count, stream)
}

/// Refuses a DeviceAllocation named as memory of a device it does not belong to.
fn check_side(what: &str, obj: &Bound<'_, PyAny>, device: i32, bytes: usize) -> PyResult<u64> {
    let (ptr, capacity) = device_address(obj)?;
    if let Ok(a) = obj.cast::<DeviceAllocation>() {
        let owner = a.get().device();
        if owner != device {
            return Err(Error::InvalidArgument(format!(
                "the {what} is memory of device {owner}, but the copy names device {device} for it"
            ))
            .into());
        }
    }
    if let Some(cap) = capacity.filter(|cap| bytes > *cap) {
        return Err(Error::InvalidArgument(format!(
            "the {what}: {bytes} bytes do not fit in a device allocation of {cap} bytes"
        ))
        .into());
    }
    Ok(ptr)
}

fn peer_copy(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    dst_device: i32,
    src: &Bound<'_, PyAny>,
    src_device: i32,
    count: isize,
    stream: Option<crate::runtime::StreamHandle>,
) -> CallResult<()> {
    let bytes = byte_count(count)?;
    let dst_ptr = check_side("destination", dst, dst_device, bytes)?;
    let src_ptr = check_side("source", src, src_device, bytes)?;
    let peers = backend()?.peer_access()?;
    let peer = PeerCopy { dst: dst_ptr, dst_device, src: src_ptr, src_device, bytes };
    let copy = move || peers.memcpy_peer(&peer, stream);
    Ok(if stream.is_none() && bytes >= RELEASE_GIL_BYTES { py.detach(copy) } else { copy() }?)
}
