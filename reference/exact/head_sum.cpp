// The fast path and its proof.
//
// Arithmetic: IEEE float64, round to nearest even, subnormals kept (float_environment.hpp makes
// sure of it). Notation: u = 2^-53; the m terms x_k = w_h * r (r = relu'd dot, or each half of a
// float64 pair, so m = heads or 2 * heads); T = sum_k x_k; V = c * T with c = k_scale[j] * scale
// (the state's power of two: 1, or the unit of dots added in integer units).
//
// No underflow or overflow: every dot is a multiple of 2^-42 (codes.hpp units: e5m2fnuz has 2^-17,
// squared 2^-34; block-scaled e2m1fn 2^-1 * 2^-20, squared 2^-42) below 2^100 and every float32
// weight a multiple of 2^-149 below 2^128, so every nonzero quantity below (products, sums, V, the
// bound) is a multiple of 2^-400 and below 2^400, far inside float64's normal range. Hence the standard model fl(a op b) = (a op b)(1 + d), |d| <= u,
// for every operation, and for the fused multiply-add fl(s + w r) = (s + w r)(1 + d).
//
// Accumulation: s_k = fl(s_{k-1} + w_k r_k) by one fused multiply-add per term (s_0 = 0), and
// a_k = fl(a_{k-1} + |w_k| |r_k|) the same way. Recursive summation of m terms, each rounding once
// (Higham, Accuracy and Stability, (4.4)): |s_m - T| <= gamma_m P with P = sum_k |x_k| and
// gamma_m = m u / (1 - m u); the nonnegative sum gives a_m >= P (1 - gamma_m). For m u <= 2^-20,
// gamma_m / (1 - gamma_m) <= m u (1 + 2^-18), so
//   |s_m - T| <= m u (1 + 2^-18) a_m.
// Then v = fl(c * s_m):
//   |V - v| <= |c| |T - s_m| + |c s_m - v| <= |c| m u (1 + 2^-18) a_m + u (1 + u) |v|.        (*)
// The code evaluates B = 2 (|c| * ((m u) * a_m) + 2^-50 |v|) in float64 (m u exact); with its own
// three roundings B >= 2 (1 - u)^3 |c| m u a_m + 2^-49 (1 - u)^2 |v|, which exceeds (*) by more
// than u (|v| + B), the most the rounding of v -+ B can move it. So lo = fl(v - B) <= V <= fl(v + B) = hi.
//
// Decision: float32 rounding to nearest even, RN32, is monotone (ties included, overflow to
// +-inf included), and the float64 -> float32 conversion computes RN32 of a float64 exactly. So
// RN32(lo) == RN32(hi) implies RN32(V) == RN32(lo): certified. A zero result also needs V's sign:
// certified when lo > 0 (+0), hi < 0 (-0), or lo == hi == 0 (V = 0 exactly: then c P = 0 and
// every term or c is 0; an exact zero is +0, logits.hpp). Anything else is undecided, for
// instance every V that is exactly a float32 midpoint (ties are never decided here).
//
// Against a compensated (Dot2) sum this gives up about 47 bits of headroom for 24: an element is
// undecided only when V lies within about 2^-23 m P / |V| of its float32 ulp from a rounding
// boundary, a few per ten million logits on random inputs, each settled exactly by the fallback.
#include "head_sum.hpp"

#include <algorithm>
#include <cmath>

