//! Host kernels fault like a GPU, and Ctrl-C stops them mid-block (docs/reliability.md, "Host
//! kernels fault like a GPU").
//!
//! A host kernel is host code: an illegal address faults the process (SIGSEGV, SIGBUS). Here a
//! fault inside kernel code ends that launch with error 700 instead, and the process goes on:
//!
//! - One process-wide handler for SIGSEGV, SIGBUS, SIGFPE and SIGILL, installed at the first
//!   launch on an alternate signal stack (each thread that runs blocks gets one, where it has
//!   none: a fiber that overflows its stack faults on its guard page, with no stack left to run
//!   a handler on). A fault that is not inside kernel code goes to the handler that was there
//!   before (Python's faulthandler, which pytest enables), or kills the process as it would have.
//! - "Inside kernel code" is per thread: a thread that runs blocks holds a slot of `SLOTS`
//!   (thread id, its `Worker`); the kernels library (pygpu_host/fibers.h) sets `Worker::jump`
//!   while fibers run. The handler looks the faulting thread up (gettid, a scan of atomics: no
//!   lock, no allocation, no thread-local of a dlopened library, whose first use may allocate)
//!   and calls `Worker::recover`, C code of the library that switches back to the block runner,
//!   which was suspended while its fibers ran. The fibers are abandoned; nothing is unwound, and
//!   no Rust frame is jumped over except the handler's own, which has no destructors.
//! - The same path stops blocks on request: `stop_group` marks the launch's slots and sends each
//!   thread running kernel code `stop_signal()`, whose handler recovers as for a fault. A launch
//!   stops so when one of its blocks failed (a GPU aborts the whole grid) and on Ctrl-C: where
//!   Python's SIGINT handler is its default (which raises KeyboardInterrupt), a SIGINT handler
//!   chained in front of it stops the launches of the main thread (`install_sigint_hook`).
//!
//! What cannot be caught: a write out of bounds into memory that is mapped (another array, the
//! heap: only the redzones around a launch's arguments are checked, see memory.rs); a fault
//! inside malloc (a corrupted heap) or anything else that holds a lock the abandoned fibers never
//! give back (stdout's and stderr's locks are given back, see fibers.h); a local array so large
//! that the stack pointer skips the guard page (compilers probe each page only with
//! -fstack-clash-protection); a handler installed after pygpu's that does not chain (a fault
//! then never reaches pygpu's). Libraries built before these fields existed run unprotected.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use super::worker_memory::Worker;

/// Threads that can run blocks at once with fault isolation; more run unprotected.
const SLOT_COUNT: usize = 256;

/// One thread taking part in a launch.
struct Slot {
    /// The thread's id (gettid), 0 when free.
    tid: AtomicI32,
    /// The worker lent to the kernels library while it runs blocks, else null.
    worker: AtomicPtr<Worker>,
    /// The launch (see `new_group`), 0 for none.
    group: AtomicU64,
    /// The main thread's launch, which Ctrl-C stops.
    interruptible: AtomicBool,
    /// Equal to `group`: stop this launch.
    abandon: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            tid: AtomicI32::new(0),
            worker: AtomicPtr::new(std::ptr::null_mut()),
            group: AtomicU64::new(0),
            interruptible: AtomicBool::new(false),
            abandon: AtomicU64::new(0),
        }
    }
}

static SLOTS: [Slot; SLOT_COUNT] = [const { Slot::new() }; SLOT_COUNT];
static GROUPS: AtomicU64 = AtomicU64::new(1);
/// Incremented by every SIGINT that the hook sees: a launch that started before stops.
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);
/// Incremented in a forked child, whose cached thread ids are its parent's.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// The signal that asks a thread to leave kernel code; a real-time signal nothing else sends.
pub(super) fn stop_signal() -> c_int {
    libc::SIGRTMAX() - 3
}

const FAULT_SIGNALS: [c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL];

/// The dispositions found when pygpu's handlers were installed: (signal, previous). Written
/// before the handler that reads them is installed, never changed afterwards.
static PREVIOUS: [(AtomicI32, AtomicPtr<libc::sigaction>); 6] =
    [const { (AtomicI32::new(0), AtomicPtr::new(std::ptr::null_mut())) }; 6];

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail; it is async-signal-safe.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

