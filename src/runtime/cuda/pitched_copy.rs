//! Strided 2-D/3-D copies (PyCUDA's Memcpy2D/Memcpy3D) through cuMemcpy2D/cuMemcpy3D.

use super::*;

impl CudaBackend {
    pub(super) unsafe fn cuda_memcpy_pitched(&self, copy: &PitchedCopy, s: Option<StreamHandle>) -> Result<()> {
        copy.validate()?;
        if copy.is_empty() {
            return Ok(());
        }
        if let (Memory::Host(_), Memory::Host(_)) = (copy.src.memory, copy.dst.memory) {
            // No device involved: plain copies on the CPU, after the stream's earlier work.
            // SAFETY: forwarded from the caller.
            return unsafe { copy.by_rows(self, s) };
        }
        self.ensure_context()?;
        let side = |p: &PitchedSide| match p.memory {
            Memory::Host(h) => (CUmemorytype::CU_MEMORYTYPE_HOST, h as *mut c_void, 0),
            Memory::Device(d) => (CUmemorytype::CU_MEMORYTYPE_DEVICE, null_mut(), d),
        };
        let ((src_type, src_host, src_device), (dst_type, dst_host, dst_device)) = (side(&copy.src), side(&copy.dst));
        if copy.depth == 1 && copy.src.z == 0 && copy.dst.z == 0 {
            let params = CUDA_MEMCPY2D {
                srcXInBytes: copy.src.x_in_bytes,
                srcY: copy.src.y,
                srcMemoryType: src_type,
                srcHost: src_host,
                srcDevice: src_device,
                srcArray: null_mut(),
                srcPitch: copy.src.pitch,
                dstXInBytes: copy.dst.x_in_bytes,
                dstY: copy.dst.y,
                dstMemoryType: dst_type,
                dstHost: dst_host,
                dstDevice: dst_device,
                dstArray: null_mut(),
                dstPitch: copy.dst.pitch,
                WidthInBytes: copy.width_in_bytes,
                Height: copy.height,
            };
            // SAFETY: params describes host memory the caller vouches for and device memory
            // the driver validates.
            return check(unsafe {
                match s {
                    None => (self.api.cuMemcpy2D_v2)(&params),
                    Some(_) => (self.api.cuMemcpy2DAsync_v2)(&params, stream(s)),
                }
            });
        }
        let params = CUDA_MEMCPY3D {
            srcXInBytes: copy.src.x_in_bytes,
            srcY: copy.src.y,
            srcZ: copy.src.z,
            srcLOD: 0,
            srcMemoryType: src_type,
            srcHost: src_host,
            srcDevice: src_device,
            srcArray: null_mut(),
            reserved0: null_mut(),
            srcPitch: copy.src.pitch,
            srcHeight: copy.src.height,
            dstXInBytes: copy.dst.x_in_bytes,
            dstY: copy.dst.y,
            dstZ: copy.dst.z,
            dstLOD: 0,
            dstMemoryType: dst_type,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstArray: null_mut(),
            reserved1: null_mut(),
            dstPitch: copy.dst.pitch,
            dstHeight: copy.dst.height,
            WidthInBytes: copy.width_in_bytes,
            Height: copy.height,
            Depth: copy.depth,
        };
        // SAFETY: as for the 2-D copy.
        check(unsafe {
            match s {
                None => (self.api.cuMemcpy3D_v2)(&params),
                Some(_) => (self.api.cuMemcpy3DAsync_v2)(&params, stream(s)),
            }
        })
    }
}
