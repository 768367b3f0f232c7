//! Several devices on the host backend (`PYGPU_HOST_DEVICES=N`): every allocation is tagged
//! with the device that was current when it was made, peer access is recorded per pair as
//! CUDA records it per context, and a peer copy checks that each side is memory of the
//! device it names, as cuMemcpyPeer's contexts must match the pointers.

use super::*;
use crate::runtime::error::{CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED};
use crate::runtime::PeerCopy;

impl HostBackend {
    fn check_device(&self, device: i32) -> Result<()> {
        if (0..self.device_count).contains(&device) {
            Ok(())
        } else {
            Err(Self::err(CUDA_ERROR_INVALID_DEVICE))
        }
    }

    /// Refuses `[ptr, ptr + bytes)` when it lies in an allocation of a device other than `device`.
    fn check_on_device(state: &State, ptr: DevicePtr, bytes: usize, device: i32) -> Result<()> {
        let owner = state.allocations.range(..=ptr).next_back().filter(|(s, (n, _))| ptr < *s + (*n).max(1) as u64);
        match owner {
            Some((_, (_, d))) if *d != device && bytes > 0 => Err(Error::detailed(
                CUDA_ERROR_INVALID_VALUE,
                BackendKind::Host,
                format!("0x{ptr:x} is memory of device {d}, not of device {device}"),
            )),
            _ => Ok(()),
        }
    }
}

impl PeerAccess for HostBackend {
    fn enable_peer_access(&self, peer: i32, flags: u32) -> Result<()> {
        self.check_device(peer)?;
        if flags != 0 {
            return Err(Self::err(CUDA_ERROR_INVALID_VALUE));
        }
        let current = CURRENT_DEVICE.with(|d| d.get());
        if peer == current {
            return Err(Self::err(CUDA_ERROR_INVALID_DEVICE));
        }
        if !self.state().peer_access.insert((current, peer)) {
            return Err(Self::err(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED));
        }
        Ok(())
    }

    fn disable_peer_access(&self, peer: i32) -> Result<()> {
        self.check_device(peer)?;
        let current = CURRENT_DEVICE.with(|d| d.get());
        if !self.state().peer_access.remove(&(current, peer)) {
            return Err(Self::err(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED));
        }
        Ok(())
    }

    fn memcpy_peer(&self, copy: &PeerCopy, stream: Option<StreamHandle>) -> Result<()> {
        let PeerCopy { dst, dst_device, src, src_device, bytes } = *copy;
        self.check_device(dst_device)?;
        self.check_device(src_device)?;
        {
            let state = self.state();
            Self::check_on_device(&state, src, bytes, src_device)?;
            Self::check_on_device(&state, dst, bytes, dst_device)?;
        }
        self.submit(stream, HostOp::DeviceToDevice { dst, src, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_devices() -> HostBackend {
        HostBackend { device_count: 2, ..HostBackend::new() }
    }

    fn code<T: std::fmt::Debug>(r: Result<T>) -> i32 {
        r.expect_err("expected an error").code()
    }

    #[test]
    fn peer_copies_check_which_device_each_side_is_on() {
        let b = two_devices();
        b.set_device(1).expect("device 1");
        let on1 = b.malloc(64).expect("malloc on 1");
        b.set_device(0).expect("device 0");
        let on0 = b.malloc(64).expect("malloc on 0");
        let data = [3u8; 64];
        // SAFETY: data is valid for 64 bytes.
        unsafe { b.memcpy_htod(on1, data.as_ptr(), 64, None) }.expect("fill");
        b.memcpy_peer(&PeerCopy { dst: on0, dst_device: 0, src: on1, src_device: 1, bytes: 64 }, None)
            .expect("peer copy");
        let mut out = [0u8; 64];
        // SAFETY: out is valid for 64 bytes.
        unsafe { b.memcpy_dtoh(out.as_mut_ptr(), on0, 64, None) }.expect("read back");
        assert_eq!(out, data);
        let wrong = b
            .memcpy_peer(&PeerCopy { dst: on0, dst_device: 1, src: on1, src_device: 1, bytes: 64 }, None)
            .expect_err("device 0 memory named as device 1's");
        assert!(wrong.to_string().contains("is memory of device 0, not of device 1"), "{wrong}");
        assert_eq!(
            code(b.memcpy_peer(&PeerCopy { dst: on0, dst_device: 2, src: on1, src_device: 1, bytes: 64 }, None)),
            CUDA_ERROR_INVALID_DEVICE
        );
        assert_eq!(
            code(b.memcpy_peer(&PeerCopy { dst: on0, dst_device: 0, src: on1, src_device: 1, bytes: 65 }, None)),
            CUDA_ERROR_INVALID_VALUE
        );
        // SAFETY: ours, freed once each.
        unsafe { b.free(on0).and(b.free(on1)) }.expect("free");
    }

    #[test]
    fn peer_access_is_per_ordered_pair() {
        let b = two_devices();
        b.enable_peer_access(1, 0).expect("0 -> 1");
        assert_eq!(code(b.enable_peer_access(1, 0)), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
        b.set_device(1).expect("device 1");
        assert_eq!(code(b.disable_peer_access(0)), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "1 -> 0 was never enabled");
        assert_eq!(code(b.enable_peer_access(1, 0)), CUDA_ERROR_INVALID_DEVICE, "not its own peer");
        b.set_device(0).expect("device 0");
        assert_eq!(code(b.enable_peer_access(5, 0)), CUDA_ERROR_INVALID_DEVICE);
        b.disable_peer_access(1).expect("0 -> 1 off");
        assert_eq!(code(b.disable_peer_access(1)), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    }
}
