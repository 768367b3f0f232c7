// pygpu_types.h: the element types of GPUArray for kernel sources, the same on CUDA (NVRTC,
// nvcc), HIP (hipcc) and the host (g++), with numpy's semantics:
//
//   b1 bool   i8 i16 i32 i64 (signed char .. long long)   u8 u16 u32 u64
//   f16 pygpu::half (IEEE binary16; arithmetic in float, rounded back, as numpy does)
//   f32 float  f64 double   c64 pygpu::complex<float>  c128 pygpu::complex<double>
//
// The suffixes are the ones python/pygpu/gpuarray/_dtypes.py uses for kernel names
// (add_f64, cast_i32_f16). The X-macros PYGPU_FOR_*_TYPES(X) call X(suffix, type) for each
// type of a group, so one kernel template is instantiated for every dtype with predictable
// extern "C" names:
//     #define ADD(S, T) PYGPU_EW_BINARY(add, S, T, op_add)
//     PYGPU_FOR_NUMERIC_TYPES(ADD)
//
// Built-in types only (no <cstdint>): NVRTC has no standard headers. Every size here is the
// same on all three compilers (LP64 host, 64-bit device code).
#pragma once

#include "pygpu_kernel.h"

#define PYGPU_FN __device__ __forceinline__

namespace pygpu {

// memcpy through char pointers (which may alias anything): NVRTC has neither <cstring> nor
// __builtin_memcpy, and every compiler turns this into plain loads and stores.
PYGPU_FN void copy_bytes(void* dst, const void* src, unsigned int n) {
  for (unsigned int i = 0; i < n; ++i) static_cast<char*>(dst)[i] = static_cast<const char*>(src)[i];
}

// Reinterprets the bytes of a value as another type of the same size (no aliasing UB).
template <class To, class From>
PYGPU_FN To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To to;
  copy_bytes(&to, &from, sizeof(To));
  return to;
}

// ---------------------------------------------------------------------------------- half

// IEEE binary16 held as its bits: no compiler's native half type is needed, so the same code
// builds everywhere. Conversions round to nearest even, as numpy's do; arithmetic converts to
// float, computes and rounds back (numpy's float16 loops do the same).
struct half {
  unsigned short bits;

  PYGPU_FN static half from_bits(unsigned short b) {
    half h;
    h.bits = b;
    return h;
  }
};

// double -> binary16 with one rounding (round to nearest, ties to even).
PYGPU_FN unsigned short double_to_half_bits(double d) {
  const unsigned long long x = bit_cast<unsigned long long>(d);
  const unsigned short sign = (unsigned short)((x >> 48) & 0x8000u);
  const unsigned long long ax = x & 0x7fffffffffffffffull;
  if (ax >= 0x7ff0000000000000ull) {                      // inf, nan
    if (ax == 0x7ff0000000000000ull) return sign | 0x7c00u;
    return (unsigned short)(sign | 0x7e00u | ((ax >> 42) & 0x1ffu));  // a quiet nan
  }
  const int e = (int)(ax >> 52) - 1023;
  if (e > 15) return sign | 0x7c00u;                      // overflows to inf
  if (e < -25) return sign;                               // below half the smallest subnormal
  const unsigned long long m = (ax & 0xfffffffffffffull) | (1ull << 52);
  // Normal results keep 11 significant bits; subnormal ones count units of 2^-24.
  const int shift = e >= -14 ? 42 : 28 - e;
  unsigned long long q = m >> shift;
  const unsigned long long rem = m & ((1ull << shift) - 1), halfway = 1ull << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) ++q;
  // For normal numbers q holds the implicit bit, which adds one to the biased exponent
  // (e + 14): a carry out of the significand then moves to the next binade, or to inf.
  if (e >= -14) return (unsigned short)(sign | (((unsigned)(e + 14) << 10) + (unsigned)q));
  return (unsigned short)(sign | (unsigned)q);            // q == 0x400 is the smallest normal
}

PYGPU_FN float half_bits_to_float(unsigned short h) {
  const unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
  const unsigned int e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float
    const float f = (float)m * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  const unsigned int bits = e == 0x1fu ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13));
  return bit_cast<float>(bits);
}

PYGPU_FN float to_float(half h) { return half_bits_to_float(h.bits); }
PYGPU_FN half to_half(double d) { return half::from_bits(double_to_half_bits(d)); }
// float -> double is exact, so this is a single rounding too.
PYGPU_FN half to_half(float f) { return to_half((double)f); }

#define PYGPU_HALF_BINARY(OP)                                                         \
  PYGPU_FN half operator OP(half a, half b) { return to_half(to_float(a) OP to_float(b)); }
