// pygpu_vector_math.h: loops the host build of the bundled kernels runs for cumath's exp, log,
// log10, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, floor and ceil on contiguous float
// and double runs (the functions themselves below exp and log), each built for AVX-512 and AVX2 besides
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

// e^x times scale (1, or 1/2 for sinh and cosh: e^x / 2 is finite up to x = 710.47, past the
// 709.78 where e^x overflows), and inf from x = upper on (710 for scale 1, 711 for 1/2).
// Rounding to an integer adds and subtracts kRoundShift; the integer is then the low bits of
// the sum's bits. 2^m is built from (m + bias) << mantissa bits.
inline double exp_scaled(double x, double upper, double scale) {
  // exp(-746) is 0, as for anything beyond. The bounds come through copysign (of a value whose
  // sign is known) rather than as constants: with a constant the compiler folds the clamped
  // cases into branches of their own, and a loop with branches around its table loads is not
  // vectorised.
  const double low = x < -746.0 ? __builtin_copysign(746.0, x) : x;
  const double xc = low > upper ? __builtin_copysign(upper, low) : low;
  const double kd = xc * kThirtyTwoOverLn2 + kRoundShift;
  const double k = kd - kRoundShift;
  const double r = (xc - k * kLn2Over32Hi) - k * kLn2Over32Lo;
  // e^r - 1, degree 6: the truncation is below 4e-18.
  const double p = r + r * r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720)))));
  const unsigned long long j = bits_as<unsigned long long>(kd) & 31;
  const double v = (kExp2Hi[j] + (kExp2Lo[j] + kExp2Hi[j] * p)) * scale;  // exact: a power of two
  // 2^m, m = floor(k / 32), as 2^m1 (m1 = floor(m / 2)) times 2^(m - m1). Subtracting a bit
  // less than half before rounding rounds down: k / 32 and k / 64 lie at most 31/32 and 63/64
  // above an integer. (No conversion to an integer type: baseline x86-64 has no vector one.)
  const unsigned long long m = bits_as<unsigned long long>(k * (1.0 / 32) - 0.484375 + kRoundShift);
  const unsigned long long m1 = bits_as<unsigned long long>(k * (1.0 / 64) - 0.4921875 + kRoundShift);
  return v * bits_as<double>((m1 + 1023) << 52) * bits_as<double>((m - m1 + 1023) << 52);
}

