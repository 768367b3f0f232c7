// pygpu_kernel.h: lets one kernel source build for CUDA (NVRTC, nvcc), HIP (hipcc) and the host (g++).
//
// A source writes
//     #include "pygpu_kernel.h"
//     PYGPU_GLOBAL(int, counter);                  // a __device__ global, found by name on every backend
//     PYGPU_KERNEL void scale(double* x, int n, double a) { ...threadIdx.x, blockIdx.x... }
//     PYGPU_EXPORT(scale)                          // the host build's launch entry point
// and kernels/build.sh turns it into .ptx/.fatbin (CUDA), .hsaco (HIP) and lib<name>.so (host).
// The host ABI that PYGPU_EXPORT and PYGPU_GLOBAL emit is described in kernels/README.md.
//
// On the host the header also makes plain CUDA C build (g++ -include pygpu_kernel.h): __global__,
// __device__, __shared__, __syncthreads, warp intrinsics, atomics, the math API, vector types,
// printf. Only `extern __shared__ T name[];` needs spelling as PYGPU_DYNAMIC_SHARED(T, name) (a
// C++ declaration cannot give a name to memory sized at launch); pygpu's host compiler rewrites it.
#pragma once

#if defined(__HIPCC__)
// hipcc compiles .cu files as HIP but, unlike nvcc, does not pre-include its runtime header:
// threadIdx, __global__ and friends come from here.
#include <hip/hip_runtime.h>
#define PYGPU_DEVICE_BUILD 1
#if !defined(HIP_ENABLE_WARP_SYNC_BUILTINS)
// ROCm before 6.2 has no *_sync warp intrinsics. These give CUDA's 32-lane warps on a 64-lane
// wavefront: widths default to 32 and votes look at the caller's half. The mask is not checked
// (the lanes of a wavefront run in lock step).
template <typename T>
__device__ inline T __shfl_sync(unsigned int, T v, int src, int width = 32) { return __shfl(v, src, width); }
template <typename T>
__device__ inline T __shfl_up_sync(unsigned int, T v, unsigned int d, int width = 32) { return __shfl_up(v, d, width); }
template <typename T>
__device__ inline T __shfl_down_sync(unsigned int, T v, unsigned int d, int width = 32) {
  return __shfl_down(v, d, width);
}
template <typename T>
__device__ inline T __shfl_xor_sync(unsigned int, T v, int m, int width = 32) { return __shfl_xor(v, m, width); }
__device__ inline unsigned int __ballot_sync(unsigned int mask, int p) {
  return static_cast<unsigned int>(__ballot(p) >> (__lane_id() & 32)) & mask;
}
__device__ inline int __all_sync(unsigned int mask, int p) { return (__ballot_sync(mask, p) & mask) == mask; }
__device__ inline int __any_sync(unsigned int mask, int p) { return __ballot_sync(mask, p) != 0; }
__device__ inline void __syncwarp(unsigned int = 0xffffffffu) {}
__device__ inline unsigned int __activemask() { return static_cast<unsigned int>(__ballot(1) >> (__lane_id() & 32)); }
#endif
#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PYGPU_DEVICE_BUILD 1
#endif

#if defined(PYGPU_DEVICE_BUILD)

// extern "C": the module loaders look kernels up by their plain name (cuModuleGetFunction).
#define PYGPU_KERNEL extern "C" __global__
#define PYGPU_EXPORT(K)
#define PYGPU_EXPORT_AS(NAME, K)
// Namespace-scope variables are not mangled, so cuModuleGetGlobal(name) finds them as they are.
#define PYGPU_GLOBAL(T, G) __device__ T G
#define PYGPU_CONSTANT(T, G) __constant__ T G
// The launch's dynamic shared memory, as a T*.
#define PYGPU_DYNAMIC_SHARED(T, NAME) extern __shared__ T NAME[]
#define PYGPU_EXPORT_GLOBAL(G)

#else  // host build: a shared library whose blocks run their threads as fibers.
// Built with -fno-exceptions, as device code has none, so nothing can unwind into the C caller;
// it needs no libstdc++ (only libc and libm). Valid C++11 and later: user sources ask for their
// own -std (as nvcc's -std=c++11), and the header must not make an older one fail.

#include <math.h>  // libstdc++'s math.h: the float overloads (sqrt(float), ...) in the global namespace
#include <stdio.h>  // device printf
#include <cstddef>

// A shared library is built from one kernel source, or linked from several (DynamicModule): the
// library-wide definitions below are inline, so that each is made once per library. Everything
// is hidden (-fvisibility=hidden) except what carries PYGPU_API.
#define PYGPU_VISIBLE __attribute__((visibility("default")))
#define PYGPU_API extern "C" PYGPU_VISIBLE
// One definition per library however many objects define it: C++17's inline variable; before
// C++17 a weak definition, which the static linker merges the same way.
#if __cplusplus >= 201703L
#define PYGPU_INLINE_VARIABLE inline
#else
#define PYGPU_INLINE_VARIABLE __attribute__((weak))
#endif