PYGPU_HALF_BINARY(+)
PYGPU_HALF_BINARY(-)
PYGPU_HALF_BINARY(*)
PYGPU_HALF_BINARY(/)
#undef PYGPU_HALF_BINARY
#define PYGPU_HALF_COMPARE(OP) \
  PYGPU_FN bool operator OP(half a, half b) { return to_float(a) OP to_float(b); }
PYGPU_HALF_COMPARE(==)
PYGPU_HALF_COMPARE(!=)
PYGPU_HALF_COMPARE(<)
PYGPU_HALF_COMPARE(<=)
PYGPU_HALF_COMPARE(>)
PYGPU_HALF_COMPARE(>=)
#undef PYGPU_HALF_COMPARE
PYGPU_FN half operator-(half a) { return half::from_bits((unsigned short)(a.bits ^ 0x8000u)); }

// ------------------------------------------------------------------------------- complex

// numpy's complex64/complex128 layout: real then imaginary, aligned as the real type.
// PyCUDA's constructors: complex<double>(re, im), complex<double>(re), and conversions between
// precisions (implicit both ways, as PyCUDA's). The default constructor stays trivial: the type
// must remain usable in __shared__ arrays (reduction.py, scan.py), which CUDA allows only for
// types without a constructor that does work. So `complex<R> z;` is uninitialized (PyCUDA's is
// 0), while `complex<R>()` and `complex<R> z{}` value-initialize to 0 as PyCUDA's.
template <class R>
struct complex {
  R re, im;

  complex() = default;
  PYGPU_FN complex(R real, R imag = R(0)) : re(real), im(imag) {}
  template <class S>
  PYGPU_FN complex(const complex<S>& other) : re((R)other.re), im((R)other.im) {}
  // std::complex's and PyCUDA's accessors: kernels written for pycuda::complex call z.real().
  PYGPU_FN R real() const { return re; }
  PYGPU_FN R imag() const { return im; }
  PYGPU_FN void real(R value) { re = value; }
  PYGPU_FN void imag(R value) { im = value; }
};
typedef complex<float> complex64;
typedef complex<double> complex128;

