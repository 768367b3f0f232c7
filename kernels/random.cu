// Counter-based random numbers for pygpu.curandom: Philox4x32-10 (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC'11), the same bits on every backend for the same seed.
//
// Philox block g (a 64-bit counter) under key `seed` gives four 32-bit words. Output element i of a
// kernel uses block (offset + i / K) where K elements come from one block: 4 for 32-bit results
// (uint32, float32 uniform, float32 normal: two Box-Muller pairs), 2 for 64-bit results (uint64,
// float64 uniform, float64 normal: one pair). The Python generator advances `offset` by the
// blocks a call used, so successive calls continue the stream. The streams are not cuRAND's.
#include "pygpu_kernel.h"

namespace pygpu_philox {

struct Words {
  unsigned int w[4];
};

__device__ __forceinline__ unsigned int mulhilo(unsigned int a, unsigned int b, unsigned int* hi) {
  const unsigned long long p = (unsigned long long)a * b;
  *hi = (unsigned int)(p >> 32);
  return (unsigned int)p;
}

// Philox4x32 with 10 rounds, Random123's constants.
// The counter is (counter's low word, its high word, c2, c3); the key is the seed's two words.
__device__ __forceinline__ Words philox4x32_10(unsigned long long counter, unsigned long long seed,
                                               unsigned int c2 = 0, unsigned int c3 = 0) {
  unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)(counter >> 32);
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    unsigned int hi0, hi1;
    const unsigned int lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    const unsigned int lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  Words r;
  r.w[0] = c0;
  r.w[1] = c1;
  r.w[2] = c2;
  r.w[3] = c3;
  return r;
}

// [0, 1) from the top 24 bits; (0, 1] for the logarithm of Box-Muller.
__device__ __forceinline__ float unit_f32(unsigned int w) { return (float)(w >> 8) * (1.0f / 16777216.0f); }
__device__ __forceinline__ float unit_open_f32(unsigned int w) {
  return (float)((w >> 8) + 1u) * (1.0f / 16777216.0f);
}
// [0, 1) from 53 bits of two words; (0, 1] likewise.
__device__ __forceinline__ unsigned long long bits53(unsigned int hi, unsigned int lo) {
  return (((unsigned long long)hi << 32) | lo) >> 11;
}
__device__ __forceinline__ double unit_f64(unsigned int hi, unsigned int lo) {
  return (double)bits53(hi, lo) * (1.0 / 9007199254740992.0);
}
__device__ __forceinline__ double unit_open_f64(unsigned int hi, unsigned int lo) {
  return (double)(bits53(hi, lo) + 1ull) * (1.0 / 9007199254740992.0);
}

}  // namespace pygpu_philox

#define PYGPU_PHILOX_BLOCKS(g, n, K)                                                              \
  for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; g < ((long long)(n) + (K)-1) / (K); \
       g += (long long)blockDim.x * gridDim.x)

PYGPU_KERNEL void philox_uint32(unsigned int* out, long long n, unsigned long long seed, unsigned long long offset) {
  PYGPU_PHILOX_BLOCKS(g, n, 4) {
    const pygpu_philox::Words r = pygpu_philox::philox4x32_10(offset + (unsigned long long)g, seed);
    for (int k = 0; k < 4 && g * 4 + k < n; ++k) out[g * 4 + k] = r.w[k];
  }
}
PYGPU_EXPORT(philox_uint32)

PYGPU_KERNEL void philox_uint64(unsigned long long* out, long long n, unsigned long long seed,
                                unsigned long long offset) {
  PYGPU_PHILOX_BLOCKS(g, n, 2) {
    const pygpu_philox::Words r = pygpu_philox::philox4x32_10(offset + (unsigned long long)g, seed);
    for (int k = 0; k < 2 && g * 2 + k < n; ++k)
      out[g * 2 + k] = ((unsigned long long)r.w[2 * k] << 32) | r.w[2 * k + 1];
  }
}
PYGPU_EXPORT(philox_uint64)

PYGPU_KERNEL void philox_uniform_float32(float* out, long long n, unsigned long long seed, unsigned long long offset) {
  PYGPU_PHILOX_BLOCKS(g, n, 4) {
    const pygpu_philox::Words r = pygpu_philox::philox4x32_10(offset + (unsigned long long)g, seed);
    for (int k = 0; k < 4 && g * 4 + k < n; ++k) out[g * 4 + k] = pygpu_philox::unit_f32(r.w[k]);
  }
}
PYGPU_EXPORT(philox_uniform_float32)

PYGPU_KERNEL void philox_uniform_float64(double* out, long long n, unsigned long long seed,
                                         unsigned long long offset) {
  PYGPU_PHILOX_BLOCKS(g, n, 2) {
    const pygpu_philox::Words r = pygpu_philox::philox4x32_10(offset + (unsigned long long)g, seed);
    for (int k = 0; k < 2 && g * 2 + k < n; ++k) out[g * 2 + k] = pygpu_philox::unit_f64(r.w[2 * k], r.w[2 * k + 1]);
  }
}
PYGPU_EXPORT(philox_uniform_float64)

