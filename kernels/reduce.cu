// Reductions for pygpu.gpuarray: sum, dot/vdot, min, max, any, all, and their subset_ forms.
//
// One launch or two, of the same kernel family. Every block folds its share: each thread folds
// its terms serially, then the block folds its threads' values (warp shuffles on CUDA, a tree in
// shared memory on the other backends). Then either
//   one pass (`ticket` given): thread 0 writes the block's value to partials[blockIdx.x] and
//            takes a ticket; the block that takes the last one folds the partials into the 0-d
//            result and sets the ticket counter back to 0 for the next launch;
//   two stages (no ticket): thread 0 writes the block's value to out[blockIdx.x], and a second
//            launch of one block (the `_same` kernel of the accumulator type) folds them.
// With one block, the block writes the result directly. The Python side (pygpu.gpuarray's
// reductions module) picks the grid and the form, and launches; see kernels/README.md for the
// kernel list.
//
// A thread's share differs by backend, the result only by rounding. On a GPU it is a grid-stride
// slice (neighbouring threads read neighbouring elements: coalesced), with 16-byte loads and
// four independent accumulators on the contiguous path, for the bytes in flight that full
// bandwidth needs. On the host a block's threads run one after another on one core and the
// Python side launches one thread per block: a thread folds one contiguous run, in lanes the
// compiler vectorises, and sums of runs combine pairwise (rounding grows with log n, as with
// numpy's pairwise sum).
//
// Every kernel takes the same parameters:
//   out      Acc*: the 0-d result, or the partials (the first of two stages)
//   a, b     the operands (b only read by dot/vdot; pass a again otherwise)
//   n        the number of terms
//   layout   NULL when a (and b) are contiguous; else int64 [ndim, dims[ndim], a_strides[ndim],
//            b_strides[ndim]] in elements, the C-order walk of a non-contiguous operand
//   subset   NULL, or the term indices (subset_dot/min/max: term i reads element subset[i])
//   subset_kind  the subset's element type: 0 int32, 1 uint32, 2 int64, 3 uint64
//   conj     1: vdot, conjugate a's terms (complex types only)
//   partials Acc[gridDim.x]: where one pass leaves the blocks' values (NULL for two stages)
//   ticket   NULL for two stages; for one pass, an unsigned int that is 0 at the launch (and
//            is 0 again after it). Launches that share partials and ticket must be ordered (one
//            stream): the Python side keeps one pair per stream.
#include "pygpu_parts.h"
#include "pygpu_types.h"
#include "pygpu_vector_math.h"

// Threads per block of every reduction launch on a GPU: a power of two, as the tree needs.
#define PYGPU_REDUCE_BLOCK 256

namespace pygpu_reduce {

// --- element types and their limits -------------------------------------------------------------

// Infinity from its bits (NVRTC has no <cmath>).
__device__ __forceinline__ float infinity_f32() { return pygpu::bit_cast<float>(0x7f800000u); }
__device__ __forceinline__ double infinity_f64() { return pygpu::bit_cast<double>(0x7ff0000000000000ull); }

template <typename T> struct Limits;
#define PYGPU_LIMITS(T, LO, HI)                                  \
  template <> struct Limits<T> {                                 \
    static __device__ __forceinline__ T lowest() { return LO; }  \
    static __device__ __forceinline__ T highest() { return HI; } \
  };
PYGPU_LIMITS(signed char, -128, 127)
PYGPU_LIMITS(unsigned char, 0, 255)
PYGPU_LIMITS(short, -32768, 32767)
PYGPU_LIMITS(unsigned short, 0, 65535)
PYGPU_LIMITS(int, (-2147483647 - 1), 2147483647)
PYGPU_LIMITS(unsigned int, 0u, 4294967295u)
PYGPU_LIMITS(long long, (-9223372036854775807ll - 1), 9223372036854775807ll)
PYGPU_LIMITS(unsigned long long, 0ull, 18446744073709551615ull)
PYGPU_LIMITS(pygpu::half, pygpu::half::from_bits(0xfc00u), pygpu::half::from_bits(0x7c00u))
PYGPU_LIMITS(float, -infinity_f32(), infinity_f32())
PYGPU_LIMITS(double, -infinity_f64(), infinity_f64())
#undef PYGPU_LIMITS

template <typename T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }

