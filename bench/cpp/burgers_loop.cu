// The C++ baseline for bench/burgers.py: the Burgers demo's solver loop written directly against
// the CUDA runtime, on the same kernel source (kernels/burgers.cu, included below), with the same
// launch shape and the same work per step as demos/burger/burger.py:
//   plain: one launch per step on a non-blocking stream, plus (with snapshots) a device-to-device
//          copy of the new solution into row k of a device-resident snapshot matrix;
//   graph: batches of steps captured once into a CUDA graph and replayed; snapshot steps write
//          straight into a staging block of rows, moved into the snapshot matrix by one copy per
//          batch (the layout of burger.py's --graph);
//   kcopy: an experiment, not in the demo: plain, but the snapshot copy is a copy kernel instead
//          of cudaMemcpyAsync.
//
//   nvcc -O3 -std=c++17 -arch=native -I kernels -o burgers_loop bench/cpp/burgers_loop.cu
//   burgers_loop NX STEPS REPS plain|graph|kcopy SNAPSHOTS(0|1) [BATCH [DT [NU [lagged|periodic [GRID]]]]]
//
// GRID: blocks of 256 threads (default: one per 256 interior points); bench/burgers.py passes the
// demo's launch shape, so both loops launch the same kernel the same way.
//
// BURGERS_ROW_OFFSET (environment, bytes, default 0, a multiple of 8): each of the two rows starts
// that far into an allocation of its own, to see what the rows' placement in memory costs a step.
//
// Prints one JSON object: the wall time of each repetition (first launch to the end of the last
// step, host clock around cudaStreamSynchronize, as burger.py measures) and the median per step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "burgers.cu"

#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

typedef void (*StepKernel)(const double*, double*, int, double, double);

