// pygpu_host/fibers.h: runs the threads of one GPU block as fibers on one host thread.
//
// Every GPU thread is a fiber with its own stack. A fiber runs threads one after another on its
// stack until one of them waits at a barrier (__syncthreads, a warp-synchronous intrinsic);
// then the scheduler starts the next thread on a fresh fiber. So a kernel without barriers runs
// all the threads of a block as plain function calls on one stack (two context switches per
// block), and a kernel with barriers gets one fiber per thread. When every thread has started,
// the scheduler releases complete barriers (resuming their threads in thread order) until all
// threads have returned; a barrier that can never complete is reported, instead of hanging as
// a GPU would. Exited threads do not hold a barrier up (PTX: barrier.sync waits for the
// non-exited threads). Part of pygpu_kernel.h: not meant to be included on its own.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstring>

namespace pygpu_host {

// --- context switch --------------------------------------------------------------------------
// switch_context(&save, to) saves the callee-saved registers on the current stack, stores the
// stack pointer in *save and continues on the stack `to` (saved the same way, or prepared by
// prepare_stack). Hand-written because swapcontext makes a system call per switch. Weak, in a
// COMDAT group: every translation unit defines them, and a library linked from several sources
// (DynamicModule) keeps one copy.
extern "C" void pygpu_host_switch_context(void** save, void* to) __attribute__((visibility("hidden")));
extern "C" void pygpu_host_fiber_start() __attribute__((visibility("hidden")));

#if defined(__x86_64__)
asm(R"(
  .pushsection .text.pygpu_host_switch_context,"axG",@progbits,pygpu_host_switch_context,comdat
  .p2align 4
  .weak pygpu_host_switch_context
  .hidden pygpu_host_switch_context
  .type pygpu_host_switch_context,@function
pygpu_host_switch_context:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size pygpu_host_switch_context,.-pygpu_host_switch_context

  .p2align 4
  .weak pygpu_host_fiber_start
  .hidden pygpu_host_fiber_start
  .type pygpu_host_fiber_start,@function
pygpu_host_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size pygpu_host_fiber_start,.-pygpu_host_fiber_start
  .popsection
)");
// The first switch into a fresh stack pops six registers (r12 = argument, r13 = entry) and
// returns into pygpu_host_fiber_start with the stack 16-byte aligned for its call.
inline void* prepare_stack(unsigned char* top, void (*entry)(void*), void* arg) {
  // The return address lies 24 bytes below the aligned top, so that after `ret` the stack
  // pointer is 16-byte aligned, as the System V ABI wants it before a call.
  void** ret = reinterpret_cast<void**>(reinterpret_cast<std::size_t>(top) & ~std::size_t(15)) - 3;
  *ret = reinterpret_cast<void*>(&pygpu_host_fiber_start);
  void** regs = ret - 6;                                    // r15 r14 r13 r12 rbx rbp
  regs[0] = nullptr;
  regs[1] = nullptr;
  regs[2] = reinterpret_cast<void*>(entry);
  regs[3] = arg;
  regs[4] = nullptr;
  regs[5] = nullptr;
  return regs;
}
#elif defined(__aarch64__)
asm(R"(
  .pushsection .text.pygpu_host_switch_context,"axG",%progbits,pygpu_host_switch_context,comdat
  .p2align 4
  .weak pygpu_host_switch_context
  .hidden pygpu_host_switch_context
  .type pygpu_host_switch_context,%function
pygpu_host_switch_context:
  sub sp, sp, #160
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x2, sp
  str x2, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #160
  ret
  .size pygpu_host_switch_context,.-pygpu_host_switch_context

  .p2align 4
  .weak pygpu_host_fiber_start
  .hidden pygpu_host_fiber_start
  .type pygpu_host_fiber_start,%function
pygpu_host_fiber_start:
  mov x0, x19
  blr x20
  brk #0
  .size pygpu_host_fiber_start,.-pygpu_host_fiber_start
  .popsection
)");
// The first switch into a fresh stack loads x19 = argument, x20 = entry, x30 = the trampoline.
inline void* prepare_stack(unsigned char* top, void (*entry)(void*), void* arg) {
  void** sp = reinterpret_cast<void**>(reinterpret_cast<std::size_t>(top) & ~std::size_t(15)) - 20;
  for (int i = 0; i < 20; ++i) sp[i] = nullptr;
  sp[0] = arg;                                              // x19
  sp[1] = reinterpret_cast<void*>(entry);                   // x20
  sp[10] = nullptr;                                         // x29
  sp[11] = reinterpret_cast<void*>(&pygpu_host_fiber_start);  // x30
  return sp;
}
#else
#error "the pygpu host backend's fibers support x86-64 and aarch64"
#endif

// --- the ABI between the loader and a kernels library ------------------------------------------

// Blocks are numbered x fastest, then y, then z; a call runs blocks [first, end).
struct LaunchDesc {
  unsigned int grid[3];
  unsigned int block[3];
  void** args;
  std::size_t shared_bytes;
};

// What the loader lends the host thread that runs blocks: memory reused from launch to launch.
struct Worker {
  unsigned char* stack_memory;  // stack_count stacks of stack_bytes each, one after another
  std::size_t stack_bytes;      // a multiple of 16; the loader may protect the lowest page of each
  unsigned int stack_count;     // at least the number of threads in a block
  unsigned int reserved;
  void* shared;                 // the launch's dynamic shared memory (extern __shared__)
  std::size_t shared_capacity;  // at least the launch's shared_bytes
  char message[256];            // why a run failed, NUL-terminated
  // Fault isolation and interruption (ABI 3; src/runtime/host/faults.rs, docs/reliability.md).
  void** volatile jump;  // while a fiber runs: &Block::scheduler_sp, the runner's context; else NULL
  int (*volatile recover)(Worker*, int, int, void*);  // set by the library, see recover_worker
  const volatile unsigned long long* abandon;  // the loader asks to stop: *abandon == group (NULL: never)
  unsigned long long group;     // this launch's number
  void* thread_self;            // pthread_self() of the calling thread
  int fault_signal;             // set by recover_worker: the signal that stopped the blocks, else 0
  int fault_code;               // its si_code
  void* fault_address;          // its si_addr
};

// CUDA driver codes, so that the host backend reports launch errors as a GPU would.
enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kIllegalAddress = 700,
  kIllegalInstruction = 715,
  kLaunchFailed = 719
};

