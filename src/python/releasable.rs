//! What a Python object owns until `close()`/`free()` or its last reference: a stream,
//! an event, a module, device memory. After release, use raises the invalid-handle error.
//! Shared runtime objects sit behind an `Arc`, so that a call in progress on another thread
//! (with the lock released) keeps the object alive until it returns.

use std::sync::{Arc, Mutex, MutexGuard};

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

    pub fn is_released(&self) -> bool {
        self.lock().is_none()
    }
}

impl<T: Clone> Releasable<T> {
    /// The live value, or the invalid-handle error once released.
    pub fn get(&self) -> PyResult<T> {
        self.with(T::clone)
    }
}

impl<T> Releasable<Arc<T>> {
    /// Releases the owner's reference (idempotent): `close` destroys the object now and
    /// returns the status, unless a call in progress still holds it, whose end then drops it.
    pub fn release_with(&self, close: impl FnOnce(T) -> crate::runtime::Result<()>) -> crate::runtime::Result<()> {
        match self.take().map(Arc::try_unwrap) {
            Some(Ok(value)) => close(value),
            Some(Err(_)) | None => Ok(()),
        }
    }
}
