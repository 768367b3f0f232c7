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
