//! The one audited place where a raw backend handle is trusted to be destroyed: `Owned<H>`
//! holds a handle that a backend created, destroys it exactly once (by `close`, or in `Drop`)
//! and, in `Drop`, records a failure for cudaGetLastError instead of panicking. In a forked
//! child it leaves the handle alone: the parent process still owns it.

use super::error::record_error;
use super::{Backend, EventHandle, GraphExecHandle, GraphHandle, ModuleHandle, Result, StreamHandle};

/// A handle kind and the backend call that destroys it.
pub trait RawHandle: Copy {
    /// # Safety
    /// `self` is live, was created by `backend`, and nothing uses it afterwards.
    unsafe fn destroy(self, backend: &dyn Backend) -> Result<()>;
}

impl RawHandle for StreamHandle {
    unsafe fn destroy(self, backend: &dyn Backend) -> Result<()> {
        // A capture left open would outlive its stream in the driver (a leak per stream): end it
        // and destroy what it recorded first. A capture the driver already invalidated gives no
        // graph, which is fine.
        if backend.stream_is_capturing(self) == Ok(true) {
            if let Ok(graph) = backend.stream_end_capture(self) {
                // SAFETY: the graph was just made by end_capture and nothing else holds it.
                let _ = unsafe { backend.graph_destroy(graph) };
            }
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { backend.stream_destroy(self) }
    }
}

impl RawHandle for EventHandle {
    unsafe fn destroy(self, backend: &dyn Backend) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { backend.event_destroy(self) }
    }
}

impl RawHandle for ModuleHandle {
    unsafe fn destroy(self, backend: &dyn Backend) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { backend.module_unload(self) }
    }
}

impl RawHandle for GraphHandle {
    unsafe fn destroy(self, backend: &dyn Backend) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { backend.graph_destroy(self) }
    }
}

impl RawHandle for GraphExecHandle {
    unsafe fn destroy(self, backend: &dyn Backend) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { backend.graph_exec_destroy(self) }
    }
}

/// A live handle and the backend that made it. Only this crate's RAII types build one, each
/// from the handle a backend call has just returned, so the handle is live until `Owned`
/// destroys it; the copies handed out by `get` are used through borrows of the owner.
pub(crate) struct Owned<H: RawHandle> {
    backend: &'static dyn Backend,
    handle: H,
    /// False once `close` has destroyed the handle, so that `drop` does not again.
    live: bool,
}

impl<H: RawHandle> Owned<H> {
    /// `handle` has just been created by `backend`, and nobody else destroys it.
    pub(crate) fn new(backend: &'static dyn Backend, handle: H) -> Self {
        Owned { backend, handle, live: true }
    }

    pub(crate) fn get(&self) -> H {
        self.handle
    }

    /// Destroys the handle now and returns the backend's status.
    pub(crate) fn close(mut self) -> Result<()> {
        self.live = false;
        if super::in_forked_child() {
            return Ok(()); // the parent owns it
        }
        // SAFETY: the handle came from this backend (see `new`) and `live` was true, so it
        // has not been destroyed; clearing `live` keeps `drop` from destroying it again.
        unsafe { self.handle.destroy(self.backend) }
    }
}

impl<H: RawHandle> Drop for Owned<H> {
    fn drop(&mut self) {
        if !self.live || super::in_forked_child() {
            return;
        }
        self.live = false;
        // SAFETY: as in `close`: created by this backend, still live, destroyed exactly once.
        if let Err(e) = unsafe { self.handle.destroy(self.backend) } {
            record_error(e.code());
        }
    }
}
