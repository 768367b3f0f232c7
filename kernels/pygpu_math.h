// pygpu_math.h: libm for float and double under one name (exp_(x) is expf for a float, exp for
// a double; on the host, exp, log, log10 and the trigonometric and hyperbolic functions are
// pygpu_vector_math.h's), and the complex exp and log that
// both arith.cu (complex power) and cumath.cu use.
#pragma once

#include "pygpu_types.h"
#include "pygpu_vector_math.h"

namespace pygpu {

#define PYGPU_REAL_FN1(NAME)                               \
  PYGPU_FN float NAME##_(float x) { return ::NAME##f(x); } \
  PYGPU_FN double NAME##_(double x) { return ::NAME(x); }
#define PYGPU_REAL_FN2(NAME)                                          \
  PYGPU_FN float NAME##_(float a, float b) { return ::NAME##f(a, b); } \
  PYGPU_FN double NAME##_(double a, double b) { return ::NAME(a, b); }
#if defined(PYGPU_DEVICE_BUILD)
#define PYGPU_VECTOR_FN1(NAME) PYGPU_REAL_FN1(NAME)
#else
// The host's (pygpu_vector_math.h), which cumath's vector loops use: a result does not depend on
// the layout of the operand.
#define PYGPU_VECTOR_FN1(NAME)                                          \
  PYGPU_FN float NAME##_(float x) { return vector_math::NAME(x); } \
  PYGPU_FN double NAME##_(double x) { return vector_math::NAME(x); }
#endif
PYGPU_VECTOR_FN1(exp)
PYGPU_VECTOR_FN1(log)
PYGPU_VECTOR_FN1(log10)
PYGPU_VECTOR_FN1(sin)
PYGPU_VECTOR_FN1(cos)
PYGPU_VECTOR_FN1(tan)
PYGPU_VECTOR_FN1(asin)
PYGPU_VECTOR_FN1(acos)
PYGPU_VECTOR_FN1(atan)
PYGPU_VECTOR_FN1(sinh)
PYGPU_VECTOR_FN1(cosh)
PYGPU_VECTOR_FN1(tanh)
#undef PYGPU_VECTOR_FN1
#if !defined(PYGPU_DEVICE_BUILD)
// libm's log, for complex_log: complex powers, exp(w log z), multiply the log's error by
// |w log z|, and libm's is correctly rounded nearly always (vector_math's is within 1 ulp).
PYGPU_FN float libm_log_(float x) { return ::logf(x); }
PYGPU_FN double libm_log_(double x) { return ::log(x); }
#endif
PYGPU_REAL_FN1(sqrt)
PYGPU_REAL_FN1(floor)
PYGPU_REAL_FN1(ceil)
PYGPU_REAL_FN1(fabs)
PYGPU_REAL_FN2(fmod)
PYGPU_REAL_FN2(pow)
PYGPU_REAL_FN2(hypot)
PYGPU_REAL_FN2(atan2)
PYGPU_REAL_FN2(copysign)
#undef PYGPU_REAL_FN1
#undef PYGPU_REAL_FN2
PYGPU_FN float frexp_(float a, int* e) { return ::frexpf(a, e); }
PYGPU_FN double frexp_(double a, int* e) { return ::frexp(a, e); }
PYGPU_FN float ldexp_(float a, int e) { return ::ldexpf(a, e); }
PYGPU_FN double ldexp_(double a, int e) { return ::ldexp(a, e); }
PYGPU_FN float modf_(float a, float* i) { return ::modff(a, i); }
PYGPU_FN double modf_(double a, double* i) { return ::modf(a, i); }

template <class R>
PYGPU_FN complex<R> complex_exp(complex<R> z) {
  const R m = exp_(z.re);
  if (z.im == 0) return make_complex(m, z.im);
  return make_complex(m * cos_(z.im), m * sin_(z.im));
}
template <class R>
PYGPU_FN complex<R> complex_log(complex<R> z) {
#if defined(PYGPU_DEVICE_BUILD)
  return make_complex(log_(hypot_(z.re, z.im)), atan2_(z.im, z.re));
#else
  return make_complex(libm_log_(hypot_(z.re, z.im)), atan2_(z.im, z.re));
#endif
}

}  // namespace pygpu