using pygpu::complex;
using pygpu::complex128;
using pygpu::complex64;
using pygpu::half;

template <typename T> __device__ __forceinline__ T conjugate(T x) { return x; }
template <typename R> __device__ __forceinline__ complex<R> conjugate(complex<R> x) {
  return pygpu::make_complex(x.re, -x.im);
}

// Zero of every element type (pygpu's complex and half are aggregates without constructors).
template <typename T> __device__ __forceinline__ T zero() { return pygpu::cast<T>(0ll); }

// --- the folds ---------------------------------------------------------------------------------

// kHostLaneBytes: the host's contiguous fold keeps that many bytes of accumulators (see HostFold).
template <typename A> struct Sum {
  static constexpr int kHostLaneBytes = 128;
  static __device__ __forceinline__ A neutral() { return zero<A>(); }
  static __device__ __forceinline__ A fold(A x, A y) { return x + y; }
};
// min and max propagate NaN, as numpy's do (PyCUDA's fmin/fmax would drop it).
template <typename A> struct Min {
  static constexpr int kHostLaneBytes = 512;
  static __device__ __forceinline__ A neutral() { return Limits<A>::highest(); }
  static __device__ __forceinline__ A fold(A x, A y) { return (is_nan(x) || x < y) ? x : y; }
};
template <typename A> struct Max {
  static constexpr int kHostLaneBytes = 512;
  static __device__ __forceinline__ A neutral() { return Limits<A>::lowest(); }
  static __device__ __forceinline__ A fold(A x, A y) { return (is_nan(x) || x > y) ? x : y; }
};
struct Any {
  static constexpr int kHostLaneBytes = 128;
  static __device__ __forceinline__ bool neutral() { return false; }
  static __device__ __forceinline__ bool fold(bool x, bool y) { return x || y; }
};
struct All {
  static constexpr int kHostLaneBytes = 128;
  static __device__ __forceinline__ bool neutral() { return true; }
  static __device__ __forceinline__ bool fold(bool x, bool y) { return x && y; }
};

// --- the terms: what term i of the reduction is, given the operands' elements -------------------

// kReadsB: whether the term reads b (the GPU's vector loads skip b otherwise).
template <typename U, typename A> struct Value {  // sum, min, max: the element, as A
  static constexpr bool kReadsB = false;
  static __device__ __forceinline__ A term(const U* a, const U*, long long ia, long long, int) {
    return pygpu::cast<A>(a[ia]);
  }
};
template <typename U, typename A> struct Product {  // dot, vdot (the conjugate is for complex types)
  static constexpr bool kReadsB = true;
  static __device__ __forceinline__ A term(const U* a, const U* b, long long ia, long long ib, int conj) {
    const A x = pygpu::cast<A>(a[ia]);
    return (conj ? conjugate(x) : x) * pygpu::cast<A>(b[ib]);
  }
};
template <typename U, typename A> struct NonZero {  // any, all
  static constexpr bool kReadsB = false;
  static __device__ __forceinline__ A term(const U* a, const U*, long long ia, long long, int) {
    return a[ia] != zero<U>();
  }
};

// --- one stage ---------------------------------------------------------------------------------

// The subset's i-th index, whatever its integer type.
__device__ __forceinline__ long long subset_index(const void* subset, int kind, long long i) {
  switch (kind) {
    case 0: return static_cast<const int*>(subset)[i];
    case 1: return static_cast<const unsigned int*>(subset)[i];
    case 2: return static_cast<const long long*>(subset)[i];
    default: return static_cast<long long>(static_cast<const unsigned long long*>(subset)[i]);
  }
}

