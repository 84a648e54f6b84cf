// Test inputs for the exact reference: an owning problem, random fills, and the bit-for-bit
// comparison against the oracle, which reports the first mismatch in full.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "oracle/oracle.hpp"
#include "reference/exact/logits.hpp"
#include "reference/fp8/convert.hpp"

namespace mqa::exact_test {

// Sizes scale down under the sanitizer/debug build, where the oracle is ~30x slower.
#ifdef NDEBUG
inline constexpr int kScale = 3;
#else
inline constexpr int kScale = 1;
#endif

struct owned_problem {
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  fp8::format q_format = fp8::format::e4m3fn, k_format = fp8::format::e4m3fn;
  std::vector<std::uint8_t> q, k;
  std::vector<float> k_scale, weights;
  std::vector<std::int32_t> ks, ke;
  std::vector<std::uint8_t> q_block_scale, k_block_scale;  // e2m1fn operands: ue8m0 bytes, 1.0 (127) to start

  owned_problem(std::int64_t m_, std::int64_t n_, std::int64_t heads_, std::int64_t dim_,
                fp8::format qf = fp8::format::e4m3fn, fp8::format kf = fp8::format::e4m3fn)
      : m(m_), n(n_), heads(heads_), head_dim(dim_), q_format(qf), k_format(kf),
        q(static_cast<std::size_t>(m_ * heads_ * dim_), 0), k(static_cast<std::size_t>(n_ * dim_), 0),
        k_scale(static_cast<std::size_t>(n_), 1.0f), weights(static_cast<std::size_t>(m_ * heads_), 1.0f),
        ks(static_cast<std::size_t>(m_), 0), ke(static_cast<std::size_t>(m_), static_cast<std::int32_t>(n_)) {
    if (exact::uses_block_scales(qf)) q_block_scale.assign(static_cast<std::size_t>(m_ * heads_ * dim_ / 32), 127);
    if (exact::uses_block_scales(kf)) k_block_scale.assign(static_cast<std::size_t>(n_ * dim_ / 32), 127);
  }

  exact::problem view() const {
    return {m, n, heads, head_dim, q_format, k_format, q, k, k_scale, weights, ks, ke, q_block_scale, k_block_scale};
  }

  std::uint8_t& q_at(std::int64_t i, std::int64_t h, std::int64_t d) {
    return q[static_cast<std::size_t>((i * heads + h) * head_dim + d)];
  }
  std::uint8_t& k_at(std::int64_t j, std::int64_t d) { return k[static_cast<std::size_t>(j * head_dim + d)]; }
  float& w_at(std::int64_t i, std::int64_t h) { return weights[static_cast<std::size_t>(i * heads + h)]; }
};

// The code of an exactly representable value (throws if there is none).
inline std::uint8_t code_of(fp8::format f, double v) {
  for (unsigned c = 0; c < 256; ++c)
    if (fp8::decode(f, static_cast<std::uint8_t>(c)) == v && !std::signbit(fp8::decode(f, static_cast<std::uint8_t>(c))) == !std::signbit(v))
      return static_cast<std::uint8_t>(c);
  throw std::logic_error(fmt::format("no code for {} in this format", v));
}

// Random finite codes (NaN and Inf codes avoided), weights of both signs over a wide range,
// positive k_scale, and windows that include empty and out-of-range ones.
inline void fill_random(owned_problem& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto finite_code = [&](fp8::format f) {
    for (;;) {
      const auto c = static_cast<std::uint8_t>(rng() & 0xFF);
      if (std::isfinite(fp8::decode(f, c))) return c;
    }
  };
  for (auto& c : p.q) c = finite_code(p.q_format);
  for (auto& c : p.k) c = finite_code(p.k_format);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  for (auto& w : p.weights) w = std::ldexp(unit(rng), exponent(rng));
  for (auto& s : p.k_scale) s = std::ldexp(std::fabs(unit(rng)) + 0.01f, exponent(rng));
  std::uniform_int_distribution<std::int32_t> bound(-3, static_cast<std::int32_t>(p.n) + 3);
  for (std::int64_t i = 0; i < p.m; ++i) {
    p.ks[static_cast<std::size_t>(i)] = bound(rng);
    p.ke[static_cast<std::size_t>(i)] = bound(rng);
    if (i % 3 == 0) p.ks[static_cast<std::size_t>(i)] = std::min(p.ks[static_cast<std::size_t>(i)], 0);
    if (i % 3 == 1) p.ke[static_cast<std::size_t>(i)] = std::max(p.ke[static_cast<std::size_t>(i)], static_cast<std::int32_t>(p.n));
  }
}

inline std::uint32_t bits(float x) { return exact_oracle::bits(x); }

// Two logits agree when their bits do, except that every NaN is the canonical 0x7FC00000.
inline bool same_logit(float a, float b) { return bits(a) == bits(b); }

// Compares a result with the oracle for every row computed and every key. Returns the first
// mismatch, described in full (coordinates, both values with bits, exact value), or nullopt.
// The magnitude must bound the exact A from above within the documented relative slack.
inline std::optional<std::string> first_mismatch(const owned_problem& owned, const exact::result& r,
                                                 exact::relu_rule rule = exact::relu_rule::keeps_nan) {
  const exact::problem p = owned.view();
  for (std::size_t row = 0; row < r.rows.size(); ++row) {
    const std::int64_t i = r.rows[row];
    for (std::int64_t j = 0; j < p.n; ++j) {
      const std::size_t at = row * static_cast<std::size_t>(p.n) + static_cast<std::size_t>(j);
      const float expected = exact_oracle::logit(p, i, j, rule);
      const float got = r.logits[at];
      if (!same_logit(expected, got)) {
        std::string exact_text = "outside the window";
        const exact::window w = exact::clamped_window(p, i);
        if (j >= w.begin && j < w.end) {
          const auto v = exact_oracle::logit_value(p, i, j, rule);
          exact_text = v.k == exact_oracle::kind::finite ? fmt::format("{:.20e}", v.x.convert_to<double>()) : "non-finite";
        }
        return fmt::format("logit[{}, {}]: expected {:a} (0x{:08X}), got {:a} (0x{:08X}); exact value ~ {}", i, j,
                           expected, bits(expected), got, bits(got), exact_text);
      }
      const double a = r.magnitude[at];
      const exact::window w = exact::clamped_window(p, i);
      if (j < w.begin || j >= w.end) {
        if (a != 0) return fmt::format("magnitude[{}, {}] = {} outside the window, expected 0", i, j, a);
        continue;
      }
      // Documented: A = +inf where a non-finite input makes the element NaN or +-inf.
      if (!std::isfinite(expected) && a == HUGE_VAL) continue;
      const auto exact_a = exact_oracle::magnitude(p, i, j);
      if (exact_a < 0) {  // a non-finite weight or k_scale: the element is never finite
        if (a != HUGE_VAL) return fmt::format("magnitude[{}, {}] = {}, expected +inf (non-finite input)", i, j, a);
        continue;
      }
      const exact_oracle::cpp_rational limit =
          1 + exact_oracle::cpp_rational(2 * (p.heads + p.head_dim + 3)) * exact_oracle::power_of_two(-52);
      if (!std::isfinite(a) || exact_oracle::exactly(a) < exact_a || exact_oracle::exactly(a) > exact_a * limit)
        return fmt::format("magnitude[{}, {}] = {:a} is not within [A, A (1 + 2 (H + D + 3) 2^-52)], A ~ {:a}", i, j, a,
                           exact_a.convert_to<double>());
    }
  }
  return std::nullopt;
}

}  // namespace mqa::exact_test
