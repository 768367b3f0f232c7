// The C++ baseline for bench/run.py: the same figures through the CUDA runtime API,
// measured the same way (many calls per sample, 7 samples, the median). Prints one JSON
// object on stdout.
//
//   /usr/local/cuda/bin/nvcc -O3 -arch=native -o microbench bench/cpp/microbench.cu
//   ./microbench [--quick]
#include <cuda_runtime.h>
#ifdef WITH_DRIVER
#include <cuda.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

// The kernels of kernels/testing.cu used for the launch figures.
extern "C" __global__ void empty_kernel() {}
extern "C" __global__ void scale_args(double* out, int i, double d) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = i * d;
}

namespace {

bool g_quick = false;
bool g_skip_bandwidth = false;
int g_samples = 7;
double g_sample_s = 0.04;
size_t g_big = 256u << 20;
int g_reps = 3;

std::string g_errors;

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

double now_ns() {
  return (double)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// µs per call of `body`, `after` run once at the end of each sample and counted in it.
double per_call_us(const std::function<void()>& body, const std::function<void()>& after = nullptr) {
  auto sample = [&](long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; ++i) body();
    if (after) after();
    return (now_ns() - t0) / n;
  };
  long n = 1;
  double elapsed = 0;
  for (;;) {
    double t0 = now_ns();
    sample(n);
    elapsed = (now_ns() - t0) / 1e9;
    if (elapsed >= g_sample_s / 4 || n >= 1000000) break;
    n *= 4;
  }
  if (elapsed > 0) n = std::max(1L, std::min(1000000L, (long)(n * g_sample_s / elapsed)));
  std::vector<double> r;
  for (int s = 0; s < g_samples; ++s) r.push_back(sample(n));
  return median(r) / 1e3;
}

double bandwidth_gbs(const std::function<void()>& copy, size_t bytes, const std::function<void()>& finish = nullptr) {
  copy();
  if (finish) finish();
  std::vector<double> r;
  for (int s = 0; s < g_samples; ++s) {
    double t0 = now_ns();
    for (int i = 0; i < g_reps; ++i) copy();
    if (finish) finish();
    double t = (now_ns() - t0) / 1e9;
    r.push_back((double)bytes * g_reps / t / 1e9);
  }
  return median(r);
}

struct Figure {
  std::string name;
  double value;
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--quick") == 0) g_quick = true;
    else if (std::strcmp(argv[i], "--skip-bandwidth") == 0) g_skip_bandwidth = true;
  if (g_quick) {
    g_samples = 3;
    g_sample_s = 0.002;
    g_big = 1u << 20;
    g_reps = 1;
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));  // create the primary context before timing
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int runtime_version = 0, driver_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  cudaDriverGetVersion(&driver_version);

  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev));
  double* out;
  CHECK(cudaMalloc(&out, 8));
  double* host8 = (double*)std::malloc(8);
  host8[0] = 0;
  auto sync = [&] { CHECK(cudaStreamSynchronize(s)); };
  auto devsync = [&] { CHECK(cudaDeviceSynchronize()); };

  std::vector<Figure> f;
  std::vector<Figure> extra;
  int dev = 0;
  volatile int sink = 0;
  f.push_back({"get_device", per_call_us([&] { cudaGetDevice(&dev); sink += dev; })});
  f.push_back({"event_record", per_call_us([&] { cudaEventRecord(ev, s); }, sync)});
  sync();
  f.push_back({"stream_sync_idle", per_call_us([&] { cudaStreamSynchronize(s); })});
  extra.push_back({"cudaStreamQuery_idle", per_call_us([&] { cudaStreamQuery(s); })});
  extra.push_back({"cudaGetLastError", per_call_us([&] { sink += (int)cudaGetLastError(); })});
  f.push_back({"malloc_free_1mib", per_call_us([&] {
                 void* p;
                 cudaMalloc(&p, 1 << 20);
                 cudaFree(p);
               })});
  f.push_back({"memcpy_htod_8b", per_call_us([&] { cudaMemcpy(out, host8, 8, cudaMemcpyHostToDevice); })});
  f.push_back({"memcpy_dtoh_8b", per_call_us([&] { cudaMemcpy(host8, out, 8, cudaMemcpyDeviceToHost); })});
  f.push_back({"launch_empty", per_call_us([&] { empty_kernel<<<1, 1, 0, s>>>(); }, sync)});
  int i3 = 3;
  double d2 = 2.0;
  double launch_args = per_call_us([&] { scale_args<<<1, 1, 0, s>>>(out, i3, d2); }, sync);
  f.push_back({"launch_args", launch_args});
  // C++ has no separate prepared call: the same launch is the baseline for both.
  f.push_back({"launch_args_prepared", launch_args});
  extra.push_back({"launch_empty_default_stream", per_call_us([&] { empty_kernel<<<1, 1>>>(); }, devsync)});
  extra.push_back({"cudaLaunchKernel_args", per_call_us([&] {
                     void* args[] = {&out, &i3, &d2};
                     cudaLaunchKernel((const void*)scale_args, dim3(1), dim3(1), args, 0, s);
                   }, sync)});

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  scale_args<<<1, 1, 0, s>>>(out, i3, d2);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  f.push_back({"graph_launch", per_call_us([&] { cudaGraphLaunch(exec, s); }, sync)});
  CHECK(cudaGetLastError());