// Element offsets (a's, b's) of logical element j of a non-contiguous walk.
__device__ __forceinline__ void strided_offsets(const long long* layout, long long j, long long* oa, long long* ob) {
  const long long ndim = layout[0];
  const long long* dims = layout + 1;
  const long long* sa = dims + ndim;
  const long long* sb = sa + ndim;
  long long a = 0, b = 0;
  for (long long k = ndim - 1; k >= 0; --k) {
    const long long d = dims[k];
    const long long idx = j % d;
    j /= d;
    a += idx * sa[k];
    b += idx * sb[k];
  }
  *oa = a;
  *ob = b;
}

// An unsigned type of kBytes (1, 2 or 4) bytes.
template <int kBytes> struct Word {
  typedef unsigned char type;
};
template <> struct Word<2> {
  typedef unsigned short type;
};
template <> struct Word<4> {
  typedef unsigned int type;
};

// A value other blocks wrote in this launch, read past this multiprocessor's L1 cache (which is
// not coherent with the others'): as volatile words of the widest size that divides it.
template <typename A> __device__ __forceinline__ A load_uncached(const A* p) {
  typedef typename Word<sizeof(A) % 4 == 0 ? 4 : (sizeof(A) % 2 == 0 ? 2 : 1)>::type W;
  W words[sizeof(A) / sizeof(W)];
  const volatile W* q = reinterpret_cast<const volatile W*>(p);
  for (unsigned int k = 0; k < sizeof(A) / sizeof(W); ++k) words[k] = q[k];
  A v;
  pygpu::copy_bytes(&v, words, sizeof(A));
  return v;
}

// Takes the block's ticket (the counter's value before this block's increment) after its partial
// was written: every block that takes a later one sees that partial. On CUDA one atomic with
// release and acquire semantics at device scope orders both ways; the last block's other threads
// are ordered after thread 0's acquire by the barrier that follows. Elsewhere a fence on each side
// of a plain atomic.
__device__ __forceinline__ unsigned int take_ticket(unsigned int* ticket) {
#if defined(PYGPU_DEVICE_BUILD) && defined(__CUDACC__) && !defined(__HIP__)
  unsigned int before;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(ticket) : "memory");
  return before;
#else
  __threadfence();
  const unsigned int before = atomicAdd(ticket, 1u);
  __threadfence();
  return before;
#endif
}

// Folds the block's per-thread values into one (returned on thread 0): a tree in shared memory.
template <typename A, typename F> __device__ __forceinline__ A block_fold_tree(A v) {
  // Raw 16-byte-aligned storage: the shared array must not need a constructor (complex types).
  struct alignas(16) Chunk {
    unsigned long long lo, hi;
  };
  __shared__ Chunk raw[(PYGPU_REDUCE_BLOCK * sizeof(A) + sizeof(Chunk) - 1) / sizeof(Chunk)];
  A* s = reinterpret_cast<A*>(raw);
  const unsigned int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] = F::fold(s[t], s[t + k]);
    __syncthreads();
  }
  return s[0];
}

#if defined(PYGPU_DEVICE_BUILD) && defined(__CUDACC__) && !defined(__HIP__)
// The value of lane (this lane + o) of the warp, for any element type: moved as 32-bit words.
template <typename A> __device__ __forceinline__ A shuffle_down(A v, unsigned int o) {
  struct Words {
    unsigned int w[(sizeof(A) + 3) / 4];
  } words = {};
  pygpu::copy_bytes(&words, &v, sizeof(A));
  for (unsigned int k = 0; k < sizeof(words.w) / 4; ++k) words.w[k] = __shfl_down_sync(0xffffffffu, words.w[k], o);
  pygpu::copy_bytes(&v, &words, sizeof(A));
  return v;
}