thread_local! {
    /// This thread's id, the process's, and the value of `FORKS` they were read at.
    static TID: Cell<(i32, i32, u64)> = const { Cell::new((0, 0, u64::MAX)) };
    static ALT_STACK: AltStack = const { AltStack::new() };
}

/// (thread id, process id), without a system call after the first on each thread.
fn current_ids() -> (i32, i32) {
    let forks = FORKS.load(Ordering::Relaxed);
    let read = || {
        // SAFETY: getpid has no preconditions.
        (gettid(), unsafe { libc::getpid() })
    };
    TID.try_with(|c| {
        let (tid, pid, seen) = c.get();
        if seen == forks {
            return (tid, pid);
        }
        let (tid, pid) = read();
        c.set((tid, pid, forks));
        (tid, pid)
    })
    .unwrap_or_else(|_| read())
}

fn current_tid() -> i32 {
    current_ids().0
}

/// Installs the fault and stop handlers, once per process.
pub(super) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (i, &signal) in FAULT_SIGNALS.iter().enumerate() {
            // SAFETY: `on_fault` is async-signal-safe (see there) and has the SA_SIGINFO signature.
            unsafe { install_handler(i, signal, on_fault, 0) };
        }
        // SAFETY: as above, for `on_stop`.
        unsafe { install_handler(4, stop_signal(), on_stop, 0) };
        // SAFETY: the child handler only stores to atomics.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
}

static SIGINT_HOOKED: AtomicBool = AtomicBool::new(false);

/// Whether `install_sigint_hook` put its handler in (Python may have replaced it since).
pub(super) fn sigint_hooked() -> bool {
    SIGINT_HOOKED.load(Ordering::Acquire)
}

/// Puts a SIGINT handler in front of the current one (when that is a function: Python's), which
/// runs it and then stops the main thread's host launches; once per process. The caller
/// vouches that the current handler makes the launch's interrupt check raise (Python's
/// default_int_handler does): a stopped launch cannot go on.
pub fn install_sigint_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a query of the current disposition into a zeroed struct.
        let current = unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGINT, std::ptr::null(), &mut current) != 0 {
                return;
            }
            current
        };
        if current.sa_sigaction == libc::SIG_DFL || current.sa_sigaction == libc::SIG_IGN {
            return; // Ctrl-C kills the process, or does nothing: no launch to stop
        }
        // SAFETY: `on_interrupt` is async-signal-safe; SA_RESTART is kept as Python set it, so
        // that system calls are interrupted exactly as before.
        let installed = unsafe { install_handler(5, libc::SIGINT, on_interrupt, current.sa_flags & libc::SA_RESTART) };
        SIGINT_HOOKED.store(installed, Ordering::Release);
    });
}

type Handler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);

/// Whether it is installed.
/// # Safety
/// `handler` is async-signal-safe.
unsafe fn install_handler(index: usize, signal: c_int, handler: Handler, extra_flags: c_int) -> bool {
    // SAFETY: plain sigaction calls on zeroed structs; the previous disposition is leaked so
    // that the handler can read it for the rest of the process.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | extra_flags;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut previous) != 0 {
            return false;
        }
        PREVIOUS[index].1.store(Box::into_raw(Box::new(previous)), Ordering::Release);
        PREVIOUS[index].0.store(signal, Ordering::Release);
        libc::sigaction(signal, &action, std::ptr::null_mut()) == 0
    }
}

fn previous(signal: c_int) -> Option<&'static libc::sigaction> {
    PREVIOUS.iter().find(|(s, _)| s.load(Ordering::Acquire) == signal).and_then(|(_, p)| {
        // SAFETY: a leaked Box, never freed or changed after it was stored.
        unsafe { p.load(Ordering::Acquire).as_ref() }
    })
}

extern "C" fn after_fork_in_child() {
    // The parent's other threads do not exist here; their slots would name dead workers.
    for slot in &SLOTS {
        slot.worker.store(std::ptr::null_mut(), Ordering::Relaxed);
        slot.group.store(0, Ordering::Relaxed);
        slot.interruptible.store(false, Ordering::Relaxed);
        slot.tid.store(0, Ordering::Relaxed);
    }
    FORKS.fetch_add(1, Ordering::Relaxed);
}