#ifdef WITH_DRIVER
  // The driver calls under pygpu's (it calls the driver API directly), for attribution.
  {
    CUcontext ctx;
    CUdevice cd;
    CUstream cs = (CUstream)s;
    CUevent ce = (CUevent)ev;
    cudaFunction_t fn;
    CHECK(cudaGetFuncBySymbol(&fn, (const void*)empty_kernel));
    CUfunction cf = (CUfunction)fn;
    extra.push_back({"cuCtxGetCurrent", per_call_us([&] { cuCtxGetCurrent(&ctx); })});
    extra.push_back({"cuCtxGetDevice", per_call_us([&] { cuCtxGetDevice(&cd); })});
    sync();
    extra.push_back({"cuStreamQuery_idle", per_call_us([&] { cuStreamQuery(cs); })});
    extra.push_back({"cuStreamSynchronize_idle", per_call_us([&] { cuStreamSynchronize(cs); })});
    extra.push_back({"cuEventRecord", per_call_us([&] { cuEventRecord(ce, cs); }, sync)});
    extra.push_back({"cuLaunchKernel_empty", per_call_us([&] { cuLaunchKernel(cf, 1, 1, 1, 1, 1, 1, 0, cs, nullptr, nullptr); }, sync)});
    // launch_args through the driver API, the floor for a library over it (pygpu, cuda.bindings):
    // the arguments packed in advance, and with the one cuCtxGetCurrent that pygpu adds per launch.
    cudaFunction_t sfn;
    CHECK(cudaGetFuncBySymbol(&sfn, (const void*)scale_args));
    CUfunction scf = (CUfunction)sfn;
    void* scale_params[] = {&out, &i3, &d2};
    extra.push_back({"cuLaunchKernel_args", per_call_us([&] { cuLaunchKernel(scf, 1, 1, 1, 1, 1, 1, 0, cs, scale_params, nullptr); }, sync)});
    extra.push_back({"cuCtxGetCurrent_cuLaunchKernel_args", per_call_us([&] {
                       cuCtxGetCurrent(&ctx);
                       cuLaunchKernel(scf, 1, 1, 1, 1, 1, 1, 0, cs, scale_params, nullptr);
                     }, sync)});
    CUdeviceptr dp;
    extra.push_back({"cuMemAlloc_cuMemFree_8b", per_call_us([&] { cuMemAlloc(&dp, 8); cuMemFree(dp); })});
    extra.push_back({"cuMemcpyHtoD_8b", per_call_us([&] { cuMemcpyHtoD((CUdeviceptr)out, host8, 8); })});
    extra.push_back({"cuMemcpyDtoH_8b", per_call_us([&] { cuMemcpyDtoH(host8, (CUdeviceptr)out, 8); })});
  }
#endif
  extra.push_back({"cudaMalloc_cudaFree_8b", per_call_us([&] {
                     void* p;
                     cudaMalloc(&p, 8);
                     cudaFree(p);
                   })});

  size_t n = g_skip_bandwidth ? 0 : g_big;
  if (n) {
  unsigned char* pageable = (unsigned char*)std::malloc(n);
  std::memset(pageable, 1, n);
  unsigned char* pinned;
  CHECK(cudaMallocHost(&pinned, n));
  std::memset(pinned, 1, n);
  void *d1, *dd2;
  CHECK(cudaMalloc(&d1, n));
  CHECK(cudaMalloc(&dd2, n));
  f.push_back({"htod_pageable_256mib", bandwidth_gbs([&] { cudaMemcpy(d1, pageable, n, cudaMemcpyHostToDevice); }, n)});
  f.push_back({"dtoh_pageable_256mib", bandwidth_gbs([&] { cudaMemcpy(pageable, d1, n, cudaMemcpyDeviceToHost); }, n)});
  f.push_back({"htod_pinned_256mib", bandwidth_gbs([&] { cudaMemcpy(d1, pinned, n, cudaMemcpyHostToDevice); }, n)});
  f.push_back({"dtoh_pinned_256mib", bandwidth_gbs([&] { cudaMemcpy(pinned, d1, n, cudaMemcpyDeviceToHost); }, n)});
  // Read plus write, as the other scripts count it.
  f.push_back({"dtod_256mib", 2 * bandwidth_gbs([&] { cudaMemcpy(dd2, d1, n, cudaMemcpyDeviceToDevice); }, n, devsync)});
  CHECK(cudaGetLastError());
  cudaFreeHost(pinned);
  std::free(pageable);
  cudaFree(d1);
  cudaFree(dd2);
  }

  std::printf("{\"library\": \"C++\", \"figures\": {");
  for (size_t i = 0; i < f.size(); ++i) std::printf("%s\"%s\": %.6g", i ? ", " : "", f[i].name.c_str(), f[i].value);
  std::printf("}, \"errors\": {}, \"notes\": {\"device\": \"%s\", \"runtime_version\": %d, \"driver_version\": %d, "
              "\"sm\": \"%d%d\", \"breakdown_us\": {",
              prop.name, runtime_version, driver_version, prop.major, prop.minor);
  for (size_t i = 0; i < extra.size(); ++i)
    std::printf("%s\"%s\": %.6g", i ? ", " : "", extra[i].name.c_str(), extra[i].value);
  std::printf("}}}\n");

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::free(host8);
  cudaFree(out);
  return sink == 12345 ? 1 : 0;
}
