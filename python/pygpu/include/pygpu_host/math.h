// pygpu_host/math.h: the CUDA math API beyond what <math.h> has (whose float overloads libstdc++
// puts in the global namespace, as CUDA does): intrinsics, integer bit functions, min/max,
// reinterpretations and conversions. The fast intrinsics (__expf, __fdividef, ...) are the exact
// functions here: more precise than a GPU's, so compare across backends with a tolerance.
// Part of pygpu_kernel.h.
#pragma once

#include <cmath>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define PYGPU_MATH static inline __attribute__((always_inline))

// glibc 2.41 and later declare C23's rsqrt, sinpi and cospi (with _GNU_SOURCE, which g++ sets):
// CUDA's functions of those names are pygpu's own here, renamed after the C library's headers,
// so that kernel sources build against every glibc and behave alike on all of them.
#define rsqrtf pygpu_host_rsqrtf
#define rsqrt pygpu_host_rsqrt
#define sinpif pygpu_host_sinpif
#define cospif pygpu_host_cospif
#define sinpi pygpu_host_sinpi
#define cospi pygpu_host_cospi

// --- min / max for every arithmetic pair CUDA overloads -------------------------------------
#define PYGPU_MIN_MAX(R, A, B)                                  \
  PYGPU_MATH R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \
  PYGPU_MATH R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
PYGPU_MIN_MAX(int, int, int)
PYGPU_MIN_MAX(unsigned int, unsigned int, unsigned int)
PYGPU_MIN_MAX(unsigned int, int, unsigned int)
PYGPU_MIN_MAX(unsigned int, unsigned int, int)
PYGPU_MIN_MAX(long, long, long)
PYGPU_MIN_MAX(unsigned long, unsigned long, unsigned long)
PYGPU_MIN_MAX(long long, long long, long long)
PYGPU_MIN_MAX(unsigned long long, unsigned long long, unsigned long long)
PYGPU_MIN_MAX(unsigned long long, long long, unsigned long long)
PYGPU_MIN_MAX(unsigned long long, unsigned long long, long long)
#undef PYGPU_MIN_MAX
PYGPU_MATH unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
PYGPU_MATH unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
PYGPU_MATH long long llmin(long long a, long long b) { return a < b ? a : b; }
PYGPU_MATH long long llmax(long long a, long long b) { return a > b ? a : b; }
PYGPU_MATH unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
PYGPU_MATH unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
PYGPU_MATH float min(float a, float b) { return fminf(a, b); }
PYGPU_MATH float max(float a, float b) { return fmaxf(a, b); }
PYGPU_MATH double min(double a, double b) { return fmin(a, b); }
PYGPU_MATH double max(double a, double b) { return fmax(a, b); }
PYGPU_MATH double min(float a, double b) { return fmin(a, b); }
PYGPU_MATH double max(float a, double b) { return fmax(a, b); }
PYGPU_MATH double min(double a, float b) { return fmin(a, b); }
PYGPU_MATH double max(double a, float b) { return fmax(a, b); }

// --- float and double functions CUDA adds -------------------------------------------------
PYGPU_MATH float rsqrtf(float x) { return 1.0f / sqrtf(x); }
PYGPU_MATH double rsqrt(double x) { return 1.0 / sqrt(x); }
PYGPU_MATH float rcbrtf(float x) { return 1.0f / cbrtf(x); }
PYGPU_MATH double rcbrt(double x) { return 1.0 / cbrt(x); }
PYGPU_MATH float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
PYGPU_MATH float cospif(float x) { return cosf(3.14159265358979323846f * x); }
PYGPU_MATH double sinpi(double x) { return sin(3.14159265358979323846 * x); }
PYGPU_MATH double cospi(double x) { return cos(3.14159265358979323846 * x); }
PYGPU_MATH void sincospif(float x, float* s, float* c) { sincosf(3.14159265358979323846f * x, s, c); }
PYGPU_MATH void sincospi(double x, double* s, double* c) { sincos(3.14159265358979323846 * x, s, c); }
PYGPU_MATH float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
PYGPU_MATH double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
PYGPU_MATH float fdividef(float a, float b) { return a / b; }
PYGPU_MATH float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }  // NaN -> 0