namespace mqa::exact::detail {
namespace {

template <bool kPair>
[[gnu::always_inline]] inline void add_body(head_sum_state& state, const head_sum_input& in) {
  const auto width = static_cast<std::int64_t>(state.sum.size());
  double* __restrict sum = state.sum.data();
  double* __restrict magnitude = state.magnitude.data();
  for (std::int64_t h = 0; h < in.heads; ++h) {
    const double w = in.weights[h], abs_w = std::fabs(w);
    const double* __restrict hi = in.dot_hi + h * in.head_stride;
    const double* __restrict lo = kPair ? in.dot_lo + h * in.head_stride : nullptr;
    for (std::int64_t j = 0; j < width; ++j) {
      const bool positive = dot_is_positive(hi[j]);
      const double r = positive ? hi[j] : 0.0;
      sum[j] = std::fma(w, r, sum[j]);
      magnitude[j] = std::fma(abs_w, r, magnitude[j]);
      if constexpr (kPair) {
        const double rl = positive ? lo[j] : 0.0;
        sum[j] = std::fma(w, rl, sum[j]);
        magnitude[j] = std::fma(abs_w, std::fabs(rl), magnitude[j]);
      }
    }
  }
}

// Compiled three times: with AVX-512 (the loops vectorize 8 wide), with AVX2 and FMA (4 wide), and
// for the baseline ISA (std::fma is then a correctly rounded library call). The bits may differ
// between them only in which elements are undecided, never in a certified result.
[[gnu::target("avx512f")]] void add_avx512(head_sum_state& state, const head_sum_input& in) {
  if (in.dot_lo != nullptr)
    add_body<true>(state, in);
  else
    add_body<false>(state, in);
}

[[gnu::target("avx2,fma")]] void add_avx2(head_sum_state& state, const head_sum_input& in) {
  if (in.dot_lo != nullptr)
    add_body<true>(state, in);
  else
    add_body<false>(state, in);
}

void add_baseline(head_sum_state& state, const head_sum_input& in) {
  if (in.dot_lo != nullptr)
    add_body<true>(state, in);
  else
    add_body<false>(state, in);
}

enum class isa : std::uint8_t { baseline, avx2, avx512 };
isa best_isa() {
  static const isa best = __builtin_cpu_supports("avx512f")                                     ? isa::avx512
                          : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? isa::avx2
                                                                                                : isa::baseline;
  return best;
}

}  // namespace

void head_sum_start(head_sum_state& state, std::int64_t width, double scale) {
  state.sum.assign(static_cast<std::size_t>(width), 0.0);
  state.magnitude.assign(static_cast<std::size_t>(width), 0.0);
  state.terms = 0;
  state.scale = scale;
}

void head_sum_add(head_sum_state& state, const head_sum_input& in) {
  switch (best_isa()) {
    case isa::avx512: add_avx512(state, in); break;
    case isa::avx2: add_avx2(state, in); break;
    case isa::baseline: add_baseline(state, in); break;
  }
  state.terms += (in.dot_lo != nullptr ? 2 : 1) * in.heads;
}

void head_sum_finish(const head_sum_state& state, std::int64_t first, std::int64_t count, const float* k_scale,
                     float* y, std::uint8_t* undecided) {
  const auto m = static_cast<double>(state.terms);
  // m u <= 2^-20 is what the bound above assumes; beyond it nothing is certified.
  const bool certifiable = m <= 0x1p33;
  const double k_m = m * 0x1p-53;
  for (std::int64_t jj = 0; jj < count; ++jj) {
    const auto j = static_cast<std::size_t>(first + jj);
    const double c = k_scale[jj] * state.scale;  // a float32 times a power of two >= 2^-40: exact
    const double v = c * state.sum[j];
    const double bound = 2.0 * (std::fabs(c) * (k_m * state.magnitude[j]) + 0x1p-50 * std::fabs(v));
    const double lo = v - bound;
    const double hi = v + bound;
    const float y_lo = static_cast<float>(lo);
    const float y_hi = static_cast<float>(hi);
    const bool same = y_lo == y_hi;  // also true for -0 == +0: the sign is settled next
    const bool zero_sign_known = y_lo != 0.0f || lo > 0 || hi < 0 || (lo == 0 && hi == 0);
    undecided[jj] = static_cast<std::uint8_t>(!(certifiable && same && zero_sign_known));
    y[jj] = y_lo != 0.0f ? y_lo : (hi < 0 ? -0.0f : 0.0f);
  }
}

void head_sums(const head_sum_input& in, head_sum_state& scratch, float* y, std::uint8_t* undecided) {
  head_sum_start(scratch, in.width);
  head_sum_add(scratch, in);
  head_sum_finish(scratch, 0, in.width, in.k_scale, y, undecided);
}

}  // namespace mqa::exact::detail
