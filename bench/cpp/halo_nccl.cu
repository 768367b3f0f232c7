// The C++ baseline for the halo exchange of bench/burgers_scaling.py: one rank of the distributed
// Burgers demo's ghost exchange (demos/burger/burger_mpi.py, DistributedSolver.exchange), with
// nothing else: per step one NCCL group of the same four calls in the same order on a
// non-blocking stream,
//   send u[n] to the right neighbour, receive u[0] from the left one,
//   send u[1] to the left neighbour,  receive u[n + 1] from the right one,
// of one double each, the neighbours being those of the periodic ring (with one rank, itself).
//
//   nvcc -O3 -std=c++17 -arch=native -I NCCL/include -o halo_nccl bench/cpp/halo_nccl.cu -L DIR -lnccl
//   LD_LIBRARY_PATH=DIR halo_nccl RANK NRANKS DEVICE ID_FILE N ITERS REPS
//
// (DIR: the NCCL wheel's nvidia/nccl/lib, whose libnccl.so.2 bench/halo_cpp.py links through a
// libnccl.so symlink in the build folder.)
//
// No MPI: rank 0 makes the NCCL unique id and writes it to ID_FILE (a temporary name renamed into
// place, so that it appears whole); the other ranks wait up to 60 s for the file. The ranks are
// separate processes on one node (bench/burgers_scaling.py starts one beside each of its MPI
// ranks, on that rank's GPU). N: the interior points of the rank's slab (the buffer holds N + 2).
//
// Each repetition: a one-element all-reduce as a barrier, then ITERS exchanges and a
// cudaStreamSynchronize, timed with the host clock (as the Python loop is); one warm-up of
// ITERS / 10 exchanges first. Prints one JSON object with the seconds of every repetition.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#define CUDA_CHECK(call)                                                                             \
  do {                                                                                               \
    cudaError_t err_ = (call);                                                                       \
    if (err_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

#define NCCL_CHECK(call)                                                                             \
  do {                                                                                               \
    ncclResult_t err_ = (call);                                                                      \
    if (err_ != ncclSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(err_)); \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

static ncclUniqueId share_id(int rank, const std::string& path) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "halo_nccl: cannot write the unique id to %s\n", path.c_str());
      std::exit(1);
    }
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t got = std::fread(&id, sizeof id, 1, f);
      std::fclose(f);
      if (got == 1) return id;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "halo_nccl: rank %d: no unique id in %s after 60 s (is rank 0 running?)\n", rank, path.c_str());
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s RANK NRANKS DEVICE ID_FILE N ITERS REPS\n", argv[0]);
    return 2;
  }
  const int rank = std::atoi(argv[1]);
  const int nranks = std::atoi(argv[2]);
  const int device = std::atoi(argv[3]);
  const std::string id_file = argv[4];
  const long long n = std::atoll(argv[5]);
  const long long iters = std::atoll(argv[6]);
  const int reps = std::atoi(argv[7]);
  if (nranks < 1 || rank < 0 || rank >= nranks || n < 1 || iters < 1 || reps < 1) {
    std::fprintf(stderr, "halo_nccl: need 0 <= RANK < NRANKS, N >= 1, ITERS >= 1, REPS >= 1\n");
    return 2;
  }
  const int left = (rank - 1 + nranks) % nranks, right = (rank + 1) % nranks;

  CUDA_CHECK(cudaSetDevice(device));
  const ncclUniqueId id = share_id(rank, id_file);
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  double *u, *token;
  CUDA_CHECK(cudaMalloc(&u, (size_t)(n + 2) * sizeof(double)));
  CUDA_CHECK(cudaMemset(u, 0, (size_t)(n + 2) * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&token, sizeof(double)));

  auto exchange = [&](long long count) {
    for (long long i = 0; i < count; ++i) {
      NCCL_CHECK(ncclGroupStart());
      NCCL_CHECK(ncclSend(u + n, 1, ncclDouble, right, comm, stream));
      NCCL_CHECK(ncclRecv(u, 1, ncclDouble, left, comm, stream));
      NCCL_CHECK(ncclSend(u + 1, 1, ncclDouble, left, comm, stream));
      NCCL_CHECK(ncclRecv(u + n + 1, 1, ncclDouble, right, comm, stream));
      NCCL_CHECK(ncclGroupEnd());
    }
  };

  exchange(iters / 10 + 1);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    NCCL_CHECK(ncclAllReduce(token, token, 1, ncclDouble, ncclSum, comm, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t0 = std::chrono::steady_clock::now();
    exchange(iters);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version));
  std::printf("{\"rank\": %d, \"nranks\": %d, \"device\": %d, \"n\": %lld, \"iters\": %lld, \"nccl_version\": %d, \"seconds\": [",
              rank, nranks, device, n, iters, version);
  for (size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.9f", i ? ", " : "", seconds[i]);
  std::printf("]}\n");

  NCCL_CHECK(ncclCommDestroy(comm));
  CUDA_CHECK(cudaFree(u));
  CUDA_CHECK(cudaFree(token));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