inline double exp(double x) { return exp_scaled(x, 710.0, 1.0); }

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
// x = 2^k (1 + f) (for x positive and finite), and log(x)'s value elsewhere.
struct log_parts {
  double k, f;
};
inline log_parts log_reduce(double x) {
  const bool tiny = x < 0x1p-1022;
  const unsigned long long b = bits_as<unsigned long long>(tiny ? x * 0x1p54 : x);
  const unsigned long long hx = (b >> 32) + (0x3ff00000ull - 0x3fe6a09eull);
  const double m = bits_as<double>((((hx & 0x000fffffull) + 0x3fe6a09eull) << 32) | (b & 0xffffffffull));
  // k from its bits: 2^52 + (k + 1023) has them as its low bits.
  const double k =
      bits_as<double>(0x4330000000000000ull + ((hx >> 20) & 0xfff)) - (0x1p52 + 1023.0) - (tiny ? 54.0 : 0.0);
  return {k, m - 1.0};
}
inline double log_special(double x) { return x == 0.0 ? -__builtin_inf() : (x < 0.0 ? __builtin_nan("") : x); }
// log(1 + f) - (f - hfsq), hfsq = f^2 / 2.
inline double log1p_tail(double f, double hfsq) {
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double w = z * z;
  const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  const double t2 = z * (6.666666666666735130e-01 +
                         w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  return s * (hfsq + t2 + t1);
}

inline double log(double x) {
  const log_parts p = log_reduce(x);
  const double hfsq = 0.5 * p.f * p.f;
  const double r =
      log1p_tail(p.f, hfsq) + p.k * 1.90821492927058770002e-10 - hfsq + p.f + p.k * 6.93147180369123816490e-01;
  return (x > 0.0 && x < __builtin_inf()) ? r : log_special(x);
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

// The functions below follow fdlibm (FreeBSD's msun: e_log10.c, s_atan.c, e_asin.c, e_acos.c,
// k_sin.c, k_cos.c, k_tan.c, e_rem_pio2.c and the float kernels k_sinf.c, k_cosf.c, k_tanf.c,
// whose coefficients these are), with each branch between intervals made a choice between
// values computed for every element. float computes in double and rounds once at the end
// (within 1 ulp; numpy's own float loops are within 1-4); float log10, atan, sinh and tanh have
// shorter forms of their own, each within 0.512 ulp over all 2^32 float inputs (checked
// exhaustively, 2026-11-28). Bounds in ulps (measured against correctly rounded results in
// tests/test_host_vector_math.py): double log10, atan, asin, acos, sin, cos, tan within 1;
// sinh, cosh, tanh within 2.

// |x| from its bits: the compiler knows __builtin_fabs(x) is not negative and then folds exp's
// clamp (a copysign) into a branch, which keeps the loop scalar.
inline double abs_bits(double x) { return bits_as<double>(bits_as<unsigned long long>(x) & 0x7fffffffffffffffull); }
inline double clear_low_word(double x) {
  return bits_as<double>(bits_as<unsigned long long>(x) & 0xffffffff00000000ull);
}

// log10(x) = k log10(2) + log(1 + f) / ln(10), the sum of hi parts exact (e_log10.c).
inline double log10(double x) {
  const log_parts p = log_reduce(x);
  const double hfsq = 0.5 * p.f * p.f;
  const double r = log1p_tail(p.f, hfsq);
  const double hi = clear_low_word(p.f - hfsq);
  const double lo = (p.f - hi) - hfsq + r;
  const double val_hi = hi * 4.34294481878168880939e-01;  // 1/ln(10), 33 bits
  const double y2 = p.k * 3.01029995663611771306e-01;     // log10(2), 40 bits: exact
  const double val_lo = p.k * 3.69423907715893078616e-13 + (lo + hi) * 2.50829467116452752298e-11 +
                        lo * 4.34294481878168880939e-01;
  const double w = y2 + val_hi;
  const double res = (val_lo + ((y2 - w) + val_hi)) + w;
  return (x > 0.0 && x < __builtin_inf()) ? res : log_special(x);
}
// float: x = 2^k (1 + f) as log's, log1p(f) = 2 atanh(s) = 2s + s^3 P(s^2), s = f / (2 + f),
// |s| <= 0.1716 (P minimax, relative error 2^-30), and log10(x) = k log10(2) + log1p(f) / ln(10)
// (1 / ln(10) folded into the coefficients): double's margin needs no hi and lo parts. (A division
// in float with a Newton step in double, or glibc logf's table of 1/c, whose lookups the
// vectoriser emulates without gathers, were slower here.)
inline float log10(float x) {
  const bool tiny = x < 0x1p-126f;
  const unsigned int ix = bits_as<unsigned int>(tiny ? x * 0x1p25f : x) + (0x3f800000u - 0x3f3504f3u);
  const double k = (double)((int)(ix >> 23) - 0x7f) - (tiny ? 25.0 : 0.0);
  const double f = bits_as<float>((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;  // exact
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double y = k * 0x1.34413509f79ffp-2 +
                   s * (0x1.bcb7b1526e50ep-1 +
                        z * (0x1.287a962004d44p-2 + z * (0x1.639311d045723p-3 + z * 0x1.09af605aab52ep-3)));
  const float special = x == 0.0f ? -__builtin_inff() : (x < 0.0f ? __builtin_nanf("") : x);
  return (x > 0.0f && x < __builtin_inff()) ? (float)y : special;
}

// atan(|x|) = atan(c) + atan((|x| - c) / (1 + c |x|)), c = 0, 1/2, 1, 3/2 or inf by interval.
inline double atan(double x) {
  const double a = __builtin_fabs(x);
  const bool i0 = a >= 0.4375, i1 = a >= 0.6875, i2 = a >= 1.1875, i3 = a >= 2.4375;
  // One two-way choice after another: nested choices of constants become branches.
  double num = a, den = 1.0, hi = 0.0, lo = 0.0;
  num = i0 ? 2.0 * a - 1.0 : num;
  den = i0 ? 2.0 + a : den;
  hi = i0 ? 4.63647609000806093515e-01 : hi;
  lo = i0 ? 2.26987774529616870924e-17 : lo;
  num = i1 ? a - 1.0 : num;
  den = i1 ? a + 1.0 : den;
  hi = i1 ? 7.85398163397448278999e-01 : hi;
  lo = i1 ? 3.06161699786838301793e-17 : lo;
  num = i2 ? a - 1.5 : num;
  den = i2 ? 1.0 + 1.5 * a : den;
  hi = i2 ? 9.82793723247329054082e-01 : hi;
  lo = i2 ? 1.39033110312309984516e-17 : lo;
  num = i3 ? -1.0 : num;
  den = i3 ? a : den;
  hi = i3 ? 1.57079632679489655800e+00 : hi;
  lo = i3 ? 6.12323399573676603587e-17 : lo;
  const double t = num / den;
  const double z = t * t;
  const double w = z * z;
  const double s1 = z * (3.33333333333329318027e-01 +
                         w * (1.42857142725034663711e-01 +
                              w * (9.09088713343650656196e-02 +
                                   w * (6.66107313738753120669e-02 +
                                        w * (4.97687799461593236017e-02 + w * 1.62858201153657823623e-02)))));
  const double s2 = w * (-1.99999999998764832476e-01 +
                         w * (-1.11111104054623557880e-01 +
                              w * (-7.69187620504482999495e-02 +
                                   w * (-5.83357013379057348645e-02 + w * -3.65315727442169155270e-02))));
  return __builtin_copysign(hi - ((t * (s1 + s2) - lo) - t), x);
}
// float: three intervals (c = 0, 1 or inf, |t| <= tan(pi/8)) and one polynomial good to 2^-34
// (minimax over |t| <= 7/16) in place of double's five and two, the polynomial by Estrin's scheme
// (Horner's chain of dependent steps, with no fused multiply-adds, bounds the speed).
inline float atan(float xf) {
  const double x = xf;
  const double a = __builtin_fabs(x);
  const bool i1 = a >= 0x1.a827999fcef32p-2, i2 = a >= 0x1.3504f333f9de6p+1;  // tan(pi/8), tan(3pi/8)
  double num = a, den = 1.0, hi = 0.0, lo = 0.0;
  num = i1 ? a - 1.0 : num;
  den = i1 ? a + 1.0 : den;
  hi = i1 ? 7.85398163397448278999e-01 : hi;
  lo = i1 ? 3.06161699786838301793e-17 : lo;
  num = i2 ? -1.0 : num;
  den = i2 ? a : den;
  hi = i2 ? 1.57079632679489655800e+00 : hi;
  lo = i2 ? 6.12323399573676603587e-17 : lo;
  const double t = num / den;
  const double z = t * t;
  const double z2 = z * z;
  const double p = z * (((-0x1.5555545043ec8p-2 + z * 0x1.9998c6a0ac70ap-3) +
                         z2 * (-0x1.2475b8b5d7e4bp-3 + z * 0x1.c3836ff1252afp-4)) +
                        (z2 * z2) * (-0x1.56566c82766dbp-4 + z * 0x1.70d349d1d88adp-5));
  return (float)__builtin_copysign(hi + (lo + (t + t * p)), x);
}

// asin and acos: (asin(sqrt(t)) - sqrt(t)) / sqrt(t) as p(t) / q(t), t = x^2 for |x| < 1/2,
// else (1 - |x|) / 2 (asin(|x|) = pi/2 - 2 asin(sqrt(t))).
inline double asin_ratio(double t) {
  const double p = t * (1.66666666666666657415e-01 +
                        t * (-3.25565818622400915405e-01 +
                             t * (2.01212532134862925881e-01 +
                                  t * (-4.00555345006794114027e-02 +
                                       t * (7.91534994289814532176e-04 + t * 3.47933107596021167570e-05)))));
  const double q = 1.0 + t * (-2.40339491173441421878e+00 +
                              t * (2.02094576023350569471e+00 +
                                   t * (-6.88283971605453293030e-01 + t * 7.70381505559019352791e-02)));
  return p / q;
}
constexpr double kPio2Hi = 1.57079632679489655800e+00;
constexpr double kPio2Lo = 6.12323399573676603587e-17;

inline double asin(double x) {
  const double a = __builtin_fabs(x);
  const bool small = a < 0.5;
  const double t = small ? a * a : (1.0 - a) * 0.5;
  const double r = asin_ratio(t);
  const double s = __builtin_sqrt(t);  // NaN for |x| > 1
  const double near_one = kPio2Hi - (2.0 * (s + s * r) - kPio2Lo);
  // Between 1/2 and 0.975, s in a hi part w and the rest c.
  const double w = clear_low_word(s);
  const double c = (t - w * w) / (s + w);
  const double middle =
      7.85398163397448278999e-01 - ((2.0 * s * r - (kPio2Lo - 2.0 * c)) - (7.85398163397448278999e-01 - 2.0 * w));
  const double res = small ? a + a * r : (a >= 0x1.f3333p-1 ? near_one : middle);
  return __builtin_copysign(res, x);
}
// float: double's margin makes the hi/lo split between 1/2 and 0.975 (a second division) needless.
inline float asin(float xf) {
  const double x = xf;
  const double a = __builtin_fabs(x);
  const bool small = a < 0.5;
  const double t = small ? a * a : (1.0 - a) * 0.5;
  const double r = asin_ratio(t);
  const double s = __builtin_sqrt(t);
  return (float)__builtin_copysign(small ? a + a * r : kPio2Hi - (2.0 * (s + s * r) - kPio2Lo), x);
}

inline double acos(double x) {
  const double a = __builtin_fabs(x);
  const bool small = a < 0.5;
  const double z = small ? x * x : (1.0 - a) * 0.5;
  const double r = asin_ratio(z);
  const double s = __builtin_sqrt(z);  // NaN for |x| > 1
  const double negative = 3.14159265358979311600e+00 - 2.0 * (s + (r * s - kPio2Lo));
  const double df = clear_low_word(s);
  const double c = z == 0.0 ? 0.0 : (z - df * df) / (s + df);  // acos(1) = 0
  const double positive = 2.0 * (df + (r * s + c));
  return small ? kPio2Hi - (x - (kPio2Lo - x * r)) : (x < 0.0 ? negative : positive);
}
inline float acos(float xf) {
  const double x = xf;
  const double a = __builtin_fabs(x);
  const bool small = a < 0.5;
  const double z = small ? x * x : (1.0 - a) * 0.5;
  const double r = asin_ratio(z);
  const double s = __builtin_sqrt(z);
  const double twice = 2.0 * (s + s * r);
  return (float)(small ? kPio2Hi - (x - (kPio2Lo - x * r)) : (x < 0.0 ? 3.14159265358979311600e+00 - twice : twice));
}

// sinh and cosh from e^|x| / 2 (exp_scaled), sinh's below 1 from its Taylor series (e^|x| - e^-|x|
// cancels there); tanh below 1 as sinh / cosh of the series, above as 1 - 2 / (e^2|x| + 1).
inline double sinh_series(double a, double z) {  // z = a^2
  return a + a * z *
                 (1.0 / 6 +
                  z * (1.0 / 120 +
                       z * (1.0 / 5040 +
                            z * (1.0 / 362880 +
                                 z * (1.0 / 39916800 +
                                      z * (1.0 / 6227020800 +
                                           z * (1.0 / 1307674368000 +
                                                z * (1.0 / 355687428096000 + z * (1.0 / 121645100408832000)))))))));
}
inline double sinh(double x) {
  const double a = __builtin_fabs(x);
  const double e = exp_scaled(abs_bits(x), 711.0, 0.5);
  return __builtin_copysign(a < 1.0 ? sinh_series(a, a * a) : e - 0.25 / e, x);
}
// float: e^a for 0 <= a (NaN passes) in double to about 2^-37, from a polynomial and 2^k alone
// (no table: float's range keeps k small).
inline double exp_for_float(double a) {
  const double ac = a > 200.0 ? __builtin_copysign(200.0, a) : a;
  const double kd = ac * 1.44269504088896338700e+00 + kRoundShift;
  const double k = kd - kRoundShift;
  const double r = (ac - k * (kLn2Over32Hi * 32)) - k * (kLn2Over32Lo * 32);
  const double p =
      1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720 +
                 r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880)))))))));
  return p * bits_as<double>((bits_as<unsigned long long>(kd) + 1023) << 52);
}
// float: e^a = 2^k e^r, r = a - k ln 2, |r| <= ln(2) / 2, and e^+-r = E(r^2) +- r O(r^2) (cosh r and
// sinh r, minimax, relative errors below 2^-34), so e^-a comes without a division; below ln(2) / 2
// (k = 0) sinh a = r O(r^2) itself, with no cancellation. ln 2 in one part: k ln 2's error (k <=
// 289) is 2^-44 of e^a at most. Past 200 a holds 200 (inf in float).
inline float sinh(float xf) {
  const double x = xf;
  const double a = abs_bits(x);
  const double ac = a > 200.0 ? __builtin_copysign(200.0, a) : a;
  const double kd = ac * 1.44269504088896338700e+00 + kRoundShift;
  const double k = kd - kRoundShift;
  const double r = ac - k * 0x1.62e42fefa39efp-1;
  const double z = r * r;
  const double even =
      0x1.ffffffffa98d6p-1 + z * (0x1.0000005b19661p-1 + z * (0x1.5554669c5f8cbp-5 + z * 0x1.6da5f60ef34d0p-10));
  const double odd =
      r * (0x1.fffffffff635fp-1 + z * (0x1.5555557e3f857p-3 + z * (0x1.1110a664c8986p-7 + z * 0x1.a17d999c253f6p-13)));
  const unsigned long long kb = bits_as<unsigned long long>(kd);
  const double half_up = bits_as<double>((kb + 1022) << 52);    // 2^k / 2
  const double half_down = bits_as<double>((1022 - kb) << 52);  // 2^-k / 2
  const double res = half_up * (even + odd) - half_down * (even - odd);
  return (float)__builtin_copysign(k == 0.0 ? odd : res, x);
}

