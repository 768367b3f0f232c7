// pygpu_host/atomics.h: CUDA's atomic functions as real (relaxed, like CUDA's) atomics, since the
// blocks of a launch run on several host threads. Part of pygpu_kernel.h.
#pragma once

#include <cstring>

namespace pygpu_host {

// Retries f(old) until the value did not change in between; returns the old value.
template <typename T, typename F>
inline T atomic_update(T* address, F f) {
  T old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(address, &old, f(old), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}

// The same for float and double, through their bits.
template <typename T, typename Bits, typename F>
inline T atomic_update_float(T* address, F f) {
  static_assert(sizeof(T) == sizeof(Bits), "bits of the same size");
  Bits* bits = reinterpret_cast<Bits*>(address);
  const Bits old = atomic_update(bits, [&](Bits b) {
    T value;
    std::memcpy(&value, &b, sizeof value);
    const T updated = f(value);
    Bits result;
    std::memcpy(&result, &updated, sizeof result);
    return result;
  });
  T value;
  std::memcpy(&value, &old, sizeof value);
  return value;
}

}  // namespace pygpu_host

#define PYGPU_ATOMIC_FETCH(NAME, BUILTIN, T) \
  static inline T NAME(T* address, T value) { return BUILTIN(address, value, __ATOMIC_RELAXED); }

PYGPU_ATOMIC_FETCH(atomicAdd, __atomic_fetch_add, int)
PYGPU_ATOMIC_FETCH(atomicAdd, __atomic_fetch_add, unsigned int)
PYGPU_ATOMIC_FETCH(atomicAdd, __atomic_fetch_add, unsigned long long)
PYGPU_ATOMIC_FETCH(atomicAdd, __atomic_fetch_add, long long)
PYGPU_ATOMIC_FETCH(atomicSub, __atomic_fetch_sub, int)
PYGPU_ATOMIC_FETCH(atomicSub, __atomic_fetch_sub, unsigned int)
PYGPU_ATOMIC_FETCH(atomicExch, __atomic_exchange_n, int)
PYGPU_ATOMIC_FETCH(atomicExch, __atomic_exchange_n, unsigned int)
PYGPU_ATOMIC_FETCH(atomicExch, __atomic_exchange_n, unsigned long long)
PYGPU_ATOMIC_FETCH(atomicAnd, __atomic_fetch_and, int)
PYGPU_ATOMIC_FETCH(atomicAnd, __atomic_fetch_and, unsigned int)
PYGPU_ATOMIC_FETCH(atomicAnd, __atomic_fetch_and, unsigned long long)
PYGPU_ATOMIC_FETCH(atomicOr, __atomic_fetch_or, int)
PYGPU_ATOMIC_FETCH(atomicOr, __atomic_fetch_or, unsigned int)
PYGPU_ATOMIC_FETCH(atomicOr, __atomic_fetch_or, unsigned long long)
PYGPU_ATOMIC_FETCH(atomicXor, __atomic_fetch_xor, int)
PYGPU_ATOMIC_FETCH(atomicXor, __atomic_fetch_xor, unsigned int)
PYGPU_ATOMIC_FETCH(atomicXor, __atomic_fetch_xor, unsigned long long)
#undef PYGPU_ATOMIC_FETCH

#define PYGPU_ATOMIC_MIN_MAX(T)                                                                              \
  static inline T atomicMin(T* address, T value) {                                                           \
    return pygpu_host::atomic_update(address, [value](T old) { return value < old ? value : old; });         \
  }                                                                                                          \
  static inline T atomicMax(T* address, T value) {                                                           \
    return pygpu_host::atomic_update(address, [value](T old) { return value > old ? value : old; });         \
  }
PYGPU_ATOMIC_MIN_MAX(int)
PYGPU_ATOMIC_MIN_MAX(unsigned int)
PYGPU_ATOMIC_MIN_MAX(long long)
PYGPU_ATOMIC_MIN_MAX(unsigned long long)
#undef PYGPU_ATOMIC_MIN_MAX

static inline float atomicAdd(float* address, float value) {
  return pygpu_host::atomic_update_float<float, unsigned int>(address, [value](float old) { return old + value; });
}
static inline double atomicAdd(double* address, double value) {
  return pygpu_host::atomic_update_float<double, unsigned long long>(address,
                                                                      [value](double old) { return old + value; });
}
static inline float atomicExch(float* address, float value) {
  return pygpu_host::atomic_update_float<float, unsigned int>(address, [value](float) { return value; });
}

// ((old >= limit) ? 0 : old + 1) and (((old == 0) || (old > limit)) ? limit : old - 1), as in CUDA.
static inline unsigned int atomicInc(unsigned int* address, unsigned int limit) {
  return pygpu_host::atomic_update(address, [limit](unsigned int old) { return old >= limit ? 0u : old + 1u; });
}
static inline unsigned int atomicDec(unsigned int* address, unsigned int limit) {
  return pygpu_host::atomic_update(address,
                                   [limit](unsigned int old) { return (old == 0 || old > limit) ? limit : old - 1u; });
}

#define PYGPU_ATOMIC_CAS(T)                                                                                \
  static inline T atomicCAS(T* address, T compare, T value) {                                              \
    __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);       \
    return compare;                                                                                        \
  }
PYGPU_ATOMIC_CAS(int)
PYGPU_ATOMIC_CAS(unsigned int)
PYGPU_ATOMIC_CAS(unsigned long long)
PYGPU_ATOMIC_CAS(unsigned short)
#undef PYGPU_ATOMIC_CAS

// The _block and _system scoped variants: every host thread sees the same memory.
#define PYGPU_ATOMIC_SCOPED(NAME)                                                         \
  template <typename... A>                                                                \
  static inline auto NAME##_block(A... a)->decltype(NAME(a...)) { return NAME(a...); }    \
  template <typename... A>                                                                \
  static inline auto NAME##_system(A... a)->decltype(NAME(a...)) { return NAME(a...); }
PYGPU_ATOMIC_SCOPED(atomicAdd)
PYGPU_ATOMIC_SCOPED(atomicSub)
PYGPU_ATOMIC_SCOPED(atomicExch)
PYGPU_ATOMIC_SCOPED(atomicMin)
PYGPU_ATOMIC_SCOPED(atomicMax)
PYGPU_ATOMIC_SCOPED(atomicInc)
PYGPU_ATOMIC_SCOPED(atomicDec)
PYGPU_ATOMIC_SCOPED(atomicCAS)
PYGPU_ATOMIC_SCOPED(atomicAnd)
PYGPU_ATOMIC_SCOPED(atomicOr)
PYGPU_ATOMIC_SCOPED(atomicXor)
#undef PYGPU_ATOMIC_SCOPED

static inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