// The same fold with warp shuffles: each warp folds its 32 values in registers, then the first
// warp folds the warps' values; one barrier instead of log2(block) of them, which every block
// of a one-wave grid would otherwise wait out at its end.
template <typename A, typename F> __device__ __forceinline__ A block_fold(A v) {
  if (blockDim.x % 32 != 0) return block_fold_tree<A, F>(v);
  struct alignas(16) Chunk {
    unsigned long long lo, hi;
  };
  __shared__ Chunk raw[(PYGPU_REDUCE_BLOCK / 32 * sizeof(A) + sizeof(Chunk) - 1) / sizeof(Chunk)];
  A* s = reinterpret_cast<A*>(raw);
  const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (unsigned int o = 16; o > 0; o >>= 1) v = F::fold(v, shuffle_down(v, o));
  if (lane == 0) s[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? s[lane] : F::neutral();
    for (unsigned int o = 16; o > 0; o >>= 1) v = F::fold(v, shuffle_down(v, o));
  }
  return v;
}
#else
template <typename A, typename F> __device__ __forceinline__ A block_fold(A v) { return block_fold_tree<A, F>(v); }
#endif

#if defined(PYGPU_DEVICE_BUILD)
// 16-byte loads each thread has in flight per operand: with one wave of 256-thread blocks,
// the bytes in flight that a full-bandwidth read needs (bench/reduce_variants.py, H200).
#define PYGPU_REDUCE_LOADS 4

// The fold of the terms of one 16-byte load of each operand (16 / sizeof(U) elements), as a
// pairwise tree.
template <typename U, typename A, typename F, typename Term>
__device__ __forceinline__ A fold_vector(const uint4& qa, const uint4& qb, int conj) {
  constexpr int E = 16 / sizeof(U);
  U ea[E], eb[E];
  pygpu::copy_bytes(ea, &qa, 16);
  pygpu::copy_bytes(eb, &qb, 16);
  A t[E];
  for (int k = 0; k < E; ++k) t[k] = Term::term(ea, eb, k, k, conj);
  for (int w = E / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) t[k] = F::fold(t[k], t[k + w]);
  return t[0];
}

// This thread's fold of a grid-stride slice of the contiguous terms [0, n): 16-byte loads,
// PYGPU_REDUCE_LOADS of them in flight, into as many independent accumulators, where both
// operands are 16-byte aligned; element by element otherwise and for the last terms.
template <typename U, typename A, typename F, typename Term>
__device__ __forceinline__ A fold_slice(const U* a, const U* b, long long n, int conj) {
  constexpr int K = PYGPU_REDUCE_LOADS;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  A acc[K];
  for (int k = 0; k < K; ++k) acc[k] = F::neutral();
  long long covered = 0;  // terms [0, covered) are folded by the vector loop
  if constexpr (sizeof(U) <= 16 && 16 % sizeof(U) == 0) {
    constexpr long long E = 16 / sizeof(U);
    if (((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b)) & 15) == 0) {
      const uint4* va = reinterpret_cast<const uint4*>(a);
      const uint4* vb = reinterpret_cast<const uint4*>(b);
      const long long vectors = n / E;
      long long v = first;
      for (; v + (K - 1) * stride < vectors; v += K * stride) {
        uint4 qa[K], qb[K];
        for (int k = 0; k < K; ++k) {
          qa[k] = va[v + k * stride];
          qb[k] = Term::kReadsB ? vb[v + k * stride] : qa[k];
        }
        for (int k = 0; k < K; ++k) acc[k] = F::fold(acc[k], fold_vector<U, A, F, Term>(qa[k], qb[k], conj));
      }
      for (; v < vectors; v += stride) {
        const uint4 qa = va[v];
        const uint4 qb = Term::kReadsB ? vb[v] : qa;
        acc[0] = F::fold(acc[0], fold_vector<U, A, F, Term>(qa, qb, conj));
      }
      covered = vectors * E;
    }
  }
  long long i = covered + first;
  for (; i + (K - 1) * stride < n; i += K * stride)
    for (int k = 0; k < K; ++k) acc[k] = F::fold(acc[k], Term::term(a, b, i + k * stride, i + k * stride, conj));
  for (; i < n; i += stride) acc[1] = F::fold(acc[1], Term::term(a, b, i, i, conj));
  for (int w = K / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] = F::fold(acc[k], acc[k + w]);
  return acc[0];
}
#else
// Lanes of the host's contiguous fold: F's bytes of accumulators, enough independent vector
// operations to hide their latency; and the terms one lane-wise pass folds before its value
// joins the pairwise combination.
template <typename A, typename F> struct HostFold {
  static constexpr int kLanes = sizeof(A) >= F::kHostLaneBytes ? 1 : F::kHostLaneBytes / sizeof(A);
  static constexpr long long kRun = 64 * kLanes;
};