fn slot_of(tid: i32) -> Option<&'static Slot> {
    SLOTS.iter().find(|s| s.tid.load(Ordering::Acquire) == tid)
}

/// Errno as the interrupted code left it, put back when a handler returns.
struct SavedErrno(c_int);
impl SavedErrno {
    fn new() -> Self {
        // SAFETY: __errno_location gives this thread's errno.
        SavedErrno(unsafe { *libc::__errno_location() })
    }
}
impl Drop for SavedErrno {
    fn drop(&mut self) {
        // SAFETY: as in `new`.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

/// Resumes the block runner of this thread's worker if fibers run (never returns then).
/// # Safety
/// In a signal handler on the thread of `worker`, which its slot names.
unsafe fn recover(worker: *mut Worker, signal: c_int, code: c_int, address: *mut c_void) {
    // SAFETY: the worker is this thread's, lent for the library call that this signal
    // interrupted (the slot is cleared before it is released); the field is read as the
    // library wrote it.
    unsafe {
        if let Some(recover) = std::ptr::read_volatile(std::ptr::addr_of!((*worker).recover)) {
            recover(worker, signal, code, address);
        }
    }
}

extern "C" fn on_fault(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let errno = SavedErrno::new();
    if let Some(slot) = slot_of(gettid()) {
        let worker = slot.worker.load(Ordering::Acquire);
        if !worker.is_null() {
            // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
            let (code, address) = unsafe { info.as_ref() }.map_or((0, std::ptr::null_mut()), |i| {
                // SAFETY: si_addr is defined for the fault signals this handler is installed for.
                (i.si_code, unsafe { i.si_addr() })
            });
            // SAFETY: on this thread, whose slot names the worker.
            unsafe { recover(worker, signal, code, address) };
        }
    }
    drop(errno);
    // SAFETY: forwarding the signal as the kernel delivered it.
    unsafe { chain(signal, info, context, true) };
}

extern "C" fn on_stop(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let errno = SavedErrno::new();
    if let Some(slot) = slot_of(gettid()) {
        let group = slot.group.load(Ordering::Acquire);
        if group != 0 && slot.abandon.load(Ordering::Acquire) == group {
            let worker = slot.worker.load(Ordering::Acquire);
            if !worker.is_null() {
                // SAFETY: on this thread, whose slot names the worker.
                unsafe { recover(worker, signal, 0, std::ptr::null_mut()) };
            }
            return; // not in kernel code: the thread sees `abandon` before its next block
        }
    }
    drop(errno);
    // A stray one (its thread left the launch meanwhile): only another user of the signal wants it.
    // SAFETY: as in on_fault.
    unsafe { chain(signal, info, context, false) };
}

extern "C" fn on_interrupt(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // Python's handler first: it records the signal, which the launch's check then finds.
    // SAFETY: as in on_fault.
    unsafe { chain(signal, info, context, false) };
    let errno = SavedErrno::new();
    INTERRUPTS.fetch_add(1, Ordering::AcqRel);
    let me = gettid();
    let mut recover_here = None;
    for slot in &SLOTS {
        let group = slot.group.load(Ordering::Acquire);
        if group == 0 || !slot.interruptible.load(Ordering::Acquire) {
            continue;
        }
        for other in &SLOTS {
            if other.group.load(Ordering::Acquire) != group {
                continue;
            }
            other.abandon.store(group, Ordering::Release);
            let tid = other.tid.load(Ordering::Acquire);
            if tid == me {
                recover_here = Some(other);
            } else if tid != 0 && !other.worker.load(Ordering::Acquire).is_null() {
                send_stop(tid);
            }
        }
    }
    drop(errno);
    if let Some(slot) = recover_here {
        let worker = slot.worker.load(Ordering::Acquire);
        if !worker.is_null() {
            // SAFETY: on this thread, whose slot names the worker.
            unsafe { recover(worker, signal, 0, std::ptr::null_mut()) };
        }
    }
}

fn send_stop(tid: i32) {
    // SAFETY: tgkill to a thread of this process; async-signal-safe. A thread that exited
    // meanwhile makes it fail (ESRCH), or reaches a new thread of the same id, which ignores it.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, stop_signal()) };
}

/// Hands the signal to the disposition found at installation.
/// # Safety
/// Called from a handler with the arguments it got.
unsafe fn chain(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void, fatal: bool) {
    let handler = previous(signal).map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        if !fatal || (handler == libc::SIG_IGN && !is_fault(info)) {
            return;
        }
        // What would have happened without pygpu: the default action. A fault recurs when the
        // handler returns; a signal sent by kill is raised again (blocked until then).
        // SAFETY: sigaction and raise are async-signal-safe.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &default, std::ptr::null_mut());
            if !is_fault(info) {
                libc::raise(signal);
            }
        }
        return;
    }
    let Some(previous) = previous(signal) else { return };
    // SAFETY: the previous handler was installed for this signal with these flags, so it has
    // the signature they say.
    unsafe {
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = std::mem::transmute(handler);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(c_int) = std::mem::transmute(handler);
            f(signal);
        }
    }
}

