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

// Key j of request b as the kernel reads it into codes[dim] and scale; false: it reads zeros.
bool read_key(const paged_reading& r, const paged::problem& p, std::int64_t request, std::int64_t j,
              std::uint8_t* codes, float& scale) {
  const std::int64_t logical = j / p.block_kv, slot = j % p.block_kv;
  if (logical >= p.max_blocks) return false;
  const std::int64_t block =
      r.logical_blocks ? logical : p.block_table[static_cast<std::size_t>(request * p.max_blocks + logical)];
  if (block < 0 || block >= p.num_blocks) return false;
  if (r.block_offset_overflows_at > 0 && block * p.page_bytes >= r.block_offset_overflows_at) return false;
  const std::int64_t values =
      r.scales_interleaved ? block * p.page_bytes + slot * (p.head_dim + 4) : p.value_offset(block, slot);
  const std::int64_t scale_at = r.scales_interleaved ? values + p.head_dim : p.scale_offset(block, slot);
  std::copy_n(p.kv_cache.begin() + values, p.head_dim, codes);
  scale = paged::scale_at(p.kv_cache, scale_at);
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
    for (std::int64_t j = 0; j < keys; ++j)
      if (!read_key(reading, p, b, j, k.data() + static_cast<std::size_t>(j) * dim, k_scale[static_cast<std::size_t>(j)]))
        std::fill_n(k.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(j) * dim), dim, std::uint8_t{0});
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
                               ke};
    run_model(config, dense, {out.row(row0), p.next_n, p.max_context, out.stride}, run_index);
  }
  launch_report report;
  report.kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace mqa::kernels::cpu
