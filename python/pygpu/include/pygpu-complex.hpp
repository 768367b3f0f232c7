// pygpu-complex.hpp: PyCUDA's pycuda-complex.hpp under pygpu's name, for kernel sources that
// `#include <pygpu-complex.hpp>` (SourceModule and ElementwiseKernel find it on cuda, hip and
// host). The type is pygpu_types.h's pygpu::complex<R> (numpy's layout: re, im); this adds
// what PyCUDA's header offers around it: real/imag/conj/norm/abs/arg, exp/log/sqrt/pow,
// sin/cos/sinh/cosh/tanh, polar, operators mixing complex and real values, and compound
// assignment. PyCUDA's constructors (complex<R>(re, im), complex<R>(re), between precisions)
// are pygpu_types.h's; pycuda-complex.hpp puts all of this under namespace pycuda too.
#pragma once

// C++ linkage: SourceModule wraps the source, #include lines and all, in extern "C" { }.
extern "C++" {

#include "pygpu_types.h"

namespace pygpu {
namespace complex_libm {
// libm by type, under names of their own (pygpu_math.h's exp_ & co. may be included too).
#define PYGPU_CX_FN1(NAME)                                  \
  PYGPU_FN float NAME##_(float x) { return ::NAME##f(x); } \
  PYGPU_FN double NAME##_(double x) { return ::NAME(x); }
#define PYGPU_CX_FN2(NAME)                                             \
  PYGPU_FN float NAME##_(float a, float b) { return ::NAME##f(a, b); } \
  PYGPU_FN double NAME##_(double a, double b) { return ::NAME(a, b); }
PYGPU_CX_FN1(exp)
PYGPU_CX_FN1(log)
PYGPU_CX_FN1(sqrt)
PYGPU_CX_FN1(sin)
PYGPU_CX_FN1(cos)
PYGPU_CX_FN1(sinh)
PYGPU_CX_FN1(cosh)
PYGPU_CX_FN2(hypot)
PYGPU_CX_FN2(atan2)
PYGPU_CX_FN2(pow)
#undef PYGPU_CX_FN1
#undef PYGPU_CX_FN2
// The real type as a non-deduced parameter: complex<float> * 2.0 converts the 2.0.
template <class R> struct same { typedef R type; };
}  // namespace complex_libm

#define PYGPU_CX_REAL typename complex_libm::same<R>::type

template <class R> PYGPU_FN R real(complex<R> z) { return z.re; }
template <class R> PYGPU_FN R imag(complex<R> z) { return z.im; }
template <class R> PYGPU_FN complex<R> conj(complex<R> z) { return make_complex(z.re, -z.im); }
template <class R> PYGPU_FN R norm(complex<R> z) { return z.re * z.re + z.im * z.im; }
template <class R> PYGPU_FN R abs(complex<R> z) { return complex_libm::hypot_(z.re, z.im); }
template <class R> PYGPU_FN R arg(complex<R> z) { return complex_libm::atan2_(z.im, z.re); }
template <class R> PYGPU_FN complex<R> polar(R rho, PYGPU_CX_REAL theta = 0) {
  return make_complex(rho * complex_libm::cos_(theta), rho * complex_libm::sin_(theta));
}

template <class R> PYGPU_FN complex<R> operator+(complex<R> z) { return z; }
template <class R> PYGPU_FN complex<R> operator+(complex<R> a, PYGPU_CX_REAL b) { return make_complex(a.re + b, a.im); }
template <class R> PYGPU_FN complex<R> operator+(PYGPU_CX_REAL a, complex<R> b) { return make_complex(a + b.re, b.im); }
template <class R> PYGPU_FN complex<R> operator-(complex<R> a, PYGPU_CX_REAL b) { return make_complex(a.re - b, a.im); }
template <class R> PYGPU_FN complex<R> operator-(PYGPU_CX_REAL a, complex<R> b) { return make_complex(a - b.re, -b.im); }
template <class R> PYGPU_FN complex<R> operator*(complex<R> a, PYGPU_CX_REAL b) { return make_complex(a.re * b, a.im * b); }
template <class R> PYGPU_FN complex<R> operator*(PYGPU_CX_REAL a, complex<R> b) { return make_complex(a * b.re, a * b.im); }
template <class R> PYGPU_FN complex<R> operator/(complex<R> a, PYGPU_CX_REAL b) { return make_complex(a.re / b, a.im / b); }
template <class R> PYGPU_FN complex<R> operator/(PYGPU_CX_REAL a, complex<R> b) { return make_complex(a, R(0)) / b; }
template <class R> PYGPU_FN bool operator==(complex<R> a, PYGPU_CX_REAL b) { return a.re == b && a.im == 0; }
template <class R> PYGPU_FN bool operator!=(complex<R> a, PYGPU_CX_REAL b) { return !(a == b); }

// Compound assignment, as non-member operators (complex<R> has no members but re and im).
#define PYGPU_CX_ASSIGN(OP)                                                                            \
  template <class R> PYGPU_FN complex<R>& operator OP##=(complex<R>& a, complex<R> b) { return a = a OP b; } \
  template <class R> PYGPU_FN complex<R>& operator OP##=(complex<R>& a, PYGPU_CX_REAL b) { return a = a OP b; }
PYGPU_CX_ASSIGN(+)
PYGPU_CX_ASSIGN(-)
PYGPU_CX_ASSIGN(*)
PYGPU_CX_ASSIGN(/)
#undef PYGPU_CX_ASSIGN

template <class R> PYGPU_FN complex<R> exp(complex<R> z) {
  const R m = complex_libm::exp_(z.re);
  return z.im == 0 ? make_complex(m, z.im) : make_complex(m * complex_libm::cos_(z.im), m * complex_libm::sin_(z.im));
}
template <class R> PYGPU_FN complex<R> log(complex<R> z) { return make_complex(complex_libm::log_(abs(z)), arg(z)); }
template <class R> PYGPU_FN complex<R> sqrt(complex<R> z) {
  // The principal root, without cancellation: from |z| and the sign of the imaginary part.
  if (z.re == 0 && z.im == 0) return make_complex(R(0), z.im);
  const R t = complex_libm::sqrt_((abs(z) + (z.re < 0 ? -z.re : z.re)) / 2);
  if (z.re >= 0) return make_complex(t, z.im / (2 * t));
  return make_complex((z.im < 0 ? -z.im : z.im) / (2 * t), z.im < 0 ? -t : t);
}
template <class R> PYGPU_FN complex<R> pow(complex<R> z, complex<R> w) {
  if (w.re == 0 && w.im == 0) return make_complex(R(1), R(0));
  if (z.re == 0 && z.im == 0) return make_complex(R(0), R(0));
  return exp(w * log(z));
}
template <class R> PYGPU_FN complex<R> pow(complex<R> z, PYGPU_CX_REAL x) { return pow(z, make_complex(x, R(0))); }
template <class R> PYGPU_FN complex<R> pow(PYGPU_CX_REAL x, complex<R> w) { return pow(make_complex(x, R(0)), w); }
// An integer power by repeated squaring: exact for small powers, as PyCUDA's header.
template <class R> PYGPU_FN complex<R> pow(complex<R> z, int n) {
  complex<R> result = make_complex(R(1), R(0));
  complex<R> base = n < 0 ? make_complex(R(1), R(0)) / z : z;
  for (unsigned int k = n < 0 ? 0u - (unsigned int)n : (unsigned int)n; k; k >>= 1) {
    if (k & 1u) result = result * base;
    base = base * base;
  }
  return result;
}
template <class R> PYGPU_FN complex<R> sin(complex<R> z) {
  return make_complex(complex_libm::sin_(z.re) * complex_libm::cosh_(z.im),
                      complex_libm::cos_(z.re) * complex_libm::sinh_(z.im));
}
template <class R> PYGPU_FN complex<R> cos(complex<R> z) {
  return make_complex(complex_libm::cos_(z.re) * complex_libm::cosh_(z.im),
                      -complex_libm::sin_(z.re) * complex_libm::sinh_(z.im));
}
template <class R> PYGPU_FN complex<R> sinh(complex<R> z) {
  return make_complex(complex_libm::sinh_(z.re) * complex_libm::cos_(z.im),
                      complex_libm::cosh_(z.re) * complex_libm::sin_(z.im));
}
template <class R> PYGPU_FN complex<R> cosh(complex<R> z) {
  return make_complex(complex_libm::cosh_(z.re) * complex_libm::cos_(z.im),
                      complex_libm::sinh_(z.re) * complex_libm::sin_(z.im));
}
template <class R> PYGPU_FN complex<R> tanh(complex<R> z) { return sinh(z) / cosh(z); }

#undef PYGPU_CX_REAL
}  // namespace pygpu

}  // extern "C++"
