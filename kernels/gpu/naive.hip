// The straightforward kernel: one thread per output element (i, j), a loop over heads and the
// head dimension, float32 accumulation in a fixed order. It is the readable baseline the tiled
// kernel is checked against, and it carries the window-end mutant.
//
// Contract: dot fp32, heads fp32, k_scale after the head sum, relu keeps NaN, clean (-inf outside
// [ks, ke) clamped to [0, n)), deterministic.
#include <stdexcept>

#include "kernels/gpu/launchers.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/launch_check.hpp"

namespace mqa::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kKeyWords = 32;  // 4-byte words of a key held in registers: head_dim up to 128

template <planted_bug Bug>
__global__ __launch_bounds__(kThreads) void naive_logits(logits_args a) {
  __shared__ float q_table[256], k_table[256];
  fill_decode_table(q_table, a.q_format);
  fill_decode_table(k_table, a.k_format);
  __syncthreads();

  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= a.n) return;
  const std::int64_t dim = a.head_dim;
  const std::uint8_t* key = a.k + j * dim;
  // A key of up to 128 codes is read once into registers, 16 bytes at a time: adjacent threads
  // read keys 128 bytes apart, and reading them again for every head and code word made the
  // kernel wait on memory (5.8 s at 8192 x 65536 on an H200). The arithmetic is unchanged.
  const bool key_in_registers = dim % 16 == 0 && dim <= 4 * kKeyWords;
  // Decoded there once, too: a lookup of a key's code in the shared table per multiply-add, each
  // thread at its own code, costs bank conflicts that a register read does not.
  float key_values[4 * kKeyWords];
  if (key_in_registers) {
    const auto* k16 = reinterpret_cast<const uint4*>(key);  // 16-byte aligned: dim % 16 == 0
#pragma unroll
    for (int w = 0; w < kKeyWords / 4; ++w) {
      const uint4 v = 4 * w < dim / 4 ? k16[w] : uint4{0, 0, 0, 0};
      const std::uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int b = 0; b < 4; ++b) key_values[16 * w + 4 * x + b] = k_table[(words[x] >> (8 * b)) & 0xFF];
    }
  }
  for (std::int64_t i = blockIdx.y; i < a.m; i += gridDim.y) {
    key_window w = clamped_window(a.ks[i], a.ke[i], a.n);
    if constexpr (Bug == planted_bug::window_end_inclusive) {
      // The planted bug: the exclusive end read as inclusive (j <= ke), still clamped to n.
      const std::int64_t inclusive_end = static_cast<std::int64_t>(a.ke[i]) + 1;
      w.end = inclusive_end > a.n ? a.n : inclusive_end;
    }
    float value = negative_infinity();
    if (j >= w.begin && j < w.end) {
      const std::uint8_t* query = a.q + i * a.heads * dim;
      const float* weights = a.weights + i * a.heads;
      float sum = 0.0f;
      for (std::int64_t h = 0; h < a.heads; ++h) {
        const std::uint8_t* head = query + h * dim;
        float dot = 0.0f;
        if (key_in_registers) {
          const auto* q4 = reinterpret_cast<const std::uint32_t*>(head);
#pragma unroll
          for (int d4 = 0; d4 < kKeyWords; ++d4) {
            if (d4 >= dim / 4) break;
            const std::uint32_t qw = q4[d4];
#pragma unroll
            for (int b = 0; b < 4; ++b) dot = fmaf(q_table[(qw >> (8 * b)) & 0xFF], key_values[4 * d4 + b], dot);
          }
        } else if (dim % 4 == 0) {
          // Four codes per load (rows stay 4-byte aligned); the same order of additions.
          const auto* q4 = reinterpret_cast<const std::uint32_t*>(head);
          const auto* k4 = reinterpret_cast<const std::uint32_t*>(key);
          for (std::int64_t d4 = 0; d4 < dim / 4; ++d4) {
            const std::uint32_t qw = q4[d4], kw = k4[d4];
            for (int b = 0; b < 32; b += 8) dot = fmaf(q_table[(qw >> b) & 0xFF], k_table[(kw >> b) & 0xFF], dot);
          }
        } else {
          for (std::int64_t d = 0; d < dim; ++d) dot = fmaf(q_table[head[d]], k_table[key[d]], dot);
        }
        sum = fmaf(weights[h], relu_keep_nan(dot), sum);
      }
      value = a.k_scale[j] * sum;
    }
    a.out[i * a.stride + j] = value;
  }
}

}  // namespace

void launch_naive(const logits_args& a, planted_bug bug) {
  const dim3 grid(static_cast<unsigned>((a.n + kThreads - 1) / kThreads), grid_rows(a.m));
  if (a.n == 0 || a.m == 0) return;
  switch (bug) {
    case planted_bug::none: naive_logits<planted_bug::none><<<grid, kThreads>>>(a); break;
    case planted_bug::window_end_inclusive:
      naive_logits<planted_bug::window_end_inclusive><<<grid, kThreads>>>(a);
      break;
    default: throw std::invalid_argument("the naive kernel carries no such planted bug");
  }
  check_launch("naive_logits");
}

}  // namespace mqa::gpu