__global__ void copy_row(const double* __restrict__ src, double* __restrict__ dst, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
    dst[i] = src[i];
}

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s NX STEPS REPS plain|graph|kcopy SNAPSHOTS(0|1) [BATCH [DT [NU [lagged|periodic [GRID]]]]]\n", argv[0]);
    return 2;
  }
  const long long nx = std::atoll(argv[1]);
  const long long steps = std::atoll(argv[2]);
  const int reps = std::atoi(argv[3]);
  const std::string mode = argv[4];
  const bool snapshots = std::atoi(argv[5]) != 0;
  const long long batch_target = argc > 6 ? std::atoll(argv[6]) : 200;
  const double dt = argc > 7 ? std::atof(argv[7]) : 0.001;
  const double nu = argc > 8 ? std::atof(argv[8]) : 0.01;
  const std::string scheme = argc > 9 ? argv[9] : "lagged";
  const long long grid_arg = argc > 10 ? std::atoll(argv[10]) : 0;
  const StepKernel step = scheme == "periodic" ? burgers_step_periodic : burgers_step_lagged;
  const int n_total = (int)(nx + 2);
  const size_t row = (size_t)n_total * sizeof(double);
  const double pi = 3.14159265358979323846, h = 2.0 * pi / (double)nx;
  const double c1 = nu * dt / (h * h), c2 = dt / (2.0 * h);
  const unsigned block = 256;
  const unsigned grid = (unsigned)(grid_arg > 0 ? grid_arg : std::max<long long>(1, (nx + block - 1) / block));
  const bool kernel_copy = mode == "kcopy";

  std::vector<double> u0(n_total);
  for (long long i = 1; i <= nx; ++i) u0[i] = std::sin(2.0 * pi * (double)(i - 1) / (double)nx);
  u0[0] = u0[nx];
  u0[nx + 1] = u0[1];

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  double *a, *b, *snap = nullptr, *stage = nullptr;
  const char* offset_env = std::getenv("BURGERS_ROW_OFFSET");
  const size_t row_offset = offset_env ? (size_t)std::atoll(offset_env) / sizeof(double) * sizeof(double) : 0;
  char *a_base, *b_base;
  CHECK(cudaMalloc(&a_base, row + row_offset));
  CHECK(cudaMalloc(&b_base, row + row_offset));
  a = reinterpret_cast<double*>(a_base + row_offset);
  b = reinterpret_cast<double*>(b_base + row_offset);
  if (snapshots) CHECK(cudaMalloc(&snap, row * (size_t)steps));

  // The graph: `per_batch` steps; with snapshots, `stage_rows` rows of staging (>= 2, so no step
  // works in place) and the batch starts from the previous batch's last staged row.
  long long stage_rows = 0, per_batch = 0;
  cudaGraphExec_t exec = nullptr;
  double* start = a;
  if (mode == "graph") {
    if (snapshots) {
      stage_rows = std::max<long long>(2, batch_target);
      per_batch = stage_rows;
      CHECK(cudaMalloc(&stage, row * (size_t)stage_rows));
      start = stage + (stage_rows - 1) * n_total;
    } else {
      per_batch = std::max<long long>(2, batch_target + (batch_target & 1));
    }
    if (steps / per_batch > 0) {
      cudaGraph_t graph;
      CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      double* src = start;
      for (long long j = 0; j < per_batch; ++j) {
        double* dst = snapshots ? stage + j * n_total : (j & 1 ? a : b);
        step<<<grid, block, 0, stream>>>(src, dst, n_total, c1, c2);
        src = dst;
      }
      CHECK(cudaStreamEndCapture(stream, &graph));
      CHECK(cudaGraphInstantiate(&exec, graph, 0));
      CHECK(cudaGraphDestroy(graph));
    }
  } else if (mode != "plain" && mode != "kcopy") {
    std::fprintf(stderr, "mode must be plain, graph or kcopy\n");
    return 2;
  }

  std::vector<double> seconds;
  double u10 = 0.0;
  for (int r = 0; r < reps + 1; ++r) {  // the first repetition warms up and is not reported
    CHECK(cudaMemcpy(a, u0.data(), row, cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    long long done = 0, rows = 0;
    double* src = a;
    if (exec) {
      if (start != a) CHECK(cudaMemcpyAsync(start, a, row, cudaMemcpyDeviceToDevice, stream));
      for (long long k = 0; k < steps / per_batch; ++k) {
        CHECK(cudaGraphLaunch(exec, stream));
        if (snapshots) {
          CHECK(cudaMemcpyAsync(snap + rows * n_total, stage, row * (size_t)stage_rows, cudaMemcpyDeviceToDevice, stream));
          rows += stage_rows;
        }
        done += per_batch;
      }
      src = start;
    }
    double* pair[2] = {src == a ? b : a, src == a ? a : b};
    for (long long j = 0; done < steps; ++j, ++done) {
      double* dst = pair[j & 1];
      step<<<grid, block, 0, stream>>>(src, dst, n_total, c1, c2);
      if (snapshots && kernel_copy) {
        copy_row<<<grid, block, 0, stream>>>(dst, snap + rows * n_total, n_total);
        ++rows;
      } else if (snapshots) {
        CHECK(cudaMemcpyAsync(snap + rows * n_total, dst, row, cudaMemcpyDeviceToDevice, stream));
        ++rows;
      }
      src = dst;
    }
    CHECK(cudaStreamSynchronize(stream));
    const auto t1 = std::chrono::steady_clock::now();
    CHECK(cudaGetLastError());
    if (r > 0) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    CHECK(cudaMemcpy(&u10, src + 10, sizeof(double), cudaMemcpyDeviceToHost));
  }

  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
  std::printf("{\"nx\": %lld, \"steps\": %lld, \"mode\": \"%s\", \"snapshots\": %s, \"per_batch\": %lld, "
              "\"grid\": %u, \"row_offset\": %zu, \"u10\": %.17g, \"median_step_us\": %.6f, \"seconds\": [",
              nx, steps, mode.c_str(), snapshots ? "true" : "false", per_batch, grid, row_offset, u10, median / (double)steps * 1e6);
  for (size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.9f", i ? ", " : "", seconds[i]);
  std::printf("]}\n");

  if (exec) CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaFree(a_base));
  CHECK(cudaFree(b_base));
  if (snap) CHECK(cudaFree(snap));
  if (stage) CHECK(cudaFree(stage));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
