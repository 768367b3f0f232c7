//! CUDA's half of `pygpu.profile()`: CUPTI's activity API, loaded at run time like NVRTC (the
//! Python side finds the library: the `nvidia-cuda-cupti` wheels, the toolkit, `PYGPU_CUPTI`).
//! While a recording runs, CUPTI writes a record for every kernel, copy and fill the device
//! executes, with the device's own start and end; its buffers come back through
//! `buffer_completed`, which turns each record into an `Activity` on the recorder's clock.
//!
//! CUPTI names streams by its own numbers: each launch, copy and fill issued while recording
//! notes which number its stream has (`note_stream`), so that records carry pygpu's handles.
//! A stream pygpu never issued work on (another library's) keeps CUPTI's number.
//!
//! Records are read by field offset rather than through a versioned struct: the fields used
//! here (kind, bytes, start, end, stream, grid, block, name) have kept their offsets in
//! every record version since CUDA 9 (`CUpti_ActivityKernel4` .. `Kernel10`,
//! `CUpti_ActivityMemcpy` .. `Memcpy6`, `CUpti_ActivityMemset` .. `Memset4`).

use std::alloc::{alloc, dealloc, Layout};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

use libloading::Library;

use super::sys::{CUcontext, CUstream};
use crate::runtime::activity::{self, Activity, ActivityKind};
use crate::runtime::rtc::with_sources;
use crate::runtime::{Error, Result, CUDA_STREAM_LEGACY, CUDA_STREAM_PER_THREAD};

type CuptiResult = c_int;
type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type CompleteFn = unsafe extern "C" fn(CUcontext, u32, *mut u8, usize, usize);

// CUpti_ActivityKind values (cupti_activity.h).
const KIND_MEMCPY: c_int = 1;
const KIND_MEMSET: c_int = 2;
const KIND_KERNEL: c_int = 3;
const KIND_CONCURRENT_KERNEL: c_int = 10;
/// The kinds a recording enables.
const RECORDED: [c_int; 3] = [KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET];
const FLUSH_FORCED: u32 = 1;
/// Bytes of one activity buffer handed to CUPTI (8-byte aligned, as CUPTI requires).
const BUFFER_BYTES: usize = 4 << 20;

struct Api {
    get_timestamp: unsafe extern "C" fn(*mut u64) -> CuptiResult,
    enable: unsafe extern "C" fn(c_int) -> CuptiResult,
    disable: unsafe extern "C" fn(c_int) -> CuptiResult,
    register_callbacks: unsafe extern "C" fn(RequestFn, CompleteFn) -> CuptiResult,
    flush_all: unsafe extern "C" fn(u32) -> CuptiResult,
    next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut c_void) -> CuptiResult,
    stream_id: unsafe extern "C" fn(CUcontext, CUstream, u8, *mut u32) -> CuptiResult,
    dropped_records: unsafe extern "C" fn(CUcontext, u32, *mut usize) -> CuptiResult,
    result_string: unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult,
    /// Held so the function pointers stay valid; never unloaded (CUPTI keeps threads).
    _library: Library,
}

/// The loaded library (the first one loaded serves the whole process).
static API: OnceLock<Api> = OnceLock::new();
/// CUPTI's stream numbers of this recording → pygpu's stream handles.
static STREAMS: Mutex<Option<HashMap<u32, u64>>> = Mutex::new(None);
/// CUPTI's clock minus the recorder's, taken when the recording started.
static CLOCK_OFFSET: AtomicI64 = AtomicI64::new(0);
/// Moves on at each recording's start and each stream's destruction, which make what threads
/// remember in `LAST_NOTED` stale (a new stream may have a destroyed one's handle).
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The (generation, context, stream) this thread noted last: launches on one stream in a
    /// row ask CUPTI once.
    static LAST_NOTED: Cell<(u64, usize, usize)> = const { Cell::new((u64::MAX, 0, 0)) };
}

fn api() -> Option<&'static Api> {
    API.get()
}

fn streams() -> MutexGuard<'static, Option<HashMap<u32, u64>>> {
    STREAMS.lock().unwrap_or_else(|p| p.into_inner())
}

fn cannot_use(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Unavailable(format!(
        "pygpu.profile() on the cuda backend needs CUPTI, and CUPTI at {} cannot be used: {why}. \
         Install it with `pip install pygpu[cupti]` (CUDA 13 drivers; pygpu[cupti-cu12] for CUDA 12), \
         or set PYGPU_CUPTI to a libcupti.so",
        path.display()
    ))
}

