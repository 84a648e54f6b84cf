#include "paged.hpp"

#include <algorithm>
#include <chrono>

namespace mqa::kernels::cpu {
namespace {

// The window end the kernel gives row `row`.
std::int64_t kernel_window_end(const paged_reading& r, const paged::problem& p, std::int64_t row) {
  switch (r.window) {
    case paged_window::per_row: break;
    case paged_window::without_next_n:
      if (!p.context_lens_2d)
        return std::clamp<std::int64_t>(paged::context_of(p, row) - row % p.next_n + 1, 0, p.max_context);
      break;
    case paged_window::last_row: return paged::window_end(p, row - row % p.next_n + p.next_n - 1);
  }
  return paged::window_end(p, row);
}

// Key j of request b as the kernel reads it into codes[dim] and scale (an e2m1fn key: its block
// scales into block_scales[dim / 32], scale 1); false: it reads zeros.
bool read_key(const paged_reading& r, const paged::problem& p, std::int64_t request, std::int64_t j,
              std::uint8_t* codes, float& scale, std::uint8_t* block_scales) {
  const std::int64_t logical = j / p.block_kv, slot = j % p.block_kv;
  if (logical >= p.max_blocks) return false;
  const std::int64_t block =
      r.logical_blocks ? logical : p.block_table[static_cast<std::size_t>(request * p.max_blocks + logical)];
  if (block < 0 || block >= p.num_blocks) return false;
  if (r.block_offset_overflows_at > 0 && block * p.page_bytes >= r.block_offset_overflows_at) return false;
  const paged::key_bytes bytes = p.key();
  const std::int64_t values =
      r.scales_interleaved ? block * p.page_bytes + slot * (bytes.codes + bytes.scale) : p.value_offset(block, slot);
  const std::int64_t scale_at = r.scales_interleaved ? values + bytes.codes : p.scale_offset(block, slot);
  if (exact::uses_block_scales(p.k_format)) {
    paged::unpack_codes(p.kv_cache.subspan(static_cast<std::size_t>(values), static_cast<std::size_t>(bytes.codes)), codes);
    std::copy_n(p.kv_cache.begin() + scale_at, bytes.scale, block_scales);
    scale = 1.0f;
  } else {
    std::copy_n(p.kv_cache.begin() + values, p.head_dim, codes);
    scale = paged::scale_at(p.kv_cache, scale_at);
  }
  return true;
}

}  // namespace

launch_report run_paged_model(const model_config& config, const paged_reading& reading, const paged::problem& p,
                              const output_view& out, int run_index) {
  const auto start = std::chrono::steady_clock::now();
  const auto dim = static_cast<std::size_t>(p.head_dim);
  const auto width = static_cast<std::size_t>(p.max_context);
  // One request at a time, as a dense problem over the whole output row: keys it does not read
  // are zero (never inside a window it computes).
  std::vector<std::uint8_t> k(width * dim);
  std::vector<float> k_scale(width);
  const bool fp4 = exact::uses_block_scales(p.k_format);
  const auto blocks = static_cast<std::size_t>(p.head_dim / exact::kBlockSize);
  // Keys a kernel reads as zeros get block scale 2^0 (byte 127): their codes are zero anyway.
  std::vector<std::uint8_t> k_block_scale(fp4 ? width * blocks : 0);
  std::vector<std::int32_t> ks(static_cast<std::size_t>(p.next_n), 0), ke(static_cast<std::size_t>(p.next_n));
  const auto q_row = static_cast<std::size_t>(p.heads) * dim, w_row = static_cast<std::size_t>(p.heads);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t row0 = b * p.next_n;
    std::int64_t keys = 0;
    for (std::int64_t t = 0; t < p.next_n; ++t) {
      ke[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(kernel_window_end(reading, p, row0 + t));
      keys = std::max<std::int64_t>(keys, ke[static_cast<std::size_t>(t)]);
    }
    std::fill(k.begin(), k.end(), std::uint8_t{0});
    std::fill(k_scale.begin(), k_scale.end(), 0.0f);
    std::fill(k_block_scale.begin(), k_block_scale.end(), std::uint8_t{127});
    for (std::int64_t j = 0; j < keys; ++j) {
      const auto at = static_cast<std::size_t>(j);
      if (!read_key(reading, p, b, j, k.data() + at * dim, k_scale[at], fp4 ? k_block_scale.data() + at * blocks : nullptr)) {
        std::fill_n(k.begin() + static_cast<std::ptrdiff_t>(at * dim), dim, std::uint8_t{0});
        if (fp4) std::fill_n(k_block_scale.begin() + static_cast<std::ptrdiff_t>(at * blocks), blocks, std::uint8_t{127});
      }
    }
    const auto q_scales_per_row = static_cast<std::size_t>(p.heads) * blocks;
    const exact::problem dense{p.next_n,
                               p.max_context,
                               p.heads,
                               p.head_dim,
                               p.q_format,
                               p.k_format,
                               p.q.subspan(static_cast<std::size_t>(row0) * q_row, static_cast<std::size_t>(p.next_n) * q_row),
                               k,
                               k_scale,
                               p.weights.subspan(static_cast<std::size_t>(row0) * w_row, static_cast<std::size_t>(p.next_n) * w_row),
                               ks,
                               ke,
                               p.q_block_scale.empty()
                                   ? std::span<const std::uint8_t>{}
                                   : p.q_block_scale.subspan(static_cast<std::size_t>(row0) * q_scales_per_row,
                                                             static_cast<std::size_t>(p.next_n) * q_scales_per_row),
                               k_block_scale};
    run_model(config, dense, {out.row(row0), p.next_n, p.max_context, out.stride}, run_index);
  }
  launch_report report;
  report.kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace mqa::kernels::cpu