// Pairwise combination of run values: slot k holds the fold of 2^k runs (a binary counter).
template <typename A, typename F> struct Pairwise {
  A slot[64];
  unsigned long long runs = 0;
  __device__ __forceinline__ void add(A v) {
    int k = 0;
    for (; runs >> k & 1; ++k) v = F::fold(slot[k], v);
    slot[k] = v;
    ++runs;
  }
  __device__ __forceinline__ A total() const {
    A acc = F::neutral();
    for (int k = 0; k < 64; ++k)
      if (runs >> k & 1) acc = F::fold(slot[k], acc);
    return acc;
  }
};

// The fold of the contiguous terms [lo, hi).
template <typename U, typename A, typename F, typename Term>
__device__ __forceinline__ A fold_run(const U* a, const U* b, long long lo, long long hi, int conj) {
  constexpr int L = HostFold<A, F>::kLanes;
  Pairwise<A, F> pairs;
  for (long long start = lo; start < hi; start += HostFold<A, F>::kRun) {
    const long long end = hi - start < HostFold<A, F>::kRun ? hi : start + HostFold<A, F>::kRun;
    A lane[L];
    for (int j = 0; j < L; ++j) lane[j] = F::neutral();
    long long i = start;
    for (; i + L <= end; i += L)
      for (int j = 0; j < L; ++j) lane[j] = F::fold(lane[j], Term::term(a, b, i + j, i + j, conj));
    for (int j = 0; i < end; ++i, ++j) lane[j] = F::fold(lane[j], Term::term(a, b, i, i, conj));
    for (int w = L / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) lane[j] = F::fold(lane[j], lane[j + w]);
    pairs.add(lane[0]);
  }
  return pairs.total();
}

// fold_run for float and double terms, also built for AVX2 and AVX-512 and picked for the CPU
// at run time (min and max with NaN propagation take several baseline instructions per vector;
// numpy's loops use the wide ones). The lanes are the same, so are the result's bits.
#if defined(__x86_64__)
template <typename U, typename A, typename F, typename Term>
__attribute__((target("avx2"))) A fold_run_avx2(const U* a, const U* b, long long lo, long long hi, int conj) {
  return fold_run<U, A, F, Term>(a, b, lo, hi, conj);
}
template <typename U, typename A, typename F, typename Term>
__attribute__((target("avx512f"))) A fold_run_avx512(const U* a, const U* b, long long lo, long long hi, int conj) {
  return fold_run<U, A, F, Term>(a, b, lo, hi, conj);
}
#endif

template <typename U, typename A, typename F, typename Term>
__device__ __forceinline__ A fold_run_widest(const U* a, const U* b, long long lo, long long hi, int conj) {
#if defined(__x86_64__)
  if constexpr (pygpu::traits<U>::kind == 'f' && sizeof(U) >= 4) {
    const int level = pygpu::vector_math::vector_level();
    if (level == 2) return fold_run_avx512<U, A, F, Term>(a, b, lo, hi, conj);
    if (level == 1) return fold_run_avx2<U, A, F, Term>(a, b, lo, hi, conj);
  }
#endif
  return fold_run<U, A, F, Term>(a, b, lo, hi, conj);
}
#endif

