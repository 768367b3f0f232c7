// thrust/complex.h for NVRTC (pygpu.compiler on the cuda backend): CCCL's own declares host
// functions (stream operators, conversions from std::complex) and includes the host's <complex>,
// which NVRTC refuses. Kernels compiled at run time get thrust::complex as libcu++'s
// cuda::std::complex, which has the same interface in device code. Unlike Thrust's, it does not
// mix precisions in one operation (complex<float> * double): convert one side first.
#pragma once
#include <cuda/std/complex>

namespace thrust {
template <class T>
using complex = ::cuda::std::complex<T>;
using ::cuda::std::abs;
using ::cuda::std::acos;
using ::cuda::std::acosh;
using ::cuda::std::arg;
using ::cuda::std::asin;
using ::cuda::std::asinh;
using ::cuda::std::atan;
using ::cuda::std::atanh;
using ::cuda::std::conj;
using ::cuda::std::cos;
using ::cuda::std::cosh;
using ::cuda::std::exp;
using ::cuda::std::log;
using ::cuda::std::log10;
using ::cuda::std::norm;
using ::cuda::std::polar;
using ::cuda::std::pow;
using ::cuda::std::proj;
using ::cuda::std::sin;
using ::cuda::std::sinh;
using ::cuda::std::sqrt;
using ::cuda::std::tan;
using ::cuda::std::tanh;
}  // namespace thrust
