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

// Byte offsets of element i in the first NOPS operands of a strided layout. One axis (the
// common case after merging) needs no division; below 2^32 elements the divisions are 32-bit
// (a 64-bit division is a long software routine on a GPU).
template <int NOPS>
PYGPU_FN void strided_offsets(const pygpu_ew_args& a, long long i, long long (&off)[NOPS]) {
  if (a.ndim == 1) {
    for (int k = 0; k < NOPS; ++k) off[k] = i * a.strides[k][0];
    return;
  }
  for (int k = 0; k < NOPS; ++k) off[k] = 0;
  if (a.n <= 0xffffffffll) {
    unsigned int j = (unsigned int)i;
    PYGPU_NO_UNROLL
    for (int d = a.ndim - 1; d >= 0; --d) {
      const unsigned int extent = (unsigned int)a.shape[d];
      const unsigned int idx = j % extent;
      j /= extent;
      for (int k = 0; k < NOPS; ++k) off[k] += (long long)idx * a.strides[k][d];
    }
    return;
  }
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

// PYGPU_EW_LOOP(i, n) { ... }: the body once for each i in [0, n) that this thread handles.
// for_each_strided<NOPS>(a, body) calls body(off) for the same elements of a strided layout,
// off holding their byte offsets in the first NOPS operands.
#if defined(PYGPU_DEVICE_BUILD)
// A grid-stride loop: neighbouring threads take neighbouring elements (coalesced accesses).
#define PYGPU_EW_LOOP(i, n)                                                                    \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n);     \
       i += (long long)blockDim.x * gridDim.x)