/// Whether the kernel raised the signal for the faulting instruction (si_code > 0), rather
/// than kill or raise.
fn is_fault(info: *mut libc::siginfo_t) -> bool {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    unsafe { info.as_ref() }.is_some_and(|i| i.si_code > 0)
}

/// A number for a new launch.
pub(super) fn new_group() -> u64 {
    GROUPS.fetch_add(1, Ordering::Relaxed)
}

/// How many SIGINTs the hook has seen: a launch that sees it change is interrupted.
pub(super) fn interrupts() -> u64 {
    INTERRUPTS.load(Ordering::Acquire)
}

/// Whether this is the process's main thread, whose launches Ctrl-C stops.
pub(super) fn on_main_thread() -> bool {
    let (tid, pid) = current_ids();
    tid == pid
}

/// Stops every thread of launch `group` (but the caller) that is in kernel code, sending the
/// stop signal again while any is still there (one sent just before a thread started its
/// fibers finds nothing to stop), for at most about `patience`.
pub(super) fn stop_group(group: u64, patience: Duration) {
    let me = current_tid();
    let deadline = std::time::Instant::now() + patience;
    loop {
        let mut running = false;
        for slot in &SLOTS {
            if slot.group.load(Ordering::Acquire) != group {
                continue;
            }
            slot.abandon.store(group, Ordering::Release);
            let tid = slot.tid.load(Ordering::Acquire);
            if tid != me && tid != 0 && !slot.worker.load(Ordering::Acquire).is_null() {
                running = true;
                send_stop(tid);
            }
        }
        if !running || std::time::Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// This thread's part in one launch: holds a slot (if one is free) while it lasts.
pub(super) struct Participant {
    slot: Option<&'static Slot>,
    group: u64,
}

impl Participant {
    pub(super) fn enter(group: u64, interruptible: bool) -> Self {
        let _ = ALT_STACK.try_with(AltStack::ensure);
        let tid = current_tid();
        let start = (tid as u32 as usize).wrapping_mul(0x9e37_79b9) % SLOT_COUNT;
        for k in 0..SLOT_COUNT {
            let slot = &SLOTS[(start + k) % SLOT_COUNT];
            if slot.tid.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                slot.abandon.store(0, Ordering::Relaxed);
                slot.group.store(group, Ordering::Release);
                slot.interruptible.store(interruptible, Ordering::Release);
                return Participant { slot: Some(slot), group };
            }
        }
        Participant { slot: None, group }
    }

    /// Whether the launch asked this thread to stop.
    pub(super) fn abandoned(&self) -> bool {
        self.slot.is_some_and(|s| s.abandon.load(Ordering::Acquire) == self.group)
    }

    /// Fills in the worker's fault fields and names it in the slot, for one library call.
    pub(super) fn lend(&self, worker: &mut Worker) {
        worker.jump = std::ptr::null_mut();
        worker.recover = None;
        worker.fault_signal = 0;
        worker.fault_code = 0;
        worker.fault_address = std::ptr::null_mut();
        worker.group = self.group;
        // SAFETY: pthread_self has no preconditions.
        worker.thread_self = unsafe { libc::pthread_self() } as *mut c_void;
        worker.abandon = self.slot.map_or(std::ptr::null(), |s| s.abandon.as_ptr().cast_const());
        if let Some(slot) = self.slot {
            slot.worker.store(worker, Ordering::Release);
        }
        compiler_fence(Ordering::SeqCst);
    }

    /// After the library call: the worker is no longer the handler's; where a signal stopped the
    /// blocks, the signals of every handler that was running on this thread are unblocked again
    /// (they stayed blocked, as the handlers never returned). Not only the one that recovered: a
    /// stop signal can arrive while the fault handler runs (or a fault while the stop handler
    /// does) and recover from inside it, and a fault signal left blocked would make this
    /// thread's next fault kill the process.
    pub(super) fn take_back(&self, worker: &Worker) {
        compiler_fence(Ordering::SeqCst);
        if let Some(slot) = self.slot {
            slot.worker.store(std::ptr::null_mut(), Ordering::Release);
        }
        if worker.fault_signal != 0 {
            // SAFETY: unblocking this thread's handled signals; a zeroed sigset_t is valid input
            // for sigemptyset.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                for signal in FAULT_SIGNALS.iter().copied().chain([stop_signal()]) {
                    libc::sigaddset(&mut set, signal);
                }
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            }
        }
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            slot.interruptible.store(false, Ordering::Release);
            slot.worker.store(std::ptr::null_mut(), Ordering::Release);
            slot.group.store(0, Ordering::Release);
            slot.abandon.store(0, Ordering::Release);
            slot.tid.store(0, Ordering::Release);
        }
    }
}

