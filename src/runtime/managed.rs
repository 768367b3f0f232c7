//! Managed (unified) memory: one address that both the host and the device use; the driver
//! migrates the pages. Released exactly once, when dropped.

use std::sync::Arc;

use super::context::Context;
use super::error::record_error;
use super::{DevicePtr, Error, Result, StreamHandle, MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE};

/// `cuMemAllocManaged` memory of the context's device, freed when dropped.
pub struct ManagedBuffer {
    ptr: DevicePtr,
    bytes: usize,
    ctx: Arc<Context>,
}

impl ManagedBuffer {
    /// `bytes` of managed memory on the current device, attached as `flags` says (GLOBAL or
    /// HOST). An empty buffer still gets one byte, so that its address is a real one.
    pub fn new(bytes: usize, flags: u32) -> Result<Self> {
        if flags != MEM_ATTACH_GLOBAL && flags != MEM_ATTACH_HOST {
            return Err(Error::InvalidArgument(format!(
                "managed memory is allocated with mem_attach_flags GLOBAL (1) or HOST (2), not {flags}; \
                 attach it to a single stream afterwards with attach(SINGLE, stream)"
            )));
        }
        let ctx = Context::current()?;
        let ptr = ctx.backend().malloc_managed(bytes.max(1), flags)?;
        Ok(ManagedBuffer { ptr, bytes, ctx })
    }

    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Changes which streams may access the memory once the work queued on `stream` before
    /// it is done (`cuStreamAttachMemAsync` over the whole allocation).
    pub fn attach(&self, flags: u32, stream: StreamHandle) -> Result<()> {
        if ![MEM_ATTACH_GLOBAL, MEM_ATTACH_HOST, MEM_ATTACH_SINGLE].contains(&flags) {
            return Err(Error::InvalidArgument(format!(
                "attach takes one mem_attach_flags value: GLOBAL (1), HOST (2) or SINGLE (4), not {flags}"
            )));
        }
        if flags == MEM_ATTACH_SINGLE && stream == StreamHandle::DEFAULT {
            return Err(Error::InvalidArgument(
                "attach(SINGLE) needs the stream to attach the memory to: pass stream=".to_string(),
            ));
        }
        self.ctx.backend().stream_attach_mem(stream, self.ptr, 0, flags)
    }
}

impl Drop for ManagedBuffer {
    fn drop(&mut self) {
        if super::in_forked_child() {
            return; // the parent owns the memory
        }
        // SAFETY: ptr came from this backend's malloc_managed (which `free` releases, as
        // cuMemFree does managed memory) and is dropped exactly once.
        if let Err(e) = unsafe { self.ctx.backend().free(self.ptr) } {
            record_error(e.code());
        }
    }
}