inline double cosh(double x) {
  const double e = exp_scaled(abs_bits(x), 711.0, 0.5);
  return e + 0.25 / e;
}
inline float cosh(float x) {
  const double e = exp_for_float(abs_bits((double)x));
  return (float)(0.5 * (e + 1.0 / e));
}

inline double tanh(double x) {
  const double a = __builtin_fabs(x);
  const double z = a * a;
  // Below 1: tanh = s / c for the series s = a + a z S(z), c = 1 + z C(z), written a + a z (S - C) / c
  // so that the rounding errors fall on the smaller term; S - C's coefficients are
  // 1 / (2k + 1)! - 1 / (2k)!.
  const double c =
      1.0 + z * (1.0 / 2 +
                 z * (1.0 / 24 +
                      z * (1.0 / 720 +
                           z * (1.0 / 40320 +
                                z * (1.0 / 3628800 +
                                     z * (1.0 / 479001600 +
                                          z * (1.0 / 87178291200 +
                                               z * (1.0 / 20922789888000 +
                                                    z * (1.0 / 6402373705728000 + z * (1.0 / 2432902008176640000))))))))));
  const double d =
      (1.0 / 6 - 1.0 / 2) +
      z * ((1.0 / 120 - 1.0 / 24) +
           z * ((1.0 / 5040 - 1.0 / 720) +
                z * ((1.0 / 362880 - 1.0 / 40320) +
                     z * ((1.0 / 39916800 - 1.0 / 3628800) +
                          z * ((1.0 / 6227020800 - 1.0 / 479001600) +
                               z * ((1.0 / 1307674368000 - 1.0 / 87178291200) +
                                    z * ((1.0 / 355687428096000 - 1.0 / 20922789888000) +
                                         z * ((1.0 / 121645100408832000 - 1.0 / 6402373705728000) +
                                              z * -(1.0 / 2432902008176640000)))))))));
  const double e = exp(2.0 * abs_bits(x));
  return __builtin_copysign(a < 1.0 ? a + a * z * d / c : 1.0 - 2.0 / (e + 1.0), x);
}
// float: tanh a = m / (m + 2), m = e^2a - 1 = (2^k - 1) + 2^k r Q(r) (2a = k ln 2 + r, Q minimax,
// relative error 2^-32; for k = 0 m is r Q(r), with no cancellation; ln 2 in one part, as sinh's):
// one division, no series beside it. Past 20 a holds 20 (tanh is 1 in float from 9.1 on).
inline float tanh(float xf) {
  const double x = xf;
  const double a = abs_bits(x);
  const double y = 2.0 * (a > 20.0 ? __builtin_copysign(20.0, a) : a);
  const double kd = y * 1.44269504088896338700e+00 + kRoundShift;
  const double k = kd - kRoundShift;
  const double r = y - k * 0x1.62e42fefa39efp-1;
  // Estrin's scheme: Horner's chain of dependent steps (no fused multiply-adds) would bound the speed.
  const double r2 = r * r;
  const double q = ((0x1.000000002254cp+0 + r * 0x1.000000281946ep-1) +
                    r2 * (0x1.555554c5f02f4p-3 + r * 0x1.5554ada4cc7f4p-5)) +
                   (r2 * r2) * ((0x1.1111a68881cf1p-7 + r * 0x1.6d7492a4e280cp-10) + r2 * 0x1.a019e30fa2716p-13);
  const double s = bits_as<double>((bits_as<unsigned long long>(kd) + 1023) << 52);  // 2^k
  const double m = (s - 1.0) + s * (r * q);
  return (float)__builtin_copysign(m / (m + 2.0), x);
}

