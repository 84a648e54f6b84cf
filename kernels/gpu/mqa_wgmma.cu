// The MQA logits on Hopper's fp8 tensor cores: one warpgroup (128 threads) per query row. The row's
// q ([heads, head_dim], 64 heads per wgmma M) stays in shared memory; each 64-key tile of the
// window is staged in shared memory and multiplied with wgmma m64n64k32, head_dim / 32 k-steps
// chained in one accumulator in ascending k (exactly what reference/mma's sm90-wgmma model
// describes). The epilogue applies relu (keeping NaN), the weights, a fixed-order reduction over
// heads (lanes, then warps, then head groups) and k_scale, and stores -inf outside the window.
// Judged under --accumulate sm90-wgmma; requires heads % 64 == 0 and head_dim % 32 == 0.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/gpu/launchers.hpp"
#include "reference/gpu/launch_check.hpp"
#include "reference/gpu/wgmma.cuh"

namespace mqa::gpu {
namespace {

using sm90::fp8_type;

constexpr int kThreads = 128;
constexpr int kKeys = 64;  // keys per tile: wgmma N

template <fp8_type A, fp8_type B>
__global__ void __launch_bounds__(kThreads, 1) mqa_wgmma_kernel(logits_args a, planted_bug bug) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  const std::int64_t row = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  const int steps = static_cast<int>(a.head_dim / 32);
  const int groups = static_cast<int>(a.heads / 64);
  std::uint8_t* q_tiles = smem;                                           // groups x steps tiles
  std::uint8_t* k_tiles = smem + static_cast<std::size_t>(groups) * steps * sm90::kTileBytes;  // steps tiles
  auto* column_sum = reinterpret_cast<float*>(k_tiles + static_cast<std::size_t>(steps) * sm90::kTileBytes);  // [4][kKeys]
  auto* weights = column_sum + 4 * kKeys;                                  // [heads]

  float* out = a.out + row * a.stride;
  const key_window w = clamped_window(a.ks[row], a.ke[row], a.n);
  for (std::int64_t j = tid; j < a.n; j += kThreads)
    if (j < w.begin || j >= w.end) out[j] = float_from_bits(kNegativeInfinityBits);
  if (w.end <= w.begin) return;

  // q of this row into the tile layout: head h of group h / 64, element d of k-step d / 32.
  const std::uint8_t* q = a.q + row * a.heads * a.head_dim;
  for (std::int64_t x = tid; x < a.heads * a.head_dim; x += kThreads) {
    const auto h = static_cast<unsigned>(x / a.head_dim), d = static_cast<unsigned>(x % a.head_dim);
    q_tiles[((h / 64) * steps + d / 32) * sm90::kTileBytes + sm90::tile_offset(h % 64, d % 32)] = q[x];
  }
  for (std::int64_t h = tid; h < a.heads; h += kThreads) weights[h] = a.weights[row * a.heads + h];

