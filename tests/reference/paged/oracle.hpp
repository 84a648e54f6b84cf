// The paged operation's oracle, written out plainly from its definition (DeepGEMM's layout, as
// reference/paged/problem.hpp states it) with no code of reference/paged: key j of request b is
// read from the cache's bytes at its own offsets, and each logit is evaluated in exact rationals
// by the prefill oracle's arithmetic (tests/reference/exact/oracle).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/exact/oracle/oracle.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::paged_oracle {

using exact_oracle::value;

// The page that holds key j of request b.
inline std::int64_t page_of(const paged::problem& p, std::int64_t b, std::int64_t j) {
  return p.block_table[static_cast<std::size_t>(b * p.max_blocks + j / p.block_kv)];
}

// An fp4 cache: per page, block_kv keys of head_dim / 2 bytes (element d in byte d / 2,
// the low nibble for even d), then block_kv x head_dim / 32 ue8m0 bytes; no float32 scale.
inline bool fp4_cache(const paged::problem& p) { return p.k_format == fp8::format::e2m1fn; }

inline double key_code_value(const paged::problem& p, std::int64_t b, std::int64_t j, std::int64_t d) {
  if (fp4_cache(p)) {
    const std::int64_t page = page_of(p, b, j) * p.page_bytes, slot = j % p.block_kv;
    const std::uint8_t byte = p.kv_cache[static_cast<std::size_t>(page + slot * (p.head_dim / 2) + d / 2)];
    const auto code = static_cast<std::uint8_t>(d % 2 == 0 ? byte & 0x0F : byte >> 4);
    const std::uint8_t sf =
        p.kv_cache[static_cast<std::size_t>(page + p.block_kv * (p.head_dim / 2) + slot * (p.head_dim / 32) + d / 32)];
    return std::ldexp(fp8::decode(p.k_format, code), static_cast<int>(sf) - 127);
  }
  const std::int64_t at = page_of(p, b, j) * p.page_bytes + (j % p.block_kv) * p.head_dim + d;
  return fp8::decode(p.k_format, p.kv_cache[static_cast<std::size_t>(at)]);
}

// q[row, h, d], its block scale applied for an e2m1fn q (q_block_scale [rows, heads, head_dim / 32]).
inline double query_value(const paged::problem& p, std::int64_t row, std::int64_t h, std::int64_t d) {
  const double v = fp8::decode(p.q_format, p.q[static_cast<std::size_t>((row * p.heads + h) * p.head_dim + d)]);
  if (p.q_format != fp8::format::e2m1fn) return v;
  const std::uint8_t sf = p.q_block_scale[static_cast<std::size_t>((row * p.heads + h) * (p.head_dim / 32) + d / 32)];
  return std::ldexp(v, static_cast<int>(sf) - 127);
}

inline float key_scale(const paged::problem& p, std::int64_t b, std::int64_t j) {
  if (fp4_cache(p)) return 1.0f;
  const std::int64_t at = page_of(p, b, j) * p.page_bytes + p.block_kv * p.head_dim + 4 * (j % p.block_kv);
  const std::uint32_t bits = static_cast<std::uint32_t>(p.kv_cache[static_cast<std::size_t>(at)]) |
                             static_cast<std::uint32_t>(p.kv_cache[static_cast<std::size_t>(at + 1)]) << 8 |
                             static_cast<std::uint32_t>(p.kv_cache[static_cast<std::size_t>(at + 2)]) << 16 |
                             static_cast<std::uint32_t>(p.kv_cache[static_cast<std::size_t>(at + 3)]) << 24;
  float s = 0;
  std::memcpy(&s, &bits, sizeof s);
  return s;
}

// DeepGEMM's rule: 2-D, k < context_lens[b, t]; 1-D, k <= L - next_n + t.
inline bool in_window(const paged::problem& p, std::int64_t row, std::int64_t j) {
  const std::int64_t b = row / p.next_n, t = row % p.next_n;
  if (p.context_lens_2d) return j < p.context_lens[static_cast<std::size_t>(row)];
  return j <= p.context_lens[static_cast<std::size_t>(b)] - p.next_n + t;
}

inline float logit(const paged::problem& p, std::int64_t row, std::int64_t j, exact::relu_rule rule) {
  using namespace exact_oracle;
  if (!in_window(p, row, j)) return -std::numeric_limits<float>::infinity();
  const std::int64_t b = row / p.next_n;
  value sum{kind::finite, 0};
  for (std::int64_t h = 0; h < p.heads; ++h) {
    value dot{kind::finite, 0};
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      const double q = query_value(p, row, h, d);
      dot = plus(dot, times(of_double(q), of_double(key_code_value(p, b, j, d))));
    }
    sum = plus(sum, times(of_double(p.weights[static_cast<std::size_t>(row * p.heads + h)]), relu(dot, rule)));
  }
  return to_float(times(of_double(key_scale(p, b, j)), sum));
}

}  // namespace mqa::paged_oracle
