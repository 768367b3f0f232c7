// pygpu_vector_math.h: loops the host build of the bundled kernels runs for cumath's exp, log,
// floor and ceil on contiguous float and double runs, each built for AVX-512 and AVX2 besides
// the baseline and picked at run time by vector_level (which reduce.cu's float folds use too;
// numpy has loops of that kind of its own: libm's calls kept cumath.exp at several times numpy's
// time), and the host's exp and log themselves, written so that the compiler vectorises a loop
// of them (no branches, calls or errno, no conversions between double and 64-bit integers,
// which baseline x86-64 lacks, a table lookup it turns into gathers).
//
// exp: e^x = 2^k * e^r, k = round(x / ln 2), r = x - k ln 2 (in two parts), e^r a polynomial,
// 2^k built from its bits in two factors, so that subnormal results round once. Arguments
// beyond the finite range are clamped first (exp still overflows to inf or underflows to 0); NaN
// passes through every step. float: in float arithmetic, within 1 ulp of the exact result
// (libm's expf: 0.5; CUDA's expf: 2). double: k counts 32nds, 2^(j/32) from a table in two
// parts, within 0.52 ulp (libm's exp: 0.5).
#pragma once

#include "pygpu_types.h"

#if !defined(PYGPU_DEVICE_BUILD) && defined(__x86_64__)
#include <cpuid.h>
#endif

#if !defined(PYGPU_DEVICE_BUILD)
namespace pygpu {
namespace vector_math {

// 2^(j/32) rounded to double (hi), and the rest (lo).
alignas(64) inline constexpr double kExp2Hi[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0};
alignas(64) inline constexpr double kExp2Lo[32] = {
    0x0.0p+0,               0x1.d73e2a475b465p-55,  0x1.8a62e4adc610bp-54,  -0x1.6c51039449b3ap-54,
    -0x1.19041b9d78a76p-55, 0x1.e016e00a2643cp-54,  0x1.9b07eb6c70573p-54,  0x1.612e8afad1255p-55,
    0x1.6f46ad23182e4p-55,  -0x1.63aeabf42eae2p-54, 0x1.ada0911f09ebcp-55,  0x1.89b7a04ef80d0p-59,
    0x1.d4397afec42e2p-56,  -0x1.07abe1db13cadp-55, 0x1.6324c054647adp-54,  -0x1.383c17e40b497p-54,
    -0x1.bdd3413b26456p-54, -0x1.16e4786887a99p-55, -0x1.41577ee04992fp-55, -0x1.d4c1dd41532d8p-54,
    0x1.6e9f156864b27p-54,  -0x1.75fc781b57ebcp-57, 0x1.c7c46b071f2bep-56,  -0x1.d2f6edb8d41e1p-54,
    0x1.7a1cd345dcc81p-54,  -0x1.5584f7e54ac3bp-56, 0x1.11065895048ddp-55,  0x1.503cbd1e949dbp-56,
    0x1.2ed02d75b3707p-55,  -0x1.1a5cd4f184b5cp-54, -0x1.e9c23179c2893p-54, 0x1.9d3e12dd8a18bp-54};
constexpr double kThirtyTwoOverLn2 = 46.16624130844683;
constexpr double kLn2Over32Hi = 0x1.62e42fefa0000p-6;  // 38 bits: k * hi is exact for |k| < 2^15
constexpr double kLn2Over32Lo = 5.145609244655338e-14;
constexpr double kRoundShift = 0x1.8p52;  // adding it rounds to an integer, held in the low bits

// pygpu::bit_cast copies bytes one by one (for NVRTC), which the vectoriser does not see through.
template <class To, class From>
inline To bits_as(From from) {
  static_assert(sizeof(To) == sizeof(From), "bits_as between types of different sizes");
  To to;
  __builtin_memcpy(&to, &from, sizeof to);
  return to;
}

// Rounding to an integer adds and subtracts kRoundShift; the integer is then the low bits of
// the sum's bits. 2^m is built from (m + bias) << mantissa bits.
inline double exp(double x) {
  // exp(710) is inf and exp(-746) is 0, as for anything beyond. The bounds come through
  // copysign (of a value whose sign is known) rather than as constants: with a constant the
  // compiler folds the clamped cases into branches of their own, and a loop with branches
  // around its table loads is not vectorised.
  const double low = x < -746.0 ? __builtin_copysign(746.0, x) : x;
  const double xc = low > 710.0 ? __builtin_copysign(710.0, low) : low;
  const double kd = xc * kThirtyTwoOverLn2 + kRoundShift;
  const double k = kd - kRoundShift;
  const double r = (xc - k * kLn2Over32Hi) - k * kLn2Over32Lo;
  // e^r - 1, degree 6: the truncation is below 4e-18.
  const double p = r + r * r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720)))));
  const unsigned long long j = bits_as<unsigned long long>(kd) & 31;
  const double v = kExp2Hi[j] + (kExp2Lo[j] + kExp2Hi[j] * p);
  // 2^m, m = floor(k / 32), as 2^m1 (m1 = floor(m / 2)) times 2^(m - m1). Subtracting a bit
  // less than half before rounding rounds down: k / 32 and k / 64 lie at most 31/32 and 63/64
  // above an integer. (No conversion to an integer type: baseline x86-64 has no vector one.)
  const unsigned long long m = bits_as<unsigned long long>(k * (1.0 / 32) - 0.484375 + kRoundShift);
  const unsigned long long m1 = bits_as<unsigned long long>(k * (1.0 / 64) - 0.4921875 + kRoundShift);
  return v * bits_as<double>((m1 + 1023) << 52) * bits_as<double>((m - m1 + 1023) << 52);
}