// Normal (Box-Muller) with the given mean and standard deviation; exp() of it when lognormal != 0.
PYGPU_KERNEL void philox_normal_float32(float* out, long long n, unsigned long long seed, unsigned long long offset,
                                        float mean, float stddev, int lognormal) {
  PYGPU_PHILOX_BLOCKS(g, n, 4) {
    const pygpu_philox::Words r = pygpu_philox::philox4x32_10(offset + (unsigned long long)g, seed);
    float z[4];
    for (int p = 0; p < 2; ++p) {
      const float radius = sqrtf(-2.0f * logf(pygpu_philox::unit_open_f32(r.w[2 * p])));
      const float angle = 6.28318530717958647692f * pygpu_philox::unit_f32(r.w[2 * p + 1]);
      z[2 * p] = radius * cosf(angle);
      z[2 * p + 1] = radius * sinf(angle);
    }
    for (int k = 0; k < 4 && g * 4 + k < n; ++k) {
      const float v = mean + stddev * z[k];
      out[g * 4 + k] = lognormal ? expf(v) : v;
    }
  }
}
PYGPU_EXPORT(philox_normal_float32)

PYGPU_KERNEL void philox_normal_float64(double* out, long long n, unsigned long long seed, unsigned long long offset,
                                        double mean, double stddev, int lognormal) {
  PYGPU_PHILOX_BLOCKS(g, n, 2) {
    const pygpu_philox::Words r = pygpu_philox::philox4x32_10(offset + (unsigned long long)g, seed);
    const double radius = sqrt(-2.0 * log(pygpu_philox::unit_open_f64(r.w[0], r.w[1])));
    const double angle = 6.28318530717958647692 * pygpu_philox::unit_f64(r.w[2], r.w[3]);
    const double z[2] = {radius * cos(angle), radius * sin(angle)};
    for (int k = 0; k < 2 && g * 2 + k < n; ++k) {
      const double v = mean + stddev * z[k];
      out[g * 2 + k] = lognormal ? exp(v) : v;
    }
  }
}
PYGPU_EXPORT(philox_normal_float64)

// Poisson numbers, one output element per Philox counter (offset + i): element i draws the
// uniforms of blocks (counter, j, 1) for j = 0, 1, ... (the third word counts, the fourth
// separates these draws from the other distributions'). Knuth's multiplication method, on
// pieces of lambda <= 16 summed (a sum of Poissons is Poisson), so exp(-piece) never
// underflows; the cost grows with lambda. per_element != 0: lambda is out[i]'s value on entry
// (PyCUDA's fill_poisson without a lambda).
namespace pygpu_philox {

template <typename T>
__device__ __forceinline__ void poisson(T* out, long long n, unsigned long long seed, unsigned long long offset,
                                        double lambda, int per_element) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
    const double lam = per_element ? (double)out[i] : lambda;
    const unsigned long long counter = offset + (unsigned long long)i;
    unsigned int draw = 0;  // uniforms taken so far
    Words words = {{0, 0, 0, 0}};
    unsigned long long count = 0;
    if (lam > 0) {
      const int pieces = (int)(lam / 16.0) + 1;
      const double limit = exp(-lam / pieces);
      for (int p = 0; p < pieces; ++p) {
        double product = 1.0;
        for (;;) {
          if (draw % 4 == 0) words = philox4x32_10(counter, seed, draw / 4, 1u);
          const double u = ((double)words.w[draw % 4] + 0.5) * (1.0 / 4294967296.0);  // (0, 1)
          ++draw;
          product *= u;
          if (product <= limit) break;
          ++count;
        }
      }
    }
    out[i] = (T)count;
  }
}

}  // namespace pygpu_philox

PYGPU_KERNEL void philox_poisson_uint32(unsigned int* out, long long n, unsigned long long seed,
                                        unsigned long long offset, double lambda, int per_element) {
  pygpu_philox::poisson(out, n, seed, offset, lambda, per_element);
}
PYGPU_EXPORT(philox_poisson_uint32)

PYGPU_KERNEL void philox_poisson_int32(int* out, long long n, unsigned long long seed, unsigned long long offset,
                                       double lambda, int per_element) {
  pygpu_philox::poisson(out, n, seed, offset, lambda, per_element);
}
PYGPU_EXPORT(philox_poisson_int32)

PYGPU_KERNEL void philox_poisson_float32(float* out, long long n, unsigned long long seed, unsigned long long offset,
                                         double lambda, int per_element) {
  pygpu_philox::poisson(out, n, seed, offset, lambda, per_element);
}
PYGPU_EXPORT(philox_poisson_float32)

PYGPU_KERNEL void philox_poisson_float64(double* out, long long n, unsigned long long seed, unsigned long long offset,
                                         double lambda, int per_element) {
  pygpu_philox::poisson(out, n, seed, offset, lambda, per_element);
}
PYGPU_EXPORT(philox_poisson_float64)
