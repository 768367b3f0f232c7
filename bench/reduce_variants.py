"""Where a 2^24-element float32 sum spends its time on a GPU (issue 30), and candidate stage-1
kernels beside the bundled one, all timed with CUDA events in one process against the
device-to-device copy. A measuring tool for choosing kernels/reduce.cu's shape, not a test.

    PYGPU_BACKEND=cuda python3 bench/reduce_variants.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from typing import Any

import numpy as np

import pygpu
import pygpu.gpuarray as ga
from pygpu.compiler import SourceModule
from pygpu.gpuarray import _bundled, _reductions

from array_bench import event_seconds  # this folder: CUDA events around back-to-back calls

N = int(os.environ.get("REDUCE_VARIANTS_N", 1 << 24))
REPS = int(os.environ.get("REDUCE_VARIANTS_REPS", 50))

VARIANTS = r"""
#define BLOCK 256
template <typename T, int THREADS = BLOCK> __device__ __forceinline__ T block_sum(T v) {
  __shared__ T s[THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < THREADS / 32 ? s[threadIdx.x] : (T)0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

// How a thread loads its 16 bytes: plain, through L2 only (__ldcg), or read-only with no L1
// allocation and a 256-byte L2 prefetch (Hopper's sector promotion hint).
struct Plain { static __device__ __forceinline__ float4 load(const float4* p) { return __ldg(p); } };
struct Global { static __device__ __forceinline__ float4 load(const float4* p) { return __ldcg(p); } };
struct Prefetch256 {
  static __device__ __forceinline__ float4 load(const float4* p) {
    float4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
  }
};

// UNROLL 16-byte loads in flight per thread per iteration, grid-stride over quads.
template <int UNROLL, typename L = Plain>
__device__ __forceinline__ float slice_sum(const float4* a, long long quads) {
  const long long stride = (long long)blockDim.x * gridDim.x;
  long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  float acc[UNROLL];
  for (int k = 0; k < UNROLL; ++k) acc[k] = 0.f;
  for (; v + (UNROLL - 1) * stride < quads; v += UNROLL * stride) {
    float4 q[UNROLL];
    for (int k = 0; k < UNROLL; ++k) q[k] = L::load(a + v + k * stride);
    for (int k = 0; k < UNROLL; ++k) acc[k] += (q[k].x + q[k].y) + (q[k].z + q[k].w);
  }
  for (; v < quads; v += stride) { float4 q = L::load(a + v); acc[0] += (q.x + q.y) + (q.z + q.w); }
  float t = 0.f;
  for (int k = 0; k < UNROLL; ++k) t += acc[k];
  return t;
}

extern "C" __global__ void __launch_bounds__(BLOCK) sum_u2(float* out, const float4* a, long long quads) {
  float v = block_sum(slice_sum<2>(a, quads));
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_u4(float* out, const float4* a, long long quads) {
  float v = block_sum(slice_sum<4>(a, quads));
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_u8(float* out, const float4* a, long long quads) {
  float v = block_sum(slice_sum<8>(a, quads));
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_hint_u4(float* out, const float4* a, long long quads) {
  float v = block_sum(slice_sum<4, Prefetch256>(a, quads));
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_hint_u8(float* out, const float4* a, long long quads) {
  float v = block_sum(slice_sum<8, Prefetch256>(a, quads));
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_cg_u4(float* out, const float4* a, long long quads) {
  float v = block_sum(slice_sum<4, Global>(a, quads));
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
extern "C" __global__ void __launch_bounds__(BLOCK) fold_partials(float* out, const float* p, int n) {
  float v = 0.f;
  for (int i = threadIdx.x; i < n; i += BLOCK) v += p[i];
  v = block_sum(v);
  if (threadIdx.x == 0) *out = v;
}
// One launch: the last block to finish folds every block's value (its counter reset for the
// next launch). VECTOR: the last block reads the values as 16-byte L2 loads (__ldcg) rather than
// 4-byte volatile words.
template <typename L, bool VECTOR>
__device__ __forceinline__ void sum_once(float* out, float* partial, unsigned int* done, const float4* a,
                                         long long quads) {
  __shared__ bool last;
  float v = block_sum(slice_sum<4, L>(a, quads));
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = v;
    __threadfence();
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) {
    __threadfence();
    float w = 0.f;
    if (VECTOR && gridDim.x % 4 == 0) {
      for (int i = threadIdx.x; i < gridDim.x / 4; i += BLOCK) {
        const float4 q = __ldcg(reinterpret_cast<const float4*>(partial) + i);
        w += (q.x + q.y) + (q.z + q.w);
      }
    } else {
      for (int i = threadIdx.x; i < gridDim.x; i += BLOCK) w += ((volatile float*)partial)[i];
    }
    w = block_sum(w);
    if (threadIdx.x == 0) { *out = w; *done = 0; }
  }
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_once_u4(float* out, float* partial, unsigned int* done,
                                                                const float4* a, long long quads) {
  sum_once<Plain, false>(out, partial, done, a, quads);
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_once_vec_u4(float* out, float* partial, unsigned int* done,
                                                                    const float4* a, long long quads) {
  sum_once<Plain, true>(out, partial, done, a, quads);
}
extern "C" __global__ void __launch_bounds__(BLOCK) sum_once_hint_vec_u4(float* out, float* partial,
                                                                         unsigned int* done, const float4* a,
                                                                         long long quads) {
  sum_once<Prefetch256, true>(out, partial, done, a, quads);
}
// The same one pass with the ticket taken by a release-acquire atomic (no full __threadfence on
// every block: the atomic orders the block's partial before its ticket), blocks of THREADS.
template <int THREADS>
__device__ __forceinline__ void sum_once_release(float* out, float* partial, unsigned int* done, const float4* a,
                                                 long long quads) {
  __shared__ bool last;
  float v = block_sum<float, THREADS>(slice_sum<4, Plain>(a, quads));
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = v;
    unsigned int prev;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(done) : "memory");
    last = prev == gridDim.x - 1;
  }
  __syncthreads();
  if (last) {
    float w = 0.f;
    for (int i = threadIdx.x; i < gridDim.x; i += THREADS) w += ((volatile float*)partial)[i];
    w = block_sum<float, THREADS>(w);
    if (threadIdx.x == 0) { *out = w; *done = 0; }
  }
}
extern "C" __global__ void __launch_bounds__(256) sum_once_rel_b256(float* out, float* partial, unsigned int* done,
                                                                    const float4* a, long long quads) {
  sum_once_release<256>(out, partial, done, a, quads);
}
extern "C" __global__ void __launch_bounds__(512) sum_once_rel_b512(float* out, float* partial, unsigned int* done,
                                                                    const float4* a, long long quads) {
  sum_once_release<512>(out, partial, done, a, quads);
}
extern "C" __global__ void __launch_bounds__(1024) sum_once_rel_b1024(float* out, float* partial, unsigned int* done,
                                                                      const float4* a, long long quads) {
  sum_once_release<1024>(out, partial, done, a, quads);
}
"""


def main() -> int:
    rng = np.random.default_rng(0)
    host = rng.random(N).astype(np.float32)
    a = ga.to_gpu(host)
    dst = ga.empty_like(a)
    out: dict[str, Any] = {}
    copy_s = event_seconds(lambda: pygpu.memcpy_dtod(dst.ptr, a.ptr, a.nbytes), REPS)
    copy_bw = 2 * a.nbytes / copy_s
    out["copy_GBps"] = copy_bw / 1e9
    times: dict[str, float] = {}
    times["pygpu a.sum()"] = event_seconds(lambda: a.sum(), REPS)
    stage1 = _bundled.function("reduce", "reduce_sum_float32_float32", _reductions._SIGNATURE)
    stage2 = stage1
    grid, block = _bundled.reduction_launch(N)
    out["bundled grid"] = grid
    part = ga.empty((grid,), np.float32)
    res = ga.empty((), np.float32)

    def bundled_stage1() -> None:
        stage1.prepared_async_call((grid, 1), (block, 1, 1), None, part.ptr, a.ptr, a.ptr, N, 0, 0, 0, 0, 0, 0)

    def bundled_stage2() -> None:
        stage2.prepared_async_call((1, 1), (block, 1, 1), None, res.ptr, part.ptr, part.ptr, grid, 0, 0, 0, 0, 0, 0)

    times["bundled stage 1"] = event_seconds(bundled_stage1, REPS)
    times["bundled stage 2"] = event_seconds(bundled_stage2, REPS)
    times["bundled both, no Python between"] = event_seconds(lambda: (bundled_stage1(), bundled_stage2()), REPS)
    scratch = _reductions._scratch(None)

    def bundled_one_pass() -> None:
        stage1.prepared_async_call(
            (grid, 1),
            (block, 1, 1),
            None,
            res.ptr,
            a.ptr,
            a.ptr,
            N,
            0,
            0,
            0,
            0,
            scratch + _reductions._TICKET_BYTES,
            scratch,
        )

    times["bundled one pass"] = event_seconds(bundled_one_pass, REPS)

    def with_events() -> None:
        bundled_stage1()
        pygpu.cudaEventRecord(pygpu.cudaEvent_t(2), None)
        bundled_stage2()
        pygpu.cudaEventRecord(pygpu.cudaEvent_t(2), None)

    def with_new_partials() -> None:
        fresh = ga.empty((grid,), np.float32)
        stage1.prepared_async_call((grid, 1), (block, 1, 1), None, fresh.ptr, a.ptr, a.ptr, N, 0, 0, 0, 0, 0, 0)
        stage2.prepared_async_call((1, 1), (block, 1, 1), None, res.ptr, fresh.ptr, fresh.ptr, grid, 0, 0, 0, 0, 0, 0)

    times["bundled both + 2 event records"] = event_seconds(with_events, REPS)
    times["bundled both, partials allocated per call"] = event_seconds(with_new_partials, REPS)
    if pygpu.capabilities().activity_records:
        # The device's own timeline of a few a.sum() calls: kernels, fills, copies and the gaps.
        a.sum()
        with pygpu.profile() as p:
            for _ in range(4):
                a.sum()
        work = [x for x in p.activities if x.kind in ("kernel", "memset", "memcpy_dtod", "memcpy_htod", "memcpy_dtoh")]
        t0 = work[0].start_ns if work else 0
        out["a.sum() timeline (start us, duration us, what)"] = [
            (round((x.start_ns - t0) / 1e3, 2), round(x.duration_ns / 1e3, 2), x.label) for x in work
        ]
    mod = SourceModule(VARIANTS, no_extern_c=True, options=["-std=c++17"])
    sms = pygpu.driver.Context.get_device().get_attribute(pygpu.driver.device_attribute.MULTIPROCESSOR_COUNT)
    out["SMs"] = sms
    quads = N // 4
    fold = mod.get_function("fold_partials")
    fold.prepare("PPi")
    onces = {
        name: mod.get_function(name).prepare("PPPPq")
        for name in ("sum_once_u4", "sum_once_vec_u4", "sum_once_hint_vec_u4")
    }
    done = ga.zeros((1,), np.uint32)
    big_part = ga.empty((65536,), np.float32)
    for name in ("sum_u2", "sum_u4", "sum_u8", "sum_hint_u4", "sum_hint_u8", "sum_cg_u4"):
        f = mod.get_function(name)
        f.prepare("PPq")
        for g in (sms * 2, sms * 4, sms * 8, 1024, 2048, 4096):

            def one(f: Any = f, g: int = g) -> None:
                f.prepared_async_call((g, 1), (256, 1, 1), None, big_part.ptr, a.ptr, quads)

            def two(f: Any = f, g: int = g) -> None:
                one(f, g)
                fold.prepared_async_call((1, 1), (256, 1, 1), None, res.ptr, big_part.ptr, g)

            times[f"{name} grid {g} stage 1"] = event_seconds(one, REPS)
            times[f"{name} grid {g} two stages"] = event_seconds(two, REPS)
    onces |= {f"sum_once_rel_b{t}": mod.get_function(f"sum_once_rel_b{t}").prepare("PPPPq") for t in (256, 512, 1024)}
    for once_name, once in onces.items():
        threads = int(once_name.rsplit("_b", 1)[1]) if "_rel_b" in once_name else 256
        for g in sorted({sms * 2048 // threads // 2, sms * 2048 // threads, 1024 * 256 // threads, 2048, 4096}):

            def single(once: Any = once, g: int = g, threads: int = threads) -> None:
                once.prepared_async_call((g, 1), (threads, 1, 1), None, res.ptr, big_part.ptr, done.ptr, a.ptr, quads)

            times[f"{once_name} grid {g}"] = event_seconds(single, REPS)
            single()
            got = float(res.get())
            out[f"{once_name} grid {g} relerr"] = abs(got - float(host.astype(np.float64).sum())) / float(host.sum())
    try:
        import cupy as cp

        c = cp.asarray(host)
        cp_times: list[float] = []
        for _ in range(7):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            for _ in range(REPS):
                cp.sum(c)
            e.record()
            e.synchronize()
            cp_times.append(cp.cuda.get_elapsed_time(s, e) / 1e3 / REPS)
        times["cupy sum"] = statistics.median(cp_times)
    except ImportError:
        pass
    out["us"] = {k: round(v * 1e6, 2) for k, v in times.items()}
    out["fraction_of_copy"] = {k: round(a.nbytes / v / copy_bw, 3) for k, v in times.items()}
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
