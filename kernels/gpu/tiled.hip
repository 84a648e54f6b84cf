// The tiled kernel, shaped like production indexer kernels: a block owns one query row and walks
// a run of 256-key tiles; per tile it streams head_dim through shared memory (tile.hpp), keeps an
// 8-head x 8-key block of float32 dot products per thread, applies relu and the weights in
// registers, and sums the 8 head groups through shared memory in a fixed order. The block skips
// the arithmetic of tiles outside the row's window and only stores -inf there.
//
// Contract: dot fp32, heads fp32, k_scale after the head sum, relu keeps NaN, clean,
// deterministic. Five mutants live here (launchers.hpp says which defect each plants).
#include <stdexcept>

#include "kernels/gpu/launchers.hpp"
#include "kernels/gpu/tile.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/launch_check.hpp"

namespace mqa::gpu {
namespace {

using namespace tile;

constexpr int kKeysPerLane = 8;
constexpr int kTileKeys = kLanes * kKeysPerLane;  // 256: thread t stores key t of the tile
constexpr int kTilesPerBlock = 4;

using fp32_stage = stage<float, kKeysPerLane>;

// The output store. The offset32 mutant computes the byte offset in 32 bits, as a kernel with
// int32 index arithmetic does, and stores only when it is non-negative: what an AMD buffer store
// does with an out-of-range offset (the write is dropped), so the rows past 2^31 bytes are never
// written.
template <planted_bug Bug>
__device__ inline void store(const logits_args& a, std::int64_t row, std::int64_t key, float value) {
  if constexpr (Bug == planted_bug::offset32) {
    const std::uint32_t bytes = static_cast<std::uint32_t>(row) * static_cast<std::uint32_t>(a.stride) * 4u +
                                static_cast<std::uint32_t>(key) * 4u;
    const auto offset = static_cast<std::int32_t>(bytes);
    if (offset >= 0) *reinterpret_cast<float*>(reinterpret_cast<char*>(a.out) + offset) = value;
  } else {
    a.out[row * a.stride + key] = value;
  }
}

template <planted_bug Bug>
__global__ __launch_bounds__(kThreads) void tiled_logits(logits_args a) {
  __shared__ float q_table[256], k_table[256];
  __shared__ float weights[kHeadsPerPass];
  __shared__ float arrival_sum[kTileKeys];  // atomic_head_order mutant only
  __shared__ union {
    fp32_stage operands;
    float group_sums[kGroups][kTileKeys];  // reused once a pass's dot products are in registers
  } shared;
  fill_decode_table(q_table, a.q_format);
  fill_decode_table(k_table, a.k_format);
  __syncthreads();

  const int t = static_cast<int>(threadIdx.x);
  const int group = t / kLanes, lane = t % kLanes;
  // The tail mutant rounds the tile count down, as a grid of N / BLOCK_N blocks does.
  const std::int64_t tiles =
      Bug == planted_bug::tail_tile_dropped ? a.n / kTileKeys : (a.n + kTileKeys - 1) / kTileKeys;
  const std::int64_t first_tile = static_cast<std::int64_t>(blockIdx.x) * kTilesPerBlock;
  const std::int64_t last_tile = first_tile + kTilesPerBlock < tiles ? first_tile + kTilesPerBlock : tiles;

  for (std::int64_t row = blockIdx.y; row < a.m; row += gridDim.y) {
    const key_window w = clamped_window(a.ks[row], a.ke[row], a.n);
    for (std::int64_t tile_index = first_tile; tile_index < last_tile; ++tile_index) {
      const std::int64_t key0 = tile_index * kTileKeys;
      const std::int64_t key = key0 + t;
      if (w.end <= key0 || w.begin >= key0 + kTileKeys || w.end <= w.begin) {
        if (key < a.n) store<Bug>(a, row, key, negative_infinity());
        continue;  // the whole block takes this branch: no barrier is skipped unevenly
      }
      float head_sum = 0.0f;  // of key `key`, over the passes so far
      for (std::int64_t h0 = 0; h0 < a.heads; h0 += kHeadsPerPass) {
        if (t < kHeadsPerPass) weights[t] = h0 + t < a.heads ? a.weights[row * a.heads + h0 + t] : 0.0f;
        if constexpr (Bug == planted_bug::atomic_head_order) arrival_sum[t] = 0.0f;
        __syncthreads();  // weights visible to all groups even when head_dim leaves no stage
        float acc[kHeadsPerGroup][kKeysPerLane] = {};
        for (std::int64_t d0 = 0; d0 < a.head_dim; d0 += kDepth) {
          load_stage(shared.operands, a, q_table, k_table, row, h0, key0, d0);
          // The race mutant drops this barrier: groups read the stage while others still fill it.
          if constexpr (Bug != planted_bug::missing_barrier) __syncthreads();
          accumulate_stage(shared.operands, acc, group, lane);
          __syncthreads();  // the stage is read completely before the next fill overwrites it
        }
        for (int c = 0; c < kKeysPerLane; ++c) {
          float partial = 0.0f;
          for (int h = 0; h < kHeadsPerGroup; ++h)
            partial = fmaf(weights[group * kHeadsPerGroup + h], relu_keep_nan(acc[h][c]), partial);
          if constexpr (Bug == planted_bug::atomic_head_order)
            atomicAdd(&arrival_sum[lane + kLanes * c], partial);  // order of arrival decides the rounding
          else
            shared.group_sums[group][lane + kLanes * c] = partial;
        }
        __syncthreads();
        if constexpr (Bug == planted_bug::atomic_head_order) {
          head_sum += arrival_sum[t];
        } else {
          float pass_sum = 0.0f;
          for (int g = 0; g < kGroups; ++g) pass_sum += shared.group_sums[g][t];
          head_sum += pass_sum;
        }
        __syncthreads();  // sums read before the next pass or tile refills the shared memory
      }
      if (key < a.n) {
        const bool inside = key >= w.begin && key < w.end;
        store<Bug>(a, row, key, inside ? a.k_scale[key] * head_sum : negative_infinity());
      }
    }
  }
  if constexpr (Bug == planted_bug::row_past_end) {
    // The planted bug: the -inf fill runs over rows 0..m inclusive, writing one row past the end.
    if (blockIdx.y == 0)
      for (std::int64_t tile_index = first_tile; tile_index < last_tile; ++tile_index)
        if (tile_index * kTileKeys + t < a.n) store<Bug>(a, a.m, tile_index * kTileKeys + t, negative_infinity());
  }
}

template <planted_bug Bug>
void launch(const logits_args& a) {
  const std::int64_t tiles = (a.n + kTileKeys - 1) / kTileKeys;
  const dim3 grid(static_cast<unsigned>((tiles + kTilesPerBlock - 1) / kTilesPerBlock), grid_rows(a.m));
  tiled_logits<Bug><<<grid, kThreads>>>(a);
}

}  // namespace

void launch_tiled(const logits_args& a, planted_bug bug) {
  if (a.n == 0 || a.m == 0) return;
  switch (bug) {
    case planted_bug::none: launch<planted_bug::none>(a); break;
    case planted_bug::offset32: launch<planted_bug::offset32>(a); break;
    case planted_bug::tail_tile_dropped: launch<planted_bug::tail_tile_dropped>(a); break;
    case planted_bug::missing_barrier: launch<planted_bug::missing_barrier>(a); break;
    case planted_bug::atomic_head_order: launch<planted_bug::atomic_head_order>(a); break;
    case planted_bug::row_past_end: launch<planted_bug::row_past_end>(a); break;
    default: throw std::invalid_argument("the tiled kernel carries no such planted bug");
  }
  check_launch("tiled_logits");
}

}  // namespace mqa::gpu
