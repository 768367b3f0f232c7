//! What a Python object owns until `close()`/`free()` or its last reference: a stream,
//! an event, a module, device memory. After release, use raises the invalid-handle error.

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;

use super::errors::released;

pub struct Releasable<T> {
    slot: Mutex<Option<T>>,
    /// How errors name the owner, e.g. "this cudaStream_t".
    what: &'static str,
}

impl<T> Releasable<T> {
    pub fn new(value: T, what: &'static str) -> Self {
        Releasable { slot: Mutex::new(Some(value)), what }
    }

    fn lock(&self) -> MutexGuard<'_, Option<T>> {
        // No code that can panic runs under this lock; if it ever did, the Option is
        // still whole, so recover rather than abort.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `f` of the live value, or the invalid-handle error once released.
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> PyResult<R> {
        self.lock().as_ref().map(f).ok_or_else(|| released(self.what))
    }

    /// Takes the value out (None if already released); the caller releases it.
    pub fn take(&self) -> Option<T> {
        self.lock().take()
    }

    /// `take` for destructors, which have exclusive access and need no lock.
    pub fn take_mut(&mut self) -> Option<T> {
        self.slot.get_mut().unwrap_or_else(|e| e.into_inner()).take()
    }

    pub fn is_released(&self) -> bool {
        self.lock().is_none()
    }
}

impl<T: Copy> Releasable<T> {
    /// The live value, or the invalid-handle error once released.
    pub fn get(&self) -> PyResult<T> {
        self.with(|v| *v)
    }
}