template <typename U, typename A, typename F, typename Term>
__device__ __forceinline__ void reduce_stage(A* out, const U* a, const U* b, long long n, const long long* layout,
                                             const void* subset, int subset_kind, int conj, A* partials,
                                             unsigned int* ticket) {
  A acc = F::neutral();
#if defined(PYGPU_DEVICE_BUILD)
  if (!layout && !subset) {
    acc = fold_slice<U, A, F, Term>(a, b, n, conj);
  } else {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
      const long long j = subset ? subset_index(subset, subset_kind, i) : i;
      long long ia = j, ib = j;
      if (layout) strided_offsets(layout, j, &ia, &ib);
      acc = F::fold(acc, Term::term(a, b, ia, ib, conj));
    }
  }
#else
  // This thread's run: the terms split evenly over the grid's threads.
  const long long threads = (long long)blockDim.x * gridDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long lo = n / threads * t + (t < n % threads ? t : n % threads);
  const long long hi = lo + n / threads + (t < n % threads ? 1 : 0);
  if (!layout && !subset) {
    acc = fold_run_widest<U, A, F, Term>(a, b, lo, hi, conj);
  } else {
    Pairwise<A, F> pairs;
    A run = F::neutral();
    for (long long i = lo; i < hi; ++i) {
      const long long j = subset ? subset_index(subset, subset_kind, i) : i;
      long long ia = j, ib = j;
      if (layout) strided_offsets(layout, j, &ia, &ib);
      run = F::fold(run, Term::term(a, b, ia, ib, conj));
      if ((i - lo) % HostFold<A, F>::kRun == HostFold<A, F>::kRun - 1) {
        pairs.add(run);
        run = F::neutral();
      }
    }
    pairs.add(run);
    acc = pairs.total();
  }
#endif
  acc = block_fold<A, F>(acc);
  if (!ticket) {
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
    return;
  }
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    last = take_ticket(ticket) == gridDim.x - 1;
  }
  __syncthreads();  // also ends block_fold's use of shared memory before the second fold's
  if (!last) return;
  A v = F::neutral();
  for (unsigned int i = threadIdx.x; i < gridDim.x; i += blockDim.x) v = F::fold(v, load_uncached(partials + i));
  v = block_fold<A, F>(v);
  if (threadIdx.x == 0) {
    out[0] = v;
    *ticket = 0;
  }
}

}  // namespace pygpu_reduce

// The common parameter list of every reduction kernel (see the top of this file).
#define PYGPU_REDUCE_PARAMS(U, A)                                                                      \
  A* out, const U* a, const U* b, long long n, const long long* layout, const void* subset, int subset_kind, \
      int conj, A* partials, unsigned int* ticket

// NAME: kernel name; U: element type; A: accumulator/result type; F: fold; TERM: term template.
// PART: the key of the module it goes into when the source is built in parts (pygpu_parts.h,
// python/pygpu/_toolchain/kernel_parts.py): the name's last dtype, or <op>_<dtype>.
#define PYGPU_REDUCE_KERNEL(NAME, PART, U, A, F, TERM)                                                \
  PYGPU_PART_KEEP(PART)(                                                                              \
      PYGPU_KERNEL void __launch_bounds__(PYGPU_REDUCE_BLOCK) NAME(PYGPU_REDUCE_PARAMS(U, A)) {     \
        pygpu_reduce::reduce_stage<U, A, F, pygpu_reduce::TERM<U, A>>(out, a, b, n, layout, subset, subset_kind, \
                                                                      conj, partials, ticket);        \
      } PYGPU_EXPORT(NAME))