constexpr unsigned int kWarpSize = 32;
constexpr unsigned int kMaxThreads = 1024;
constexpr unsigned int kMaxWarps = kMaxThreads / kWarpSize;

// What a thread is doing, as the scheduler sees it.
enum ThreadState : unsigned char { kRunning, kAtBlockBarrier, kAtWarpBarrier, kReleased, kExited };

struct Block {
  // set per launch
  void (*body)(void*);  // run_threads for the launch's kernel
  void* body_arg;
  Worker* worker;
  unsigned int threads;
  // set per block
  unsigned int next_thread;  // the next thread to start
  unsigned int exited;
  unsigned int at_block_barrier;
  unsigned int current;      // the thread running now
  int barrier_sum;           // __syncthreads_count of the barrier being filled ...
  int barrier_result;        // ... and of the last one released
  void* scheduler_sp;
  unsigned int free_stacks[kMaxThreads];  // stacks given back by finished fibers
  unsigned int free_count;
  unsigned int fresh_stacks;              // stacks [fresh_stacks, ...) not used yet in this block
  unsigned int resume_cursor;             // the released threads before it have been resumed
  unsigned int running_stack;             // the stack of the fiber that runs now
  unsigned short stack_of[kMaxThreads];   // the stack a suspended thread lives on
  void* saved_sp[kMaxThreads];            // per stack
  ThreadState state[kMaxThreads];
  unsigned int warp_mask[kMaxThreads];    // the mask a thread waits with at a warp barrier
  unsigned char warp_generation[kMaxWarps];
  unsigned long long warp_slots[kMaxWarps][2][kWarpSize];  // values exchanged by shuffles and votes
};

