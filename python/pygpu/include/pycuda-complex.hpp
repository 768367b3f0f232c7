// pycuda-complex.hpp: PyCUDA's header name, for kernel sources written for PyCUDA
// (`#include <pycuda-complex.hpp>`, `pycuda::complex<double> z(x, y)`): pygpu-complex.hpp with
// its names also under namespace pycuda.
#pragma once

#include "pygpu-complex.hpp"

extern "C++" {
namespace pycuda {
using namespace pygpu;
}  // namespace pycuda
}  // extern "C++"
