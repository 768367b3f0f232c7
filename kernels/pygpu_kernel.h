// pygpu_kernel.h: lets one kernel source build for CUDA (NVRTC, nvcc), HIP (hipcc) and the host (g++).
//
// A source writes
//     #include "pygpu_kernel.h"
//     PYGPU_GLOBAL(int, counter);                  // a __device__ global, found by name on every backend
//     PYGPU_KERNEL void scale(double* x, int n, double a) { ...threadIdx.x, blockIdx.x... }
//     PYGPU_EXPORT(scale)                          // the host build's launch entry point
// and kernels/build.sh turns it into .ptx/.fatbin (CUDA), .hsaco (HIP) and lib<name>.so (host).
// The host ABI that PYGPU_EXPORT and PYGPU_GLOBAL emit is described in kernels/README.md.
#pragma once

#if defined(__HIPCC__)
// hipcc compiles .cu files as HIP but, unlike nvcc, does not pre-include its runtime header:
// threadIdx, __global__ and friends come from here.
#include <hip/hip_runtime.h>
#define PYGPU_DEVICE_BUILD 1
#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PYGPU_DEVICE_BUILD 1
#endif

#if defined(PYGPU_DEVICE_BUILD)

// extern "C": the module loaders look kernels up by their plain name (cuModuleGetFunction).
#define PYGPU_KERNEL extern "C" __global__
#define PYGPU_EXPORT(K)
// Namespace-scope variables are not mangled, so cuModuleGetGlobal(name) finds them as they are.
#define PYGPU_GLOBAL(T, G) __device__ T G
#define PYGPU_CONSTANT(T, G) __constant__ T G

#else  // host build: a plain C++17 shared library that runs every GPU thread in turn.
// Built with -fno-exceptions, as device code has none, so nothing can unwind into the C caller.

#include <cmath>    // kernels call sqrt, fabs, ... as they would on a device
#include <cstddef>
#include <utility>  // std::index_sequence

// One kernel source is one shared library: the definitions below are made once per library.
// Everything is hidden (-fvisibility=hidden) except what carries PYGPU_API.
#define PYGPU_VISIBLE __attribute__((visibility("default")))
#define PYGPU_API extern "C" PYGPU_VISIBLE

// A kernel is an ordinary function, called once per GPU thread by its pygpu_launch_K.
#define PYGPU_KERNEL

#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
// Deliberately not defined, so that a kernel using them fails to build for the host instead of
// computing something wrong there: __shared__, __syncthreads, atomics, warp intrinsics.

struct uint3 { unsigned int x, y, z; };
typedef uint3 dim3;

// thread_local: the host backend may run launches of different streams on different threads.
static thread_local uint3 threadIdx, blockIdx;
static thread_local dim3 blockDim, gridDim;

// The kernels this library exports, NULL-terminated; filled in while the library loads (static
// initialisers run inside dlopen, in source order), so it is complete when dlopen returns.
namespace pygpu_host { constexpr unsigned int kMaxKernels = 1024; }
extern "C" {
PYGPU_VISIBLE extern const unsigned int pygpu_host_abi_version = 1;
PYGPU_VISIBLE unsigned int pygpu_kernel_count = 0;
PYGPU_VISIBLE const char* pygpu_kernel_names[pygpu_host::kMaxKernels + 1] = {};
}

namespace pygpu_host {

// CUDA driver codes, so that the host backend reports launch errors as a GPU would.
enum : int { kSuccess = 0, kInvalidValue = 1 };

// The limits of every CUDA and HIP GPU, checked so that a launch configuration that works on the
// host also works on a GPU.
inline bool launch_dims_ok(const unsigned int g[3], const unsigned int b[3]) {
  if (!g || !b) return false;
  for (int i = 0; i < 3; ++i)
    if (g[i] == 0 || b[i] == 0) return false;
  const unsigned long long threads = 1ull * b[0] * b[1] * b[2];
  return g[0] <= 2147483647u && g[1] <= 65535u && g[2] <= 65535u &&
         b[0] <= 1024u && b[1] <= 1024u && b[2] <= 64u && threads <= 1024u;
}

// args is cuLaunchKernel's kernelParams: args[I] points to the value of parameter I.
template <typename... P, std::size_t... I>
int launch(void (*kernel)(P...), const unsigned int g[3], const unsigned int b[3], void** args,
           std::size_t shared_bytes, std::index_sequence<I...>) {
  if (shared_bytes != 0) return kInvalidValue;  // no shared memory on the host
  if (!launch_dims_ok(g, b)) return kInvalidValue;
  if (sizeof...(P) > 0 && !args) return kInvalidValue;
  gridDim = {g[0], g[1], g[2]};
  blockDim = {b[0], b[1], b[2]};
  for (unsigned int bz = 0; bz < g[2]; ++bz)
    for (unsigned int by = 0; by < g[1]; ++by)
      for (unsigned int bx = 0; bx < g[0]; ++bx)
        for (unsigned int tz = 0; tz < b[2]; ++tz)
          for (unsigned int ty = 0; ty < b[1]; ++ty)
            for (unsigned int tx = 0; tx < b[0]; ++tx) {
              blockIdx = {bx, by, bz};
              threadIdx = {tx, ty, tz};
              kernel(*static_cast<P*>(args[I])...);
            }
  return kSuccess;
}

template <typename... P>
int launch(void (*kernel)(P...), const unsigned int g[3], const unsigned int b[3], void** args,
           std::size_t shared_bytes) {
  return launch(kernel, g, b, args, shared_bytes, std::index_sequence_for<P...>{});
}

// The sizes of a kernel's parameters, 0-terminated: the loader checks a launch's arguments
// against them, so a wrong argument list is an error rather than a stray read.
template <typename... P>
struct ParamSizes {
  static constexpr std::size_t value[sizeof...(P) + 1] = {sizeof(P)..., 0};
};
template <typename... P>
constexpr const std::size_t* param_sizes(void (*)(P...)) {
  return ParamSizes<P...>::value;
}

struct Register {
  explicit Register(const char* name) { pygpu_kernel_names[pygpu_kernel_count++] = name; }
};

}  // namespace pygpu_host

// __COUNTER__ grows with every export, so it bounds the number of kernels whatever else uses it.
#define PYGPU_EXPORT(K)                                                                   \
  static_assert(__COUNTER__ < pygpu_host::kMaxKernels, "too many kernels in one source"); \
  PYGPU_API int pygpu_launch_##K(const unsigned int grid[3], const unsigned int block[3], \
                                 void** args, std::size_t shared_bytes) {                 \
    return pygpu_host::launch(&K, grid, block, args, shared_bytes);                       \
  }                                                                                       \
  PYGPU_API const std::size_t* const pygpu_param_sizes_##K = pygpu_host::param_sizes(&K); \
  static const pygpu_host::Register pygpu_register_##K(#K);

// The variable's own symbol is pygpu_global_G (an asm label), so dlsym gives its address as
// cuModuleGetGlobal does; pygpu_global_size_G holds its size. Zero-initialised, as on a device.
#define PYGPU_GLOBAL(T, G)                                                  \
  PYGPU_VISIBLE T G asm("pygpu_global_" #G);                               \
  PYGPU_API const std::size_t pygpu_global_size_##G = sizeof(T)
#define PYGPU_CONSTANT(T, G) PYGPU_GLOBAL(T, G)

#endif
