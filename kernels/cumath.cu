// pycuda.cumath's functions, one kernel per (function, dtype), each taking a pygpu_ew_args
// (pygpu_elementwise.h). float16 computes in float and rounds back, as numpy does. Complex
// functions use the textbook formulas (numpy's are more careful near branch cuts and at
// extreme magnitudes).
#include "pygpu_elementwise.h"
#include "pygpu_math.h"

using namespace pygpu;

namespace {

template <class R>
using cx = complex<R>;

template <class R>
PYGPU_FN cx<R> c_log10(cx<R> z) {
  const R inv_ln10 = R(0.43429448190325182765);
  const cx<R> l = complex_log(z);
  return make_complex(l.re * inv_ln10, l.im * inv_ln10);
}
template <class R>
PYGPU_FN cx<R> c_sqrt(cx<R> z) {
  if (z.re == 0 && z.im == 0) return make_complex(R(0), z.im);
  const R t = sqrt_((fabs_(z.re) + hypot_(z.re, z.im)) * R(0.5));
  if (z.re >= 0) return make_complex(t, z.im / (R(2) * t));
  return make_complex(fabs_(z.im) / (R(2) * t), copysign_(t, z.im));
}
template <class R>
PYGPU_FN cx<R> c_sin(cx<R> z) { return make_complex(sin_(z.re) * cosh_(z.im), cos_(z.re) * sinh_(z.im)); }
template <class R>
PYGPU_FN cx<R> c_cos(cx<R> z) { return make_complex(cos_(z.re) * cosh_(z.im), -(sin_(z.re) * sinh_(z.im))); }
template <class R>
PYGPU_FN cx<R> c_tan(cx<R> z) {
  const R d = cos_(R(2) * z.re) + cosh_(R(2) * z.im);
  return make_complex(sin_(R(2) * z.re) / d, sinh_(R(2) * z.im) / d);
}
template <class R>
PYGPU_FN cx<R> c_sinh(cx<R> z) { return make_complex(sinh_(z.re) * cos_(z.im), cosh_(z.re) * sin_(z.im)); }
template <class R>
PYGPU_FN cx<R> c_cosh(cx<R> z) { return make_complex(cosh_(z.re) * cos_(z.im), sinh_(z.re) * sin_(z.im)); }
template <class R>
PYGPU_FN cx<R> c_tanh(cx<R> z) {
  const R d = cosh_(R(2) * z.re) + cos_(R(2) * z.im);
  return make_complex(sinh_(R(2) * z.re) / d, sin_(R(2) * z.im) / d);
}
// asin z = -i log(iz + sqrt(1 - z^2)), acos z = pi/2 - asin z, atan z = (i/2) log((i + z)/(i - z)).
template <class R>
PYGPU_FN cx<R> c_asin(cx<R> z) {
  const cx<R> one = make_complex(R(1), R(0));
  const cx<R> w = complex_log(make_complex(-z.im, z.re) + c_sqrt(one - z * z));
  return make_complex(w.im, -w.re);
}
template <class R>
PYGPU_FN cx<R> c_acos(cx<R> z) {
  const cx<R> a = c_asin(z);
  return make_complex(R(1.57079632679489661923) - a.re, -a.im);
}
template <class R>
PYGPU_FN cx<R> c_atan(cx<R> z) {
  const cx<R> i = make_complex(R(0), R(1));
  const cx<R> w = complex_log((i + z) / (i - z));
  return make_complex(-w.im * R(0.5), w.re * R(0.5));
}

// On the host, every function here but sqrt and fabs (whose plain loops vectorise) also maps
// contiguous float and double runs (ew_unary calls map), in loops built for the CPU's widest
// vectors (pygpu_vector_math.h).
#if defined(PYGPU_DEVICE_BUILD)
#define PYGPU_HOST_MAP(NAME)
#else
#define PYGPU_HOST_MAP(NAME)                                                                          \
  static void map(float* out, const float* in, long long n) { vector_math::NAME##_map(out, in, n); } \
  static void map(double* out, const double* in, long long n) { vector_math::NAME##_map(out, in, n); }
#endif

// One functor per function: real types through the libm wrapper (half via float), complex
// through c_<name>; MAP is PYGPU_HOST_MAP(NAME) or nothing.
#define PYGPU_UNARY_OP(NAME, COMPLEX, MAP)                                              \
  struct op_##NAME {                                                                    \
    template <class Out, class T>                                                       \
    PYGPU_FN static Out apply(T x) {                                                    \
      if constexpr (is_complex<T>()) return COMPLEX(x);                                 \
      else if constexpr (traits<T>::kind == 'f' && sizeof(T) == 2) return to_half(NAME##_(to_float(x))); \
      else return NAME##_(x);                                                           \
    }                                                                                   \
    MAP                                                                                 \
  };
PYGPU_UNARY_OP(exp, complex_exp, PYGPU_HOST_MAP(exp))
PYGPU_UNARY_OP(log, complex_log, PYGPU_HOST_MAP(log))
PYGPU_UNARY_OP(log10, c_log10, PYGPU_HOST_MAP(log10))
PYGPU_UNARY_OP(sqrt, c_sqrt, )
PYGPU_UNARY_OP(sin, c_sin, PYGPU_HOST_MAP(sin))
PYGPU_UNARY_OP(cos, c_cos, PYGPU_HOST_MAP(cos))
PYGPU_UNARY_OP(tan, c_tan, PYGPU_HOST_MAP(tan))
PYGPU_UNARY_OP(asin, c_asin, PYGPU_HOST_MAP(asin))
PYGPU_UNARY_OP(acos, c_acos, PYGPU_HOST_MAP(acos))
PYGPU_UNARY_OP(atan, c_atan, PYGPU_HOST_MAP(atan))
PYGPU_UNARY_OP(sinh, c_sinh, PYGPU_HOST_MAP(sinh))
PYGPU_UNARY_OP(cosh, c_cosh, PYGPU_HOST_MAP(cosh))
PYGPU_UNARY_OP(tanh, c_tanh, PYGPU_HOST_MAP(tanh))
PYGPU_UNARY_OP(floor, , PYGPU_HOST_MAP(floor))
PYGPU_UNARY_OP(ceil, , PYGPU_HOST_MAP(ceil))
PYGPU_UNARY_OP(fabs, , )
#undef PYGPU_UNARY_OP
#undef PYGPU_HOST_MAP

// C's fmod: the sign of the dividend; integers follow numpy (x fmod 0 is 0).
struct op_fmod {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if constexpr (is_int<T>()) {
      if (b == 0) return T(0);
      if constexpr (is_signed_int<T>()) {
        if (b == T(-1)) return T(0);
      }
      return a % b;
    } else if constexpr (sizeof(T) == 2) {
      return to_half(fmod_(to_float(a), to_float(b)));
    } else {
      return fmod_(a, b);
    }
  }
};
// ldexp(significand, exponent) with the exponent given in the significand's type (PyCUDA).
struct op_ldexp {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T e) {
    if constexpr (sizeof(T) == 2) return to_half(ldexp_(to_float(a), (int)to_float(e)));
    else return ldexp_(a, (int)e);
  }
};
// (significand, exponent), both in the argument's type (PyCUDA's frexp).
struct op_frexp {
  template <class T>
  PYGPU_FN static void apply(T x, T& significand, T& exponent) {
    int e = 0;
    if constexpr (sizeof(T) == 2) {
      significand = to_half(frexp_(to_float(x), &e));
      exponent = to_half((float)e);
    } else {
      significand = frexp_(x, &e);
      exponent = (T)e;
    }
  }
};
// (fractional part, integral part), as PyCUDA's and numpy's modf.
struct op_modf {
  template <class T>
  PYGPU_FN static void apply(T x, T& fractional, T& integral) {
    if constexpr (sizeof(T) == 2) {
      float i = 0;
      fractional = to_half(modf_(to_float(x), &i));
      integral = to_half(i);
    } else {
      T i = 0;
      fractional = modf_(x, &i);
      integral = i;
    }
  }
};

}  // namespace

