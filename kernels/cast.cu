// GPUArray's conversions and copies, one kernel per dtype pair or element size, each taking a
// pygpu_ew_args (pygpu_elementwise.h):
//   cast_<from>_<to>   numpy's astype for every pair of dtypes (196 kernels)
//   copy_x<bytes>      out = x for 1, 2, 4, 8 and 16-byte elements: device-to-device copies of any
//                      layout (reverse, transposes, strided views) and, with the input address
//                      0, fill with the scalar in slot 0 (a kernel, so capturable in a graph)
#include "pygpu_elementwise.h"

using namespace pygpu;

namespace {

struct op_cast {
  template <class Out, class In>
  PYGPU_FN static Out apply(In x) { return cast<Out>(x); }
};
struct op_copy {
  template <class Out, class In>
  PYGPU_FN static Out apply(In x) { return x; }
};
struct bytes16 {
  unsigned long long lo, hi;
};

}  // namespace

// All 196 pairs, the 14 same-type ones included (they are copies, but keeping them costs less
// than the table that would leave them out).
#define PYGPU_PAIR_X(S1, T1, S2, T2) PYGPU_EW_KERNEL(cast_##S1, S2, ew_unary<op_cast, T2, T1>)
PYGPU_FOR_ALL_PAIRS

#define COPY(BYTES, T) PYGPU_EW_KERNEL(copy, x##BYTES, ew_unary<op_copy, T, T>)
COPY(1, unsigned char)
COPY(2, unsigned short)
COPY(4, unsigned int)
COPY(8, unsigned long long)
COPY(16, bytes16)
