// Kernels for pygpu.gpuarray's non-elementwise functions: arange, take / put (multi_take,
// multi_put, multi_take_put) and the bounds check of index arrays (check_indices) that take / put
// and the subset reductions run before they read an index. Copies move elements as unsigned integers of their size (1, 2, 4, 8
// or 16 bytes), so one kernel serves every dtype of that size. (Copies of any layout are
// cast.cu's copy_x<bytes>.)
#include "pygpu_kernel.h"

#define PYGPU_GRID_STRIDE(i, n)                                                                \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \
       i += (long long)blockDim.x * gridDim.x)

namespace pygpu_array {

struct Bytes16 {
  unsigned long long lo, hi;
};

// The i-th entry of an index array of element type kind: 0 int32, 1 uint32, 2 int64, 3 uint64.
__device__ __forceinline__ long long index_at(const void* indices, int kind, long long i) {
  switch (kind) {
    case 0: return static_cast<const int*>(indices)[i];
    case 1: return static_cast<const unsigned int*>(indices)[i];
    case 2: return static_cast<const long long*>(indices)[i];
    default: return static_cast<long long>(static_cast<const unsigned long long*>(indices)[i]);
  }
}

// out[dest(i)] = src[src(i) + src_offset] for i < n, where dest(i) = dest_indices[i] (or i when
// NULL) and src(i) = src_indices[i] (or i); a negative position counts from the end, as numpy's.
// The Python side has checked every index with check_indices first; a position still outside
// its array (indices rewritten meanwhile by another stream) is skipped rather than followed, so
// no index ever reaches memory outside out or src.
template <typename T>
__device__ __forceinline__ void take_put(T* out, const T* src, const void* dest_indices, const void* src_indices,
                                         int index_kind, long long n, long long src_offset, long long dest_size,
                                         long long src_size) {
  PYGPU_GRID_STRIDE(i, n) {
    long long d = dest_indices ? index_at(dest_indices, index_kind, i) : i;
    // Unsigned sum: an offset past a huge index wraps instead of being undefined behaviour.
    long long s = (long long)((unsigned long long)(src_indices ? index_at(src_indices, index_kind, i) : i) +
                              (unsigned long long)src_offset);
    if (d < 0) d += dest_size;
    if (s < 0) s += src_size;
    if (d < 0 || d >= dest_size || s < 0 || s >= src_size) continue;
    out[d] = src[s];
  }
}

// *first_bad = the smallest i < n whose index lies outside [lo, hi) (an unsigned index above
// 2^63 - 1 always does); *first_bad is left alone when every index is inside. Reads only
// indices[0 .. n).
__device__ __forceinline__ void check_indices(const void* indices, int index_kind, long long n, long long lo,
                                              long long hi, unsigned long long* first_bad) {
  PYGPU_GRID_STRIDE(i, n) {
    bool bad;
    if (index_kind == 3) {
      const unsigned long long u = static_cast<const unsigned long long*>(indices)[i];
      bad = u > 9223372036854775807ull || (long long)u < lo || (long long)u >= hi;
    } else {
      const long long v = index_at(indices, index_kind, i);
      bad = v < lo || v >= hi;
    }
    if (bad) atomicMin(first_bad, (unsigned long long)i);
  }
}

// The product rounded on its own: numpy computes first + i * delta in two roundings, and a
// GPU compiler would otherwise fuse them into one multiply-add (1 ulp apart from numpy).
template <typename T>
__device__ __forceinline__ T product_rn(T a, T b) { return a * b; }
template <>
__device__ __forceinline__ float product_rn<float>(float a, float b) { return __fmul_rn(a, b); }
template <>
__device__ __forceinline__ double product_rn<double>(double a, double b) { return __dmul_rn(a, b); }

// out[i] = first for i = 0, second for i = 1, first + i * (second - first) after: numpy's fill.
template <typename T>
__device__ __forceinline__ void arange(T* out, long long n, T first, T second) {
  const T delta = second - first;
  PYGPU_GRID_STRIDE(i, n) out[i] = i == 0 ? first : i == 1 ? second : T(first + product_rn(T(i), delta));
}

}  // namespace pygpu_array

#define PYGPU_TAKE_PUT(NAME, T)                                                                            \
  PYGPU_KERNEL void NAME(T* out, const T* src, const void* dest_indices, const void* src_indices, int index_kind, \
                         long long n, long long src_offset, long long dest_size, long long src_size) {     \
    pygpu_array::take_put<T>(out, src, dest_indices, src_indices, index_kind, n, src_offset, dest_size,    \
                             src_size);                                                                    \
  }
#define PYGPU_ARANGE(NAME, T) \
  PYGPU_KERNEL void NAME(T* out, long long n, T first, T second) { pygpu_array::arange<T>(out, n, first, second); }

PYGPU_KERNEL void check_indices(const void* indices, int index_kind, long long n, long long lo, long long hi,
                                unsigned long long* first_bad) {
  pygpu_array::check_indices(indices, index_kind, n, lo, hi, first_bad);
}
PYGPU_EXPORT(check_indices)

// Names end in the element size in bytes.
PYGPU_TAKE_PUT(take_put_1, unsigned char)
PYGPU_EXPORT(take_put_1)
PYGPU_TAKE_PUT(take_put_2, unsigned short)
PYGPU_EXPORT(take_put_2)
PYGPU_TAKE_PUT(take_put_4, unsigned int)
PYGPU_EXPORT(take_put_4)
PYGPU_TAKE_PUT(take_put_8, unsigned long long)
PYGPU_EXPORT(take_put_8)
PYGPU_TAKE_PUT(take_put_16, pygpu_array::Bytes16)
PYGPU_EXPORT(take_put_16)

// arange by numpy dtype name.
PYGPU_ARANGE(arange_int8, signed char)
PYGPU_EXPORT(arange_int8)
PYGPU_ARANGE(arange_int16, short)
PYGPU_EXPORT(arange_int16)
PYGPU_ARANGE(arange_int32, int)
PYGPU_EXPORT(arange_int32)
PYGPU_ARANGE(arange_int64, long long)
PYGPU_EXPORT(arange_int64)
PYGPU_ARANGE(arange_uint8, unsigned char)
PYGPU_EXPORT(arange_uint8)
PYGPU_ARANGE(arange_uint16, unsigned short)
PYGPU_EXPORT(arange_uint16)
PYGPU_ARANGE(arange_uint32, unsigned int)
PYGPU_EXPORT(arange_uint32)
PYGPU_ARANGE(arange_uint64, unsigned long long)
PYGPU_EXPORT(arange_uint64)
PYGPU_ARANGE(arange_float32, float)
PYGPU_EXPORT(arange_float32)
PYGPU_ARANGE(arange_float64, double)
PYGPU_EXPORT(arange_float64)