// sin, cos and tan reduce x to n pi/2 + y, |y| <= pi/4: for |x| <= 2^20 (the range of
// e_rem_pio2.c's Cody-Waite reduction; n pi/2's first part is exact), else, and for inf and
// NaN, they are libm's (NAME_in_range tells which; the loops check a run first).
constexpr double kTwoOverPi = 6.36619772367581382433e-01;
constexpr double kPio2_1 = 1.57079632673412561417e+00;   // 33 bits of pi/2
constexpr double kPio2_1t = 6.07710050650619224932e-11;  // pi/2 - kPio2_1
constexpr double kPio2_2 = 6.07710050630396597660e-11;   // the next 33 bits
constexpr double kPio2_3 = 2.02226624871116645580e-21;   // and the next
constexpr double kPio2_3t = 8.47842766036889956997e-32;  // pi/2 - (kPio2_1 + kPio2_2 + kPio2_3)

inline bool trig_in_range(double x) { return __builtin_fabs(x) <= 0x1p20; }
inline bool trig_in_range(float x) { return __builtin_fabsf(x) <= 0x1p20f; }

// x - n pi/2 = y0 + y1 (double-double: e_rem_pio2.c takes its second and third steps only after
// a cancellation; here every element takes both, so each difference keeps its rounding error).
struct pio2_reduced {
  double y0, y1;
  unsigned long long n;  // n mod 4 in the low bits
};
inline pio2_reduced reduce_pio2(double x) {
  const double nd = x * kTwoOverPi + kRoundShift;
  const double n = nd - kRoundShift;
  const double r = x - n * kPio2_1;  // exact: n < 2^20, and r is small against both
  const double b2 = n * kPio2_2;     // exact, as is b3
  const double a = r - b2;  // Knuth's two-sum: a + e_a = r - b2 exactly, and c + e_c = a - b3
  const double a_b = a - r;
  const double e_a = (r - (a - a_b)) + (-b2 - a_b);
  const double b3 = n * kPio2_3;
  const double c = a - b3;
  const double c_b = c - a;
  const double e_c = (a - (c - c_b)) + (-b3 - c_b);
  const double tail = (e_a + e_c) - n * kPio2_3t;
  const double y0 = c + tail;
  return {y0, (c - y0) + tail, bits_as<unsigned long long>(nd)};
}