// A kernel is an ordinary function, called once per GPU thread.
#define PYGPU_KERNEL
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
// One host thread runs a block's fibers, one block after another: a thread_local variable is
// one block's shared memory. (A thread_local at block scope is implicitly static.)
#define __shared__ thread_local
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
// CUDA's __trap(): the launch ends with cudaErrorIllegalInstruction (715), as on a GPU (the host
// backend's fault handler turns the trap instruction's SIGILL into that error).
static inline __attribute__((noreturn)) void __trap() { __builtin_trap(); }
#define PYGPU_DYNAMIC_SHARED(T, NAME)                     \
  static thread_local pygpu_host::SharedPointer<T>& NAME = \
      reinterpret_cast<pygpu_host::SharedPointer<T>&>(pygpu_host::dynamic_shared_memory)

#include "pygpu_host/vector_types.h"
#include "pygpu_host/fibers.h"
#include "pygpu_host/atomics.h"
#include "pygpu_host/warp.h"
#include "pygpu_host/math.h"

using pygpu_host::blockDim;
using pygpu_host::blockIdx;
using pygpu_host::gridDim;
using pygpu_host::threadIdx;

// The kernels this library exports, NULL-terminated; filled in while the library loads (static
// initialisers run inside dlopen, in source order), so it is complete when dlopen returns.
namespace pygpu_host { constexpr unsigned int kMaxKernels = 1024; }
extern "C" {
// `used`: an inline variable is otherwise only emitted where code refers to it.
PYGPU_VISIBLE __attribute__((used)) PYGPU_INLINE_VARIABLE extern const unsigned int pygpu_host_abi_version = 3;
PYGPU_VISIBLE __attribute__((used)) PYGPU_INLINE_VARIABLE unsigned int pygpu_kernel_count = 0;
PYGPU_VISIBLE __attribute__((used)) PYGPU_INLINE_VARIABLE const char* pygpu_kernel_names[pygpu_host::kMaxKernels + 1] = {};
}

namespace pygpu_host {

// Calls kernel K for the current thread: args is cuLaunchKernel's kernelParams, args[I] points
// to the value of parameter I.
template <typename... P>
struct KernelArgs {
  void** args;
};
// std::index_sequence is C++14.
template <std::size_t... I>
struct Indices {};
template <std::size_t N, std::size_t... I>
struct MakeIndices : MakeIndices<N - 1, N - 1, I...> {};
template <std::size_t... I>
struct MakeIndices<0, I...> {
  typedef Indices<I...> type;
};
// How parameter P travels in kernelParams: by value, but a reference parameter (`int& n`, which
// CUDA allows) as the address it refers to, a device pointer, as nvcc passes it.
template <typename P>
struct Param {
  typedef P slot;
  static P get(void* arg) { return *static_cast<P*>(arg); }
};
template <typename P>
struct Param<P&> {
  typedef P* slot;
  static P& get(void* arg) { return **static_cast<P**>(arg); }
};
// The kernel is a template argument (F, K rather than C++17's `auto K`), so that it is inlined
// into the thread loop.
template <typename F, F K, typename Seq, typename... P>
struct Caller;
template <typename F, F K, std::size_t... I, typename... P>
struct Caller<F, K, Indices<I...>, P...> {
  static void call(void* p) {
    void** args = static_cast<KernelArgs<P...>*>(p)->args;
    // [=]: a kernel without parameters uses no capture, which clang would warn of for [args].
    run_threads(current_block, [=] { K(Param<P>::get(args[I])...); });
  }
};

template <typename F, F K, typename... P>
int run_kernel(void (*)(P...), const LaunchDesc* launch, unsigned long long first, unsigned long long end,
               Worker* worker) {
  if (worker && sizeof...(P) > 0 && (!launch || !launch->args)) {
    std::snprintf(worker->message, sizeof worker->message, "no arguments given to a kernel that takes %zu",
                  sizeof...(P));
    return kInvalidValue;
  }
  KernelArgs<P...> args{launch ? launch->args : nullptr};
  return run_blocks(launch, first, end, worker,
                    &Caller<F, K, typename MakeIndices<sizeof...(P)>::type, P...>::call, &args);
}

// The sizes of a kernel's parameters, 0-terminated: the loader checks a launch's arguments
// against them, so a wrong argument list is an error rather than a stray read.
template <typename... P>
struct ParamSizes {
  static constexpr std::size_t value[sizeof...(P) + 1] = {sizeof(typename Param<P>::slot)..., 0};
};
#if __cplusplus < 201703L
// Before C++17 a static constexpr member that is odr-used needs a definition outside its class.
template <typename... P>
constexpr std::size_t ParamSizes<P...>::value[sizeof...(P) + 1];
#endif
template <typename... P>
constexpr const std::size_t* param_sizes(void (*)(P...)) {
  return ParamSizes<P...>::value;
}

// The sources of a linked library share the table: past its end a kernel is not listed (and
// get_function still finds it by name).
struct Register {
  explicit Register(const char* name) {
    if (pygpu_kernel_count < kMaxKernels) pygpu_kernel_names[pygpu_kernel_count++] = name;
  }
};

}  // namespace pygpu_host