#define UNARY(NAME, S, T) PYGPU_EW_KERNEL(NAME, S, ew_unary<op_##NAME, T, T>)
#define INEXACT_FNS(S, T)                                                                         \
  UNARY(exp, S, T) UNARY(log, S, T) UNARY(log10, S, T) UNARY(sqrt, S, T) UNARY(sin, S, T)           \
  UNARY(cos, S, T) UNARY(tan, S, T) UNARY(asin, S, T) UNARY(acos, S, T) UNARY(atan, S, T)           \
  UNARY(sinh, S, T) UNARY(cosh, S, T) UNARY(tanh, S, T)
#define FLOAT_FNS(S, T)                                                                           \
  UNARY(floor, S, T) UNARY(ceil, S, T) UNARY(fabs, S, T)                                            \
  PYGPU_EW_KERNEL(ldexp, S, ew_binary<op_ldexp, T, T>)                                               \
  PYGPU_EW_KERNEL(frexp, S, ew_unary2<op_frexp, T, T, T>)                                            \
  PYGPU_EW_KERNEL(modf, S, ew_unary2<op_modf, T, T, T>)
#define FMOD(S, T) PYGPU_EW_KERNEL(fmod, S, ew_binary<op_fmod, T, T>)

PYGPU_FOR_INEXACT_TYPES(INEXACT_FNS)
PYGPU_FOR_FLOAT_TYPES(FLOAT_FNS)
PYGPU_FOR_REAL_TYPES(FMOD)
