// pygpu_elementwise.h: the argument block and the loops of GPUArray's elementwise kernels.
//
// Every elementwise kernel takes one parameter, a pygpu_ew_args passed by value: operand
// addresses, up to three scalar inputs as raw bytes, and the layout (shape and byte strides
// of every operand, after python/pygpu/gpuarray/_elementwise.py has merged the axes it can).
// One kernel serves every layout: a contiguous fast path indexes by the element number, the
// strided path turns it into byte offsets. python/pygpu/gpuarray/_elementwise.py packs the
// same layout (416 bytes): keep the two in step.
#pragma once

#include "pygpu_parts.h"
#include "pygpu_types.h"

#define PYGPU_EW_MAX_DIMS 8
#define PYGPU_EW_MAX_OPERANDS 4

struct pygpu_ew_args {
  // Operand addresses: outputs first, then inputs. An input address of 0 means "the scalar
  // in the matching slot": input k (counted among the inputs) reads scalar[k].
  unsigned long long ptr[PYGPU_EW_MAX_OPERANDS];
  // Scalar inputs in the kernel's input type, as little-endian bytes (complex128 needs 16).
  unsigned long long scalar[3][2];
  long long n;       // elements
  int ndim;          // axes of shape/strides in use (the last one varies fastest)
  int contiguous;    // nonzero: every array operand is C-contiguous and strides are unused
  long long shape[PYGPU_EW_MAX_DIMS];
  long long strides[PYGPU_EW_MAX_OPERANDS][PYGPU_EW_MAX_DIMS];  // bytes
};

// Unrolling the axis loop would multiply every kernel's code for little gain (one axis
// after merging is the common strided case).
#if defined(PYGPU_DEVICE_BUILD)
#define PYGPU_NO_UNROLL _Pragma("unroll 1")
#else
#define PYGPU_NO_UNROLL
#endif

namespace pygpu {

// Scalar slot k as a T.
template <class T>
PYGPU_FN T scalar_arg(const pygpu_ew_args& a, int k) {
  T v;
  copy_bytes(&v, &a.scalar[k][0], sizeof(T));
  return v;
}

// Byte offsets of element i in the first NOPS operands of a strided layout.
template <int NOPS>
PYGPU_FN void strided_offsets(const pygpu_ew_args& a, long long i, long long (&off)[NOPS]) {
  for (int k = 0; k < NOPS; ++k) off[k] = 0;
  PYGPU_NO_UNROLL
  for (int d = a.ndim - 1; d >= 0; --d) {
    const long long extent = a.shape[d];
    const long long idx = i % extent;
    i /= extent;
    for (int k = 0; k < NOPS; ++k) off[k] += idx * a.strides[k][d];
  }
}

template <class T>
PYGPU_FN T* at(unsigned long long base, long long byte_offset) {
  return reinterpret_cast<T*>(reinterpret_cast<char*>(base) + byte_offset);
}

// Input k of an operation: element i of an array, or the scalar.
template <class T>
struct input {
  unsigned long long ptr;
  T value;
  PYGPU_FN input(const pygpu_ew_args& a, int operand, int slot)
      : ptr(a.ptr[operand]), value(scalar_arg<T>(a, slot)) {}
  PYGPU_FN T contiguous(long long i) const { return ptr ? reinterpret_cast<const T*>(ptr)[i] : value; }
  PYGPU_FN T strided(long long off) const { return ptr ? *at<const T>(ptr, off) : value; }
};

}  // namespace pygpu

#define PYGPU_EW_LOOP(i, n)                                                                    \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n);     \
       i += (long long)blockDim.x * gridDim.x)

namespace pygpu {

// out = Op::apply(x): Out and In are element types.
template <class Op, class Out, class In>
PYGPU_FN void ew_unary(const pygpu_ew_args& a) {
  const input<In> x(a, 1, 0);
  if (a.contiguous) {
    Out* out = reinterpret_cast<Out*>(a.ptr[0]);
    PYGPU_EW_LOOP(i, a.n) out[i] = Op::template apply<Out>(x.contiguous(i));
  } else {
    PYGPU_EW_LOOP(i, a.n) {
      long long off[2];
      strided_offsets<2>(a, i, off);
      *at<Out>(a.ptr[0], off[0]) = Op::template apply<Out>(x.strided(off[1]));
    }
  }
}

// out = Op::apply(x, y); y's type In2 is x's but for numpy's mixed loops.
template <class Op, class Out, class In, class In2 = In>
PYGPU_FN void ew_binary(const pygpu_ew_args& a) {
  const input<In> x(a, 1, 0);
  const input<In2> y(a, 2, 1);
  if (a.contiguous) {
    Out* out = reinterpret_cast<Out*>(a.ptr[0]);
    PYGPU_EW_LOOP(i, a.n) out[i] = Op::template apply<Out>(x.contiguous(i), y.contiguous(i));
  } else {
    PYGPU_EW_LOOP(i, a.n) {
      long long off[3];
      strided_offsets<3>(a, i, off);
      *at<Out>(a.ptr[0], off[0]) = Op::template apply<Out>(x.strided(off[1]), y.strided(off[2]));
    }
  }
}

// out = Op::apply(x, y, z); X may differ from Y and Z (where's condition).
template <class Op, class Out, class X, class YZ>
PYGPU_FN void ew_ternary(const pygpu_ew_args& a) {
  const input<X> x(a, 1, 0);
  const input<YZ> y(a, 2, 1), z(a, 3, 2);
  if (a.contiguous) {
    Out* out = reinterpret_cast<Out*>(a.ptr[0]);
    PYGPU_EW_LOOP(i, a.n) out[i] = Op::template apply<Out>(x.contiguous(i), y.contiguous(i), z.contiguous(i));
  } else {
    PYGPU_EW_LOOP(i, a.n) {
      long long off[4];
      strided_offsets<4>(a, i, off);
      *at<Out>(a.ptr[0], off[0]) = Op::template apply<Out>(x.strided(off[1]), y.strided(off[2]), z.strided(off[3]));
    }
  }
}

// (out0, out1) = Op::apply(x): two outputs (frexp, modf).
template <class Op, class Out0, class Out1, class In>
PYGPU_FN void ew_unary2(const pygpu_ew_args& a) {
  const input<In> x(a, 2, 0);
  if (a.contiguous) {
    Out0* o0 = reinterpret_cast<Out0*>(a.ptr[0]);
    Out1* o1 = reinterpret_cast<Out1*>(a.ptr[1]);
    PYGPU_EW_LOOP(i, a.n) Op::apply(x.contiguous(i), o0[i], o1[i]);
  } else {
    PYGPU_EW_LOOP(i, a.n) {
      long long off[3];
      strided_offsets<3>(a, i, off);
      Op::apply(x.strided(off[2]), *at<Out0>(a.ptr[0], off[0]), *at<Out1>(a.ptr[1], off[1]));
    }
  }
}

}  // namespace pygpu

// One extern "C" kernel NAME_SUFFIX per instantiation, e.g. add_f64(pygpu_ew_args), unless the
// module being built is a part that leaves SUFFIX out (pygpu_parts.h).
#define PYGPU_EW_KERNEL(NAME, SUFFIX, ...)                                       \
  PYGPU_PART_KEEP(SUFFIX)(                                                       \
      PYGPU_KERNEL void NAME##_##SUFFIX(pygpu_ew_args a) { __VA_ARGS__(a); }    \
      PYGPU_EXPORT(NAME##_##SUFFIX))
