//! The activity recorder behind `pygpu.profile()`: while a recording runs, a backend that
//! records (`Capabilities::activity_records`) notes each launch, copy, fill, allocation and
//! synchronisation it performs, with its start and end on one process-wide clock (the CUDA
//! backend's device work arrives from CUPTI, converted to this clock). Outside a recording the
//! only cost is one relaxed atomic load per operation.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};
use std::time::Instant;

use super::error::{CUDA_ERROR_ILLEGAL_STATE, CUDA_ERROR_NOT_SUPPORTED};
use super::{BackendKind, Error, Result};

/// What an activity was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityKind {
    Kernel,
    CopyHostToDevice,
    CopyDeviceToHost,
    CopyDeviceToDevice,
    Memset,
    Alloc,
    Free,
    Synchronize,
    /// A named range the user marked (`pygpu.nvtx.range`).
    Range,
}

impl ActivityKind {
    /// The name Python sees (`Activity.kind`).
    pub fn name(self) -> &'static str {
        match self {
            ActivityKind::Kernel => "kernel",
            ActivityKind::CopyHostToDevice => "memcpy_htod",
            ActivityKind::CopyDeviceToHost => "memcpy_dtoh",
            ActivityKind::CopyDeviceToDevice => "memcpy_dtod",
            ActivityKind::Memset => "memset",
            ActivityKind::Alloc => "alloc",
            ActivityKind::Free => "free",
            ActivityKind::Synchronize => "synchronize",
            ActivityKind::Range => "range",
        }
    }
}

/// One recorded activity. Times are nanoseconds on `clock_ns`'s clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub kind: ActivityKind,
    /// The kernel's or range's name; empty for the others.
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The stream's handle (0: the default stream; ranges: the recording thread's number).
    pub stream: u64,
    /// Bytes copied, set or allocated; 0 where not known (kernels).
    pub bytes: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

/// Activities kept per recording at most (about 100 bytes each); later ones are counted in
/// `Recording::dropped`, so that a forgotten recording cannot take all memory.
pub const MAX_ACTIVITIES: usize = 1 << 20;

/// What `stop` hands back.
#[derive(Debug, Default)]
pub struct Recording {
    pub activities: Vec<Activity>,
    pub dropped: u64,
}

static RECORDING: AtomicBool = AtomicBool::new(false);
/// The running recording's number (`start` hands it out, `stop` wants it back).
static TOKEN: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static ACTIVITIES: Mutex<Vec<Activity>> = Mutex::new(Vec::new());
static EPOCH: OnceLock<Instant> = OnceLock::new();

fn activities() -> MutexGuard<'static, Vec<Activity>> {
    // A panic while the lock was held left a plain Vec, still whole: go on with it.
    ACTIVITIES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a recording runs: the check on every operation's path.
#[inline]
pub fn recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

/// Nanoseconds since the first use of the clock in this process (monotonic).
pub fn clock_ns() -> u64 {
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Starts a recording on `backend`, one at a time in a process; its number, for `stop`.
pub fn start(backend: BackendKind) -> Result<u64> {
    if !backend.capabilities().activity_records {
        return Err(Error::detailed(
            CUDA_ERROR_NOT_SUPPORTED,
            backend,
            format!(
                "pygpu.profile() does not record on the {} backend yet (it records on the host and cuda \
             backends; roctracer's records are to come): time code there with events \
             (pygpu.driver.Event) or the platform's profiler",
                backend.name()
            ),
        ));
    }
    install_fork_handlers();
    let mut kept = activities();
    if RECORDING.swap(true, Ordering::SeqCst) {
        return Err(Error::detailed(
            CUDA_ERROR_ILLEGAL_STATE,
            backend,
            "a pygpu.profile() recording already runs in this process: end it before starting another \
             (recordings do not nest)",
        ));
    }
    kept.clear();
    DROPPED.store(0, Ordering::Relaxed);
    clock_ns(); // the epoch, before the first activity
    Ok(TOKEN.fetch_add(1, Ordering::SeqCst) + 1)
}

/// Whether recording number `token` is the one running.
pub fn is_running(token: u64) -> bool {
    recording() && TOKEN.load(Ordering::SeqCst) == token
}

/// Counts `n` activities the device's own recorder could not keep (CUPTI's dropped records).
pub fn count_dropped(n: u64) {
    DROPPED.fetch_add(n, Ordering::Relaxed);
}

/// Ends recording number `token` and hands its activities back in the order they ended.
/// Refused where that recording is not the one running (it ended, or this is another's
/// number), so that no one ends or empties someone else's recording.
pub fn stop(token: u64) -> Result<Recording> {
    let mut kept = activities();
    if !is_running(token) {
        return Err(Error::detailed(
            CUDA_ERROR_ILLEGAL_STATE,
            BackendKind::Host,
            "this pygpu.profile() recording is not running: it ended already, or it was never started \
             (end a recording with the `with` block that started it)",
        ));
    }
    RECORDING.store(false, Ordering::SeqCst);
    Ok(Recording { activities: std::mem::take(&mut *kept), dropped: DROPPED.swap(0, Ordering::Relaxed) })
}

thread_local! {
    /// The recorder's lock, held by the forking thread across fork() (see install_fork_handlers).
    static FORK_GUARD: RefCell<Option<MutexGuard<'static, Vec<Activity>>>> = const { RefCell::new(None) };
}

/// After fork() the child runs no recording: it inherits neither the parent's (which the
/// parent will end) nor a lock held by a thread that does not exist there. Registered once,
/// on the first recording.
fn install_fork_handlers() {
    static INSTALLED: Once = Once::new();
    // SAFETY: the handlers only take and release the recorder's lock on the forking thread
    // (`prepare` before fork, `parent`/`child` after it, on the same thread) and store atomics.
    INSTALLED.call_once(|| unsafe {
        libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child));
    });
}

