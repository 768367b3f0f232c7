// Kernels for pygpu's test suite and benchmarks. 1-D launches; grid-stride loops wherever a
// kernel walks an array, so any grid covers it.
#include "pygpu_kernel.h"

// Read and written by bump_counter; tests reach it with module.get_global("pygpu_test_counter").
PYGPU_GLOBAL(int, pygpu_test_counter);

#define PYGPU_GRID_STRIDE(i, n)                                                        \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \
       i += (long long)blockDim.x * gridDim.x)

PYGPU_KERNEL void add_scalar_f64(double* x, long long n, double a) {
  PYGPU_GRID_STRIDE(i, n) x[i] += a;
}
PYGPU_EXPORT(add_scalar_f64)

PYGPU_KERNEL void axpy_f32(float* y, const float* x, float a, int n) {
  PYGPU_GRID_STRIDE(i, n) y[i] = a * x[i] + y[i];
}
PYGPU_EXPORT(axpy_f32)

PYGPU_KERNEL void fill_i32(int* x, int n, int value) {
  PYGPU_GRID_STRIDE(i, n) x[i] = value;
}
PYGPU_EXPORT(fill_i32)

// out[0] = i * d: checks that (pointer, int32, float64) arguments arrive with the right layout.
PYGPU_KERNEL void scale_args(double* out, int i, double d) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = i * d;
}
PYGPU_EXPORT(scale_args)

// No arguments, no work: launch latency.
PYGPU_KERNEL void empty_kernel() {}
PYGPU_EXPORT(empty_kernel)

// x[offset] = 1 from every thread: with a far offset this provokes an illegal address on a GPU.
// On the host backend it is a real out-of-bounds write: call it there only with a valid offset.
PYGPU_KERNEL void oob_write(int* x, long long offset) { x[offset] = 1; }
PYGPU_EXPORT(oob_write)

// pygpu_test_counter += by, from the first thread only (no atomics needed).
PYGPU_KERNEL void bump_counter(int by) {
  if (blockIdx.x == 0 && threadIdx.x == 0) pygpu_test_counter += by;
}
PYGPU_EXPORT(bump_counter)

// Keeps the device busy: x[0] += 1, `iterations` times, through volatile memory so no
// compiler can fold the loop. For tests of long synchronisations and interrupts.
PYGPU_KERNEL void spin(double* x, long long iterations) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    volatile double* v = x;
    for (long long i = 0; i < iterations; ++i) *v = *v + 1.0;
  }
}
PYGPU_EXPORT(spin)
