// cuda_fp16.h for the host backend: CUDA's scalar __half (IEEE binary16) and the intrinsics on it
// that kernels use, with CUDA's semantics, so a source written for nvcc/NVRTC (and pygpu's
// generated kernels over float16 arrays, whose C type is __half) builds on the host as well.
//
// As CUDA's: __half converts from the arithmetic types and to float implicitly; +, -, *, / and
// the comparisons take two __half (a __half mixed with a float is ambiguous there as here: convert
// one side); arithmetic rounds once to nearest even (computing in float and rounding back is
// exact for these operations). Not here: __half2 and its paired intrinsics, the rounding-mode
// variants other than _rn (__float2half_rz, ...), and the bfloat16 header.
#pragma once

// C++ linkage even when included inside PyCUDA's `extern "C" { }` wrapping of a source.
extern "C++" {

#include "../../pygpu_types.h"

struct __half_raw {
  unsigned short x;
};

struct __half {
  unsigned short __x;

  __half() = default;
  __half(const __half_raw& raw) : __x(raw.x) {}
  __half(float f) : __x(pygpu::double_to_half_bits((double)f)) {}
  __half(double d) : __x(pygpu::double_to_half_bits(d)) {}
  __half(short v) : __x(pygpu::double_to_half_bits((double)v)) {}
  __half(unsigned short v) : __x(pygpu::double_to_half_bits((double)v)) {}
  __half(int v) : __x(pygpu::double_to_half_bits((double)v)) {}
  __half(unsigned int v) : __x(pygpu::double_to_half_bits((double)v)) {}
  __half(long v) : __x(pygpu::double_to_half_bits((double)v)) {}
  __half(unsigned long v) : __x(pygpu::double_to_half_bits((double)v)) {}
  __half(long long v) : __x(pygpu::double_to_half_bits((double)v)) {}
  __half(unsigned long long v) : __x(pygpu::double_to_half_bits((double)v)) {}

  operator float() const { return pygpu::half_bits_to_float(__x); }
  operator __half_raw() const {
    __half_raw raw;
    raw.x = __x;
    return raw;
  }
};
typedef __half half;

static inline __half __pygpu_half_bits(unsigned short bits) {
  __half_raw raw;
  raw.x = bits;
  return __half(raw);
}

// --- conversions -------------------------------------------------------------------------------
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline __half __double2half(double d) { return __half(d); }
static inline __half __int2half_rn(int v) { return __half(v); }
static inline __half __uint2half_rn(unsigned int v) { return __half(v); }
static inline __half __ll2half_rn(long long v) { return __half(v); }
static inline __half __ull2half_rn(unsigned long long v) { return __half(v); }
static inline int __half2int_rz(__half h) { return (int)(float)h; }
static inline long long __half2ll_rz(__half h) { return (long long)(float)h; }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short bits) { return __pygpu_half_bits(bits); }
static inline __half __short_as_half(short bits) { return __pygpu_half_bits((unsigned short)bits); }

// --- arithmetic --------------------------------------------------------------------------------
static inline __half __hadd(__half a, __half b) { return __half((float)a + (float)b); }
static inline __half __hsub(__half a, __half b) { return __half((float)a - (float)b); }
static inline __half __hmul(__half a, __half b) { return __half((float)a * (float)b); }
static inline __half __hdiv(__half a, __half b) { return __half((float)a / (float)b); }
// One rounding of a*b+c: double holds the product of two halves exactly.
static inline __half __hfma(__half a, __half b, __half c) {
  return __half((double)(float)a * (double)(float)b + (double)(float)c);
}
static inline __half __hneg(__half a) { return __pygpu_half_bits((unsigned short)(a.__x ^ 0x8000u)); }
static inline __half __habs(__half a) { return __pygpu_half_bits((unsigned short)(a.__x & 0x7fffu)); }
static inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
static inline int __hisinf(__half a) { return a.__x == 0x7c00u ? 1 : a.__x == 0xfc00u ? -1 : 0; }
static inline __half __hmax(__half a, __half b) {
  return __hisnan(a) ? b : __hisnan(b) ? a : ((float)a > (float)b ? a : b);
}
static inline __half __hmin(__half a, __half b) {
  return __hisnan(a) ? b : __hisnan(b) ? a : ((float)a < (float)b ? a : b);
}
static inline bool __heq(__half a, __half b) { return (float)a == (float)b; }
// __hne is false when either is NaN (ordered), __hneu and operator!= true (unordered), as CUDA's.
static inline bool __hne(__half a, __half b) { return !__hisnan(a) && !__hisnan(b) && (float)a != (float)b; }
static inline bool __hneu(__half a, __half b) { return (float)a != (float)b; }
static inline bool __hlt(__half a, __half b) { return (float)a < (float)b; }
static inline bool __hle(__half a, __half b) { return (float)a <= (float)b; }
static inline bool __hgt(__half a, __half b) { return (float)a > (float)b; }
static inline bool __hge(__half a, __half b) { return (float)a >= (float)b; }
static inline __half hsqrt(__half a) { return __half(sqrtf((float)a)); }
static inline __half hexp(__half a) { return __half(expf((float)a)); }
static inline __half hlog(__half a) { return __half(logf((float)a)); }
static inline __half hsin(__half a) { return __half(sinf((float)a)); }
static inline __half hcos(__half a) { return __half(cosf((float)a)); }
static inline __half hfloor(__half a) { return __half(floorf((float)a)); }
static inline __half hceil(__half a) { return __half(ceilf((float)a)); }
static inline __half htrunc(__half a) { return __half(truncf((float)a)); }

// --- operators (CUDA's cuda_fp16.hpp has the same set) -----------------------------------------
static inline __half operator+(const __half& a, const __half& b) { return __hadd(a, b); }
static inline __half operator-(const __half& a, const __half& b) { return __hsub(a, b); }
static inline __half operator*(const __half& a, const __half& b) { return __hmul(a, b); }
static inline __half operator/(const __half& a, const __half& b) { return __hdiv(a, b); }
static inline __half& operator+=(__half& a, const __half& b) { return a = __hadd(a, b); }
static inline __half& operator-=(__half& a, const __half& b) { return a = __hsub(a, b); }
static inline __half& operator*=(__half& a, const __half& b) { return a = __hmul(a, b); }
static inline __half& operator/=(__half& a, const __half& b) { return a = __hdiv(a, b); }
static inline __half operator+(const __half& a) { return a; }
static inline __half operator-(const __half& a) { return __hneg(a); }
static inline __half& operator++(__half& a) { return a = __hadd(a, __half(1.0f)); }
static inline __half& operator--(__half& a) { return a = __hsub(a, __half(1.0f)); }
static inline __half operator++(__half& a, int) {
  const __half old = a;
  ++a;
  return old;
}
static inline __half operator--(__half& a, int) {
  const __half old = a;
  --a;
  return old;
}
static inline bool operator==(const __half& a, const __half& b) { return __heq(a, b); }
static inline bool operator!=(const __half& a, const __half& b) { return __hneu(a, b); }
static inline bool operator<(const __half& a, const __half& b) { return __hlt(a, b); }
static inline bool operator<=(const __half& a, const __half& b) { return __hle(a, b); }
static inline bool operator>(const __half& a, const __half& b) { return __hgt(a, b); }
static inline bool operator>=(const __half& a, const __half& b) { return __hge(a, b); }

}  // extern "C++"