extern "C" fn fork_prepare() {
    let kept = activities();
    let _ = FORK_GUARD.try_with(|g| *g.borrow_mut() = Some(kept));
}

extern "C" fn fork_parent() {
    let _ = FORK_GUARD.try_with(|g| drop(g.borrow_mut().take()));
}

extern "C" fn fork_child() {
    RECORDING.store(false, Ordering::SeqCst);
    let _ = FORK_GUARD.try_with(|g| {
        if let Some(mut kept) = g.borrow_mut().take() {
            *kept = Vec::new();
        }
    });
}

/// Keeps `activity` if a recording runs (one that ended meanwhile does not take it).
pub fn record(activity: Activity) {
    let mut kept = activities();
    if !recording() {
        return;
    }
    if kept.len() >= MAX_ACTIVITIES {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    } else {
        kept.push(activity);
    }
}

/// Records an activity without launch shape that started at `start_ns` and ends now.
pub fn record_since(kind: ActivityKind, start_ns: u64, stream: u64, bytes: u64) {
    record(Activity {
        kind,
        name: String::new(),
        start_ns,
        end_ns: clock_ns(),
        stream,
        bytes,
        grid: [0; 3],
        block: [0; 3],
    });
}

/// Runs `op`, noted as an activity of `kind` on `stream` moving `bytes` when a recording runs
/// and `op` succeeds.
pub fn noted<T>(kind: ActivityKind, stream: u64, bytes: u64, op: impl FnOnce() -> Result<T>) -> Result<T> {
    if !recording() {
        return op();
    }
    let start = clock_ns();
    let out = op()?;
    record_since(kind, start, stream, bytes);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the recorder is process-wide, and tests run in parallel.
    #[test]
    fn records_only_while_recording_and_refuses_to_nest() {
        assert!(start(BackendKind::Hip).is_err(), "no activity records on hip yet");
        assert!(!recording());
        let token = start(BackendKind::Host).expect("the host backend records");
        assert!(start(BackendKind::Host).is_err(), "recordings do not nest");
        let t0 = clock_ns();
        record_since(ActivityKind::Memset, t0, 0xdead_beef, 64);
        assert!(stop(token + 1).is_err(), "only its own number ends a recording");
        assert!(recording());
        let got = stop(token).expect("its own number ends it");
        assert!(!recording());
        assert!(stop(token).is_err(), "ended already");
        // Other tests' host operations may land in the recording too; this one is there once.
        let mine: Vec<&Activity> = got.activities.iter().filter(|a| a.stream == 0xdead_beef).collect();
        assert_eq!(mine.len(), 1);
        assert_eq!((mine[0].kind, mine[0].bytes), (ActivityKind::Memset, 64));
        assert!(mine[0].start_ns == t0 && mine[0].end_ns >= t0);
        record_since(ActivityKind::Free, clock_ns(), 0, 8);
        let again = start(BackendKind::Host).expect("a new recording");
        assert!(stop(again).map(|r| r.activities.iter().all(|a| a.stream != 0xdead_beef)).unwrap_or(false));
    }
}