// sin(y0 + y1), cos(y0 + y1) and tan(y0 + y1) (odd: -1 / tan) for |y0| <= pi/4 (k_sin.c, k_cos.c,
// k_tan.c).
inline double kernel_sin(double x, double y) {
  const double z = x * x;
  const double w = z * z;
  const double r = 8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04 + z * 2.75573137070700676789e-06) +
                   z * w * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10);
  const double v = z * x;
  return x - ((z * (0.5 * y - v * r) - y) - v * -1.66666666666666324348e-01);
}
inline double kernel_cos(double x, double y) {
  const double z = x * x;
  const double w = z * z;
  const double r = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * 2.48015872894767294178e-05)) +
                   w * w * (-2.75573143513906633035e-07 + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11));
  const double hz = 0.5 * z;
  const double v = 1.0 - hz;
  return v + (((1.0 - v) - hz) + (z * r - x * y));
}
inline double kernel_tan(double x0, double y0, unsigned long long n) {
  // Above 0.6744, tan(pi/4 - x) = (1 - tan x) / (1 + tan x) keeps the polynomial's argument small.
  const bool big = __builtin_fabs(x0) >= 0x1.59428p-1;
  const bool negative = x0 < 0.0;
  const double xa = negative ? -x0 : x0;
  const double ya = negative ? -y0 : y0;
  const double x = big ? (7.85398163397448278999e-01 - xa) + (3.06161699786838301793e-17 - ya) : x0;
  const double y = big ? y0 - y0 : y0;  // 0 (a constant here would become a branch)
  const double z = x * x;
  const double w = z * z;
  const double rr = 1.33333333333201242699e-01 +
                    w * (2.18694882948595424599e-02 +
                         w * (3.59207910759131235356e-03 +
                              w * (5.88041240820264096874e-04 + w * (7.81794442939557092300e-05 + w * -1.85586374855275456654e-05))));
  const double v = z * (5.39682539762260521377e-02 +
                        w * (8.86323982359930005737e-03 +
                             w * (1.45620945432529025516e-03 +
                                  w * (2.46463134818469906812e-04 +
                                       w * (7.14072491382608190305e-05 + w * 2.59073051863633712884e-05)))));
  const double s = z * x;
  const double r = (y + z * (s * (rr + v) + y)) + 3.33333333333334091986e-01 * s;
  const double sum = x + r;
  const double iy = bits_as<double>(0x3ff0000000000000ull | (n << 63));  // 1, or -1 for odd n
  const double reflected_abs = iy - 2.0 * (x - (sum * sum / (sum + iy) - r));
  const double reflected = negative ? -reflected_abs : reflected_abs;
  // -1 / (x + r), to within about half an ulp, from a 32-bit part of each.
  const double zh = clear_low_word(sum);
  const double vl = r - (zh - x);
  const double inv = -1.0 / sum;
  const double th = clear_low_word(inv);
  const double minus_inverse = th + inv * ((1.0 + th * zh) + th * vl);
  return big ? reflected : (iy < 0.0 ? minus_inverse : sum);
}

