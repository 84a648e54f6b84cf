// What the comparator tests judge: a problem the test owns (every input a vector it may set by
// hand), its exact reference, and an output to edit, the reference itself to begin with.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "reference/fp8/convert.hpp"
#include "validator/compare/comparator.hpp"

namespace mqa::test {

struct hand_case {
  std::int64_t m, n, heads, head_dim;
  fp8::format q_format = fp8::format::e4m3fn, k_format = fp8::format::e4m3fn;
  std::vector<std::uint8_t> q, k;
  std::vector<float> k_scale, weights;
  std::vector<std::int32_t> ks, ke;
  exact::problem p;
  exact::result reference;
  std::vector<float> output;  // [m, n]

  // Codes 0, k_scale and weights 1, every window the whole row: set what the test needs, then finish().
  hand_case(std::int64_t m_, std::int64_t n_, std::int64_t h, std::int64_t d)
      : m(m_), n(n_), heads(h), head_dim(d), q(static_cast<std::size_t>(m_ * h * d)), k(static_cast<std::size_t>(n_ * d)),
        k_scale(static_cast<std::size_t>(n_), 1.0f), weights(static_cast<std::size_t>(m_ * h), 1.0f),
        ks(static_cast<std::size_t>(m_), 0), ke(static_cast<std::size_t>(m_), static_cast<std::int32_t>(n_)) {}

  std::uint8_t code(fp8::format f, double v) const {
    return fp8::encode(fp8::conversion{f, fp8::profile_id::ml_dtypes, std::nullopt}, v);
  }
  void fill_q(const std::function<double(std::int64_t, std::int64_t, std::int64_t)>& value) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t d = 0; d < head_dim; ++d)
          q[static_cast<std::size_t>((i * heads + h) * head_dim + d)] = code(q_format, value(i, h, d));
  }
  void fill_k(const std::function<double(std::int64_t, std::int64_t)>& value) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t d = 0; d < head_dim; ++d) k[static_cast<std::size_t>(j * head_dim + d)] = code(k_format, value(j, d));
  }
  // Every code positive, a few values repeating (q in [0.5, 2], k in [0.25, 0.75] in their storage
  // order), k_scale 1, 2, 3, 1, ...: a problem with nothing special in it.
  void fill_patterned() {
    for (std::size_t x = 0; x < q.size(); ++x) q[x] = code(q_format, 0.25 * static_cast<double>(x % 7) + 0.5);
    for (std::size_t x = 0; x < k.size(); ++x) k[x] = code(k_format, 0.125 * static_cast<double>(x % 5) + 0.25);
    for (std::size_t j = 0; j < k_scale.size(); ++j) k_scale[j] = 1.0f + static_cast<float>(j % 3);
  }
  // The problem over the inputs as they are now, its exact reference, and the output reset to it.
  void finish() {
    p = {m, n, heads, head_dim, q_format, k_format, q, k, k_scale, weights, ks, ke};
    reference = exact::compute(p);
    output = reference.logits;
  }

  double qv(std::int64_t i, std::int64_t h, std::int64_t d) const {
    return fp8::decode(q_format, q[static_cast<std::size_t>((i * heads + h) * head_dim + d)]);
  }
  double kv(std::int64_t j, std::int64_t d) const { return fp8::decode(k_format, k[static_cast<std::size_t>(j * head_dim + d)]); }
  float w(std::int64_t i, std::int64_t h) const { return weights[static_cast<std::size_t>(i * heads + h)]; }
  float& out(std::int64_t i, std::int64_t j) { return output[static_cast<std::size_t>(i * n + j)]; }
  float ref(std::int64_t i, std::int64_t j) const { return reference.logits[static_cast<std::size_t>(i * n + j)]; }

  // The output judged against the reference under `contract`, poisoned before the kernel wrote it.
  compare::subject subject(kernels::contract contract = {}) const {
    compare::subject in;
    in.problem = &p;
    in.reference = &reference;
    in.output = {const_cast<float*>(output.data()), m, n, n};
    in.contract = contract;
    in.poisoned = true;
    return in;
  }
  compare::judgement judge(kernels::contract contract = {}) const { return compare::judge(subject(contract)); }
};

// Every placement of k_scale, and a float32 contract (dots and head sum) with k_scale at one of them.
inline constexpr std::array kScalePlacements{bounds::scale_placement::after_head_sum, bounds::scale_placement::before_relu,
                                             bounds::scale_placement::into_weights, bounds::scale_placement::into_keys_bf16};
inline kernels::contract float32_with_scale(bounds::scale_placement placement) {
  kernels::contract k;
  k.dot = bounds::dot_accumulator::fp32;
  k.heads = bounds::head_accumulator::fp32;
  k.scale = placement;
  return k;
}

// k_scale * weight = 2^130 overflows float32 while every logit is 0 (two heads of weights +2^30 and
// -2^30 over equal dots) and A = 2^123 does not; row 1 written +inf throughout. An order that
// multiplies k_scale into the weights (or the head sum's partial sums) first may write that; one
// that scales the dots before relu may not. For a case of 2 heads and head_dim 16.
inline void make_scale_overflow(hand_case& c) {
  c.fill_q([](std::int64_t, std::int64_t, std::int64_t) { return 0x1p-6; });
  c.fill_k([](std::int64_t, std::int64_t) { return 0x1p-6; });
  std::fill(c.k_scale.begin(), c.k_scale.end(), 0x1p100f);
  for (std::size_t x = 0; x < c.weights.size(); ++x) c.weights[x] = x % 2 ? -0x1p30f : 0x1p30f;
  c.finish();
  for (std::int64_t j = 0; j < c.n; ++j) c.out(1, j) = INFINITY;
}

// One row of 8 keys, one head of dim 16, every logit negative (weight -2^100, q and k 1): keys 0
// to 3 with k_scale 2^100 overflow float32 (exact value -inf: -2^204, an overflow every contract
// but a bit-exact one excuses), keys 4 to 7 with k_scale 2^j do not (-2^(104 + j)).
inline void make_negative_overflow(hand_case& c) {
  c.fill_q([](std::int64_t, std::int64_t, std::int64_t) { return 1.0; });
  c.fill_k([](std::int64_t, std::int64_t) { return 1.0; });
  for (std::int64_t j = 0; j < c.n; ++j) c.k_scale[static_cast<std::size_t>(j)] = j < 4 ? 0x1p100f : std::ldexp(1.0f, static_cast<int>(j));
  std::fill(c.weights.begin(), c.weights.end(), -0x1p100f);
  c.finish();
}

}  // namespace mqa::test
