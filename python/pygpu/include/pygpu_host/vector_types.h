// pygpu_host/vector_types.h: CUDA's built-in vector types (float4, int2, uint3, dim3, ...) and
// their make_* functions, with CUDA's sizes and alignments, so that structs and arrays of them
// have the same layout on the host as on a GPU. Part of pygpu_kernel.h.
#pragma once

#define PYGPU_VECTOR_TYPES(T, NAME, ALIGN2, ALIGN4)                                                   \
  struct NAME##1 { T x; };                                                                           \
  struct alignas(ALIGN2) NAME##2 { T x, y; };                                                        \
  struct NAME##3 { T x, y, z; };                                                                     \
  struct alignas(ALIGN4) NAME##4 { T x, y, z, w; };                                                  \
  static inline constexpr NAME##1 make_##NAME##1(T x) { return NAME##1{x}; }                         \
  static inline constexpr NAME##2 make_##NAME##2(T x, T y) { return NAME##2{x, y}; }                  \
  static inline constexpr NAME##3 make_##NAME##3(T x, T y, T z) { return NAME##3{x, y, z}; }          \
  static inline constexpr NAME##4 make_##NAME##4(T x, T y, T z, T w) { return NAME##4{x, y, z, w}; }

PYGPU_VECTOR_TYPES(signed char, char, 2, 4)
PYGPU_VECTOR_TYPES(unsigned char, uchar, 2, 4)
PYGPU_VECTOR_TYPES(short, short, 4, 8)
PYGPU_VECTOR_TYPES(unsigned short, ushort, 4, 8)
PYGPU_VECTOR_TYPES(int, int, 8, 16)
PYGPU_VECTOR_TYPES(unsigned int, uint, 8, 16)
PYGPU_VECTOR_TYPES(long, long, 16, 16)
PYGPU_VECTOR_TYPES(unsigned long, ulong, 16, 16)
PYGPU_VECTOR_TYPES(long long, longlong, 16, 16)
PYGPU_VECTOR_TYPES(unsigned long long, ulonglong, 16, 16)
PYGPU_VECTOR_TYPES(float, float, 8, 16)
PYGPU_VECTOR_TYPES(double, double, 16, 16)
#undef PYGPU_VECTOR_TYPES

// dim3: a uint3 whose missing dimensions are 1.
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

static_assert(sizeof(float4) == 16 && alignof(float4) == 16 && sizeof(float3) == 12, "CUDA layout");
static_assert(sizeof(double2) == 16 && alignof(double2) == 16 && alignof(int2) == 8, "CUDA layout");