#define PYGPU_SUM(NAME, PART, U, A) PYGPU_REDUCE_KERNEL(NAME, PART, U, A, pygpu_reduce::Sum<A>, Value)
#define PYGPU_DOT(NAME, PART, T) PYGPU_REDUCE_KERNEL(NAME, PART, T, T, pygpu_reduce::Sum<T>, Product)
#define PYGPU_MIN(NAME, PART, T) PYGPU_REDUCE_KERNEL(NAME, PART, T, T, pygpu_reduce::Min<T>, Value)
#define PYGPU_MAX(NAME, PART, T) PYGPU_REDUCE_KERNEL(NAME, PART, T, T, pygpu_reduce::Max<T>, Value)
#define PYGPU_ANY(NAME, PART, U) PYGPU_REDUCE_KERNEL(NAME, PART, U, bool, pygpu_reduce::Any, NonZero)
#define PYGPU_ALL(NAME, PART, U) PYGPU_REDUCE_KERNEL(NAME, PART, U, bool, pygpu_reduce::All, NonZero)

// Kernel names: reduce_<op>_<numpy dtype name>[_<result dtype name>], each followed by its part
// key: its last dtype, or <op>_<dtype> where that dtype's module is split by operation (float32
// and float64). kernels/selfcheck.py finds them in the preprocessed source.

// sum: numpy's accumulators (bool and signed integers to int64, unsigned to uint64), floats as
// themselves, float32 also into float64 (dtype=np.float64); narrow integers also as themselves
// (dtype= and the second stage of dot).
PYGPU_SUM(reduce_sum_bool_int64, int64, bool, long long)
PYGPU_SUM(reduce_sum_int8_int64, int64, signed char, long long)
PYGPU_SUM(reduce_sum_int16_int64, int64, short, long long)
PYGPU_SUM(reduce_sum_int32_int64, int64, int, long long)
PYGPU_SUM(reduce_sum_int64_int64, int64, long long, long long)
PYGPU_SUM(reduce_sum_uint8_uint64, uint64, unsigned char, unsigned long long)
PYGPU_SUM(reduce_sum_uint16_uint64, uint64, unsigned short, unsigned long long)
PYGPU_SUM(reduce_sum_uint32_uint64, uint64, unsigned int, unsigned long long)
PYGPU_SUM(reduce_sum_uint64_uint64, uint64, unsigned long long, unsigned long long)
PYGPU_SUM(reduce_sum_int8_int8, int8, signed char, signed char)
PYGPU_SUM(reduce_sum_int16_int16, int16, short, short)
PYGPU_SUM(reduce_sum_int32_int32, int32, int, int)
PYGPU_SUM(reduce_sum_uint8_uint8, uint8, unsigned char, unsigned char)
PYGPU_SUM(reduce_sum_uint16_uint16, uint16, unsigned short, unsigned short)
PYGPU_SUM(reduce_sum_uint32_uint32, uint32, unsigned int, unsigned int)
PYGPU_SUM(reduce_sum_float16_float32, float32, pygpu::half, float)
PYGPU_SUM(reduce_sum_float32_float32, float32, float, float)
PYGPU_SUM(reduce_sum_float32_float64, float64, float, double)
PYGPU_SUM(reduce_sum_float64_float64, float64, double, double)
PYGPU_SUM(reduce_sum_complex64_complex64, complex64, pygpu::complex64, pygpu::complex64)
PYGPU_SUM(reduce_sum_complex64_complex128, complex128, pygpu::complex64, pygpu::complex128)
PYGPU_SUM(reduce_sum_complex128_complex128, complex128, pygpu::complex128, pygpu::complex128)

