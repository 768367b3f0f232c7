//! What a Python object owns until `close()`/`free()` or its last reference: a stream,
//! an event, a module, device memory. After release, use raises the invalid-handle error.
//! Shared runtime objects sit behind an `Arc`, so that a call in progress on another thread
//! (with the lock released) keeps the object alive until it returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::prelude::*;

use super::errors::released;

pub struct Releasable<T> {
    slot: Mutex<Option<T>>,
    /// Whether the value was taken out, readable without the lock (`check_live`).
    released: AtomicBool,
    /// How errors name the owner, e.g. "this cudaStream_t".
    what: &'static str,
}

impl<T> Releasable<T> {
    pub fn new(value: T, what: &'static str) -> Self {
        Releasable { slot: Mutex::new(Some(value)), released: AtomicBool::new(false), what }
    }

    /// The invalid-handle error once released, without taking the lock: for callers that need
    /// only to know (a launch's module) or that kept a copy of what they use (an address). As
    /// with `with`, a release on another thread may follow right after.
    pub fn check_live(&self) -> PyResult<()> {
        if self.released.load(Ordering::Acquire) {
            return Err(released(self.what));
        }
        Ok(())
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
        let mut slot = self.lock();
        self.released.store(true, Ordering::Release);
        slot.take()
    }

    pub fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
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