impl Api {
    fn load(path: &Path) -> Result<&'static Api> {
        if let Some(api) = API.get() {
            return Ok(api);
        }
        // SAFETY: loading CUPTI runs only its own initialisers.
        let library = unsafe { Library::new(path) }.map_err(|e| cannot_use(path, with_sources(&e)))?;
        /// # Safety
        /// `T` is the C type of `name` in CUPTI's headers.
        unsafe fn get<T: Copy>(library: &Library, path: &Path, name: &str) -> Result<T> {
            // SAFETY: per the function's contract.
            unsafe { library.get::<T>(format!("{name}\0").as_bytes()) }
                .map(|s| *s)
                .map_err(|e| cannot_use(path, format!("it has no {name} ({e})")))
        }
        // SAFETY: each type is the signature of that function in cupti_activity.h/cupti_result.h.
        let api = unsafe {
            Api {
                get_timestamp: get(&library, path, "cuptiGetTimestamp")?,
                enable: get(&library, path, "cuptiActivityEnable")?,
                disable: get(&library, path, "cuptiActivityDisable")?,
                register_callbacks: get(&library, path, "cuptiActivityRegisterCallbacks")?,
                flush_all: get(&library, path, "cuptiActivityFlushAll")?,
                next_record: get(&library, path, "cuptiActivityGetNextRecord")?,
                stream_id: get(&library, path, "cuptiGetStreamIdEx")?,
                dropped_records: get(&library, path, "cuptiActivityGetNumDroppedRecords")?,
                result_string: get(&library, path, "cuptiGetResultString")?,
                _library: library,
            }
        };
        // Two threads loading at once: one library is kept, the other handle closed again.
        Ok(API.get_or_init(|| api))
    }

    fn describe(&self, code: CuptiResult) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: valid out-pointer; CUPTI hands back a static string or fails.
        if unsafe { (self.result_string)(code, &mut text) } != 0 || text.is_null() {
            return format!("CUPTI error {code}");
        }
        // SAFETY: a NUL-terminated static string of CUPTI's.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }

    fn check(&self, call: &str, code: CuptiResult) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        Err(Error::Unavailable(format!(
            "pygpu.profile(): {call} failed with {} ({code}); another profiler (Nsight Systems, a \
             framework's profiler) may hold CUPTI in this process",
            self.describe(code)
        )))
    }

    fn timestamp(&self) -> u64 {
        let mut t = 0u64;
        // SAFETY: valid out-pointer.
        unsafe { (self.get_timestamp)(&mut t) };
        t
    }
}

