#include "inputs.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <iterator>
#include <thread>

#include "distributions.hpp"
#include "paged_cache.hpp"
#include "quantize.hpp"
#include "validator/rng/rng.hpp"
#include "specials.hpp"
#include "validator/case/paged.hpp"
#include "validator/input_error.hpp"
#include "validator/layout/layout.hpp"
#include "validator/layout/paged.hpp"

namespace mqa::inputs {
namespace {

struct quantized {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;  // per token, or per block of 32 for e2m1fn
  bool block_scaled = false;
};

// A power-of-two float32 scale as its ue8m0 byte (its biased exponent).
std::uint8_t ue8m0_byte(float scale) { return static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(scale) >> 23); }

// Block scales outside 2^-20 .. 2^20 (exact::kBlockScaleMaxExponent) would make some block-scaled
// product a float32 subnormal: the case's values or its `bound` ask for them, so the case is refused.
void check_block_scales(const cases::case_spec& c, const char* operand, const std::vector<std::uint8_t>& bytes) {
  for (const std::uint8_t b : bytes) {
    const int e = static_cast<int>(b) - exact::kBlockScaleBias;
    if (std::abs(e) > exact::kBlockScaleMaxExponent)
      throw input_error(fmt::format("case '{}': {}'s e2m1fn block scales reach 2^{} (from its values and bound); "
                                    "accepted: 2^-{} .. 2^{}, where every block-scaled product is a normal float32 "
                                    "(choose a bound nearer the values' magnitude)",
                                    c.name, operand, e, exact::kBlockScaleMaxExponent, exact::kBlockScaleMaxExponent));
  }
}

// Draw, scale, plant and encode `tokens` tokens of one tensor, in parts of tokens on every core:
// every draw is indexed by its place in the tensor (counter_rng), so the parts give the same bytes
// as one pass, on any number of threads; the float values exist for one part per thread only.
quantized quantize(const cases::case_spec& c, tensor which, stream s, std::int64_t tokens) {
  const bool is_q = which == tensor::q;
  const std::int64_t length = c.head_dim;
  const auto total = static_cast<std::size_t>(tokens * length);
  quantized out;
  out.block_scaled = exact::uses_block_scales(is_q ? c.q_format : c.k_format);
  // DeepGEMM's fp4 cast scales each 32 elements; every other producer scales a whole token.
  const std::int64_t scaled_length = out.block_scaled ? exact::kBlockSize : length;
  const std::int64_t scales_per_token = length / scaled_length;
  out.codes.resize(total);
  out.scales.resize(static_cast<std::size_t>(tokens * scales_per_token));
  const counter_rng rng(c.seed, s);
  constexpr std::int64_t kTokensPerPart = 4096;
  const std::int64_t parts = (tokens + kTokensPerPart - 1) / kTokensPerPart;
  std::atomic<std::int64_t> next{0};
  auto work = [&] {
    std::vector<float> values;
    for (std::int64_t part = next++; part < parts; part = next++) {
      const std::int64_t t0 = part * kTokensPerPart, t1 = std::min(tokens, t0 + kTokensPerPart);
      const auto first = static_cast<std::size_t>(t0 * length), size = static_cast<std::size_t>((t1 - t0) * length);
      values.resize(size);
      fill(c.values, !is_q, rng, values, length, first);
      const std::vector<float> scales =
          token_scales(values, scaled_length, is_q ? c.q_bound() : c.k_bound(), is_q ? c.q_scale : c.k_scale);
      divide_by_scales(values, scaled_length, scales);
      plant_value_specials(c, which, values, total, first);
      std::copy(scales.begin(), scales.end(), out.scales.begin() + t0 * scales_per_token);
      fp8::encode(is_q ? c.q_conversion() : c.k_conversion(), std::span<const float>(values),
                  std::span<std::uint8_t>(out.codes).subspan(first, size));
    }
  };
  const auto threads = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::jthread> pool;
  for (std::int64_t t = 1; t < std::min(threads, parts); ++t) pool.emplace_back(work);
  work();
  pool.clear();  // joins: the other threads may still be writing their last part into `out`
  return out;
}

paged_cache make_paged(const cases::case_spec& c) {
  layout::paged_layout l = layout::make_paged_layout(c);
  paged_cache cache;
  cache.batch = l.batch;
  cache.next_n = c.layout.next_n;
  cache.block_kv = c.layout.block_kv;
  cache.num_blocks = l.num_blocks;
  cache.page_bytes = c.layout.page_bytes.value_or(cases::default_page_bytes(c));
  cache.max_blocks = l.max_blocks;
  cache.context_lens_2d = c.layout.context_lens_2d;
  cache.block_table = std::move(l.block_table);
  cache.context_lens = std::move(l.context_lens);
  fill_paged_cache(c, cache);
  return cache;
}

}  // namespace