inline double sin_fast(double x) {
  const pio2_reduced p = reduce_pio2(x);
  const double s = kernel_sin(p.y0, p.y1), c = kernel_cos(p.y0, p.y1);
  const double r = (p.n & 1) ? c : s;
  return x == 0.0 ? x : ((p.n & 2) ? -r : r);  // sin(-0) = -0
}
inline double cos_fast(double x) {
  const pio2_reduced p = reduce_pio2(x);
  const double s = kernel_sin(p.y0, p.y1), c = kernel_cos(p.y0, p.y1);
  const double r = (p.n & 1) ? s : c;
  return ((p.n + 1) & 2) ? -r : r;
}
inline double tan_fast(double x) {
  const pio2_reduced p = reduce_pio2(x);
  return x == 0.0 ? x : kernel_tan(p.y0, p.y1, p.n);
}

// float: x - n pi/2 in one step (x has 24 bits), then k_sinf.c's, k_cosf.c's and k_tanf.c's
// polynomials, good to 2^-37.5, 2^-34.1 and 2^-25.5 relative (the last within 1 ulp of float).
inline double reduce_pio2(float xf, unsigned long long& n) {
  const double x = xf;
  const double nd = x * kTwoOverPi + kRoundShift;
  const double k = nd - kRoundShift;
  n = bits_as<unsigned long long>(nd);
  return (x - k * kPio2_1) - k * kPio2_1t;
}
inline double kernel_sinf(double x) {
  const double z = x * x;
  const double w = z * z;
  const double r = -0x1a00f9e2cae774.0p-65 + z * 0x16cd878c3b46a7.0p-71;
  const double s = z * x;
  return (x + s * (-0x15555554cbac77.0p-55 + z * 0x111110896efbb2.0p-59)) + s * w * r;
}
inline double kernel_cosf(double x) {
  const double z = x * x;
  const double w = z * z;
  const double r = -0x16c087e80f1e27.0p-62 + z * 0x199342e0ee5069.0p-68;
  return ((1.0 + z * -0x1ffffffd0c5e81.0p-54) + w * 0x155553e1053a42.0p-57) + (w * z) * r;
}
inline float sin_fast(float x) {
  unsigned long long n;
  const double y = reduce_pio2(x, n);
  const double r = (n & 1) ? kernel_cosf(y) : kernel_sinf(y);
  return x == 0.0f ? x : (float)((n & 2) ? -r : r);
}
inline float cos_fast(float x) {
  unsigned long long n;
  const double y = reduce_pio2(x, n);
  const double r = (n & 1) ? kernel_sinf(y) : kernel_cosf(y);
  return (float)(((n + 1) & 2) ? -r : r);
}
inline float tan_fast(float x) {
  unsigned long long n;
  const double y = reduce_pio2(x, n);
  const double z = y * y;
  const double w = z * z;
  const double s = z * y;
  const double r = (y + s * (0x15554d3418c99f.0p-54 + z * 0x1112fd38999f72.0p-55)) +
                   (s * w) * ((0x1b54c91d865afe.0p-57 + z * 0x191df3908c33ce.0p-58) +
                              w * (0x185dadfcecf44e.0p-61 + z * 0x1362b9bf971bcd.0p-59));
  return x == 0.0f ? x : (float)((n & 1) ? -1.0 / r : r);
}

