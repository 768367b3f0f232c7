//! Kernels on the host backend: a kernels shared library built from the same source as
//! the GPU code objects (python/pygpu/include/pygpu_kernel.h; kernels/README.md describes its
//! ABI), loaded from memory; the launch, which spreads a grid's blocks over a thread pool and
//! lends each thread the fiber stacks and shared memory its blocks need; and the work a
//! captured stream records instead of running.
//!
//! The block loop lives here rather than in the library: Rust has a maintained thread pool
//! (rayon), owns the per-thread memory with proper clean-up, and can stop between blocks for
//! Ctrl-C; the library only runs the blocks it is given, as fibers on the calling thread.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libloading::Library;

use super::worker_memory::{Worker, WorkerMemory};
use crate::runtime::kernel::{symbol_name, KernelArgs, LaunchConfig};
use crate::runtime::{BackendKind, DevicePtr, Error, Result};

/// The kernels-library ABI this loader speaks.
const HOST_ABI_VERSION: c_uint = 2;
const ELF_MAGIC: &[u8] = b"\x7fELF";
// What a GPU reports for the same faults: an image it cannot load, a name it cannot find, a
// barrier that cannot complete (or a launch interrupted), a bad launch configuration.
use crate::runtime::error::{
    CUDA_ERROR_INVALID_KERNEL_IMAGE as INVALID_IMAGE, CUDA_ERROR_INVALID_VALUE as INVALID_VALUE,
    CUDA_ERROR_LAUNCH_FAILURE as LAUNCH_FAILED, CUDA_ERROR_SYMBOL_NOT_FOUND as SYMBOL_NOT_FOUND,
};

/// What a GPU allows without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize).
const MAX_DYNAMIC_SHARED: u32 = 48 * 1024;
/// How often the launching thread asks whether to stop (Ctrl-C).
const INTERRUPT_INTERVAL: Duration = Duration::from_millis(20);

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
/// between blocks; when it returns true the launch stops and fails (`LAUNCH_FAILED`). The
/// Python layer passes a check that runs Python's signal handlers (Ctrl-C).
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

fn should_interrupt() -> bool {
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
    Error::Detailed { code, backend: BackendKind::Host, detail }
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
        Ok(HostFunction { _library: Arc::clone(self), run_blocks, param_sizes })
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

impl HostFunction {
    /// Runs blocks `[first, end)` on the calling thread with this thread's worker memory.
    /// # Safety
    /// As for `run`.
    unsafe fn run_range(&self, launch: &LaunchDesc, first: u64, end: u64, threads: usize) -> Result<()> {
        let run = |memory: &mut WorkerMemory| -> Result<()> {
            let worker = memory.reserve(threads, launch.shared_bytes)?;
            worker.message[0] = 0;
            // SAFETY: the descriptor and worker are valid for the call; the worker has stacks
            // for every thread of a block and the shared memory asked for (reserve); the
            // caller vouches for the arguments.
            let code = unsafe { (self.run_blocks)(launch, first, end, worker) };
            if code == 0 {
                Ok(())
            } else {
                Err(block_error(code, worker))
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

    /// Runs every block of the grid, spread over the thread pool (this thread takes part, and
    /// between its ranges of blocks checks whether to stop, see `run_interruptible`).
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
        let stop = AtomicBool::new(false);
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        let fail = |e: Error| {
            stop.store(true, Ordering::Relaxed);
            let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert(e);
        };
        // Takes ranges of blocks until none is left or the launch stops.
        let drain = |interruptible: bool| {
            let mut last_check = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let first = next.fetch_add(chunk, Ordering::Relaxed);
                if first >= total {
                    break;
                }
                let end = (first + chunk).min(total);
                // SAFETY: per this function's contract.
                if let Err(e) = unsafe { self.run_range(launch.desc(), first, end, threads) } {
                    fail(e);
                    break;
                }
                if interruptible && last_check.elapsed() >= INTERRUPT_INTERVAL {
                    last_check = Instant::now();
                    if should_interrupt() {
                        fail(module_error(LAUNCH_FAILED, "the launch was interrupted between blocks".to_string()));
                    }
                }
            }
        };
        match workers {
            Some(workers) if helpers > 0 => workers.in_place_scope(|scope| {
                for _ in 0..helpers {
                    scope.spawn(|_| drain(false));
                }
                drain(true);
            }),
            _ => drain(true),
        }
        match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One piece of work a captured stream recorded; a graph replays them in order.
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