namespace pygpu {

template <int NOPS, class Body>
PYGPU_FN void for_each_strided(const pygpu_ew_args& a, Body body) {
  PYGPU_EW_LOOP(i, a.n) {
    long long off[NOPS];
    strided_offsets<NOPS>(a, i, off);
    body(off);
  }
}

}  // namespace pygpu
#else
// The host runs a block's threads one after another on one core: each thread takes one
// contiguous run of the elements, a loop the compiler vectorises (a grid-stride walk would step
// through memory a grid apart, one element per thread). The runs split [0, n) evenly.
namespace pygpu {

inline long long thread_run_edge(long long n, long long t) {
  const long long threads = (long long)blockDim.x * gridDim.x;
  return n / threads * t + (t < n % threads ? t : n % threads);
}
inline long long thread_run_begin(long long n) {
  return thread_run_edge(n, (long long)blockIdx.x * blockDim.x + threadIdx.x);
}
inline long long thread_run_end(long long n) {
  return thread_run_edge(n, (long long)blockIdx.x * blockDim.x + threadIdx.x + 1);
}

// Walks the run's elements in order, carrying the offsets from one to the next instead of
// dividing for each: a division per axis only for the first.
template <int NOPS, class Body>
inline void for_each_strided(const pygpu_ew_args& a, Body body) {
  long long i = thread_run_begin(a.n);
  const long long end = thread_run_end(a.n);
  long long off[NOPS] = {};
  if (i >= end) return;
  if (a.ndim == 0) {  // one element
    for (; i < end; ++i) body(off);
    return;
  }
  const int last = a.ndim - 1;
  long long idx[PYGPU_EW_MAX_DIMS];
  long long rest = i;
  for (int d = last; d >= 0; --d) {
    idx[d] = rest % a.shape[d];
    rest /= a.shape[d];
    for (int k = 0; k < NOPS; ++k) off[k] += idx[d] * a.strides[k][d];
  }
  long long step[NOPS];
  for (int k = 0; k < NOPS; ++k) step[k] = a.strides[k][last];
  for (;;) {
    const long long row = a.shape[last] - idx[last] < end - i ? a.shape[last] - idx[last] : end - i;
    for (long long j = 0; j < row; ++j) {
      body(off);
      for (int k = 0; k < NOPS; ++k) off[k] += step[k];
    }
    i += row;
    if (i >= end) return;
    // The row is done: back to its start, one step along the next axis that has room.
    for (int k = 0; k < NOPS; ++k) off[k] -= step[k] * a.shape[last];
    idx[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      for (int k = 0; k < NOPS; ++k) off[k] += a.strides[k][d];
      if (++idx[d] < a.shape[d]) break;
      for (int k = 0; k < NOPS; ++k) off[k] -= a.strides[k][d] * a.shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace pygpu

#define PYGPU_EW_LOOP(i, n) \
  for (long long pygpu_end_ = pygpu::thread_run_end(n), i = pygpu::thread_run_begin(n); i < pygpu_end_; ++i)
#endif

namespace pygpu {

#if !defined(PYGPU_DEVICE_BUILD)
// The host's contiguous loops read an input through one of these, chosen once per loop: a loop
// over plain arrays vectorises, where a choice per element between an array and a scalar
// (input::contiguous) keeps all but the smallest loops scalar.
template <class T>
struct array_input {
  const T* p;
  T operator[](long long i) const { return p[i]; }
};
template <class T>
struct scalar_input {
  T value;
  T operator[](long long) const { return value; }
};
template <class T, class F>
inline void with_input(const input<T>& x, F f) {
  if (x.ptr) f(array_input<T>{reinterpret_cast<const T*>(x.ptr)});
  else f(scalar_input<T>{x.value});
}

// Whether Op has a host map(Out* out, const In* in, long long n) for contiguous runs.
template <class Op, class Out, class In, class = void>
struct has_host_map {
  static constexpr bool value = false;
};
template <class Op, class Out, class In>
struct has_host_map<Op, Out, In, decltype(Op::map((Out*)nullptr, (const In*)nullptr, 0ll))> {
  static constexpr bool value = true;
};
#endif

// out = Op::apply(x): Out and In are element types.
template <class Op, class Out, class In>
PYGPU_FN void ew_unary(const pygpu_ew_args& a) {
  const input<In> x(a, 1, 0);
  if (a.contiguous) {
    Out* out = reinterpret_cast<Out*>(a.ptr[0]);
#if !defined(PYGPU_DEVICE_BUILD)
    if constexpr (has_host_map<Op, Out, In>::value) {
      if (x.ptr) {
        const long long lo = thread_run_begin(a.n);
        Op::map(out + lo, reinterpret_cast<const In*>(x.ptr) + lo, thread_run_end(a.n) - lo);
        return;
      }
    }
    with_input(x, [&](auto xs) { PYGPU_EW_LOOP(i, a.n) out[i] = Op::template apply<Out>(xs[i]); });
#else
    PYGPU_EW_LOOP(i, a.n) out[i] = Op::template apply<Out>(x.contiguous(i));
#endif
  } else {
    for_each_strided<2>(a, [&](const long long* off) {
      *at<Out>(a.ptr[0], off[0]) = Op::template apply<Out>(x.strided(off[1]));
    });
  }
}

// out = Op::apply(x, y); y's type In2 is x's but for numpy's mixed loops.
template <class Op, class Out, class In, class In2 = In>
PYGPU_FN void ew_binary(const pygpu_ew_args& a) {
  const input<In> x(a, 1, 0);
  const input<In2> y(a, 2, 1);
  if (a.contiguous) {
    Out* out = reinterpret_cast<Out*>(a.ptr[0]);
#if !defined(PYGPU_DEVICE_BUILD)
    with_input(x, [&](auto xs) {
      with_input(y, [&](auto ys) { PYGPU_EW_LOOP(i, a.n) out[i] = Op::template apply<Out>(xs[i], ys[i]); });
    });
#else
    PYGPU_EW_LOOP(i, a.n) out[i] = Op::template apply<Out>(x.contiguous(i), y.contiguous(i));
#endif
  } else {
    for_each_strided<3>(a, [&](const long long* off) {
      *at<Out>(a.ptr[0], off[0]) = Op::template apply<Out>(x.strided(off[1]), y.strided(off[2]));
    });
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
    for_each_strided<4>(a, [&](const long long* off) {
      *at<Out>(a.ptr[0], off[0]) = Op::template apply<Out>(x.strided(off[1]), y.strided(off[2]), z.strided(off[3]));
    });
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
    for_each_strided<3>(a, [&](const long long* off) {
      Op::apply(x.strided(off[2]), *at<Out0>(a.ptr[0], off[0]), *at<Out1>(a.ptr[1], off[1]));
    });
  }
}

}  // namespace pygpu

// One extern "C" kernel NAME_SUFFIX per instantiation, e.g. add_f64(pygpu_ew_args), unless the
// module being built is a part that leaves SUFFIX out (pygpu_parts.h).
#define PYGPU_EW_KERNEL(NAME, SUFFIX, ...)                                       \
  PYGPU_PART_KEEP(SUFFIX)(                                                       \
      PYGPU_KERNEL void NAME##_##SUFFIX(pygpu_ew_args a) { __VA_ARGS__(a); }    \
      PYGPU_EXPORT(NAME##_##SUFFIX))
