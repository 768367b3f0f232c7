// Device-side loop control for graphs (pygpu.graphs.repeat): a while node's body ends with
// graph_countdown, which counts the turns left and writes the flag the node reads.
#include "pygpu_kernel.h"

// state[0]: turns left, state[1]: the while node's flag (nonzero: run the body again).
PYGPU_KERNEL void graph_countdown(int* state) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int left = state[0] - 1;
    state[0] = left;
    state[1] = left > 0;
  }
}
PYGPU_EXPORT(graph_countdown)

// Copies `bytes` from src to dst + k * bytes, k the turn of the loop now running (0 first): the
// turns left in state[0], before this turn's countdown, are `count` - k. With 16-byte words where
// both ends and the size allow, else bytes.
PYGPU_KERNEL void graph_copy_turn(const int* state, int count, const unsigned char* src, unsigned char* dst,
                                  unsigned long long bytes) {
  const unsigned long long k = (unsigned long long)(count - state[0]);
  unsigned char* to = dst + k * bytes;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)blockDim.x * gridDim.x;
  if ((((unsigned long long)src | (unsigned long long)to | bytes) & 15) == 0) {
    const uint4* from = reinterpret_cast<const uint4*>(src);
    uint4* into = reinterpret_cast<uint4*>(to);
    for (unsigned long long i = first; i < bytes / 16; i += stride) into[i] = from[i];
  } else {
    for (unsigned long long i = first; i < bytes; i += stride) to[i] = src[i];
  }
}
PYGPU_EXPORT(graph_copy_turn)
