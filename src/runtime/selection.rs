//! Which backend is active: chosen once per process (`set_backend`, else `PYGPU_BACKEND`,
//! else cuda then hip), started on first use and refused in a forked child.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

#[cfg(feature = "hip")]
use super::hip;
use super::{cuda, error, host, Backend, BackendKind, Error, Result};

static ACTIVE: OnceLock<&'static dyn Backend> = OnceLock::new();
/// Set in the child of a fork() after a GPU backend started: CUDA and HIP state does not
/// survive fork, and using it there can hang, so every call refuses instead.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn mark_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// True in a forked child of a process whose GPU backend had started. Destructors check it
/// and leave GPU resources alone there (the parent still owns them).
pub fn in_forked_child() -> bool {
    FORKED.load(Ordering::Relaxed)
}

fn forked_error() -> Error {
    Error::Unavailable(
        "this process was forked after the GPU backend started; the GPU cannot be used in the child. \
         Use multiprocessing.get_context(\"spawn\") (or \"forkserver\"), or start the GPU work only in the child"
            .to_string(),
    )
}
/// Serialises initialisation and holds a choice made by `set_backend` before first use.
static REQUESTED: Mutex<Option<BackendKind>> = Mutex::new(None);

/// Chooses the backend before first use. Choosing again the one already active is fine;
/// switching after first use is refused, because live pointers belong to the old one.
pub fn set_backend(name: &str) -> Result<()> {
    let kind = BackendKind::parse(name)?;
    let mut requested = REQUESTED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(active) = ACTIVE.get() {
        if active.kind() != kind {
            return Err(Error::InvalidArgument(format!(
                "the {} backend is already in use; call set_backend({:?}) before the first GPU call, \
                 or set PYGPU_BACKEND={} in the environment",
                active.kind().name(),
                kind.name(),
                kind.name()
            )));
        }
    }
    *requested = Some(kind);
    Ok(())
}

/// The active backend, initialised on first use: `set_backend`, else `PYGPU_BACKEND`,
/// else cuda, then hip where compiled in. Never falls back to host on its own.
pub fn backend() -> Result<&'static dyn Backend> {
    if let Some(b) = ACTIVE.get() {
        if in_forked_child() {
            return Err(forked_error());
        }
        return Ok(*b);
    }
    let requested = REQUESTED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = ACTIVE.get() {
        return Ok(*b);
    }
    super::environment::check(|name| std::env::var(name).ok())?;
    let choice = match *requested {
        Some(kind) => Some(kind),
        None => match std::env::var("PYGPU_BACKEND") {
            Ok(name) if !name.trim().is_empty() => Some(
                BackendKind::parse(&name).map_err(|e| Error::InvalidArgument(format!("PYGPU_BACKEND={name}: {e}")))?,
            ),
            _ => None,
        },
    };
    let created = match choice {
        Some(kind) => create(kind).map_err(|e| name_the_host_backend(e, kind))?,
        None => match create(BackendKind::Cuda) {
            Ok(b) => b,
            // HIP starts without a device; choose it automatically only if it sees one.
            Err(cuda_err) => match create(BackendKind::Hip).and_then(|b| match b.device_count() {
                Ok(n) if n > 0 => Ok(b),
                Ok(_) => Err(Error::api(error::CUDA_ERROR_NO_DEVICE, BackendKind::Hip)),
                Err(e) => Err(e),
            }) {
                Ok(b) => b,
                Err(hip_err) => {
                    return Err(Error::Unavailable(format!(
                        "no GPU backend could be started. cuda: {cuda_err}. hip: {hip_err}. \
                         To run on the CPU, set PYGPU_BACKEND=host or call pygpu.set_backend(\"host\") first."
                    )))
                }
            },
        },
    };
    if created.kind() != BackendKind::Host {
        // SAFETY: registers a handler that only stores to an atomic, which is
        // async-signal-safe, as a fork child handler must be.
        unsafe { libc::pthread_atfork(None, None, Some(mark_forked_child)) };
    }
    let _ = ACTIVE.set(created);
    Ok(created)
}

/// The active backend if one has been started; never starts one.
pub fn active_backend() -> Option<&'static dyn Backend> {
    ACTIVE.get().copied()
}

/// A GPU backend asked for by name that cannot start: the message says how to run without a
/// GPU, because a newcomer who copied `PYGPU_BACKEND=cuda` onto a laptop is stuck otherwise.
fn name_the_host_backend(error: Error, kind: BackendKind) -> Error {
    match error {
        Error::Unavailable(msg) if kind != BackendKind::Host => Error::Unavailable(format!(
            "the {} backend could not be started: {}. To run on the CPU without a GPU, set \
             PYGPU_BACKEND=host (or call pygpu.set_backend(\"host\") before the first GPU call)",
            kind.name(),
            msg.trim_end_matches(", or use another backend")
        )),
        other => other,
    }
}

fn create(kind: BackendKind) -> Result<&'static dyn Backend> {
    // Backends live for the whole process, as the CUDA runtime's state does.
    Ok(match kind {
        BackendKind::Host => {
            let host: &'static host::HostBackend = Box::leak(Box::new(host::HostBackend::new()));
            host.install_fork_handlers();
            host
        }
        BackendKind::Cuda => Box::leak(Box::new(cuda::CudaBackend::new()?)),
        #[cfg(feature = "hip")]
        BackendKind::Hip => Box::leak(Box::new(hip::HipBackend::new()?)),
        #[cfg(not(feature = "hip"))]
        BackendKind::Hip => {
            return Err(Error::Unavailable("this pygpu was built without the 'hip' feature".to_string()))
        }
    })
}

pub(super) fn backend_error_name(kind: BackendKind, code: i32) -> Option<String> {
    active_backend().filter(|b| b.kind() == kind)?.error_name(code)
}

pub(super) fn backend_error_string(kind: BackendKind, code: i32) -> Option<String> {
    active_backend().filter(|b| b.kind() == kind)?.error_string(code)
}
