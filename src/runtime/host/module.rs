//! Kernels on the host backend: a kernels shared library built from the same source as
//! the GPU code objects (python/pygpu/include/pygpu_kernel.h; kernels/README.md describes its
//! ABI), loaded from memory; the launch, which spreads a grid's blocks over a thread pool and
//! lends each thread the fiber stacks and shared memory its blocks need; and the work a
//! captured stream records instead of running.
//!
//! The block loop lives here rather than in the library: Rust has a maintained thread pool
//! (rayon), owns the per-thread memory with proper clean-up, and can stop between blocks for
//! Ctrl-C; the library only runs the blocks it is given, as fibers on the calling thread. A
//! fault in kernel code, and Ctrl-C in the middle of a block, leave the library through
//! faults.rs.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use libloading::Library;

use super::faults;
use super::worker_memory::{Worker, WorkerMemory};
use crate::runtime::activity::{Activity, ActivityKind};
use crate::runtime::kernel::{symbol_name, KernelArgs, LaunchConfig};
use crate::runtime::{BackendKind, DevicePtr, Error, Result};

/// The kernels-library ABI this loader speaks.
const HOST_ABI_VERSION: c_uint = 3;
const ELF_MAGIC: &[u8] = b"\x7fELF";
// What a GPU reports for the same faults: an image it cannot load, a name it cannot find, a
// barrier that cannot complete (or a launch interrupted), a bad launch configuration.
use crate::runtime::error::{
    CUDA_ERROR_ILLEGAL_ADDRESS as ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_INSTRUCTION as ILLEGAL_INSTRUCTION,
    CUDA_ERROR_INVALID_KERNEL_IMAGE as INVALID_IMAGE, CUDA_ERROR_INVALID_VALUE as INVALID_VALUE,
    CUDA_ERROR_LAUNCH_FAILURE as LAUNCH_FAILED, CUDA_ERROR_SYMBOL_NOT_FOUND as SYMBOL_NOT_FOUND,
};

/// What a GPU allows without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize).
const MAX_DYNAMIC_SHARED: u32 = 48 * 1024;
/// How often the launching thread asks whether to stop (Ctrl-C).
const INTERRUPT_INTERVAL: Duration = Duration::from_millis(20);
/// How long a failed launch keeps asking its other threads to leave kernel code.
const STOP_PATIENCE: Duration = Duration::from_millis(200);

/// `struct LaunchDesc` of pygpu_host/fibers.h.
#[repr(C)]
struct LaunchDesc {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    args: *mut *mut c_void,
    shared_bytes: usize,
}

type RunBlocksFn = unsafe extern "C" fn(*const LaunchDesc, u64, u64, *mut Worker) -> c_int;

/// At most this many host threads run a launch's blocks: each keeps up to 1024 fiber stacks,
/// two memory mappings each (stack and guard page), and a process has some 65000 mappings.
const MAX_BLOCK_THREADS: usize = 8;

/// The threads that run blocks besides the launching one; None in a forked child (whose pool
/// threads did not survive the fork: its launches run on the calling thread) or if no thread
/// could be started.
fn block_pool() -> Option<&'static rayon_core::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<(u32, rayon_core::ThreadPool)>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_BLOCK_THREADS);
        rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("pygpu-host-{i}"))
            .build()
            .ok()
            .map(|pool| (std::process::id(), pool))
    });
    match pool {
        Some((pid, pool)) if *pid == std::process::id() => Some(pool),
        _ => None,
    }
}