// __COUNTER__ grows with every export, so it bounds the number of kernels whatever else uses it.
#define PYGPU_EXPORT(K) PYGPU_EXPORT_AS(K, K)
// Exports the kernel K (an expression naming one function: `ns::k`) under the plain name NAME.
#define PYGPU_EXPORT_AS(NAME, K)                                                                         \
  static_assert(__COUNTER__ < pygpu_host::kMaxKernels, "too many kernels in one source");                \
  PYGPU_API int pygpu_run_blocks_##NAME(const pygpu_host::LaunchDesc* launch, unsigned long long first,  \
                                        unsigned long long end, pygpu_host::Worker* worker) {            \
    return pygpu_host::run_kernel<decltype(&K), &K>(&K, launch, first, end, worker);                     \
  }                                                                                                      \
  PYGPU_API const std::size_t* const pygpu_param_sizes_##NAME = pygpu_host::param_sizes(&K);             \
  static const pygpu_host::Register pygpu_register_##NAME(#NAME);

// Exports a kernel of C++ linkage under its mangled name, as a GPU module has it (nvcc mangles as
// the host compiler does, the Itanium C++ ABI). F is its pointer type (which picks one of
// overloads), K names it, N tells the exports of one source apart. C++ cannot spell a mangled
// name, so the assembler does: an asm operand `%c` prints the symbol of a function or variable,
// and `.set` gives the entry point and the parameter sizes their pygpu_*_<mangled> names.
#define PYGPU_EXPORT_MANGLED(N, F, K)                                                                   \
  static_assert(__COUNTER__ < pygpu_host::kMaxKernels, "too many kernels in one source");                \
  static int pygpu_run_blocks_mangled_##N(const pygpu_host::LaunchDesc* launch, unsigned long long first, \
                                          unsigned long long end, pygpu_host::Worker* worker) {          \
    return pygpu_host::run_kernel<F, &K>(static_cast<F>(&K), launch, first, end, worker);                 \
  }                                                                                                      \
  __attribute__((used)) static const std::size_t* const pygpu_param_sizes_mangled_##N =                  \
      pygpu_host::param_sizes(static_cast<F>(&K));                                                       \
  extern "C" __attribute__((visibility("hidden"))) const char pygpu_mangled_name_##N[];                  \
  __attribute__((used)) static void pygpu_alias_mangled_##N() {                                          \
    __asm__(".globl pygpu_run_blocks_%c0\n\t.set pygpu_run_blocks_%c0, %c1\n\t"                          \
            ".globl pygpu_param_sizes_%c0\n\t.set pygpu_param_sizes_%c0, %c2\n\t"                         \
            ".pushsection .rodata\npygpu_mangled_name_" #N ":\n\t.asciz \"%c0\"\n\t.popsection"         \
            :                                                                                            \
            : "i"(static_cast<F>(&K)), "i"(&pygpu_run_blocks_mangled_##N), "i"(&pygpu_param_sizes_mangled_##N)); \
  }                                                                                                      \
  static const pygpu_host::Register pygpu_register_mangled_##N(pygpu_mangled_name_##N);

// The variable's own symbol is pygpu_global_G (an asm label), so dlsym gives its address as
// cuModuleGetGlobal does; pygpu_global_size_G holds its size. Zero-initialised, as on a device.
#define PYGPU_GLOBAL(T, G)                                                  \
  PYGPU_VISIBLE T G asm("pygpu_global_" #G);                               \
  PYGPU_API const std::size_t pygpu_global_size_##G = sizeof(T)
#define PYGPU_CONSTANT(T, G) PYGPU_GLOBAL(T, G)

// For a plain `__device__ T G;` or `__constant__ T G;` at namespace scope (as user sources write
// them): exports it as PYGPU_GLOBAL would, under an alias. G must be a global of the global
// namespace (whose symbol is its plain name), defined before this line.
#define PYGPU_EXPORT_GLOBAL(G)                                                        \
  extern "C" PYGPU_VISIBLE __typeof__(G) pygpu_global_##G __attribute__((alias(#G))); \
  PYGPU_API const std::size_t pygpu_global_size_##G = sizeof(G);

#endif