/// The alternate signal stack of a thread that runs blocks, where it had none.
struct AltStack {
    /// Whether `ensure` ran on this thread.
    checked: Cell<bool>,
    /// Our mapping (guard page, then the stack), if we installed one.
    mapping: Cell<*mut c_void>,
}

/// Enough for the handler and a chained faulthandler; a guard page lies below.
const ALT_STACK_BYTES: usize = 64 * 1024;
const ALT_GUARD_BYTES: usize = 64 * 1024;

impl AltStack {
    const fn new() -> Self {
        AltStack { checked: Cell::new(false), mapping: Cell::new(std::ptr::null_mut()) }
    }

    fn ensure(&self) {
        if self.checked.replace(true) {
            return;
        }
        // SAFETY: sigaltstack queries and sets this thread's alternate stack; the mapping is
        // this object's until it is dropped.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut current) != 0 || current.ss_flags & libc::SS_DISABLE == 0 {
                return; // one is there already (faulthandler's, on the main thread): it serves
            }
            let p = libc::mmap(
                std::ptr::null_mut(),
                ALT_GUARD_BYTES + ALT_STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return;
            }
            // Failing leaves the guard writable, which only loses the guard.
            libc::mprotect(p, ALT_GUARD_BYTES, libc::PROT_NONE);
            let stack = libc::stack_t {
                ss_sp: p.cast::<u8>().add(ALT_GUARD_BYTES).cast(),
                ss_flags: 0,
                ss_size: ALT_STACK_BYTES,
            };
            if libc::sigaltstack(&stack, std::ptr::null_mut()) != 0 {
                libc::munmap(p, ALT_GUARD_BYTES + ALT_STACK_BYTES);
                return;
            }
            self.mapping.set(p);
        }
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let p = self.mapping.get();
        if p.is_null() {
            return;
        }
        // SAFETY: the thread is exiting, outside any handler; the stack is disabled first if it
        // is still this thread's, and never unmapped while in use.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut current) == 0 {
                if current.ss_flags & libc::SS_ONSTACK != 0 {
                    return;
                }
                if current.ss_sp == p.cast::<u8>().add(ALT_GUARD_BYTES).cast() {
                    let disable = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
                    libc::sigaltstack(&disable, std::ptr::null_mut());
                }
            }
            libc::munmap(p, ALT_GUARD_BYTES + ALT_STACK_BYTES);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_participant_holds_a_slot_until_dropped_and_sees_its_launch_stopped() {
        let group = new_group();
        let me = Participant::enter(group, false);
        let tid = current_tid();
        let slot = slot_of(tid).expect("a free slot");
        assert_eq!(slot.group.load(Ordering::Acquire), group);
        assert!(!me.abandoned());
        // Not in kernel code: marked, not signalled, and no waiting.
        stop_group(group, Duration::from_secs(5));
        assert!(me.abandoned());
        // Another launch's stop is not this one's.
        let other = Participant::enter(new_group(), false);
        drop(me);
        assert!(!other.abandoned());
        drop(other);
        assert!(slot_of(tid).is_none(), "slots are given back");
    }
}