/// Starts CUPTI's records (loading the library at `path` the first time).
pub fn start(path: &Path) -> Result<()> {
    let api = Api::load(path)?;
    static REGISTERED: Once = Once::new();
    let mut registered = Ok(());
    REGISTERED.call_once(|| {
        // SAFETY: two functions of the callbacks' C signatures, alive for the process.
        registered = api.check("cuptiActivityRegisterCallbacks", unsafe {
            (api.register_callbacks)(buffer_requested, buffer_completed)
        });
    });
    registered?;
    *streams() = Some(HashMap::new());
    GENERATION.fetch_add(1, Ordering::SeqCst);
    // The offset between the clocks, from the closest pair of readings of three.
    let offset = (0..3)
        .map(|_| {
            let ours = activity::clock_ns() as i64;
            api.timestamp() as i64 - ours
        })
        .min()
        .unwrap_or(0);
    CLOCK_OFFSET.store(offset, Ordering::SeqCst);
    for (i, &kind) in RECORDED.iter().enumerate() {
        // SAFETY: a plain call with an activity kind of the header.
        if let Err(e) = api.check("cuptiActivityEnable", unsafe { (api.enable)(kind) }) {
            for &enabled in &RECORDED[..i] {
                // SAFETY: as above.
                unsafe { (api.disable)(enabled) };
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Hands every record of work issued so far to the recorder (the caller waited for the
/// device) and stops CUPTI's records.
pub fn stop() {
    let Some(api) = api() else { return };
    // SAFETY: plain calls; the buffers come back through buffer_completed on this thread.
    unsafe {
        (api.flush_all)(FLUSH_FORCED);
        for &kind in &RECORDED {
            (api.disable)(kind);
        }
        let mut dropped = 0usize;
        if (api.dropped_records)(null_mut(), 0, &mut dropped) == 0 && dropped > 0 {
            activity::count_dropped(dropped as u64);
        }
    }
    *streams() = None;
}

/// Notes CUPTI's number of the stream `handle` (pygpu's; `None`: the default stream) in the
/// current context `ctx`, for the records of the work about to be issued on it.
pub fn note_stream(ctx: CUcontext, handle: Option<usize>) {
    let key = (GENERATION.load(Ordering::Acquire), ctx as usize, handle.unwrap_or(0));
    if LAST_NOTED.with(Cell::get) == key {
        return;
    }
    let Some(api) = api() else { return };
    let (raw, per_thread) = match handle {
        None | Some(CUDA_STREAM_LEGACY) => (null_mut(), 0u8),
        Some(CUDA_STREAM_PER_THREAD) => (null_mut(), 1u8),
        Some(h) => (h as CUstream, 0u8),
    };
    let mut id = 0u32;
    // SAFETY: a live context and stream of the caller's; valid out-pointer.
    if unsafe { (api.stream_id)(ctx, raw, per_thread, &mut id) } == 0 {
        if let Some(map) = streams().as_mut() {
            map.insert(id, handle.map_or(0, |h| h as u64));
            LAST_NOTED.with(|last| last.set(key));
        }
    }
}

/// A stream is being destroyed: threads' remembered streams are stale.
pub fn forget_streams() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let layout = buffer_layout();
    // SAFETY: a non-zero size; a null result (no memory) is handed on, which CUPTI takes
    // as "no buffer" and counts the records it drops.
    let memory = unsafe { alloc(layout) };
    // SAFETY: CUPTI's three out-pointers.
    unsafe {
        *buffer = memory;
        *size = if memory.is_null() { 0 } else { layout.size() };
        *max_records = 0;
    }
}

unsafe extern "C" fn buffer_completed(_ctx: CUcontext, _stream: u32, buffer: *mut u8, size: usize, valid: usize) {
    if buffer.is_null() {
        return;
    }
    if let Some(api) = api() {
        // A panic must not unwind into CUPTI: what was read so far is kept.
        let _ = std::panic::catch_unwind(|| read_records(api, buffer, valid));
    }
    if size == BUFFER_BYTES {
        // SAFETY: buffer_requested allocated it with this layout, and CUPTI gave it back.
        unsafe { dealloc(buffer, buffer_layout()) };
    }
}

fn buffer_layout() -> Layout {
    // A constant size and alignment that Layout accepts.
    Layout::from_size_align(BUFFER_BYTES, 8).unwrap_or_else(|_| Layout::new::<u64>())
}

/// Turns the records in `buffer[..valid]` into activities.
fn read_records(api: &Api, buffer: *mut u8, valid: usize) {
    let offset = CLOCK_OFFSET.load(Ordering::SeqCst);
    let ids = streams().clone().unwrap_or_default();
    let mut record: *mut c_void = null_mut();
    loop {
        // SAFETY: a buffer CUPTI filled with `valid` bytes of records; `record` walks it.
        let code = unsafe { (api.next_record)(buffer, valid, &mut record) };
        // CUPTI_ERROR_MAX_LIMIT_REACHED at the end; any other error also ends the buffer.
        if code != 0 || record.is_null() {
            break;
        }
        // SAFETY: CUPTI's record, at least as long as its kind's struct (see the module's note
        // on the offsets read).
        if let Some(a) = unsafe { activity_of(record.cast::<u8>(), offset, &ids) } {
            activity::record(a);
        }
    }
}

/// The field of type `T` at byte `at` of record `r`.
/// # Safety
/// `r` points at a CUPTI activity record with a `T` at offset `at` (see the module's note).
unsafe fn field<T: Copy>(r: *const u8, at: usize) -> T {
    // SAFETY: per the function's contract; records are packed, so the read is unaligned.
    unsafe { r.add(at).cast::<T>().read_unaligned() }
}

/// # Safety
/// `r` points at a whole CUPTI activity record.
unsafe fn activity_of(r: *const u8, offset: i64, ids: &HashMap<u32, u64>) -> Option<Activity> {
    let ours = |t: u64| u64::try_from(i128::from(t) - i128::from(offset)).unwrap_or(0);
    let stream = |id: u32| ids.get(&id).copied().unwrap_or(u64::from(id));
    // SAFETY: every record starts with its kind (a 4-byte enum).
    let kind: c_int = unsafe { field(r, 0) };
    let (kind, name, bytes, start, end, stream, grid, block) = match kind {
        // SAFETY: offsets inside a kernel record (and CUPTI's name string, see below).
        KIND_KERNEL | KIND_CONCURRENT_KERNEL => unsafe {
            let name_ptr: *const c_char = field(r, 104);
            let name = if name_ptr.is_null() {
                String::new()
            } else {
                // CUPTI's NUL-terminated name, kept by CUPTI for the process.
                CStr::from_ptr(name_ptr).to_string_lossy().into_owned()
            };
            let dims = |at: usize| [field::<u32>(r, at), field::<u32>(r, at + 4), field::<u32>(r, at + 8)];
            let streamed = stream(field(r, 48));
            (ActivityKind::Kernel, name, 0, field(r, 16), field(r, 24), streamed, dims(52), dims(64))
        },
        // SAFETY: offsets inside a copy record.
        KIND_MEMCPY => unsafe {
            // CUpti_ActivityMemcpyKind: 1 HtoD, 3 HtoA; 2 DtoH, 4 AtoH; 5..8 device to device,
            // 10 peer to peer. Host-to-host copies (9) are no device work.
            let kind = match field::<u8>(r, 4) {
                1 | 3 => ActivityKind::CopyHostToDevice,
                2 | 4 => ActivityKind::CopyDeviceToHost,
                5..=8 | 10 => ActivityKind::CopyDeviceToDevice,
                _ => return None,
            };
            (kind, String::new(), field(r, 8), field(r, 16), field(r, 24), stream(field(r, 40)), [0; 3], [0; 3])
        },
        // SAFETY: offsets inside a fill record.
        KIND_MEMSET => unsafe {
            let streamed = stream(field(r, 40));
            (ActivityKind::Memset, String::new(), field(r, 8), field(r, 16), field(r, 24), streamed, [0; 3], [0; 3])
        },
        _ => return None,
    };
    Some(Activity { kind, name, start_ns: ours(start), end_ns: ours(end), stream, bytes, grid, block })
}