#define PYGPU_TRIG(NAME)                                                                    \
  inline bool NAME##_in_range(double x) { return trig_in_range(x); }                        \
  inline bool NAME##_in_range(float x) { return trig_in_range(x); }                         \
  inline double NAME(double x) { return trig_in_range(x) ? NAME##_fast(x) : ::NAME(x); }    \
  inline float NAME(float x) { return trig_in_range(x) ? NAME##_fast(x) : ::NAME##f(x); }
PYGPU_TRIG(sin)
PYGPU_TRIG(cos)
PYGPU_TRIG(tan)
#undef PYGPU_TRIG

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

#define PYGPU_VECTOR_LOOPS_X86(NAME, LOOP)                                                \
  template <class T>                                                                      \
  __attribute__((target("avx2"))) void NAME##_loop_avx2(T* out, const T* in, long long n) { \
    LOOP                                                                                  \
  }                                                                                       \
  template <class T>                                                                      \
  __attribute__((target("avx512f"))) void NAME##_loop_avx512(T* out, const T* in, long long n) { \
    LOOP                                                                                  \
  }
#define PYGPU_VECTOR_MAP_DISPATCH(NAME)       \
  const int level = vector_level();           \
  if (level == 2) return NAME##_loop_avx512(out, in, n); \
  if (level == 1) return NAME##_loop_avx2(out, in, n);
