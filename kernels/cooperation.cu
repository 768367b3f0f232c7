// Kernels whose threads work together: shared memory, barriers, warp shuffles and votes,
// atomics from many blocks; and CUDA's device API (math intrinsics, vector types, templates,
// printf). The host backend runs them with a block's threads as fibers; the test suite
// (tests/test_cooperation.py) checks every backend against numpy with them.
#include "pygpu_kernel.h"

#define GRID_STRIDE(i, n)                                                                  \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \
       i += (long long)blockDim.x * gridDim.x)

template <typename T>
__device__ T add(T a, T b) {
  return a + b;
}

// partial[blockIdx.x] = the sum of this block's grid-stride share of x: a tree in static shared
// memory, halving with a barrier per level. blockDim.x: a power of two, at most 256.
PYGPU_KERNEL void block_sum_f64(const double* x, double* partial, long long n) {
  __shared__ double sums[256];
  double s = 0.0;
  GRID_STRIDE(i, n) s = add(s, x[i]);
  sums[threadIdx.x] = s;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] = add(sums[threadIdx.x], sums[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}
PYGPU_EXPORT(block_sum_f64)

// c = a @ b for n x n row-major matrices, in 16 x 16 tiles staged through shared memory.
// block (16, 16), grid (ceil(n/16), ceil(n/16)).
#define TILE 16
PYGPU_KERNEL void matmul_tiled_f32(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[TILE][TILE];
  __shared__ float tb[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < n; t += TILE) {
    ta[threadIdx.y][threadIdx.x] = (row < n && t + (int)threadIdx.x < n) ? a[row * n + t + threadIdx.x] : 0.0f;
    tb[threadIdx.y][threadIdx.x] = (col < n && t + (int)threadIdx.y < n) ? b[(t + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}
PYGPU_EXPORT(matmul_tiled_f32)

// Reverses each block's chunk of blockDim.x ints in place, through dynamic shared memory
// (shared_bytes = blockDim.x * 4). n: a multiple of blockDim.x.
PYGPU_KERNEL void reverse_chunks_i32(int* x, int n) {
  PYGPU_DYNAMIC_SHARED(int, chunk);
  const int base = blockIdx.x * blockDim.x;
  if (base >= n) return;
  chunk[threadIdx.x] = x[base + threadIdx.x];
  __syncthreads();
  x[base + threadIdx.x] = chunk[blockDim.x - 1 - threadIdx.x];
}
PYGPU_EXPORT(reverse_chunks_i32)

// bins[v % nbins] += 1 for every v of x: a per-block histogram in shared memory (shared atomics),
// added to the global one with global atomics. nbins <= 256.
PYGPU_KERNEL void histogram_u32(const unsigned int* x, long long n, unsigned int* bins, unsigned int nbins) {
  __shared__ unsigned int local[256];
  for (unsigned int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  GRID_STRIDE(i, n) atomicAdd(&local[x[i] % nbins], 1u);
  __syncthreads();
  for (unsigned int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
PYGPU_EXPORT(histogram_u32)

// The other atomics, from every thread of the grid on x (n values):
// out_i[0] += 1, out_i[1] = min, out_i[2] = max, out_i[3] -= 1 (atomicSub), out_i[4] |= bit (i % 31),
// out_i[5] ^= 1 per thread, out_u[0] = atomicInc wrapping at 9, out_u[1] = atomicDec from 0 at 9,
// out_ull[0] += v, out_ull[1]: CAS-loop max of v + 1000; out_f[0] += 1.0f; out_d[0] += v.
PYGPU_KERNEL void atomics_mix(const int* x, long long n, int* out_i, unsigned int* out_u,
                              unsigned long long* out_ull, float* out_f, double* out_d) {
  GRID_STRIDE(i, n) {
    const int v = x[i];
    atomicAdd(&out_i[0], 1);
    atomicMin(&out_i[1], v);
    atomicMax(&out_i[2], v);
    atomicSub(&out_i[3], 1);
    atomicOr(&out_i[4], 1 << (i % 31));
    atomicXor(&out_i[5], 1);
    atomicInc(&out_u[0], 9u);
    atomicDec(&out_u[1], 9u);
    atomicAdd(&out_ull[0], (unsigned long long)(long long)v);
    const unsigned long long shifted = (unsigned long long)(v + 1000);
    unsigned long long seen = out_ull[1];
    while (seen < shifted) {
      const unsigned long long got = atomicCAS(&out_ull[1], seen, shifted);
      if (got == seen) break;
      seen = got;
    }
    atomicAdd(&out_f[0], 1.0f);
    atomicAdd(&out_d[0], (double)v);
    atomicExch(&out_i[6], 7);
  }
}
PYGPU_EXPORT(atomics_mix)

// out[w] = the sum of the 32 floats of warp w (global warp index), by __shfl_down_sync; the
// block is a multiple of 32 threads and the grid covers n = blocks * threads exactly.
PYGPU_KERNEL void warp_sum_f32(const float* x, float* out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) out[i / 32] = v;
}
PYGPU_EXPORT(warp_sum_f32)

// For thread i (one block; blockDim.x a multiple of 32): out[6 i + 0..5] =
// __shfl_sync(i, lane 3 of each group of 8), __shfl_up_sync(i, 1), __shfl_xor_sync(i, 5),
// __shfl_down_sync(i, 2, width 16), and per warp ballot(x > 0), all(x > 0) + 2 any(x > 0).
PYGPU_KERNEL void warp_lanes_i32(const int* x, int* out) {
  const int i = threadIdx.x;
  const unsigned int full = 0xffffffffu;
  out[6 * i + 0] = __shfl_sync(full, i, 3, 8);
  out[6 * i + 1] = __shfl_up_sync(full, i, 1);
  out[6 * i + 2] = __shfl_xor_sync(full, i, 5);
  out[6 * i + 3] = __shfl_down_sync(full, i, 2, 16);
  out[6 * i + 4] = (int)__ballot_sync(full, x[i] > 0);
  out[6 * i + 5] = __all_sync(full, x[i] > 0) + 2 * __any_sync(full, x[i] > 0);
}
PYGPU_EXPORT(warp_lanes_i32)

// out[w] = the sum of lanes 0..15 of warp w (one block), shuffled among those 16 lanes only
// (mask 0xffff) while the other half of the warp does something else.
PYGPU_KERNEL void half_warp_sum_i32(const int* x, int* out) {
  const unsigned int lane = threadIdx.x % 32;
  int v = x[threadIdx.x];
  if (lane < 16) {
    for (int offset = 8; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffu, v, offset, 16);
    if (lane == 0) out[threadIdx.x / 32] = v;
  } else {
    out[64 + threadIdx.x] = __activemask() != 0u;
  }
}
PYGPU_EXPORT(half_warp_sum_i32)

// A full-warp shuffle that half of the warp never reaches: undefined on a GPU, an error on the
// host. Never launch it on a GPU.
PYGPU_KERNEL void divergent_shuffle(int* x) {
  if (threadIdx.x < 16) x[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
}
PYGPU_EXPORT(divergent_shuffle)

// out[0..2] = __syncthreads_count / _and / _or of (x[t] > 0), t the thread's index in its block
// (any block shape), from thread 0.
PYGPU_KERNEL void barrier_votes_i32(const int* x, int* out) {
  const unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int p = x[t] > 0;
  const int count = __syncthreads_count(p), all = __syncthreads_and(p), any = __syncthreads_or(p);
  if (t == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = any;
  }
}
PYGPU_EXPORT(barrier_votes_i32)

// A barrier only half of the block reaches, while the other half exits: a barrier waits for
// the threads that have not exited (PTX's barrier.sync), so this completes, on a GPU as on the
// host backend.
PYGPU_KERNEL void divergent_barrier(int* x) {
  if (threadIdx.x < 16) __syncthreads();
  x[threadIdx.x] = 1;
}
PYGPU_EXPORT(divergent_barrier)

// Thread 0 of every block counts to `iterations` (in volatile memory, so that no compiler folds
// the loop): a launch that takes long because of its many blocks, for interrupt tests.
PYGPU_KERNEL void spin_every_block(long long iterations) {
  if (threadIdx.x != 0) return;
  volatile long long count = 0;
  for (long long i = 0; i < iterations; ++i) count = count + 1;
}
PYGPU_EXPORT(spin_every_block)

// x[i] *= a on float4s: CUDA's vector types and their layout.
PYGPU_KERNEL void scale_float4(float4* x, int n, float a) {
  GRID_STRIDE(i, n) {
    const float4 v = x[i];
    x[i] = make_float4(v.x * a, v.y * a, v.z * a, v.w * a);
  }
}
PYGPU_EXPORT(scale_float4)

// The integer and float intrinsics, one result each, from one thread (see the test).
PYGPU_KERNEL void intrinsics(const unsigned int* u, const float* f, unsigned int* out_u, float* out_f) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  out_u[0] = __popc(u[0]);
  out_u[1] = __clz((int)u[0]);
  out_u[2] = __ffs((int)u[0]);
  out_u[3] = __brev(u[0]);
  out_u[4] = __umulhi(u[0], u[1]);
  out_u[5] = (unsigned int)__mul24((int)u[1], 3);
  out_u[6] = min(u[0], u[1]);
  out_u[7] = max(u[0], u[1]);
  out_u[8] = __float_as_uint(f[0]);
  out_f[0] = rsqrtf(f[0]);
  out_f[1] = __saturatef(f[1]);
  out_f[2] = __saturatef(-f[1]);
  out_f[3] = fminf(f[0], f[1]);
  out_f[4] = __fdividef(f[0], f[1]);
  float s, c;
  sincosf(f[0], &s, &c);
  out_f[5] = s;
  out_f[6] = c;
  out_f[7] = __ldg(&f[1]);
  out_f[8] = max(f[0], f[1]);
}
PYGPU_EXPORT(intrinsics)

// Device printf, from thread 0 of block 0.
PYGPU_KERNEL void say_hello(int value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) printf("hello from the device: %d\n", value);
}
PYGPU_EXPORT(say_hello)