thread_local! {
    static WORKER: RefCell<WorkerMemory> = RefCell::new(WorkerMemory::new());
    /// Set by `run_interruptible` on the launching thread: says whether to stop between blocks.
    static INTERRUPT_CHECK: Cell<Option<*const (dyn Fn() -> bool + 'static)>> = const { Cell::new(None) };
}

/// Runs `f` (a host launch) so that the launching thread calls `check` every few milliseconds
/// between blocks and while it waits for the pool, and at once when Ctrl-C stopped the blocks
/// (see `offer_sigint_hook`); when it returns true the launch stops and fails
/// (`LAUNCH_FAILED`). The Python layer passes a check that runs Python's signal handlers.
pub fn run_interruptible<R>(check: &(dyn Fn() -> bool + '_), f: impl FnOnce() -> R) -> R {
    // SAFETY: only the lifetime is erased; the pointer is removed again (by the guard, even on
    // unwinding) before `check` goes out of scope, and only this thread reads it.
    let erased: *const (dyn Fn() -> bool + 'static) =
        unsafe { std::mem::transmute(check as *const (dyn Fn() -> bool + '_)) };
    struct Restore(Option<*const (dyn Fn() -> bool + 'static)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = INTERRUPT_CHECK.try_with(|c| c.set(self.0));
        }
    }
    let Ok(previous) = INTERRUPT_CHECK.try_with(|c| c.replace(Some(erased))) else {
        return f(); // the thread is exiting: nothing to interrupt
    };
    let _restore = Restore(previous);
    f()
}

fn has_interrupt_check() -> bool {
    INTERRUPT_CHECK.try_with(|c| c.get().is_some()).unwrap_or(false)
}

/// Lets Ctrl-C stop a host kernel in the middle of a block (faults.rs). `raises` says whether
/// the current SIGINT handler makes the interrupt check of `run_interruptible` fail (Python's
/// default handler raises KeyboardInterrupt); it is asked once per process, at the first call.
pub fn offer_sigint_hook(raises: impl FnOnce() -> bool) {
    static ASKED: AtomicBool = AtomicBool::new(false);
    if ASKED.load(Ordering::Relaxed) || ASKED.swap(true, Ordering::AcqRel) {
        return;
    }
    if raises() {
        faults::install_sigint_hook();
    }
}

pub(super) fn should_interrupt() -> bool {
    INTERRUPT_CHECK
        .try_with(|c| match c.get() {
            // SAFETY: set by `run_interruptible`, whose `check` outlives the pointer's presence here.
            Some(check) => unsafe { (*check)() },
            None => false,
        })
        .unwrap_or(false)
}

pub(super) struct HostLibrary {
    library: Library,
    kernel_names: Vec<String>,
    /// Held open while loaded: dlopen recognises a path it has loaded before, so the
    /// /proc/self/fd/N name must not be reused by another image meanwhile.
    _image: std::fs::File,
}

pub(super) fn module_error(code: i32, detail: String) -> Error {
    Error::detailed(code, BackendKind::Host, detail)
}

impl HostLibrary {
    /// Loads a kernels library from its bytes, through an anonymous in-memory file.
    pub(super) fn load(image: &[u8]) -> Result<Self> {
        if !image.starts_with(ELF_MAGIC) {
            return Err(module_error(
                INVALID_IMAGE,
                "the host backend loads kernels shared libraries (lib<name>.so built by kernels/build.sh); \
                 this image is not an ELF file (PTX, cubin and fatbin are for the cuda backend)"
                    .to_string(),
            ));
        }
        // SAFETY: memfd_create takes a NUL-terminated name and returns a new fd or -1.
        let fd = unsafe { libc::memfd_create(c"pygpu-kernels".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(module_error(
                INVALID_IMAGE,
                format!("memfd_create failed: {}", std::io::Error::last_os_error()),
            ));
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(owned);
        file.write_all(image).map_err(|e| module_error(INVALID_IMAGE, format!("writing the image failed: {e}")))?;
        let path = format!("/proc/self/fd/{fd}");
        // SAFETY: loading runs the library's static initialisers, which for a kernels
        // library only fill in its kernel-name table (pygpu_kernel.h); any other ELF
        // library runs its own initialisers, as with ctypes.CDLL.
        let library = unsafe { Library::new(&path) }
            .map_err(|e| module_error(INVALID_IMAGE, format!("the shared library did not load: {e}")))?;
        // SAFETY: a kernels library exports these as the types declared in pygpu_kernel.h.
        let version =
            unsafe { library.get::<*const c_uint>(b"pygpu_host_abi_version\0") }.ok().map(|sym| unsafe { **sym });
        if version != Some(HOST_ABI_VERSION) {
            return Err(module_error(
                INVALID_IMAGE,
                format!("not a pygpu kernels library of ABI {HOST_ABI_VERSION} (found {version:?}): rebuild it with kernels/build.sh"),
            ));
        }
        // SAFETY: the ABI version check above proved this is a pygpu kernels library.
        let kernel_names = unsafe { kernel_names(&library) };
        Ok(HostLibrary { library, kernel_names, _image: file })
    }

    pub(super) fn function(self: &Arc<Self>, name: &str) -> Result<HostFunction> {
        let symbol = symbol_name(&format!("pygpu_run_blocks_{name}"))?;
        // SAFETY: pygpu_run_blocks_<name> has the RunBlocksFn signature in every kernels library.
        let run_blocks =
            unsafe { self.library.get::<RunBlocksFn>(symbol.as_bytes_with_nul()) }.map(|f| *f).map_err(|_| {
                module_error(
                    SYMBOL_NOT_FOUND,
                    format!("no kernel named {name:?} in this module; it has: {}", self.kernel_names.join(", ")),
                )
            })?;
        let sizes_symbol = symbol_name(&format!("pygpu_param_sizes_{name}"))?;
        // SAFETY: pygpu_param_sizes_<name> is a `const size_t* const` to a 0-terminated
        // array (pygpu_kernel.h); a kernel has at most a few dozen parameters.
        let param_sizes = unsafe { self.library.get::<*const *const usize>(sizes_symbol.as_bytes_with_nul()) }
            .ok()
            .map(|sym| unsafe {
                let array = **sym;
                (0..256).map(|i| *array.add(i)).take_while(|&n| n != 0).collect()
            });
        Ok(HostFunction { _library: Arc::clone(self), run_blocks, param_sizes, name: name.to_string() })
    }

    pub(super) fn global(&self, name: &str) -> Result<(DevicePtr, usize)> {
        let missing = || module_error(SYMBOL_NOT_FOUND, format!("no global named {name:?} in this module"));
        let address = symbol_name(&format!("pygpu_global_{name}"))?;
        let size = symbol_name(&format!("pygpu_global_size_{name}"))?;
        // SAFETY: PYGPU_GLOBAL exports the variable and a `const size_t` with its size.
        unsafe {
            let ptr = self.library.get::<*mut c_void>(address.as_bytes_with_nul()).map_err(|_| missing())?;
            let bytes = self.library.get::<*const usize>(size.as_bytes_with_nul()).map_err(|_| missing())?;
            Ok((*ptr as DevicePtr, **bytes))
        }
    }
}

/// # Safety
/// `library` is a kernels library: `pygpu_kernel_names` holds `pygpu_kernel_count`
/// NUL-terminated strings.
unsafe fn kernel_names(library: &Library) -> Vec<String> {
    // SAFETY: per the function's contract.
    unsafe {
        let (Ok(count), Ok(names)) = (
            library.get::<*const c_uint>(b"pygpu_kernel_count\0"),
            library.get::<*const *const c_char>(b"pygpu_kernel_names\0"),
        ) else {
            return Vec::new();
        };
        (0..**count as usize)
            .map(|i| *(*names).add(i))
            .filter(|p| !p.is_null())
            .map(|p| CStr::from_ptr(p).to_string_lossy().into_owned())
            .collect()
    }
}

/// A kernel's launch entry point; holds its library loaded.
pub(super) struct HostFunction {
    _library: Arc<HostLibrary>,
    run_blocks: RunBlocksFn,
    pub(super) param_sizes: Option<Vec<usize>>,
    /// For messages.
    name: String,
}

/// The launch's description, shared by the threads that run its blocks.
struct SharedLaunch(LaunchDesc);
// SAFETY: the descriptor's pointers (the argument values) are only read, by the kernel, while
// the launching thread waits for every block; the caller of `run` vouches for what they point at.
unsafe impl Sync for SharedLaunch {}

impl SharedLaunch {
    // A method, so that closures capture the whole (Sync) wrapper rather than its field.
    fn desc(&self) -> &LaunchDesc {
        &self.0
    }
}

/// A failure of one range of blocks.
fn block_error(code: c_int, worker: &Worker) -> Error {
    // SAFETY: the library leaves a NUL-terminated message in the 256-byte buffer (or none:
    // message[0] is then 0); the last byte is never written, so a NUL is always there.
    let message = unsafe { CStr::from_ptr(worker.message.as_ptr()) }.to_string_lossy().into_owned();
    if message.is_empty() {
        Error::api(code, BackendKind::Host)
    } else {
        module_error(code, message)
    }
}

/// How a range of blocks ended, when not well.
enum RangeError {
    /// The kernel failed (a barrier, a fault) or the range could not run.
    Failed(Error),
    /// The launch asked this thread to stop (Ctrl-C, or another block failed).
    Stopped(Error),
}

impl HostFunction {
    /// Runs blocks `[first, end)` on the calling thread with this thread's worker memory.
    /// # Safety
    /// As for `run`.
    unsafe fn run_range(
        &self,
        launch: &LaunchDesc,
        first: u64,
        end: u64,
        threads: usize,
        me: &faults::Participant,
    ) -> std::result::Result<(), RangeError> {
        let run = |memory: &mut WorkerMemory| -> std::result::Result<(), RangeError> {
            let worker = memory.reserve(threads, launch.shared_bytes).map_err(RangeError::Failed)?;
            worker.message[0] = 0;
            me.lend(worker);
            // SAFETY: the descriptor and worker are valid for the call; the worker has stacks
            // for every thread of a block and the shared memory asked for (reserve); the
            // caller vouches for the arguments.
            let code = unsafe { (self.run_blocks)(launch, first, end, worker) };
            me.take_back(worker);
            if code == 0 {
                Ok(())
            } else if worker.fault_signal != 0 || me.abandoned() {
                Err(self.signal_error(worker, me.abandoned()))
            } else {
                Err(RangeError::Failed(block_error(code, worker)))
            }
        };
        // A fresh worker only if this thread's is busy (a launch from inside a launch, which
        // device code cannot make) or already gone (the thread is exiting).
        WORKER
            .try_with(|cell| match cell.try_borrow_mut() {
                Ok(mut memory) => run(&mut memory),
                Err(_) => run(&mut WorkerMemory::new()),
            })
            .unwrap_or_else(|_| run(&mut WorkerMemory::new()))
    }

    /// The error of blocks that a signal stopped: a fault in kernel code (as a GPU reports it)
    /// or the launch's request to stop.
    fn signal_error(&self, worker: &Worker, stopped: bool) -> RangeError {
        // SAFETY: the library leaves a NUL-terminated message (see block_error).
        let place = unsafe { CStr::from_ptr(worker.message.as_ptr()) }.to_string_lossy().into_owned();
        let name = &self.name;
        let signal = worker.fault_signal;
        let address = worker.fault_address as usize;
        let detail = |what: String| format!("kernel {name:?}, {place}: {what}");
        let (code, what) = match signal {
            libc::SIGSEGV | libc::SIGBUS => {
                let stacks = worker.stack_memory as usize;
                let stacks_end = stacks + worker.stack_count as usize * worker.stack_bytes;
                let why = if (stacks..stacks_end).contains(&address) {
                    format!(
                        "overflowed its stack ({} KiB per GPU thread on the host backend: deep recursion, or large \
                         local arrays)",
                        worker.stack_bytes / 1024
                    )
                } else if address < 65536 {
                    "a null pointer (or one a little past null)".to_string()
                } else if signal == libc::SIGBUS {
                    "memory that cannot be accessed (past the end of a mapped file, or misaligned)".to_string()
                } else {
                    "unmapped or protected memory: an index past its array, or a freed or wrong pointer".to_string()
                };
                (
                    ILLEGAL_ADDRESS,
                    format!(
                        "illegal memory access at 0x{address:x} ({}): {why}. A GPU reports error 700 here; the host \
                         backend stopped the launch (what it wrote before stays written) and goes on working",
                        if signal == libc::SIGSEGV { "SIGSEGV" } else { "SIGBUS" }
                    ),
                )
            }
            libc::SIGFPE => {
                // si_code values of SIGFPE (Linux, every architecture).
                const FPE_INTDIV: i32 = 1;
                const FPE_INTOVF: i32 = 2;
                let what = match worker.fault_code {
                    FPE_INTDIV => "integer division (or remainder) by zero",
                    FPE_INTOVF => "integer overflow in a division (the most negative value divided by -1)",
                    _ => "arithmetic exception",
                };
                (
                    LAUNCH_FAILED,
                    format!(
                        "{what} (SIGFPE). A GPU gives an undefined result and goes on; the host CPU traps, so the host \
                         backend stops the launch"
                    ),
                )
            }
            libc::SIGILL => (
                ILLEGAL_INSTRUCTION,
                "illegal instruction (SIGILL): __trap()/__builtin_trap(), unreachable code reached, or an instruction \
                 this CPU lacks"
                    .to_string(),
            ),
            _ => {
                let stop = module_error(
                    LAUNCH_FAILED,
                    detail("the launch was stopped (Ctrl-C, or another of its blocks failed)".to_string()),
                );
                return if stopped || signal == 0 { RangeError::Stopped(stop) } else { RangeError::Failed(stop) };
            }
        };
        RangeError::Failed(module_error(code, detail(what)))
    }

    /// Runs every block of the grid, spread over the thread pool (this thread takes part). A
    /// block that fails (a barrier that cannot complete, a fault in kernel code) stops the
    /// others. Under `run_interruptible` on the main thread, the check runs between this
    /// thread's ranges of blocks and while it waits for the pool; Ctrl-C also stops the blocks
    /// running at the time (see faults.rs).
    /// # Safety
    /// `args` matches the kernel's parameters and its pointers are valid for the kernel.
    pub(super) unsafe fn run(&self, config: &LaunchConfig, args: &KernelArgs) -> Result<()> {
        let invalid = |detail: String| module_error(INVALID_VALUE, detail);
        if config.shared_bytes > MAX_DYNAMIC_SHARED {
            return Err(invalid(format!(
                "{} bytes of dynamic shared memory asked for; a GPU allows at most {MAX_DYNAMIC_SHARED}",
                config.shared_bytes
            )));
        }
        let [gx, gy, gz] = config.grid.map(u64::from);
        let [bx, by, bz] = config.block.map(u64::from);
        let threads = bx * by * bz;
        if gx == 0
            || gy == 0
            || gz == 0
            || threads == 0
            || gx > 2147483647
            || gy > 65535
            || gz > 65535
            || bx > 1024
            || by > 1024
            || bz > 64
            || threads > 1024
        {
            return Err(Error::api(INVALID_VALUE, BackendKind::Host));
        }
        faults::install();
        let mut pointers = args.pointers();
        let argv = if pointers.is_empty() { std::ptr::null_mut() } else { pointers.as_mut_ptr() };
        let launch = SharedLaunch(LaunchDesc {
            grid: config.grid,
            block: config.block,
            args: argv,
            shared_bytes: config.shared_bytes as usize,
        });
        let total = gx * gy * gz;
        let threads = threads as usize;
        // Enough ranges per pool thread to even out uneven blocks, few enough to cost nothing;
        // small enough that the launching thread soon gets to check for Ctrl-C.
        let workers = block_pool();
        let pool = workers.map_or(1, |p| p.current_num_threads().max(1)) as u64;
        let helpers = (pool.min(total) - 1) as usize;
        let chunk = (total / (pool * 16)).clamp(1, 64);
        let next = AtomicU64::new(0);
        let group = faults::new_group();
        // Only the main thread runs Python's signal handlers, so only its launches stop for Ctrl-C.
        let interruptible = has_interrupt_check() && faults::on_main_thread();
        let interrupts = faults::interrupts();
        let interrupted = || interruptible && faults::interrupts() != interrupts;
        let stop = AtomicBool::new(false);
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        let fail = |e: Error| {
            let first = !stop.swap(true, Ordering::AcqRel);
            failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
            if first {
                // As a GPU aborts the whole grid: blocks running elsewhere stop too (a block
                // waiting for the failed one would otherwise wait forever).
                faults::stop_group(group, STOP_PATIENCE);
            }
        };
        // After Ctrl-C stopped this launch (or between ranges): runs Python's handlers; the
        // Python layer raises what they raised.
        let check_interrupt = |me: &faults::Participant| {
            if stop.load(Ordering::Acquire) {
                return;
            }
            if should_interrupt() {
                fail(module_error(LAUNCH_FAILED, "the launch was interrupted".to_string()));
            } else if me.abandoned() || interrupted() {
                fail(module_error(
                    LAUNCH_FAILED,
                    format!("kernel {:?}: the launch was stopped by Ctrl-C (SIGINT)", self.name),
                ));
            }
        };
        // Takes ranges of blocks until none is left or the launch stops.
        let drain = |me: &faults::Participant, launcher: bool| {
            let mut last_check = Instant::now();
            while !stop.load(Ordering::Relaxed) && !me.abandoned() && !interrupted() {
                let first = next.fetch_add(chunk, Ordering::Relaxed);
                if first >= total {
                    break;
                }
                let end = (first + chunk).min(total);
                // SAFETY: per this function's contract.
                match unsafe { self.run_range(launch.desc(), first, end, threads, me) } {
                    Ok(()) => {}
                    Err(RangeError::Failed(e)) => {
                        fail(e);
                        break;
                    }
                    Err(RangeError::Stopped(e)) => {
                        if !(launcher && interruptible) {
                            // Another thread failed (its error is kept), or Ctrl-C (the launcher checks).
                            failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                        }
                        break;
                    }
                }
                if launcher && interruptible && last_check.elapsed() >= INTERRUPT_INTERVAL {
                    last_check = Instant::now();
                    if should_interrupt() {
                        fail(module_error(LAUNCH_FAILED, "the launch was interrupted between blocks".to_string()));
                    }
                }
            }
            if launcher && interruptible && (me.abandoned() || interrupted()) {
                check_interrupt(me);
            }
        };
        // Registered until the pool is done, so that Ctrl-C finds the launch (faults.rs).
        let me = faults::Participant::enter(group, interruptible);
        // Without pygpu's SIGINT handler nothing stops the pool's blocks for Ctrl-C: the launching
        // thread then checks while it waits for them (a wait rayon's scope cannot interrupt,
        // and one that costs a few microseconds more per launch).
        let poll = interruptible && !faults::sigint_hooked();
        let pending = AtomicUsize::new(helpers);
        let done = (Mutex::new(()), Condvar::new());
        match workers {
            Some(workers) if helpers > 0 => workers.in_place_scope(|scope| {
                for _ in 0..helpers {
                    scope.spawn(|_| {
                        let helper = faults::Participant::enter(group, false);
                        drain(&helper, false);
                        drop(helper);
                        if pending.fetch_sub(1, Ordering::AcqRel) == 1 && poll {
                            let _lock = done.0.lock().unwrap_or_else(|p| p.into_inner());
                            done.1.notify_all();
                        }
                    });
                }
                drain(&me, true);
                if poll {
                    let mut lock = done.0.lock().unwrap_or_else(|p| p.into_inner());
                    while pending.load(Ordering::Acquire) > 0 {
                        lock = done.1.wait_timeout(lock, INTERRUPT_INTERVAL).unwrap_or_else(|p| p.into_inner()).0;
                        if pending.load(Ordering::Acquire) == 0 {
                            break;
                        }
                        drop(lock);
                        check_interrupt(&me);
                        if stop.load(Ordering::Acquire) {
                            faults::stop_group(group, Duration::ZERO);
                        }
                        lock = done.0.lock().unwrap_or_else(|p| p.into_inner());
                    }
                }
            }),
            _ => drain(&me, true),
        }
        if interruptible && (me.abandoned() || interrupted()) {
            check_interrupt(&me);
        }
        drop(me);
        match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One piece of work a captured stream recorded; a graph replays them in order.
#[derive(Clone)]
pub(super) enum HostOp {
    /// `uses`: the allocations (start, bytes) that pointer-sized arguments pointed into when a
    /// graph captured the launch; a replay refuses to run once one of them is gone.
    Launch {
        function: Arc<HostFunction>,
        config: LaunchConfig,
        args: Box<KernelArgs>,
        uses: Vec<(DevicePtr, usize)>,
    },
    HostToDevice {
        dst: DevicePtr,
        src: usize,
        bytes: usize,
    },
    DeviceToHost {
        dst: usize,
        src: DevicePtr,
        bytes: usize,
    },
    DeviceToDevice {
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
    },
    Memset {
        dst: DevicePtr,
        value: u32,
        element_size: usize,
        count: usize,
    },
}

impl HostOp {
    /// What a pygpu.profile() recording notes of this op, run on `stream` from `start_ns` until now.
    pub(super) fn activity(&self, stream: u64, start_ns: u64) -> Activity {
        let (kind, bytes) = match *self {
            HostOp::Launch { .. } => (ActivityKind::Kernel, 0),
            HostOp::HostToDevice { bytes, .. } => (ActivityKind::CopyHostToDevice, bytes),
            HostOp::DeviceToHost { bytes, .. } => (ActivityKind::CopyDeviceToHost, bytes),
            HostOp::DeviceToDevice { bytes, .. } => (ActivityKind::CopyDeviceToDevice, bytes),
            HostOp::Memset { element_size, count, .. } => (ActivityKind::Memset, element_size.saturating_mul(count)),
        };
        let (name, grid, block) = match self {
            HostOp::Launch { function, config, .. } => (function.name.clone(), config.grid, config.block),
            _ => (String::new(), [0; 3], [0; 3]),
        };
        Activity {
            kind,
            name,
            start_ns,
            end_ns: crate::runtime::activity::clock_ns(),
            stream,
            bytes: bytes as u64,
            grid,
            block,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_interruptible_sets_the_check_only_inside() {
        assert!(!should_interrupt());
        let stop = || true;
        let inside = run_interruptible(&stop, should_interrupt);
        assert!(inside);
        assert!(!should_interrupt(), "the check is removed afterwards");
    }
}
