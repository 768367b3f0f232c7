//! A device of the active backend, shared through an `Arc` by everything made on it (as
//! cudarc's `CudaContext`): streams, events, modules and memory hold one, so the device
//! they belong to is known and the backend that destroys them is the one that made them.
//! The backend keeps each device's primary context for the whole process, so the `Arc`
//! owns the association, not the driver context itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::{backend, Backend, BackendKind, Error, Result};

pub struct Context {
    backend: &'static dyn Backend,
    device: i32,
}

/// One `Context` per device, shared by all its users.
static CONTEXTS: OnceLock<Mutex<HashMap<i32, Arc<Context>>>> = OnceLock::new();

impl Context {
    /// The context of the calling thread's current device, starting the backend if needed.
    pub fn current() -> Result<Arc<Context>> {
        let b = backend()?;
        Self::of_device(b, b.get_device()?)
    }

    /// The context of `device` (made current on this thread).
    pub fn new(device: i32) -> Result<Arc<Context>> {
        let b = backend()?;
        b.set_device(device)?;
        Self::of_device(b, device)
    }

    fn of_device(b: &'static dyn Backend, device: i32) -> Result<Arc<Context>> {
        let mut table = CONTEXTS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        Ok(table.entry(device).or_insert_with(|| Arc::new(Context { backend: b, device })).clone())
    }

    pub fn backend(&self) -> &'static dyn Backend {
        self.backend
    }

    pub fn kind(&self) -> BackendKind {
        self.backend.kind()
    }

    pub fn device(&self) -> i32 {
        self.device
    }

    /// Refuses work on this context's objects while another device is current on this
    /// thread, saying how to fix it.
    pub fn check_current(&self, what: &str) -> Result<()> {
        let current = self.backend.get_device()?;
        if current != self.device {
            return Err(Error::InvalidArgument(format!(
                "{what} belongs to device {}, but device {current} is current: call cudaSetDevice({}) first",
                self.device, self.device
            )));
        }
        Ok(())
    }

    pub fn synchronize(&self) -> Result<()> {
        self.backend.device_synchronize()
    }

    /// (free, total) bytes of the device.
    pub fn mem_get_info(&self) -> Result<(usize, usize)> {
        self.backend.mem_get_info()
    }

    pub fn name(&self) -> Result<String> {
        Ok(self.backend.device_properties(self.device)?.name)
    }
}