  const int warp = tid / 32, lane = tid % 32;
  for (std::int64_t key0 = w.begin; key0 < w.end; key0 += kKeys) {
    __syncthreads();  // the previous tile's readers are done with k_tiles and column_sum
    for (std::int64_t x = tid; x < kKeys * a.head_dim; x += kThreads) {
      const auto n = static_cast<unsigned>(x / a.head_dim), d = static_cast<unsigned>(x % a.head_dim);
      const std::int64_t key = key0 + n;
      k_tiles[(d / 32) * sm90::kTileBytes + sm90::tile_offset(n, d % 32)] =
          key < w.end ? a.k[key * a.head_dim + d] : std::uint8_t{0};
    }
    sm90::fence_shared_for_wgmma();
    __syncthreads();

    float total[16];  // this thread's 16 columns, summed over head groups in order
    for (int c = 0; c < 16; ++c) total[c] = 0.0f;
    for (int g = 0; g < groups; ++g) {
      float d[32];
      for (int i = 0; i < 32; ++i) d[i] = 0.0f;
      sm90::fence();
      for (int s = 0; s < steps; ++s)
        sm90::mma_m64n64k32<A, B>(d, sm90::descriptor(q_tiles + (g * steps + s) * sm90::kTileBytes),
                                  sm90::descriptor(k_tiles + s * sm90::kTileBytes));
      sm90::commit();
      sm90::wait_all();
      // This thread's two rows (heads) per column: relu, weight, add; then over the 8 lanes that
      // share the columns (l / 4 = 0..7) by shuffles in a fixed order.
      for (int c = 0; c < 16; ++c) {
        const int i0 = 4 * (c / 2) + c % 2;  // rows r and r + 8 of column fragment_column(i0)
        const int h0 = g * 64 + sm90::fragment_row(i0), h1 = g * 64 + sm90::fragment_row(i0 + 2);
        float partial = weights[h0] * relu_keep_nan(d[i0]) + weights[h1] * relu_keep_nan(d[i0 + 2]);
        for (int offset = 4; offset < 32; offset *= 2) partial += __shfl_xor_sync(0xFFFFFFFFu, partial, offset);
        total[c] += partial;
      }
    }
    if (lane < 4)
      for (int c = 0; c < 16; ++c) column_sum[warp * kKeys + 8 * (c / 2) + 2 * lane + c % 2] = total[c];
    __syncthreads();
    if (tid < kKeys) {
      const std::int64_t key = key0 + tid;
      const bool stored = key < w.end && !(bug == planted_bug::tail_tile_dropped && key0 + kKeys > w.end);
      if (stored) {
        const float heads_sum = (column_sum[tid] + column_sum[kKeys + tid]) + (column_sum[2 * kKeys + tid] + column_sum[3 * kKeys + tid]);
        out[key] = heads_sum * a.k_scale[key];
      }
    }
  }
}

fp8_type type_of(const code_format& f) { return f.mantissa_bits == 3 ? fp8_type::e4m3 : fp8_type::e5m2; }

template <fp8_type A, fp8_type B>
void launch(const logits_args& a, planted_bug bug, std::size_t shared) {
  auto kernel = mqa_wgmma_kernel<A, B>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)),
        "cudaFuncSetAttribute(mqa_wgmma_kernel)");
  kernel<<<static_cast<unsigned>(a.m), kThreads, shared>>>(a, bug);
  check_launch("mqa_wgmma_kernel");
}

}  // namespace

bool wgmma_built() { return true; }

std::optional<std::string> wgmma_unsupported(const logits_args& a) {
  if (a.heads % 64 != 0 || a.head_dim % 32 != 0)
    return "the wgmma kernel needs heads % 64 == 0 and head_dim % 32 == 0";
  const bool fnuz = a.q_format.nan == nan_rule::negative_zero || a.k_format.nan == nan_rule::negative_zero;
  if (fnuz || a.q_format.bias != (a.q_format.mantissa_bits == 3 ? 7 : 15) ||
      a.k_format.bias != (a.k_format.mantissa_bits == 3 ? 7 : 15))
    return "wgmma takes e4m3fn and e5m2 only";
  int device = 0;
  cudaDeviceProp prop{};
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  if (prop.major != 9 || prop.minor != 0) return "the wgmma kernel is built for sm_90a (H100/H200) only";
  return std::nullopt;
}

void launch_wgmma_sm90(const logits_args& a, planted_bug bug) {
  if (bug != planted_bug::none && bug != planted_bug::tail_tile_dropped)
    throw std::invalid_argument("the wgmma kernel carries no such planted bug");
  if (const auto why = wgmma_unsupported(a)) throw std::invalid_argument(*why);
  const std::size_t shared = static_cast<std::size_t>(a.heads / 64 + 1) * (a.head_dim / 32) * sm90::kTileBytes +
                             (4 * kKeys + a.heads) * sizeof(float);
  const fp8_type qa = type_of(a.q_format), kb = type_of(a.k_format);
  if (qa == fp8_type::e4m3 && kb == fp8_type::e4m3) launch<fp8_type::e4m3, fp8_type::e4m3>(a, bug, shared);
  else if (qa == fp8_type::e4m3) launch<fp8_type::e4m3, fp8_type::e5m2>(a, bug, shared);
  else if (kb == fp8_type::e4m3) launch<fp8_type::e5m2, fp8_type::e4m3>(a, bug, shared);
  else launch<fp8_type::e5m2, fp8_type::e5m2>(a, bug, shared);
}

}  // namespace mqa::gpu
