#include "inputs.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <thread>

#include "distributions.hpp"
#include "quantize.hpp"
#include "rng.hpp"
#include "specials.hpp"
#include "validator/layout/layout.hpp"

namespace mqa::inputs {
namespace {

struct quantized {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
};

// Draw, scale, plant and encode `tokens` tokens of one tensor, in parts of tokens on every core:
// every draw is indexed by its place in the tensor (counter_rng), so the parts give the same bytes
// as one pass, on any number of threads; the float values exist for one part per thread only.
quantized quantize(const cases::case_spec& c, tensor which, stream s, std::int64_t tokens) {
  const bool is_q = which == tensor::q;
  const std::int64_t length = c.head_dim;
  const auto total = static_cast<std::size_t>(tokens * length);
  quantized out;
  out.codes.resize(total);
  out.scales.resize(static_cast<std::size_t>(tokens));
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
      fill(c.values, !is_q, rng, values, length, t0);
      const std::vector<float> scales =
          token_scales(values, length, is_q ? c.q_bound() : c.k_bound(), is_q ? c.q_scale : c.k_scale);
      divide_by_scales(values, length, scales);
      plant_value_specials(c, which, values, total, first);
      std::copy(scales.begin(), scales.end(), out.scales.begin() + t0);
      fp8::encode(is_q ? c.q_conversion() : c.k_conversion(), std::span<const float>(values),
                  std::span<std::uint8_t>(out.codes).subspan(first, size));
    }
  };
  const auto threads = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::jthread> pool;
  for (std::int64_t t = 1; t < std::min(threads, parts); ++t) pool.emplace_back(work);
  work();
  return out;
}

}  // namespace

tensors generate(const cases::case_spec& c) {
  tensors t;
  t.m = c.m, t.n = c.n, t.heads = c.heads, t.head_dim = c.head_dim;
  const auto rows = static_cast<std::size_t>(c.m), keys = static_cast<std::size_t>(c.n);
  const auto heads = static_cast<std::size_t>(c.heads);

  quantized q = quantize(c, tensor::q, stream::q_values, static_cast<std::int64_t>(rows * heads));
  quantized k = quantize(c, tensor::k, stream::k_values, static_cast<std::int64_t>(keys));
  t.q = std::move(q.codes);
  t.k = std::move(k.codes);
  t.k_scale = std::move(k.scales);
  plant_scale_specials(c, t.k_scale);

  // q's scale has one value per (row, head): exactly the weights' shape.
  const counter_rng w(c.seed, stream::weights);
  t.weights.resize(rows * heads);
  for (std::size_t i = 0; i < t.weights.size(); ++i)
    t.weights[i] = static_cast<float>(standard_normal(w, i)) * q.scales[i];

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
  return h.state;
}

exact::problem problem_of(const cases::case_spec& c, const tensors& t) {
  return {t.m, t.n, t.heads, t.head_dim, c.q_format, c.k_format, t.q, t.k, t.k_scale, t.weights, t.ks, t.ke};
}

}  // namespace mqa::inputs
