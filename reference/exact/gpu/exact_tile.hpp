// The exact reference's float64 tile GEMM (exact_kernel.hip's float64 engine): a block owns one
// query row and a tile of keys; 256 threads form 8 logical groups of 32, group g computes heads
// [8g, 8g + 8) of a 64-head pass, lane l keys l, l + 32, ... of the tile. head_dim streams
// through shared memory 16 at a time. Heads beyond `heads` and dims beyond `head_dim` are loaded
// as code 0 (+0 in every format), so they add exact zeros and no bounds checks reach the inner
// loop. Groups are logical (not hardware warps): AMD wavefronts have 64 lanes, NVIDIA warps 32,
// and nothing here depends on either. Every partial sum of exact fp8 products is itself a float64
// (docs/design.md), so any order is exact.
//
// The oracle's own code, not shared with the tiled kernels under test: it began as a copy of their
// tile.hpp (kernels/gpu) with the accumulator fixed to double, and stays apart so that no change
// or planted bug in a kernel's arithmetic can reach the reference that judges it.
#pragma once

#include <cstdint>

#include "reference/gpu/hip_compat.hpp"
#include "reference/gpu/operation.hpp"

namespace mqa::gpu::exact_tile {

constexpr int kThreads = 256;
constexpr int kGroups = 8;
constexpr int kLanes = 32;
constexpr int kHeadsPerGroup = 8;
constexpr int kHeadsPerPass = kGroups * kHeadsPerGroup;  // 64
constexpr int kDepth = 16;                                // head_dim slice per stage

template <int KeysPerLane>
struct stage {
  static constexpr int kKeys = kLanes * KeysPerLane;
  double q[kDepth][kHeadsPerPass];  // [d][head]: a group reads 8 consecutive heads (broadcast)
  double k[kDepth][kKeys];          // [d][key]: a group's lanes read consecutive keys (no bank conflict)
};

// Four consecutive codes from row `src` starting at element d (< dim); code 0 past the row's end.
__device__ inline std::uint32_t load_four_codes(const std::uint8_t* src, std::int64_t d, std::int64_t dim) {
  if (dim % 4 == 0) return *reinterpret_cast<const std::uint32_t*>(src + d);  // rows 4-byte aligned
  std::uint32_t word = 0;
  for (int b = 0; b < 4 && d + b < dim; ++b) word |= static_cast<std::uint32_t>(src[d + b]) << (8 * b);
  return word;
}

// Fills the stage for dims [d0, d0 + 16): q of heads [h0, h0 + 64) of query row `row`, k of keys
// [key0, key0 + kKeys). Four threads share a 16-byte run of one row, four codes each.
template <int KeysPerLane>
__device__ void load_stage(stage<KeysPerLane>& s, const logits_args& a, const float* q_table, const float* k_table,
                           std::int64_t row, std::int64_t h0, std::int64_t key0, std::int64_t d0) {
  const int t = static_cast<int>(threadIdx.x);
  const int part = (t & 3) * 4;
  const std::int64_t d = d0 + part;
  {
    const int h = t >> 2;  // 256 threads / 4 = 64 heads
    const std::int64_t head = h0 + h;
    std::uint32_t word = 0;
    if (head < a.heads && d < a.head_dim)
      word = load_four_codes(a.q + (row * a.heads + head) * a.head_dim, d, a.head_dim);
    for (int b = 0; b < 4; ++b) s.q[part + b][h] = static_cast<double>(q_table[(word >> (8 * b)) & 0xFF]);
  }
  for (int base = 0; base < stage<KeysPerLane>::kKeys; base += kThreads / 4) {
    const int kk = base + (t >> 2);
    const std::int64_t key = key0 + kk;
    std::uint32_t word = 0;
    if (key < a.n && d < a.head_dim) word = load_four_codes(a.k + key * a.head_dim, d, a.head_dim);
    for (int b = 0; b < 4; ++b) s.k[part + b][kk] = static_cast<double>(k_table[(word >> (8 * b)) & 0xFF]);
  }
}

// acc[h][c] += sum over the stage's 16 dims of q[head 8g + h] * k[key lane + 32c], exactly.
template <int KeysPerLane>
__device__ inline void accumulate_stage(const stage<KeysPerLane>& s, double (&acc)[kHeadsPerGroup][KeysPerLane],
                                        int group, int lane) {
#pragma unroll
  for (int dd = 0; dd < kDepth; ++dd) {
    double qv[kHeadsPerGroup], kv[KeysPerLane];
#pragma unroll
    for (int h = 0; h < kHeadsPerGroup; ++h) qv[h] = s.q[dd][group * kHeadsPerGroup + h];
#pragma unroll
    for (int c = 0; c < KeysPerLane; ++c) kv[c] = s.k[dd][lane + kLanes * c];
#pragma unroll
    for (int h = 0; h < kHeadsPerGroup; ++h)
#pragma unroll
      for (int c = 0; c < KeysPerLane; ++c) acc[h][c] = fma(qv[h], kv[c], acc[h][c]);
  }
}

}  // namespace mqa::gpu::exact_tile
