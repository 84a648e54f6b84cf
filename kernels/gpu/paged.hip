// The paged decode kernels (DeepGEMM's fp8_paged_mqa_logits): each request's keys live
// in the pages of an fp8 cache, reached through its block table (operation.hpp: paged_args).
//
//   paged naive  one output element per thread: its key's page through the table, codes then
//                the scale, float32 dots and head sum in index order
//   paged tiled  tiled.hip's shape: a block owns one query row and walks 256-key tiles; each tile's
//                keys are gathered from their pages into the shared-memory stages (tile.hpp),
//                head_dim 16 at a time; 8 heads x 8 keys of dots per thread; fixed-order head
//                reduction. Keys past the row's window are never looked up (their table entries
//                may be -1 or stale) and only -inf is stored there
//
// Contract: dot fp32, heads fp32, k_scale after the head sum, relu keeps NaN, clean (-inf past each
// row's window over the max_context columns), deterministic. The tiled kernel carries the 32-bit
// block offset mutant (launchers.hpp: block_offset32).
#include <stdexcept>

#include "kernels/gpu/launchers.hpp"
#include "kernels/gpu/tile.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/launch_check.hpp"

namespace mqa::gpu {
namespace {

constexpr int kNaiveThreads = 256;

// The first byte of request b's key j and its page, or null where the kernel reads zeros: the
// block_offset32 mutant computes the block's byte offset in int32 and, once it is negative (past
// 2^31 bytes), reads nothing, as an AMD buffer load returns 0 for an out-of-range offset. (On
// NVIDIA the real bug reads 4 GiB before the cache; here it stays inside: no fault, same zeros.)
template <planted_bug Bug>
__device__ inline const std::uint8_t* page_of(const paged_args& a, std::int64_t request, std::int64_t key) {
  const std::int64_t block = a.block_table[request * a.max_blocks + key / a.block_kv];
  if constexpr (Bug == planted_bug::block_offset32) {
    const auto offset = static_cast<std::int32_t>(static_cast<std::uint32_t>(block) * static_cast<std::uint32_t>(a.page_bytes));
    if (offset < 0) return nullptr;
    return a.kv_cache + offset;
  } else {
    return a.kv_cache + block * a.page_bytes;
  }
}

__device__ inline float scale_in(const paged_args& a, const std::uint8_t* page, std::int64_t key) {
  return page == nullptr ? 0.0f : float_from_bytes(page + a.block_kv * a.head_dim + 4 * (key % a.block_kv));
}

__global__ __launch_bounds__(kNaiveThreads) void paged_naive_logits(paged_args a) {
  __shared__ float q_table[256], k_table[256];
  fill_decode_table(q_table, a.q_format);
  fill_decode_table(k_table, a.k_format);
  __syncthreads();

  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kNaiveThreads + threadIdx.x;
  if (j >= a.max_context) return;
  const std::int64_t rows = a.batch * a.next_n, dim = a.head_dim;
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    float value = negative_infinity();
    if (j < paged_window_end(a, row)) {
      const std::int64_t request = row / a.next_n;
      const std::uint8_t* page = page_of<planted_bug::none>(a, request, j);
      const std::uint8_t* key = page + (j % a.block_kv) * dim;
      const std::uint8_t* query = a.q + row * a.heads * dim;
      const float* weights = a.weights + row * a.heads;
      float sum = 0.0f;
      for (std::int64_t h = 0; h < a.heads; ++h) {
        const std::uint8_t* head = query + h * dim;
        float dot = 0.0f;
        for (std::int64_t d = 0; d < dim; ++d) dot = fmaf(q_table[head[d]], k_table[key[d]], dot);
        sum = fmaf(weights[h], relu_keep_nan(dot), sum);
      }
      value = scale_in(a, page, j) * sum;
    }
    a.out[row * a.stride + j] = value;
  }
}

using namespace tile;

constexpr int kKeysPerLane = 8;
constexpr int kTileKeys = kLanes * kKeysPerLane;  // 256: thread t stores key t of the tile
constexpr int kTilesPerBlock = 4;

using fp32_stage = stage<float, kKeysPerLane>;

// tile.hpp's load_stage with the keys gathered through the block table: dims [d0, d0 + 16) of q's
// heads [h0, h0 + 64) of `row` and of keys [key0, key0 + 256) of its request; code 0 (+0 in every
// format) for heads, dims and keys past the row's window `end`.
template <planted_bug Bug>
__device__ void load_paged_stage(fp32_stage& s, const paged_args& a, const float* q_table, const float* k_table,
                                 std::int64_t row, std::int64_t end, std::int64_t h0, std::int64_t key0, std::int64_t d0) {
  const int t = static_cast<int>(threadIdx.x);
  const int part = (t & 3) * 4;
  const std::int64_t d = d0 + part;
  {
    const int h = t >> 2;  // 256 threads / 4 = 64 heads
    const std::int64_t head = h0 + h;
    std::uint32_t word = 0;
    if (head < a.heads && d < a.head_dim)
      word = load_four_codes(a.q + (row * a.heads + head) * a.head_dim, d, a.head_dim);
    for (int b = 0; b < 4; ++b) s.q[part + b][h] = q_table[(word >> (8 * b)) & 0xFF];
  }
  const std::int64_t request = row / a.next_n;
  for (int base = 0; base < fp32_stage::kKeys; base += kThreads / 4) {
    const int kk = base + (t >> 2);
    const std::int64_t key = key0 + kk;
    std::uint32_t word = 0;
    if (key < end && d < a.head_dim) {
      // Rows of a page start 4-aligned when head_dim is a multiple of 4 (page strides are).
      const std::uint8_t* page = page_of<Bug>(a, request, key);
      if (page != nullptr) word = load_four_codes(page + (key % a.block_kv) * a.head_dim, d, a.head_dim);
    }
    for (int b = 0; b < 4; ++b) s.k[part + b][kk] = k_table[(word >> (8 * b)) & 0xFF];
  }
}

template <planted_bug Bug>
__global__ __launch_bounds__(kThreads) void paged_tiled_logits(paged_args a) {
  __shared__ float q_table[256], k_table[256];
  __shared__ float weights[kHeadsPerPass];
  __shared__ union {
    fp32_stage operands;
    float group_sums[kGroups][kTileKeys];  // reused once a pass's dot products are in registers
  } shared;
  fill_decode_table(q_table, a.q_format);
  fill_decode_table(k_table, a.k_format);
  __syncthreads();

  const int t = static_cast<int>(threadIdx.x);
  const int group = t / kLanes, lane = t % kLanes;
  const std::int64_t rows = a.batch * a.next_n;
  const std::int64_t tiles = (a.max_context + kTileKeys - 1) / kTileKeys;
  const std::int64_t first_tile = static_cast<std::int64_t>(blockIdx.x) * kTilesPerBlock;
  const std::int64_t last_tile = first_tile + kTilesPerBlock < tiles ? first_tile + kTilesPerBlock : tiles;

  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const std::int64_t end = paged_window_end(a, row);
    for (std::int64_t tile_index = first_tile; tile_index < last_tile; ++tile_index) {
      const std::int64_t key0 = tile_index * kTileKeys;
      const std::int64_t key = key0 + t;
      if (end <= key0) {
        if (key < a.max_context) a.out[row * a.stride + key] = negative_infinity();
        continue;  // the whole block takes this branch: no barrier is skipped unevenly
      }
      float head_sum = 0.0f;  // of key `key`, over the passes so far
      for (std::int64_t h0 = 0; h0 < a.heads; h0 += kHeadsPerPass) {
        if (t < kHeadsPerPass) weights[t] = h0 + t < a.heads ? a.weights[row * a.heads + h0 + t] : 0.0f;
        __syncthreads();  // weights visible to all groups even when head_dim leaves no stage
        float acc[kHeadsPerGroup][kKeysPerLane] = {};
        for (std::int64_t d0 = 0; d0 < a.head_dim; d0 += kDepth) {
          load_paged_stage<Bug>(shared.operands, a, q_table, k_table, row, end, h0, key0, d0);
          __syncthreads();
          accumulate_stage(shared.operands, acc, group, lane);
          __syncthreads();  // the stage is read completely before the next fill overwrites it
        }
        for (int c = 0; c < kKeysPerLane; ++c) {
          float partial = 0.0f;
          for (int h = 0; h < kHeadsPerGroup; ++h)
            partial = fmaf(weights[group * kHeadsPerGroup + h], relu_keep_nan(acc[h][c]), partial);
          shared.group_sums[group][lane + kLanes * c] = partial;
        }
        __syncthreads();
        float pass_sum = 0.0f;
        for (int g = 0; g < kGroups; ++g) pass_sum += shared.group_sums[g][t];
        head_sum += pass_sum;
        __syncthreads();  // sums read before the next pass or tile refills the shared memory
      }
      if (key < a.max_context) {
        float value = negative_infinity();
        if (key < end) value = scale_in(a, page_of<Bug>(a, row / a.next_n, key), key) * head_sum;
        a.out[row * a.stride + key] = value;
      }
    }
  }
}

