#include "reference/paged/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace mqa::paged {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("mqa::paged: " + what); }

void expect_size(const char* name, std::size_t has, std::int64_t expected, const std::string& shape) {
  if (expected < 0 || has != static_cast<std::size_t>(expected))
    fail(fmt::format("{} has {} entries, expected {} = {}", name, has, expected, shape));
}

std::int64_t blocks_for(std::int64_t keys, std::int64_t block_kv) { return (keys + block_kv - 1) / block_kv; }

}  // namespace

std::int64_t context_of(const problem& p, std::int64_t row) {
  const std::int64_t b = row / p.next_n;
  return p.context_lens_2d ? p.context_lens[static_cast<std::size_t>(row)] : p.context_lens[static_cast<std::size_t>(b)];
}

std::int64_t window_end(const problem& p, std::int64_t row) {
  const std::int64_t length = context_of(p, row);
  // 1-D: DeepGEMM's k <= L - next_n + t, the next_n queries being the context's last tokens.
  const std::int64_t end = p.context_lens_2d ? length : length - p.next_n + row % p.next_n + 1;
  return std::clamp<std::int64_t>(end, 0, p.max_context);
}

std::int64_t request_keys(const problem& p, std::int64_t request) {
  std::int64_t keys = 0;
  for (std::int64_t t = 0; t < p.next_n; ++t) keys = std::max(keys, window_end(p, request * p.next_n + t));
  return keys;
}

void check_problem(const problem& p) {
  if (p.batch < 0 || p.next_n < 1 || p.heads < 1 || p.head_dim < 1 || p.block_kv < 1 || p.num_blocks < 0 ||
      p.max_blocks < 0 || p.max_context < 0)
    fail(fmt::format("sizes out of range: batch={} next_n={} heads={} head_dim={} block_kv={} num_blocks={} "
                     "max_blocks={} max_context={}",
                     p.batch, p.next_n, p.heads, p.head_dim, p.block_kv, p.num_blocks, p.max_blocks, p.max_context));
  if (p.page_bytes % 4 != 0)
    fail(fmt::format("the page stride of {} bytes is not a multiple of 4 (the scales are float32)", p.page_bytes));
  if (exact::uses_block_scales(p.k_format) && p.head_dim % exact::kBlockSize != 0)
    fail(fmt::format("an e2m1fn cache takes a scale per {} elements, but head_dim {} is not a multiple of {}",
                     exact::kBlockSize, p.head_dim, exact::kBlockSize));
  if (p.page_bytes < p.payload_bytes())
    fail(fmt::format("the page stride of {} bytes is smaller than a page's payload of block_kv x ({}) = "
                     "{} x {} = {} bytes",
                     p.page_bytes, key_bytes_formula(p.k_format), p.block_kv, p.key().codes + p.key().scale,
                     p.payload_bytes()));
  const std::int64_t rows = p.rows();
  expect_size("q", p.q.size(), rows * p.heads * p.head_dim, "batch * next_n * heads * head_dim");
  expect_size("q_block_scale", p.q_block_scale.size(),
              exact::uses_block_scales(p.q_format) ? rows * p.heads * (p.head_dim / exact::kBlockSize) : 0,
              "batch * next_n * heads * head_dim / 32 for an e2m1fn q, else none");
  expect_size("weights", p.weights.size(), rows * p.heads, "batch * next_n * heads");
  expect_size("kv_cache", p.kv_cache.size(), p.num_blocks * p.page_bytes, "num_blocks * page_bytes");
  expect_size("block_table", p.block_table.size(), p.batch * p.max_blocks, "batch * max_blocks");
  expect_size("context_lens", p.context_lens.size(), p.context_lens_2d ? rows : p.batch,
              p.context_lens_2d ? "batch * next_n" : "batch");
  const std::int64_t covered = p.max_blocks * p.block_kv;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    std::int64_t longest = 0;
    for (std::int64_t t = 0; t < (p.context_lens_2d ? p.next_n : 1); ++t) {
      const std::int64_t length = context_of(p, b * p.next_n + t);
      const std::string who = p.context_lens_2d ? fmt::format("request {}, row {}", b, t) : fmt::format("request {}", b);
      if (length < 0) fail(fmt::format("{}: the context length {} is negative", who, length));
      if (length > p.max_context)
        fail(fmt::format("{}: the context of {} keys is longer than max_context = {}", who, length, p.max_context));
      if (length > covered)
        fail(fmt::format("{}: the context of {} keys needs {} blocks of {}, but the block table covers {} blocks "
                         "({} keys)",
                         who, length, blocks_for(length, p.block_kv), p.block_kv, p.max_blocks, covered));
      longest = std::max(longest, length);
    }
    for (std::int64_t i = 0; i < blocks_for(longest, p.block_kv); ++i) {
      const std::int32_t entry = p.block_table[static_cast<std::size_t>(b * p.max_blocks + i)];
      if (entry < 0 || entry >= p.num_blocks)
        fail(fmt::format("request {}, logical block {}: the block table maps it to block {}, outside the cache's {} "
                         "blocks (accepted: 0 to {} for every block a context uses)",
                         b, i, entry, p.num_blocks, p.num_blocks - 1));
    }
  }
}