void check_generated_case(const cases::case_spec& c) {
  if (!c.origin.empty())
    throw input_error(fmt::format("case '{}' has origin = \"{}\": its inputs are the arrays of the bundle it came with, "
                                  "which no generator rebuilds (accepted: a generated case; judge that bundle with "
                                  "`mqacheck check BUNDLE --logits ...`)",
                                  c.name, c.origin));
}

tensors generate(const cases::case_spec& c) {
  check_generated_case(c);
  tensors t;
  t.m = c.m, t.n = c.n, t.heads = c.heads, t.head_dim = c.head_dim;
  const auto rows = static_cast<std::size_t>(c.m), keys = static_cast<std::size_t>(c.n);
  const auto heads = static_cast<std::size_t>(c.heads);

  quantized q = quantize(c, tensor::q, stream::q_values, static_cast<std::int64_t>(rows * heads));
  t.q_format = c.q_format, t.k_format = c.k_format;
  t.q = std::move(q.codes);
  if (q.block_scaled) std::ranges::transform(q.scales, std::back_inserter(t.q_block_scale), ue8m0_byte);
  check_block_scales(c, "q", t.q_block_scale);
  if (c.layout.kind == cases::layout_kind::paged) {
    t.paged = make_paged(c);
  } else {
    quantized k = quantize(c, tensor::k, stream::k_values, static_cast<std::int64_t>(keys));
    t.k = std::move(k.codes);
    if (k.block_scaled) {
      std::ranges::transform(k.scales, std::back_inserter(t.k_block_scale), ue8m0_byte);
      check_block_scales(c, "k", t.k_block_scale);
      t.k_scale.assign(keys, 1.0f);  // the key's scale lives in its block scales
    } else {
      t.k_scale = std::move(k.scales);
    }
    plant_scale_specials(c, t.k_scale);
  }

  // q's scale has one value per (row, head): exactly the weights' shape. Block scales stay apart.
  const counter_rng w(c.seed, stream::weights);
  t.weights.resize(rows * heads);
  for (std::size_t i = 0; i < t.weights.size(); ++i)
    t.weights[i] = static_cast<float>(standard_normal(w, i)) * (q.block_scaled ? 1.0f : q.scales[i]);

  layout::windows windows = layout::make_windows(c);
  t.ks = std::move(windows.ks);
  t.ke = std::move(windows.ke);
  return t;
}

namespace {

struct fnv1a {
  std::uint64_t state = 0xCBF29CE484222325u;
  void byte(std::uint8_t b) { state = (state ^ b) * 0x100000001B3u; }
  void word(std::uint32_t w) {
    for (int s = 0; s < 32; s += 8) byte(static_cast<std::uint8_t>(w >> s));
  }
};

}  // namespace

std::uint64_t fingerprint(const tensors& t) {
  fnv1a h;
  for (const auto b : t.q) h.byte(b);
  for (const auto b : t.k) h.byte(b);
  for (const float f : t.k_scale) h.word(std::bit_cast<std::uint32_t>(f));
  for (const float f : t.weights) h.word(std::bit_cast<std::uint32_t>(f));
  for (const auto v : t.ks) h.word(static_cast<std::uint32_t>(v));
  for (const auto v : t.ke) h.word(static_cast<std::uint32_t>(v));
  for (const auto b : t.q_block_scale) h.byte(b);
  for (const auto b : t.k_block_scale) h.byte(b);
  if (t.paged) {
    for (const auto b : t.paged->kv_cache) h.byte(b);
    for (const auto v : t.paged->block_table) h.word(static_cast<std::uint32_t>(v));
    for (const auto v : t.paged->context_lens) h.word(static_cast<std::uint32_t>(v));
  }
  return h.state;
}

exact::problem problem_of(const cases::case_spec& c, const tensors& t) {
  return {t.m,       t.n, t.heads, t.head_dim, c.q_format, c.k_format, t.q, t.k, t.k_scale, t.weights, t.ks, t.ke,
          t.q_block_scale, t.k_block_scale};
}

paged::problem paged_problem_of(const cases::case_spec& c, const tensors& t) {
  const paged_cache& k = t.paged.value();
  paged::problem p;
  p.batch = k.batch;
  p.next_n = k.next_n;
  p.heads = t.heads;
  p.head_dim = t.head_dim;
  p.block_kv = k.block_kv;
  p.num_blocks = k.num_blocks;
  p.page_bytes = k.page_bytes;
  p.max_blocks = k.max_blocks;
  p.max_context = t.n;
  p.context_lens_2d = k.context_lens_2d;
  p.q_format = c.q_format;
  p.k_format = c.k_format;
  p.q = t.q;
  p.weights = t.weights;
  p.kv_cache = k.kv_cache;
  p.block_table = k.block_table;
  p.context_lens = k.context_lens;
  p.q_block_scale = t.q_block_scale;
  return p;
}

}  // namespace mqa::inputs