// dot (and vdot): both operands and the result of one type (the Python side casts to numpy's
// common type first).
PYGPU_DOT(reduce_dot_int8, int8, signed char)
PYGPU_DOT(reduce_dot_int16, int16, short)
PYGPU_DOT(reduce_dot_int32, int32, int)
PYGPU_DOT(reduce_dot_int64, int64, long long)
PYGPU_DOT(reduce_dot_uint8, uint8, unsigned char)
PYGPU_DOT(reduce_dot_uint16, uint16, unsigned short)
PYGPU_DOT(reduce_dot_uint32, uint32, unsigned int)
PYGPU_DOT(reduce_dot_uint64, uint64, unsigned long long)
PYGPU_DOT(reduce_dot_float32, float32, float)
PYGPU_DOT(reduce_dot_float64, float64, double)
PYGPU_DOT(reduce_dot_complex64, complex64, pygpu::complex64)
PYGPU_DOT(reduce_dot_complex128, complex128, pygpu::complex128)

// min and max.
PYGPU_MIN(reduce_min_int8, int8, signed char)
PYGPU_MIN(reduce_min_int16, int16, short)
PYGPU_MIN(reduce_min_int32, int32, int)
PYGPU_MIN(reduce_min_int64, int64, long long)
PYGPU_MIN(reduce_min_uint8, uint8, unsigned char)
PYGPU_MIN(reduce_min_uint16, uint16, unsigned short)
PYGPU_MIN(reduce_min_uint32, uint32, unsigned int)
PYGPU_MIN(reduce_min_uint64, uint64, unsigned long long)
PYGPU_MIN(reduce_min_float16, float16, pygpu::half)
PYGPU_MIN(reduce_min_float32, min_float32, float)
PYGPU_MIN(reduce_min_float64, min_float64, double)
PYGPU_MAX(reduce_max_int8, int8, signed char)
PYGPU_MAX(reduce_max_int16, int16, short)
PYGPU_MAX(reduce_max_int32, int32, int)
PYGPU_MAX(reduce_max_int64, int64, long long)
PYGPU_MAX(reduce_max_uint8, uint8, unsigned char)
PYGPU_MAX(reduce_max_uint16, uint16, unsigned short)
PYGPU_MAX(reduce_max_uint32, uint32, unsigned int)
PYGPU_MAX(reduce_max_uint64, uint64, unsigned long long)
PYGPU_MAX(reduce_max_float16, float16, pygpu::half)
PYGPU_MAX(reduce_max_float32, max_float32, float)
PYGPU_MAX(reduce_max_float64, max_float64, double)

// any and all: a bool result; bool/uint8 also serve every 1-byte type, and so on by size, since
// "non-zero" only looks at the bits (the Python side views floats as floats: -0.0 is zero).
PYGPU_ANY(reduce_any_bool, bool, bool)
PYGPU_ANY(reduce_any_uint8, uint8, unsigned char)
PYGPU_ANY(reduce_any_uint16, uint16, unsigned short)
PYGPU_ANY(reduce_any_uint32, uint32, unsigned int)
PYGPU_ANY(reduce_any_uint64, uint64, unsigned long long)
PYGPU_ANY(reduce_any_float16, float16, pygpu::half)
PYGPU_ANY(reduce_any_float32, any_float32, float)
PYGPU_ANY(reduce_any_float64, any_float64, double)
PYGPU_ANY(reduce_any_complex64, complex64, pygpu::complex64)
PYGPU_ANY(reduce_any_complex128, complex128, pygpu::complex128)
PYGPU_ALL(reduce_all_bool, bool, bool)
PYGPU_ALL(reduce_all_uint8, uint8, unsigned char)
PYGPU_ALL(reduce_all_uint16, uint16, unsigned short)
PYGPU_ALL(reduce_all_uint32, uint32, unsigned int)
PYGPU_ALL(reduce_all_uint64, uint64, unsigned long long)
PYGPU_ALL(reduce_all_float16, float16, pygpu::half)
PYGPU_ALL(reduce_all_float32, all_float32, float)
PYGPU_ALL(reduce_all_float64, all_float64, double)
PYGPU_ALL(reduce_all_complex64, complex64, pygpu::complex64)
PYGPU_ALL(reduce_all_complex128, complex128, pygpu::complex128)
