// Kernels for pygpu.gpuarray's non-elementwise functions: arange, take / put (multi_take,
// multi_put, multi_take_put). Copies move elements as unsigned integers of their size (1, 2, 4, 8
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
// NULL) and src(i) = src_indices[i] (or i).
template <typename T>
__device__ __forceinline__ void take_put(T* out, const T* src, const void* dest_indices, const void* src_indices,
                                         int index_kind, long long n, long long src_offset) {
  PYGPU_GRID_STRIDE(i, n) {
    const long long d = dest_indices ? index_at(dest_indices, index_kind, i) : i;
    const long long s = src_indices ? index_at(src_indices, index_kind, i) : i;
    out[d] = src[s + src_offset];
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
                         long long n, long long src_offset) {                                              \
    pygpu_array::take_put<T>(out, src, dest_indices, src_indices, index_kind, n, src_offset);              \
  }
#define PYGPU_ARANGE(NAME, T) \
  PYGPU_KERNEL void NAME(T* out, long long n, T first, T second) { pygpu_array::arange<T>(out, n, first, second); }

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