inline float exp(float x) {
  // expf(89) is inf and expf(-104) is 0.
  const float low = x < -104.0f ? __builtin_copysignf(104.0f, x) : x;
  const float xc = low > 89.0f ? __builtin_copysignf(89.0f, low) : low;
  const float kf = xc * 1.44269504088896341f + 0x1.8p23f;
  const float k = kf - 0x1.8p23f;
  // ln 2 in two parts: 0.693359375 has 9 bits, so k times it is exact.
  const float r = (xc - k * 0.693359375f) - k * -2.12194440e-4f;
  // e^r: Cephes' expf polynomial.
  const float q = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
                   1.6666665459e-1f) * r + 5.0000001201e-1f;
  const float p = q * (r * r) + r + 1.0f;
  // k in [-150, 128] from the low bits of kf (0x4b400000 is the bits of 0x1.8p23f), as
  // 2^k1 times 2^(k - k1), k1 = floor(k / 2).
  const int ki = (int)(bits_as<unsigned int>(kf) - 0x4b400000u);
  const int k1 = ki >> 1;
  return p * bits_as<float>((unsigned int)(k1 + 127) << 23) * bits_as<float>((unsigned int)(ki - k1 + 127) << 23);
}

// Natural logarithms: x = 2^k m, m in [sqrt(2)/2, sqrt(2)) (taken from the bits: the offset
// added to them moves the binade's cut to sqrt(2)/2), f = m - 1, s = f / (2 + f) and
// log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), R fdlibm's minimax polynomial (its e_log.c and
// e_logf.c, whose coefficients these are); subnormals scaled by a power of two first. Within
// 1 ulp (measured: double 0.81, float 1; pygpu_math.h's complex_log keeps libm's); log(0) = -inf,
// log(x < 0) = NaN, log(inf) = inf.
inline double log(double x) {
  const bool tiny = x < 0x1p-1022;
  const unsigned long long b = bits_as<unsigned long long>(tiny ? x * 0x1p54 : x);
  const unsigned long long hx = (b >> 32) + (0x3ff00000ull - 0x3fe6a09eull);
  const double m = bits_as<double>((((hx & 0x000fffffull) + 0x3fe6a09eull) << 32) | (b & 0xffffffffull));
  // k from its bits: 2^52 + (k + 1023) has them as its low bits.
  const double k =
      bits_as<double>(0x4330000000000000ull + ((hx >> 20) & 0xfff)) - (0x1p52 + 1023.0) - (tiny ? 54.0 : 0.0);
  const double f = m - 1.0;
  const double hfsq = 0.5 * f * f;
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double w = z * z;
  const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  const double t2 = z * (6.666666666666735130e-01 +
                         w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  const double r = s * (hfsq + t2 + t1) + k * 1.90821492927058770002e-10 - hfsq + f + k * 6.93147180369123816490e-01;
  const double special = x == 0.0 ? -__builtin_inf() : (x < 0.0 ? __builtin_nan("") : x);
  return (x > 0.0 && x < __builtin_inf()) ? r : special;
}

inline float log(float x) {
  const bool tiny = x < 0x1p-126f;
  const unsigned int ix = bits_as<unsigned int>(tiny ? x * 0x1p25f : x) + (0x3f800000u - 0x3f3504f3u);
  const float k = (float)((int)(ix >> 23) - 0x7f) - (tiny ? 25.0f : 0.0f);
  const float m = bits_as<float>((ix & 0x007fffffu) + 0x3f3504f3u);
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float w = z * z;
  const float t1 = w * (0xccce13.0p-25f + w * 0xf89e26.0p-26f);
  const float t2 = z * (0xaaaaaa.0p-24f + w * 0x91e9ee.0p-25f);
  const float hfsq = 0.5f * f * f;
  const float r = s * (hfsq + t2 + t1) + k * 9.0580006145e-06f - hfsq + f + k * 6.9313812256e-01f;
  const float special = x == 0.0f ? -__builtin_inff() : (x < 0.0f ? __builtin_nanf("") : x);
  return (x > 0.0f && x < __builtin_inff()) ? r : special;
}

#if defined(__x86_64__)
// 2: AVX-512F, 1: AVX2, 0: neither, as the CPU has them and the OS saves their registers.
inline int detect_vector_level() {
  unsigned int a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
  unsigned int xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6) != 0x6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;  // XMM, YMM state
  if ((b & bit_AVX512F) && (xcr0_lo & 0xe6) == 0xe6) return 2;  // and opmask, ZMM state
  return (b & bit_AVX2) ? 1 : 0;
}

