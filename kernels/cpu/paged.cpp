#include "paged.hpp"

#include <algorithm>
#include <chrono>

namespace mqa::kernels::cpu {
namespace {

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

owned_problem read_request(const paged_reading& r, const paged::problem& p, std::int64_t request) {
  const auto dim = static_cast<std::size_t>(p.head_dim);
  const auto width = static_cast<std::size_t>(p.max_context);
  const auto q_row = static_cast<std::size_t>(p.heads) * dim, w_row = static_cast<std::size_t>(p.heads);
  const auto row0 = static_cast<std::size_t>(request * p.next_n), rows = static_cast<std::size_t>(p.next_n);
  const bool fp4 = exact::uses_block_scales(p.k_format);
  const auto blocks = static_cast<std::size_t>(p.head_dim / exact::kBlockSize);
  const auto q_scales_row = static_cast<std::size_t>(p.heads) * blocks;
  owned_problem d(exact::problem{p.next_n, p.max_context, p.heads, p.head_dim, p.q_format, p.k_format,
                                 p.q.subspan(row0 * q_row, rows * q_row), {}, {},
                                 p.weights.subspan(row0 * w_row, rows * w_row), {}, {},
                                 p.q_block_scale.empty()
                                     ? std::span<const std::uint8_t>{}
                                     : p.q_block_scale.subspan(row0 * q_scales_row, rows * q_scales_row),
                                 {}});
  d.ks.assign(rows, 0);
  d.ke.resize(rows);
  for (std::size_t t = 0; t < rows; ++t)
    d.ke[t] = static_cast<std::int32_t>(kernel_window_end(r, p, static_cast<std::int64_t>(row0 + t)));
  // Every key the table addresses, also past the windows: a planted window bug that reaches past
  // them (an inclusive end, the previous row's window) reads what the cache holds there, as a
  // kernel does; so an inclusive end on next_n = 1 writes what the 1-D rule without next_n writes.
  // A key the kernel reads as zeros has zero codes (and, e2m1fn, block scales 2^0: byte 127).
  d.k.assign(width * dim, 0);
  d.k_scale.assign(width, 0.0f);
  if (fp4) d.k_block_scale.assign(width * blocks, std::uint8_t{127});
  for (std::int64_t j = 0; j < p.max_context; ++j) {
    const auto at = static_cast<std::size_t>(j);
    if (!read_key(r, p, request, j, d.k.data() + at * dim, d.k_scale[at], fp4 ? d.k_block_scale.data() + at * blocks : nullptr)) {
      std::fill_n(d.k.begin() + static_cast<std::ptrdiff_t>(at * dim), dim, std::uint8_t{0});
      if (fp4) std::fill_n(d.k_block_scale.begin() + static_cast<std::ptrdiff_t>(at * blocks), blocks, std::uint8_t{127});
    }
  }
  d.refresh_view();
  return d;
}

launch_report run_paged_model(const model_config& config, const paged_reading& reading, const paged::problem& p,
                              const output_view& out, int run_index) {
  const auto start = std::chrono::steady_clock::now();
  // One request at a time, as a dense problem over the whole output row.
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const owned_problem dense = read_request(reading, p, b);
    run_model(config, dense.view, {out.row(b * p.next_n), p.next_n, p.max_context, out.stride}, run_index);
  }
  launch_report report;
  report.kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace mqa::kernels::cpu