float scale_at(std::span<const std::uint8_t> cache, std::int64_t offset) {
  std::uint32_t bits = 0;
  for (int byte = 3; byte >= 0; --byte) bits = bits << 8 | cache[static_cast<std::size_t>(offset + byte)];
  return std::bit_cast<float>(bits);
}

gathered_keys gather(const problem& p, std::int64_t request, std::int64_t count) {
  gathered_keys g;
  const auto dim = static_cast<std::size_t>(p.head_dim);
  const bool fp4 = exact::uses_block_scales(p.k_format);
  const key_bytes bytes = p.key();
  g.k.resize(static_cast<std::size_t>(count) * dim);
  g.k_scale.resize(static_cast<std::size_t>(count));
  if (fp4) g.k_block_scale.resize(static_cast<std::size_t>(count * bytes.scale));
  for (std::int64_t j = 0; j < count; ++j) {
    const std::int64_t block = p.block_table[static_cast<std::size_t>(request * p.max_blocks + j / p.block_kv)];
    const std::int64_t slot = j % p.block_kv;
    const auto from = p.kv_cache.begin() + p.value_offset(block, slot);
    std::uint8_t* to = g.k.data() + static_cast<std::size_t>(j) * dim;
    if (fp4) {
      unpack_codes(std::span<const std::uint8_t>(from, static_cast<std::size_t>(bytes.codes)), to);
      const auto scales = p.kv_cache.begin() + p.scale_offset(block, slot);
      std::copy(scales, scales + bytes.scale, g.k_block_scale.begin() + j * bytes.scale);
      g.k_scale[static_cast<std::size_t>(j)] = 1.0f;
    } else {
      std::copy(from, from + static_cast<std::ptrdiff_t>(dim), to);
      g.k_scale[static_cast<std::size_t>(j)] = scale_at(p.kv_cache, p.scale_offset(block, slot));
    }
  }
  return g;
}

const char* key_bytes_formula(fp8::format k_format) {
  return exact::uses_block_scales(k_format) ? "head_dim / 2 + head_dim / 32" : "head_dim + 4";
}

key_bytes key_bytes_of(fp8::format k_format, std::int64_t head_dim) {
  if (exact::uses_block_scales(k_format)) return {head_dim / 2, head_dim / exact::kBlockSize};
  return {head_dim, 4};
}

void unpack_codes(std::span<const std::uint8_t> bytes, std::uint8_t* codes) {
  for (std::size_t c = 0; c < bytes.size(); ++c) {
    codes[2 * c] = bytes[c] & 0x0F;
    codes[2 * c + 1] = static_cast<std::uint8_t>(bytes[c] >> 4);
  }
}

row_windows windows_of(const problem& p) {
  row_windows w;
  w.ks.assign(static_cast<std::size_t>(p.rows()), 0);
  w.ke.resize(static_cast<std::size_t>(p.rows()));
  for (std::int64_t i = 0; i < p.rows(); ++i) w.ke[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(window_end(p, i));
  return w;
}

exact::problem rows_view(const problem& p, const row_windows& w) {
  return {p.rows(), p.max_context, p.heads, p.head_dim, p.q_format, p.k_format, p.q, {}, {}, p.weights, w.ks, w.ke,
          p.q_block_scale, {}};
}

}  // namespace mqa::paged