#else
#define PYGPU_VECTOR_LOOPS_X86(NAME, LOOP)
#define PYGPU_VECTOR_MAP_DISPATCH(NAME)
#endif

// NAME##_map(out, in, n): out[i] = NAME(in[i]) for i < n by LOOP (over out, in and n), built for
// the baseline and, on x86-64, for AVX2 and AVX-512 (2, 4 and 8 times the lanes; the results are
// the same bits), picked for the CPU at run time.
#define PYGPU_VECTOR_LOOPS(NAME, LOOP)                                   \
  template <class T>                                                     \
  inline void NAME##_loop(T* out, const T* in, long long n) {            \
    LOOP                                                                 \
  }                                                                      \
  PYGPU_VECTOR_LOOPS_X86(NAME, LOOP)                                     \
  template <class T>                                                     \
  inline void NAME##_map(T* out, const T* in, long long n) {             \
    PYGPU_VECTOR_MAP_DISPATCH(NAME)                                      \
    NAME##_loop(out, in, n);                                             \
  }
#define PYGPU_PLAIN_LOOP(FN) for (long long i = 0; i < n; ++i) out[i] = FN(in[i]);
// For a function whose NAME##_fast holds only where NAME##_in_range: runs of 256 elements all in
// range take the loop of NAME##_fast, which vectorises; a run with one outside takes NAME per
// element (libm's there). The check reads the run before anything is written: out may be in.
#define PYGPU_CHECKED_LOOP(NAME)                                                        \
  for (long long lo = 0; lo < n; lo += 256) {                                          \
    const long long hi = n - lo < 256 ? n : lo + 256;                                  \
    int outside = 0;                                                                   \
    for (long long i = lo; i < hi; ++i) outside |= !NAME##_in_range(in[i]);            \
    if (outside) {                                                                     \
      for (long long i = lo; i < hi; ++i) out[i] = NAME(in[i]);                        \
    } else {                                                                           \
      for (long long i = lo; i < hi; ++i) out[i] = NAME##_fast(in[i]);                 \
    }                                                                                  \
  }
#define PYGPU_VECTOR_MAP(NAME, FN) PYGPU_VECTOR_LOOPS(NAME, PYGPU_PLAIN_LOOP(FN))
#define PYGPU_VECTOR_MAP_CHECKED(NAME) PYGPU_VECTOR_LOOPS(NAME, PYGPU_CHECKED_LOOP(NAME))

PYGPU_VECTOR_MAP(exp, exp)
PYGPU_VECTOR_MAP(log, log)
PYGPU_VECTOR_MAP(log10, log10)
PYGPU_VECTOR_MAP(atan, atan)
PYGPU_VECTOR_MAP(asin, asin)
PYGPU_VECTOR_MAP(acos, acos)
PYGPU_VECTOR_MAP(sinh, sinh)
PYGPU_VECTOR_MAP(cosh, cosh)
PYGPU_VECTOR_MAP(tanh, tanh)
PYGPU_VECTOR_MAP_CHECKED(sin)
PYGPU_VECTOR_MAP_CHECKED(cos)
PYGPU_VECTOR_MAP_CHECKED(tan)
// libm's floor and ceil: one instruction from SSE4.1 on, so the AVX loops vectorise them.
PYGPU_VECTOR_MAP(floor, ::floor)
PYGPU_VECTOR_MAP(ceil, ::ceil)

}  // namespace vector_math
}  // namespace pygpu
#endif