// Detected once per library; a race only stores the same value twice.
PYGPU_INLINE_VARIABLE int vector_level_cache = -1;
inline int vector_level() {
  int level = __atomic_load_n(&vector_level_cache, __ATOMIC_RELAXED);
  if (level < 0) {
    level = detect_vector_level();
    __atomic_store_n(&vector_level_cache, level, __ATOMIC_RELAXED);
  }
  return level;
}

#define PYGPU_VECTOR_MAP_X86(NAME, FN)                                                    \
  template <class T>                                                                      \
  __attribute__((target("avx2"))) void NAME##_loop_avx2(T* out, const T* in, long long n) { \
    for (long long i = 0; i < n; ++i) out[i] = FN(in[i]);                                 \
  }                                                                                       \
  template <class T>                                                                      \
  __attribute__((target("avx512f"))) void NAME##_loop_avx512(T* out, const T* in, long long n) { \
    for (long long i = 0; i < n; ++i) out[i] = FN(in[i]);                                 \
  }
#define PYGPU_VECTOR_MAP_DISPATCH(NAME)       \
  const int level = vector_level();           \
  if (level == 2) return NAME##_loop_avx512(out, in, n); \
  if (level == 1) return NAME##_loop_avx2(out, in, n);
#else
#define PYGPU_VECTOR_MAP_X86(NAME, FN)
#define PYGPU_VECTOR_MAP_DISPATCH(NAME)
#endif

// NAME##_map(out, in, n): out[i] = FN(in[i]) for i < n, a loop built for the baseline and, on
// x86-64, for AVX2 and AVX-512 (2, 4 and 8 times the lanes; the results are the same bits),
// picked for the CPU at run time.
#define PYGPU_VECTOR_MAP(NAME, FN)                                       \
  template <class T>                                                     \
  inline void NAME##_loop(T* out, const T* in, long long n) {            \
    for (long long i = 0; i < n; ++i) out[i] = FN(in[i]);                \
  }                                                                      \
  PYGPU_VECTOR_MAP_X86(NAME, FN)                                         \
  template <class T>                                                     \
  inline void NAME##_map(T* out, const T* in, long long n) {             \
    PYGPU_VECTOR_MAP_DISPATCH(NAME)                                      \
    NAME##_loop(out, in, n);                                             \
  }

PYGPU_VECTOR_MAP(exp, exp)
PYGPU_VECTOR_MAP(log, log)
// libm's floor and ceil: one instruction from SSE4.1 on, so the AVX loops vectorise them.
PYGPU_VECTOR_MAP(floor, ::floor)
PYGPU_VECTOR_MAP(ceil, ::ceil)

}  // namespace vector_math
}  // namespace pygpu
#endif