// Per-library state is inline (PYGPU_INLINE_VARIABLE: one definition however many sources a
// library is linked from, so a __device__ function of another source sees the launch's indices)
// and hidden; local-dynamic as static variables would be: one TLS lookup per function, not one
// per variable.
#define PYGPU_HOST_TLS \
  PYGPU_INLINE_VARIABLE thread_local __attribute__((visibility("hidden"), tls_model("local-dynamic")))

// The block whose fibers run on this host thread, and the GPU thread that runs now.
PYGPU_HOST_TLS Block* current_block;
PYGPU_HOST_TLS uint3 threadIdx, blockIdx;
PYGPU_HOST_TLS dim3 blockDim, gridDim;

inline void set_thread_index(unsigned int t) {
  const unsigned int x = blockDim.x, xy = blockDim.x * blockDim.y;
  threadIdx = {t % x, (t % xy) / x, t / xy};
}

// Runs threads of the current block until none is left to start, with kernel K inlined into
// the loop (body of a Block): a thread that waits at a barrier leaves this fiber suspended
// there, and the scheduler starts another fiber for the next thread. Thread indices advance
// without division while threads run back to back.
template <typename Kernel>
inline void run_threads(Block* b, const Kernel& kernel) {
  const unsigned int bx = blockDim.x, by = blockDim.y;
  unsigned int expected = ~0u, tx = 0, ty = 0, tz = 0;
  while (b->next_thread < b->threads) {
    const unsigned int t = b->next_thread++;
    if (t == expected) {
      if (++tx == bx) {
        tx = 0;
        if (++ty == by) {
          ty = 0;
          ++tz;
        }
      }
    } else {
      tx = t % bx;
      ty = (t / bx) % by;
      tz = t / (bx * by);
    }
    expected = t + 1;
    b->current = t;
    threadIdx = {tx, ty, tz};
    kernel();
    b->state[b->current] = kExited;
    ++b->exited;
  }
}

inline void dispatch(Block* b, void** save);

// A fiber's entry: run threads, then give the stack back; a finished fiber is never resumed.
inline void fiber_main(void* arg) {
  Block* b = static_cast<Block*>(arg);
  b->body(b->body_arg);
  b->free_stacks[b->free_count++] = b->running_stack;
  void* unused;
  dispatch(b, &unused);
  __builtin_unreachable();
}

// Stack tops are staggered by a cache line each (within half a stack): tops a power of two
// apart would all fall into the same cache sets, and switching between hundreds of fibers
// would then miss the cache on every switch.
inline unsigned char* stack_top(Worker* w, unsigned int stack) {
  const std::size_t stagger = (std::size_t(stack) * 64) % (w->stack_bytes / 2);
  return w->stack_memory + (std::size_t(stack) + 1) * w->stack_bytes - stagger;
}

// Saves the running context in *save and goes on with what comes next on this host thread: a
// thread not started yet (on a new fiber), else the next released thread, else the scheduler.
// Going from fiber to fiber directly halves the switches of a barrier.
inline void dispatch(Block* b, void** save) {
  if (b->next_thread < b->threads) {
    const unsigned int stack = b->free_count > 0 ? b->free_stacks[--b->free_count] : b->fresh_stacks++;
    b->running_stack = stack;
    pygpu_host_switch_context(save, prepare_stack(stack_top(b->worker, stack), &fiber_main, b));
    return;
  }
  while (b->resume_cursor < b->threads && b->state[b->resume_cursor] != kReleased) ++b->resume_cursor;
  if (b->resume_cursor < b->threads) {
    const unsigned int t = b->resume_cursor++;
    b->current = t;
    b->state[t] = kRunning;
    b->running_stack = b->stack_of[t];
    set_thread_index(t);
    pygpu_host_switch_context(save, b->saved_sp[b->running_stack]);
    return;
  }
  // Back to the runner, which goes on past scheduler_sp: no signal may resume it there again.
  b->worker->jump = nullptr;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  pygpu_host_switch_context(save, b->scheduler_sp);
}