// glibc's math.h declares __expf, __sinf, ... as its own aliases of expf, sinf, ...: the same
// functions, so CUDA's names are spelt as macros instead of redefined.
#define __expf expf
#define __exp10f exp10f
#define __logf logf
#define __log2f log2f
#define __log10f log10f
#define __sinf sinf
#define __cosf cosf
#define __tanf tanf
#define __sincosf sincosf
#define __powf powf
PYGPU_MATH float __fdividef(float a, float b) { return a / b; }

// Explicitly rounded arithmetic: the host rounds to nearest, and does not contract (the build
// passes -ffp-contract=off), so _rn is exact; the other roundings are approximated by _rn.
#define PYGPU_ROUNDED(SUFFIX)                                                              \
  PYGPU_MATH float __fadd_##SUFFIX(float a, float b) { return a + b; }                     \
  PYGPU_MATH float __fsub_##SUFFIX(float a, float b) { return a - b; }                     \
  PYGPU_MATH float __fmul_##SUFFIX(float a, float b) { return a * b; }                     \
  PYGPU_MATH float __fdiv_##SUFFIX(float a, float b) { return a / b; }                     \
  PYGPU_MATH float __frcp_##SUFFIX(float a) { return 1.0f / a; }                           \
  PYGPU_MATH float __fsqrt_##SUFFIX(float a) { return sqrtf(a); }                          \
  PYGPU_MATH float __fmaf_##SUFFIX(float a, float b, float c) { return fmaf(a, b, c); }    \
  PYGPU_MATH double __dadd_##SUFFIX(double a, double b) { return a + b; }                  \
  PYGPU_MATH double __dsub_##SUFFIX(double a, double b) { return a - b; }                  \
  PYGPU_MATH double __dmul_##SUFFIX(double a, double b) { return a * b; }                  \
  PYGPU_MATH double __ddiv_##SUFFIX(double a, double b) { return a / b; }                  \
  PYGPU_MATH double __drcp_##SUFFIX(double a) { return 1.0 / a; }                          \
  PYGPU_MATH double __dsqrt_##SUFFIX(double a) { return sqrt(a); }                         \
  PYGPU_MATH double __fma_##SUFFIX(double a, double b, double c) { return fma(a, b, c); }
PYGPU_ROUNDED(rn)
PYGPU_ROUNDED(rz)
PYGPU_ROUNDED(ru)
PYGPU_ROUNDED(rd)
#undef PYGPU_ROUNDED

// --- reinterpretation and conversion ------------------------------------------------------
PYGPU_MATH float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
PYGPU_MATH float __uint_as_float(unsigned int x) { float f; memcpy(&f, &x, 4); return f; }
PYGPU_MATH int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
PYGPU_MATH unsigned int __float_as_uint(float x) { unsigned int i; memcpy(&i, &x, 4); return i; }
PYGPU_MATH double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
PYGPU_MATH long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
PYGPU_MATH int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
PYGPU_MATH int __double2loint(double x) { return (int)__double_as_longlong(x); }
PYGPU_MATH double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo));
}
PYGPU_MATH int __float2int_rn(float x) { return (int)nearbyintf(x); }
PYGPU_MATH int __float2int_rz(float x) { return (int)x; }
PYGPU_MATH int __float2int_rd(float x) { return (int)floorf(x); }
PYGPU_MATH int __float2int_ru(float x) { return (int)ceilf(x); }
PYGPU_MATH unsigned int __float2uint_rn(float x) { return (unsigned int)nearbyintf(x); }
PYGPU_MATH unsigned int __float2uint_rz(float x) { return (unsigned int)x; }
PYGPU_MATH long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
PYGPU_MATH long long __float2ll_rz(float x) { return (long long)x; }
PYGPU_MATH int __double2int_rn(double x) { return (int)nearbyint(x); }
PYGPU_MATH int __double2int_rz(double x) { return (int)x; }
PYGPU_MATH long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
PYGPU_MATH float __double2float_rn(double x) { return (float)x; }
PYGPU_MATH float __int2float_rn(int x) { return (float)x; }
PYGPU_MATH float __uint2float_rn(unsigned int x) { return (float)x; }
PYGPU_MATH double __int2double_rn(int x) { return (double)x; }
PYGPU_MATH float __ll2float_rn(long long x) { return (float)x; }
PYGPU_MATH double __ll2double_rn(long long x) { return (double)x; }