template <planted_bug Bug>
void launch_with(const paged_args& a) {
  const std::int64_t tiles = (a.max_context + kTileKeys - 1) / kTileKeys;
  const dim3 grid(static_cast<unsigned>((tiles + kTilesPerBlock - 1) / kTilesPerBlock), grid_rows(a.batch * a.next_n));
  paged_tiled_logits<Bug><<<grid, kThreads>>>(a);
}

}  // namespace

void launch_paged_naive(const paged_args& a, planted_bug bug) {
  if (bug != planted_bug::none) throw std::invalid_argument("the paged naive kernel carries no planted bug");
  if (a.max_context == 0 || a.batch == 0) return;
  const dim3 grid(static_cast<unsigned>((a.max_context + kNaiveThreads - 1) / kNaiveThreads), grid_rows(a.batch * a.next_n));
  paged_naive_logits<<<grid, kNaiveThreads>>>(a);
  check_launch("paged_naive_logits");
}

void launch_paged_tiled(const paged_args& a, planted_bug bug) {
  if (a.max_context == 0 || a.batch == 0) return;
  switch (bug) {
    case planted_bug::none: launch_with<planted_bug::none>(a); break;
    case planted_bug::block_offset32: launch_with<planted_bug::block_offset32>(a); break;
    default: throw std::invalid_argument("the paged tiled kernel carries no such planted bug");
  }
  check_launch("paged_tiled_logits");
}

}  // namespace mqa::gpu