// --- faults and interruption ---------------------------------------------------------------
// The loader's signal handler (src/runtime/host/faults.rs) finds the Worker of the thread that
// took SIGSEGV, SIGBUS, SIGFPE or SIGILL (or the loader's "stop" signal) and calls
// worker->recover. Kernel code only runs on fibers, and while fibers run the runner is suspended
// at scheduler_sp, so recovering is one more context switch: back to the runner, as if the
// fibers had returned, leaving them abandoned. No setjmp (whose _FORTIFY_SOURCE variant refuses
// some jumps) and no unwinding: nothing between here and the runner has destructors. The signal
// stays blocked on the thread until the loader unblocks it after run_blocks returns.

// Runs fibers until they come back to the runner (the caller); false if a signal abandoned them.
inline bool run_fibers(Block* b) {
  Worker* w = b->worker;
  b->scheduler_sp = nullptr;  // recover_worker resumes nothing until dispatch has saved the runner
  w->jump = &b->scheduler_sp;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  dispatch(b, &b->scheduler_sp);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return w->fault_signal == 0;
}

// Called by the loader's signal handler, on the thread that took the signal: while a fiber runs,
// records the signal and resumes the runner (never returns); else returns 0 and changes nothing.
inline int recover_worker(Worker* w, int signal, int code, void* address) {
  void** at = w->jump;
  if (!at) return 0;
  void* to = *static_cast<void* volatile*>(at);
  if (!to) return 0;
  w->jump = nullptr;
  w->fault_signal = signal;
  w->fault_code = code;
  w->fault_address = address;
  void* unused;
  pygpu_host_switch_context(&unused, to);
  __builtin_unreachable();
}

// An abandoned fiber may have stopped inside printf, holding stdout's lock (glibc's locks are
// recursive, owned by the thread): give it back, or every later printf of another thread waits
// forever. glibc's FILE lock is {int lock; int cnt; void* owner;}, owner being pthread_self().
inline void release_stream(FILE* f, void* self) {
#if defined(__GLIBC__)
  struct GlibcLock {
    int lock;
    int cnt;
    void* owner;
  };
  if (!f || !self || (f->_flags & 0x8000 /* _IO_USER_LOCK: no locking */) || !f->_lock) return;
  GlibcLock* lock = static_cast<GlibcLock*>(f->_lock);
  for (int i = 0; i < 64 && lock->owner == self && lock->cnt > 0; ++i) funlockfile(f);
#else
  (void)f;
  (void)self;
#endif
}