template <class R>
PYGPU_FN complex<R> make_complex(R re, R im) {
  complex<R> c;
  c.re = re;
  c.im = im;
  return c;
}
template <class R>
PYGPU_FN complex<R> operator+(complex<R> a, complex<R> b) { return make_complex(a.re + b.re, a.im + b.im); }
template <class R>
PYGPU_FN complex<R> operator-(complex<R> a, complex<R> b) { return make_complex(a.re - b.re, a.im - b.im); }
template <class R>
PYGPU_FN complex<R> operator-(complex<R> a) { return make_complex(-a.re, -a.im); }
template <class R>
PYGPU_FN complex<R> operator*(complex<R> a, complex<R> b) {
  return make_complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
// Smith's algorithm, as numpy divides: no overflow for large denominators.
template <class R>
PYGPU_FN complex<R> operator/(complex<R> a, complex<R> b) {
  const R abs_re = b.re < 0 ? -b.re : b.re, abs_im = b.im < 0 ? -b.im : b.im;
  if (abs_re >= abs_im) {
    if (abs_re == 0 && abs_im == 0) return make_complex(a.re / abs_re, a.im / abs_im);
    const R rat = b.im / b.re, scl = R(1) / (b.re + b.im * rat);
    return make_complex((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
  }
  const R rat = b.re / b.im, scl = R(1) / (b.im + b.re * rat);
  return make_complex((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
template <class R>
PYGPU_FN bool operator==(complex<R> a, complex<R> b) { return a.re == b.re && a.im == b.im; }
template <class R>
PYGPU_FN bool operator!=(complex<R> a, complex<R> b) { return !(a == b); }
// numpy orders complex numbers lexicographically: real parts first, then imaginary.
template <class R>
PYGPU_FN bool operator<(complex<R> a, complex<R> b) { return a.re < b.re || (a.re == b.re && a.im < b.im); }
template <class R>
PYGPU_FN bool operator<=(complex<R> a, complex<R> b) { return a.re < b.re || (a.re == b.re && a.im <= b.im); }
template <class R>
PYGPU_FN bool operator>(complex<R> a, complex<R> b) { return b < a; }
template <class R>
PYGPU_FN bool operator>=(complex<R> a, complex<R> b) { return b <= a; }

// --------------------------------------------------------------------------------- traits

template <class T> struct traits;  // kind: 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex
#define PYGPU_TRAITS(T, KIND, UNSIGNED, REAL, COMPUTE)                       \
  template <> struct traits<T> {                                             \
    static constexpr char kind = KIND;                                       \
    typedef UNSIGNED unsigned_type; /* the same-size unsigned type (ints) */ \
    typedef REAL real_type;         /* the type of abs(), .real, .imag */    \
    typedef COMPUTE compute_type;   /* what arithmetic is done in */         \
  };
PYGPU_TRAITS(bool, 'b', unsigned char, bool, bool)
PYGPU_TRAITS(signed char, 'i', unsigned char, signed char, int)
PYGPU_TRAITS(short, 'i', unsigned short, short, int)
PYGPU_TRAITS(int, 'i', unsigned int, int, int)
PYGPU_TRAITS(long long, 'i', unsigned long long, long long, long long)
PYGPU_TRAITS(unsigned char, 'u', unsigned char, unsigned char, unsigned int)
PYGPU_TRAITS(unsigned short, 'u', unsigned short, unsigned short, unsigned int)
PYGPU_TRAITS(unsigned int, 'u', unsigned int, unsigned int, unsigned int)
PYGPU_TRAITS(unsigned long long, 'u', unsigned long long, unsigned long long, unsigned long long)
PYGPU_TRAITS(half, 'f', unsigned short, half, float)
PYGPU_TRAITS(float, 'f', unsigned int, float, float)
PYGPU_TRAITS(double, 'f', unsigned long long, double, double)
PYGPU_TRAITS(complex64, 'c', unsigned long long, float, complex64)
PYGPU_TRAITS(complex128, 'c', unsigned long long, double, complex128)
#undef PYGPU_TRAITS

template <class T> PYGPU_FN constexpr bool is_int() { return traits<T>::kind == 'i' || traits<T>::kind == 'u'; }
template <class T> PYGPU_FN constexpr bool is_signed_int() { return traits<T>::kind == 'i'; }
template <class T> PYGPU_FN constexpr bool is_float() { return traits<T>::kind == 'f'; }
template <class T> PYGPU_FN constexpr bool is_complex() { return traits<T>::kind == 'c'; }

// ---------------------------------------------------------------------------------- casts

// Every value goes through one of three carriers: long long / unsigned long long for
// integers and bool, double for floats, complex128 for complex. From a carrier to a type is
// numpy's conversion: truncation toward zero for float -> int (out-of-range values are
// undefined in numpy too and differ between CPUs and GPUs), the real part for complex -> real,
// != 0 for anything -> bool.
template <class T> struct cast_impl;

#define PYGPU_INT_CAST(T)                                                                   \
  template <> struct cast_impl<T> {                                                         \
    PYGPU_FN static T from(long long v) { return (T)v; }                                   \
    PYGPU_FN static T from(unsigned long long v) { return (T)v; }                          \
    PYGPU_FN static T from(double v) { return (T)v; }                                      \
    PYGPU_FN static T from(complex128 v) { return (T)v.re; }                               \
  };
PYGPU_INT_CAST(signed char)
PYGPU_INT_CAST(short)
PYGPU_INT_CAST(int)
PYGPU_INT_CAST(long long)
PYGPU_INT_CAST(unsigned char)
PYGPU_INT_CAST(unsigned short)
PYGPU_INT_CAST(unsigned int)
PYGPU_INT_CAST(unsigned long long)
#undef PYGPU_INT_CAST

template <> struct cast_impl<bool> {
  PYGPU_FN static bool from(long long v) { return v != 0; }
  PYGPU_FN static bool from(unsigned long long v) { return v != 0; }
  PYGPU_FN static bool from(double v) { return v != 0; }
  PYGPU_FN static bool from(complex128 v) { return v.re != 0 || v.im != 0; }
};
template <> struct cast_impl<half> {
  PYGPU_FN static half from(long long v) { return to_half((double)v); }
  PYGPU_FN static half from(unsigned long long v) { return to_half((double)v); }
  PYGPU_FN static half from(double v) { return to_half(v); }
  PYGPU_FN static half from(complex128 v) { return to_half(v.re); }
};
template <> struct cast_impl<float> {
  PYGPU_FN static float from(long long v) { return (float)v; }
  PYGPU_FN static float from(unsigned long long v) { return (float)v; }
  PYGPU_FN static float from(double v) { return (float)v; }
  PYGPU_FN static float from(complex128 v) { return (float)v.re; }
};
template <> struct cast_impl<double> {
  PYGPU_FN static double from(long long v) { return (double)v; }
  PYGPU_FN static double from(unsigned long long v) { return (double)v; }
  PYGPU_FN static double from(double v) { return v; }
  PYGPU_FN static double from(complex128 v) { return v.re; }
};
template <class R> struct cast_impl<complex<R> > {
  PYGPU_FN static complex<R> from(long long v) { return make_complex((R)v, R(0)); }
  PYGPU_FN static complex<R> from(unsigned long long v) { return make_complex((R)v, R(0)); }
  PYGPU_FN static complex<R> from(double v) { return make_complex((R)v, R(0)); }
  PYGPU_FN static complex<R> from(complex128 v) { return make_complex((R)v.re, (R)v.im); }
};

// The carrier of a value: the widest type of its kind, which holds it exactly (float32 -> double
// is exact, int64 -> long long is exact), so a cast rounds at most once.
PYGPU_FN long long carry(bool v) { return v ? 1 : 0; }
PYGPU_FN long long carry(signed char v) { return v; }
PYGPU_FN long long carry(short v) { return v; }
PYGPU_FN long long carry(int v) { return v; }
PYGPU_FN long long carry(long long v) { return v; }
PYGPU_FN unsigned long long carry(unsigned char v) { return v; }
PYGPU_FN unsigned long long carry(unsigned short v) { return v; }
PYGPU_FN unsigned long long carry(unsigned int v) { return v; }
PYGPU_FN unsigned long long carry(unsigned long long v) { return v; }
PYGPU_FN double carry(half v) { return (double)to_float(v); }
PYGPU_FN double carry(float v) { return v; }
PYGPU_FN double carry(double v) { return v; }
template <class R>
PYGPU_FN complex128 carry(complex<R> v) { return make_complex((double)v.re, (double)v.im); }

// numpy's astype for one value.
template <class To, class From>
PYGPU_FN To cast(From v) { return cast_impl<To>::from(carry(v)); }

}  // namespace pygpu

// --------------------------------------------------------------------------- dtype lists

// X(suffix, C++ type) for each dtype of a group.
#define PYGPU_FOR_BOOL_TYPES(X) X(b1, bool)
#define PYGPU_FOR_SIGNED_TYPES(X) X(i8, signed char) X(i16, short) X(i32, int) X(i64, long long)
#define PYGPU_FOR_UNSIGNED_TYPES(X) \
  X(u8, unsigned char) X(u16, unsigned short) X(u32, unsigned int) X(u64, unsigned long long)
#define PYGPU_FOR_INT_TYPES(X) PYGPU_FOR_SIGNED_TYPES(X) PYGPU_FOR_UNSIGNED_TYPES(X)
#define PYGPU_FOR_FLOAT_TYPES(X) X(f16, pygpu::half) X(f32, float) X(f64, double)
#define PYGPU_FOR_COMPLEX_TYPES(X) X(c64, pygpu::complex64) X(c128, pygpu::complex128)
#define PYGPU_FOR_INEXACT_TYPES(X) PYGPU_FOR_FLOAT_TYPES(X) PYGPU_FOR_COMPLEX_TYPES(X)
#define PYGPU_FOR_REAL_TYPES(X) PYGPU_FOR_INT_TYPES(X) PYGPU_FOR_FLOAT_TYPES(X)
#define PYGPU_FOR_NUMERIC_TYPES(X) PYGPU_FOR_REAL_TYPES(X) PYGPU_FOR_COMPLEX_TYPES(X)
#define PYGPU_FOR_ALL_TYPES(X) PYGPU_FOR_BOOL_TYPES(X) PYGPU_FOR_NUMERIC_TYPES(X)

// X(suffix1, type1, suffix2, type2) for every pair of dtypes (casts): 14 x 14.
#define PYGPU_PAIR_WITH_ALL(S1, T1) PYGPU_FOR_ALL_TYPES_2(S1, T1)
#define PYGPU_FOR_ALL_TYPES_2(S1, T1)                                                                      \
  PYGPU_PAIR_X(S1, T1, b1, bool) PYGPU_PAIR_X(S1, T1, i8, signed char) PYGPU_PAIR_X(S1, T1, i16, short)   \
  PYGPU_PAIR_X(S1, T1, i32, int) PYGPU_PAIR_X(S1, T1, i64, long long)                                     \
  PYGPU_PAIR_X(S1, T1, u8, unsigned char) PYGPU_PAIR_X(S1, T1, u16, unsigned short)                       \
  PYGPU_PAIR_X(S1, T1, u32, unsigned int) PYGPU_PAIR_X(S1, T1, u64, unsigned long long)                   \
  PYGPU_PAIR_X(S1, T1, f16, pygpu::half) PYGPU_PAIR_X(S1, T1, f32, float) PYGPU_PAIR_X(S1, T1, f64, double) \
  PYGPU_PAIR_X(S1, T1, c64, pygpu::complex64) PYGPU_PAIR_X(S1, T1, c128, pygpu::complex128)
// Define PYGPU_PAIR_X(S1, T1, S2, T2) first, then: PYGPU_FOR_ALL_PAIRS
#define PYGPU_FOR_ALL_PAIRS PYGPU_FOR_ALL_TYPES(PYGPU_PAIR_WITH_ALL)
