// pygpu_host/warp.h: barriers, warp shuffles and votes for device code, on top of the block's
// fibers (fibers.h). A warp is 32 consecutive threads (x fastest, then y, z), as on NVIDIA GPUs.
// Part of pygpu_kernel.h.
#pragma once

#include <cstring>

namespace pygpu_host {

template <typename T>
inline unsigned long long to_bits(T value) {
  static_assert(sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  return bits;
}

template <typename T>
inline T from_bits(unsigned long long bits) {
  T value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// The value `source` lane published, or the caller's own when that lane takes no part.
template <typename T>
inline T shuffle(unsigned int mask, T var, unsigned int lane, unsigned int source) {
  const unsigned long long* slots = warp_exchange(mask, to_bits(var));
  const Block* b = current_block;
  const unsigned int lanes = warp_lanes(b, b->current / kWarpSize);
  if (source >= kWarpSize || !((mask & lanes) >> source & 1u) || source == lane) return var;
  return from_bits<T>(slots[source]);
}

inline unsigned int ballot(unsigned int mask, int predicate) {
  const unsigned long long* slots = warp_exchange(mask, predicate != 0);
  const Block* b = current_block;
  const unsigned int lanes = warp_lanes(b, b->current / kWarpSize) & mask;
  unsigned int result = 0;
  for (unsigned int l = 0; l < kWarpSize; ++l)
    if ((lanes >> l & 1u) && slots[l]) result |= 1u << l;
  return result;
}

}  // namespace pygpu_host

static constexpr int warpSize = 32;

static inline void __syncthreads() { pygpu_host::block_barrier(0); }
static inline int __syncthreads_count(int predicate) { return pygpu_host::block_barrier(predicate != 0); }
static inline int __syncthreads_and(int predicate) {
  return pygpu_host::block_barrier(predicate != 0) == static_cast<int>(pygpu_host::current_block->threads);
}
static inline int __syncthreads_or(int predicate) { return pygpu_host::block_barrier(predicate != 0) != 0; }
static inline void __syncwarp(unsigned int mask = 0xffffffffu) { pygpu_host::warp_exchange(mask, 0); }

// Source lanes as CUDA computes them: within segments of `width` lanes; a lane outside the
// segment gives the caller's own value.
template <typename T>
static inline T __shfl_sync(unsigned int mask, T var, int source, int width = warpSize) {
  const unsigned int lane = pygpu_host::lane_id(), w = static_cast<unsigned int>(width);
  return pygpu_host::shuffle(mask, var, lane, (lane & ~(w - 1)) + (static_cast<unsigned int>(source) & (w - 1)));
}
template <typename T>
static inline T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) {
  const unsigned int lane = pygpu_host::lane_id(), w = static_cast<unsigned int>(width);
  return pygpu_host::shuffle(mask, var, lane, (lane & (w - 1)) < delta ? lane : lane - delta);
}
template <typename T>
static inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) {
  const unsigned int lane = pygpu_host::lane_id(), w = static_cast<unsigned int>(width);
  return pygpu_host::shuffle(mask, var, lane, (lane & (w - 1)) + delta >= w ? lane : lane + delta);
}
template <typename T>
static inline T __shfl_xor_sync(unsigned int mask, T var, int lane_mask, int width = warpSize) {
  const unsigned int lane = pygpu_host::lane_id(), w = static_cast<unsigned int>(width);
  const unsigned int source = lane ^ static_cast<unsigned int>(lane_mask);
  return pygpu_host::shuffle(mask, var, lane, source >= ((lane + w) & ~(w - 1)) ? lane : source);
}

static inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
  return pygpu_host::ballot(mask, predicate);
}
static inline int __all_sync(unsigned int mask, int predicate) {
  const pygpu_host::Block* b = pygpu_host::current_block;
  const unsigned int lanes = pygpu_host::warp_lanes(b, b->current / pygpu_host::kWarpSize) & mask;
  return pygpu_host::ballot(mask, predicate) == lanes;
}
static inline int __any_sync(unsigned int mask, int predicate) { return pygpu_host::ballot(mask, predicate) != 0; }
static inline unsigned int __activemask() {  // the lanes that have not returned
  const pygpu_host::Block* b = pygpu_host::current_block;
  const unsigned int warp = b->current / pygpu_host::kWarpSize, lanes = pygpu_host::warp_lanes(b, warp);
  unsigned int active = 0;
  for (unsigned int l = 0; l < pygpu_host::kWarpSize; ++l)
    if ((lanes >> l & 1u) && (warp * pygpu_host::kWarpSize + l >= b->next_thread ||
                              warp * pygpu_host::kWarpSize + l == b->current ||
                              b->state[warp * pygpu_host::kWarpSize + l] != pygpu_host::kExited))
      active |= 1u << l;
  return active;
}
template <typename T>
static inline unsigned int __match_any_sync(unsigned int mask, T value) {
  const unsigned long long mine = pygpu_host::to_bits(value);
  const unsigned long long* slots = pygpu_host::warp_exchange(mask, mine);
  const pygpu_host::Block* b = pygpu_host::current_block;
  const unsigned int lanes = pygpu_host::warp_lanes(b, b->current / pygpu_host::kWarpSize) & mask;
  unsigned int result = 0;
  for (unsigned int l = 0; l < pygpu_host::kWarpSize; ++l)
    if ((lanes >> l & 1u) && slots[l] == mine) result |= 1u << l;
  return result;
}
template <typename T>
static inline unsigned int __match_all_sync(unsigned int mask, T value, int* predicate) {
  const pygpu_host::Block* b = pygpu_host::current_block;
  const unsigned int lanes = pygpu_host::warp_lanes(b, b->current / pygpu_host::kWarpSize) & mask;
  const bool all = __match_any_sync(mask, value) == lanes;
  *predicate = all;
  return all ? mask : 0u;
}

#define PYGPU_WARP_REDUCE(NAME, T, OP)                                              \
  static inline T NAME(unsigned int mask, T value) {                                \
    const unsigned long long* slots = pygpu_host::warp_exchange(mask, value);        \
    const pygpu_host::Block* b = pygpu_host::current_block;                          \
    const unsigned int lanes =                                                       \
        pygpu_host::warp_lanes(b, b->current / pygpu_host::kWarpSize) & mask;        \
    T result = value;                                                                \
    for (unsigned int l = 0; l < pygpu_host::kWarpSize; ++l)                         \
      if ((lanes >> l & 1u) && l != pygpu_host::lane_id()) {                         \
        const T other = static_cast<T>(slots[l]);                                    \
        result = OP;                                                                 \
      }                                                                              \
    return result;                                                                   \
  }
PYGPU_WARP_REDUCE(__reduce_add_sync, int, result + other)
PYGPU_WARP_REDUCE(__reduce_add_sync, unsigned int, result + other)
PYGPU_WARP_REDUCE(__reduce_min_sync, int, other < result ? other : result)
PYGPU_WARP_REDUCE(__reduce_min_sync, unsigned int, other < result ? other : result)
PYGPU_WARP_REDUCE(__reduce_max_sync, int, other > result ? other : result)
PYGPU_WARP_REDUCE(__reduce_max_sync, unsigned int, other > result ? other : result)
PYGPU_WARP_REDUCE(__reduce_and_sync, unsigned int, result & other)
PYGPU_WARP_REDUCE(__reduce_or_sync, unsigned int, result | other)
PYGPU_WARP_REDUCE(__reduce_xor_sync, unsigned int, result ^ other)
#undef PYGPU_WARP_REDUCE