// After a signal abandoned the block's fibers: says where (the loader says what happened). Not
// which thread: the compiler may keep threadIdx in registers across an inlined thread loop.
inline int abandoned_block(Block* b) {
  Worker* w = b->worker;
  release_stream(stdout, w->thread_self);
  release_stream(stderr, w->thread_self);
  std::snprintf(w->message, sizeof w->message, "block (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z);
  return kLaunchFailed;
}

inline bool abandoned(const Worker* w) { return w->abandon && *w->abandon == w->group; }

// Suspends the current thread (its state already says at which barrier) until released.
inline void suspend(Block* b) {
  const unsigned int stack = b->running_stack;
  b->stack_of[b->current] = static_cast<unsigned short>(stack);
  dispatch(b, &b->saved_sp[stack]);
}

inline unsigned int warp_lanes(const Block* b, unsigned int warp) {  // the lanes that exist
  const unsigned int first = warp * kWarpSize;
  const unsigned int n = b->threads - first < kWarpSize ? b->threads - first : kWarpSize;
  return n == kWarpSize ? 0xffffffffu : (1u << n) - 1u;
}

// Threads of `warp` wait at a warp-synchronous operation for lanes of their mask that have
// exited or wait at a block barrier (which waits for them in turn).
inline int fail(Block* b, unsigned int warp) {
  std::snprintf(b->worker->message, sizeof b->worker->message,
                "a warp-synchronous operation (__syncwarp, __shfl_*_sync, vote) not reached by all threads "
                "of its mask in warp %u of block (%u,%u,%u) (they exited, or wait at __syncthreads for "
                "this warp): a GPU would hang here",
                warp, blockIdx.x, blockIdx.y, blockIdx.z);
  return kLaunchFailed;
}

// Runs every thread of the current block (blockIdx is set); kSuccess or kLaunchFailed.
inline int run_block(Block* b) {
  b->next_thread = 0;
  b->exited = 0;
  b->at_block_barrier = 0;
  b->barrier_sum = 0;
  b->free_count = 0;
  b->fresh_stacks = 0;
  b->resume_cursor = b->threads;
  for (unsigned int w = 0; w * kWarpSize < b->threads; ++w) b->warp_generation[w] = 0;
  // Start every thread: one fiber runs them in turn until one waits, then a new fiber goes on;
  // control comes back here when all have started.
  if (!run_fibers(b)) return abandoned_block(b);
  // Release complete barriers until every thread has returned. A block barrier waits for the
  // threads that have not exited, as PTX's barrier.sync does: `if (i >= n) return;` before a
  // __syncthreads() completes on a GPU, and so here.
  while (b->exited < b->threads) {
    bool released = false;
    if (b->at_block_barrier != 0 && b->at_block_barrier == b->threads - b->exited) {
      b->barrier_result = b->barrier_sum;
      b->barrier_sum = 0;
      b->at_block_barrier = 0;
      for (unsigned int t = 0; t < b->threads; ++t)
        if (b->state[t] == kAtBlockBarrier) b->state[t] = kReleased;
      released = true;
    } else {
      for (unsigned int w = 0; w * kWarpSize < b->threads; ++w) {
        const unsigned int first = w * kWarpSize, lanes = warp_lanes(b, w);
        unsigned int waiting = 0, wanted = 0;
        for (unsigned int l = 0; l < kWarpSize; ++l)
          if ((lanes >> l & 1u) && b->state[first + l] == kAtWarpBarrier) {
            waiting |= 1u << l;
            wanted |= b->warp_mask[first + l] & lanes;
          }
        if (waiting == 0 || (wanted & ~waiting) != 0) continue;
        b->warp_generation[w] ^= 1;
        for (unsigned int l = 0; l < kWarpSize; ++l)
          if (waiting >> l & 1u) b->state[first + l] = kReleased;
        released = true;
      }
    }
    if (!released) {
      // Every thread left waits at a barrier, and the block barrier is not full: some wait at
      // a warp-synchronous operation.
      unsigned int t = 0;
      while (t + 1 < b->threads && b->state[t] != kAtWarpBarrier) ++t;
      return fail(b, t / kWarpSize);
    }
    b->resume_cursor = 0;
    // Resumes the released threads in order, then comes back.
    if (!run_fibers(b)) return abandoned_block(b);
  }
  return kSuccess;
}

// --- barriers, called by device code -------------------------------------------------------

inline int block_barrier(int predicate) {
  Block* b = current_block;
  if (b->threads == 1) return predicate;
  b->barrier_sum += predicate;
  ++b->at_block_barrier;
  b->state[b->current] = kAtBlockBarrier;
  suspend(b);
  return b->barrier_result;
}

// Waits until the lanes of `mask` in this warp have all arrived; returns the slots of the values
// they published (value is this thread's contribution).
inline const unsigned long long* warp_exchange(unsigned int mask, unsigned long long value) {
  Block* b = current_block;
  const unsigned int t = b->current, warp = t / kWarpSize;
  const unsigned int generation = b->warp_generation[warp];
  b->warp_slots[warp][generation][t % kWarpSize] = value;
  if (warp_lanes(b, warp) != 1u) {
    b->warp_mask[t] = mask | (1u << (t % kWarpSize));
    b->state[t] = kAtWarpBarrier;
    suspend(b);
  }
  return b->warp_slots[warp][generation];
}

// extern __shared__ memory: the launch's shared_bytes, lent by the loader for the whole launch.
// PYGPU_DYNAMIC_SHARED names it through a reference to this variable (may_alias: it is read as
// a T*), which works at namespace scope and in functions alike.
PYGPU_HOST_TLS void* dynamic_shared_memory;
template <typename T>
struct MayAlias {
  typedef T* __attribute__((may_alias)) pointer;
};
template <typename T>
using SharedPointer = typename MayAlias<T>::pointer;
inline void* dynamic_shared() { return dynamic_shared_memory; }

inline unsigned int lane_id() { return current_block->current % kWarpSize; }

// --- running a range of blocks -------------------------------------------------------------

inline bool launch_dims_ok(const unsigned int g[3], const unsigned int b[3]) {
  for (int i = 0; i < 3; ++i)
    if (g[i] == 0 || b[i] == 0) return false;
  const unsigned long long threads = 1ull * b[0] * b[1] * b[2];
  return g[0] <= 2147483647u && g[1] <= 65535u && g[2] <= 65535u && b[0] <= 1024u && b[1] <= 1024u &&
         b[2] <= 64u && threads <= kMaxThreads;
}

inline int run_blocks(const LaunchDesc* launch, unsigned long long first, unsigned long long end, Worker* worker,
                      void (*body)(void*), void* body_arg) {
  if (!worker) return kInvalidValue;
  worker->message[0] = '\0';
  worker->jump = nullptr;
  worker->fault_signal = 0;
  worker->recover = &recover_worker;
  if (!launch || !launch_dims_ok(launch->grid, launch->block)) {
    std::snprintf(worker->message, sizeof worker->message, "invalid grid or block dimensions");
    return kInvalidValue;
  }
  const unsigned int threads = launch->block[0] * launch->block[1] * launch->block[2];
  if (worker->stack_count < threads || worker->stack_bytes < 4096 || worker->stack_bytes % 16 != 0 ||
      (launch->shared_bytes > 0 && (!worker->shared || worker->shared_capacity < launch->shared_bytes))) {
    std::snprintf(worker->message, sizeof worker->message, "the worker lacks stacks or shared memory");
    return kInvalidValue;
  }
  const unsigned long long gx = launch->grid[0], gxy = gx * launch->grid[1];
  if (first > end || end > gxy * launch->grid[2]) {
    std::snprintf(worker->message, sizeof worker->message, "block range out of the grid");
    return kInvalidValue;
  }
  // The scheduler's state (about 36 KiB), one per host thread: not on the stack, whose size is
  // the caller's business.
  static thread_local Block block;
  Block* b = &block;
  b->body = body;
  b->body_arg = body_arg;
  b->worker = worker;
  b->threads = threads;
  Block* outer = current_block;
  current_block = b;
  dynamic_shared_memory = worker->shared;
  gridDim = dim3(launch->grid[0], launch->grid[1], launch->grid[2]);
  blockDim = dim3(launch->block[0], launch->block[1], launch->block[2]);
  int rc = kSuccess;
  for (unsigned long long i = first; i < end && rc == kSuccess; ++i) {
    if (abandoned(worker)) {  // the loader stops the launch (Ctrl-C, or another block failed)
      std::snprintf(worker->message, sizeof worker->message, "stopped before block %llu", i);
      rc = kLaunchFailed;
      break;
    }
    blockIdx = {static_cast<unsigned int>(i % gx), static_cast<unsigned int>((i % gxy) / gx),
                static_cast<unsigned int>(i / gxy)};
    rc = run_block(b);
  }
  current_block = outer;
  std::fflush(stdout);  // device printf: visible when the launch returns, as after a GPU sync
  return rc;
}

}  // namespace pygpu_host