// --- integer intrinsics ----------------------------------------------------------------------
PYGPU_MATH int __popc(unsigned int x) { return __builtin_popcount(x); }
PYGPU_MATH int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
PYGPU_MATH int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
PYGPU_MATH int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
PYGPU_MATH int __ffs(int x) { return __builtin_ffs(x); }
PYGPU_MATH int __ffsll(long long x) { return __builtin_ffsll(x); }
PYGPU_MATH unsigned int __brev(unsigned int x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
PYGPU_MATH unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned int)x) << 32) | __brev((unsigned int)(x >> 32));
}
PYGPU_MATH unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  const unsigned long long bytes = ((unsigned long long)y << 32) | x;
  unsigned int result = 0;
  for (int i = 0; i < 4; ++i) result |= (unsigned int)((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return result;
}
// 24-bit multiplies take the low 24 bits of each operand (sign-extended for __mul24).
PYGPU_MATH int __mul24(int a, int b) {
  return (int)((long long)((int)((unsigned int)a << 8) >> 8) * (long long)((int)((unsigned int)b << 8) >> 8));
}
PYGPU_MATH unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xffffffu) * (b & 0xffffffu); }
PYGPU_MATH int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
PYGPU_MATH unsigned int __umulhi(unsigned int a, unsigned int b) {
  return (unsigned int)(((unsigned long long)a * b) >> 32);
}
PYGPU_MATH long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
PYGPU_MATH unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
PYGPU_MATH unsigned int __sad(int x, int y, unsigned int z) { return z + (unsigned int)(x > y ? x - y : y - x); }
PYGPU_MATH unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return z + (x > y ? x - y : y - x); }
PYGPU_MATH int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
PYGPU_MATH int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
PYGPU_MATH unsigned int __uhadd(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a + b) >> 1); }
PYGPU_MATH unsigned int __urhadd(unsigned int a, unsigned int b) {
  return (unsigned int)(((unsigned long long)a + b + 1) >> 1);
}
PYGPU_MATH unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
  return (unsigned int)((((unsigned long long)hi << 32 | lo) << (shift & 31)) >> 32);
}
PYGPU_MATH unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
  return (unsigned int)(((unsigned long long)hi << 32 | lo) >> (shift & 31));
}

// --- loads with cache hints: plain loads on the host ------------------------------------
template <typename T>
PYGPU_MATH T __ldg(const T* p) { return *p; }
template <typename T>
PYGPU_MATH T __ldcg(const T* p) { return *p; }
template <typename T>
PYGPU_MATH T __ldca(const T* p) { return *p; }
template <typename T>
PYGPU_MATH T __ldcs(const T* p) { return *p; }
template <typename T>
PYGPU_MATH T __ldlu(const T* p) { return *p; }
template <typename T>
PYGPU_MATH T __ldcv(const T* p) { return *p; }

// --- time ------------------------------------------------------------------------------
// Nanoseconds of a monotonic clock stand in for the SM's cycle counter.
PYGPU_MATH long long clock64() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
PYGPU_MATH void __nanosleep(unsigned int ns) {
  struct timespec t = {0, (long)ns};
  nanosleep(&t, nullptr);
}
#undef PYGPU_MATH
