#include "inputs.hpp"

#include <algorithm>
#include <bit>
#include <iterator>

#include "distributions.hpp"
#include "quantize.hpp"
#include "rng.hpp"
#include "specials.hpp"
#include "validator/layout/layout.hpp"

namespace mqa::inputs {
namespace {

struct quantized {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;  // per token, or per block of 32 for e2m1fn
  bool block_scaled = false;
};

// A power-of-two float32 scale as its ue8m0 byte (its biased exponent).
std::uint8_t ue8m0_byte(float scale) { return static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(scale) >> 23); }

quantized quantize(const cases::case_spec& c, tensor which, std::vector<float> values) {
  const bool is_q = which == tensor::q;
  const fp8::format f = is_q ? c.q_format : c.k_format;
  quantized out;
  out.block_scaled = exact::uses_block_scales(f);
  // DeepGEMM's fp4 cast scales each 32 elements; every other producer scales a whole token.
  const std::int64_t scaled_length = out.block_scaled ? exact::kBlockSize : c.head_dim;
  out.scales = token_scales(values, scaled_length, is_q ? c.q_bound() : c.k_bound(), is_q ? c.q_scale : c.k_scale);
  divide_by_scales(values, scaled_length, out.scales);
  plant_value_specials(c, which, values);
  out.codes.resize(values.size());
  fp8::encode(is_q ? c.q_conversion() : c.k_conversion(), std::span<const float>(values), out.codes);
  return out;
}

std::vector<float> draw(const cases::case_spec& c, stream s, std::size_t size, bool keys) {
  std::vector<float> values(size);
  fill(c.values, keys, counter_rng(c.seed, s), values, c.head_dim);
  return values;
}

}  // namespace

tensors generate(const cases::case_spec& c) {
  tensors t;
  t.m = c.m, t.n = c.n, t.heads = c.heads, t.head_dim = c.head_dim;
  const auto rows = static_cast<std::size_t>(c.m), keys = static_cast<std::size_t>(c.n);
  const auto heads = static_cast<std::size_t>(c.heads), dim = static_cast<std::size_t>(c.head_dim);

  quantized q = quantize(c, tensor::q, draw(c, stream::q_values, rows * heads * dim, false));
  quantized k = quantize(c, tensor::k, draw(c, stream::k_values, keys * dim, true));
  t.q_format = c.q_format, t.k_format = c.k_format;
  t.q = std::move(q.codes);
  t.k = std::move(k.codes);
  if (q.block_scaled) std::ranges::transform(q.scales, std::back_inserter(t.q_block_scale), ue8m0_byte);
  if (k.block_scaled) {
    std::ranges::transform(k.scales, std::back_inserter(t.k_block_scale), ue8m0_byte);
    t.k_scale.assign(keys, 1.0f);  // the key's scale lives in its block scales
  } else {
    t.k_scale = std::move(k.scales);
  }
  plant_scale_specials(c, t.k_scale);

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
  return h.state;
}

exact::problem problem_of(const cases::case_spec& c, const tensors& t) {
  return {t.m,       t.n, t.heads, t.head_dim, c.q_format, c.k_format, t.q, t.k, t.k_scale, t.weights, t.ks, t.ke,
          t.q_block_scale, t.k_block_scale};
}

}  // namespace mqa::inputs
