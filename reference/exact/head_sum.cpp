// The fast path and its proof.
//
// Arithmetic: IEEE float64, round to nearest even, subnormals kept (float_environment.hpp makes
// sure of it). Notation: u = 2^-53; the m terms x_k = w_h * r (r = relu'd dot, or each half of a float64 pair,
// so m = heads or 2 * heads); T = sum_k x_k; V = c * T with c = k_scale[j].
//
// No underflow or overflow: every dot is a multiple of 2^-42 (codes.hpp units: e5m2fnuz has 2^-17,
// squared 2^-34; block-scaled e2m1fn 2^-1 * 2^-20, squared 2^-42) below 2^100 and every float32
// weight a multiple of 2^-149 below 2^128, so every
// nonzero quantity below (products, their rounding errors, sums, V) is a multiple of 2^-340
// and below 2^400, far inside float64's normal range. Hence the standard model
// fl(a op b) = (a op b)(1 + d), |d| <= u, and the error-free transformations hold exactly:
//   TwoProduct: p = fl(w * r), e = fma(w, r, -p), p + e = w * r exactly, |e| <= u |p|.
//   TwoSum:     s' = fl(s + p), q = (s - (s' - b)) + (p - b) with b = s' - s: s + p = s' + q, |q| <= u |s'|.
//
// Accumulation (Ogita-Rump-Oishi Dot2 shape): s_k = fl(s_{k-1} + p_k) by TwoSum, the errors q_k and
// e_k summed in sigma. Exactly, T = s_m + E with E = sum_k (q_k + e_k). sigma is a recursive sum
// of the m values fl(q_k + e_k), so |sigma - E| <= gamma_m * sum_k (|q_k| + |e_k|) (gamma_m = m u /
// (1 - m u)). With P = sum_k |p_k|: sum |e_k| <= u P, |s_k| <= (1 + gamma_m) P so
// sum |q_k| <= m u (1 + gamma_m) P, and for m u <= 2^-20
//   |sigma - E| <= 2 m (m + 1) u^2 P.
// Then t = fl(s_m + sigma), v = fl(c * t):
//   |V - v| <= |c| |E - sigma| + |c| |s_m + sigma - t| + |c t - v|
//           <= 2 m (m + 1) u^2 |c| P + 2^-51.9 |v|                             (*)
// The code evaluates B = 2 (|c| * (4 m (m + 1) u^2 * P') + 2^-50 |v|) in float64 (P' = computed
// P >= P (1 - gamma_m)); each factor 2 absorbs the few roundings of B's own evaluation, so
// lo = fl(v - B) <= V <= fl(v + B) = hi: the rounding of v -+ B moves it by at most u (|v| + B),
// which B's slack over (*) covers.
//
// Decision: float32 rounding to nearest even, RN32, is monotone (ties included, overflow to
// +-inf included), and the float64 -> float32 conversion computes RN32 of a float64 exactly. So
// RN32(lo) == RN32(hi) implies RN32(V) == RN32(lo): certified. A zero result also needs V's sign:
// certified when lo > 0 (+0), hi < 0 (-0), or lo == hi == 0 (V = 0 exactly: then c P = 0 and
// every term or c is 0; an exact zero is +0, logits.hpp). Anything else is undecided, for
// instance every V that is exactly a float32 midpoint (ties are never decided here).
#include "head_sum.hpp"

#include <cmath>

namespace mqa::exact::detail {
namespace {

[[gnu::always_inline]] inline void add_term(double w, double r, double& sum, double& error, double& magnitude) {
  const double p = w * r;
  const double e = std::fma(w, r, -p);
  const double s = sum + p;
  const double b = s - sum;
  const double q = (sum - (s - b)) + (p - b);
  sum = s;
  error += q + e;
  magnitude += std::fabs(p);
}

template <bool kPair>
[[gnu::always_inline]] inline void head_sums_body(const head_sum_input& in, head_sum_scratch& scratch, float* y,
                                                  std::uint8_t* undecided) {
  const std::int64_t width = in.width;
  scratch.sum.assign(static_cast<std::size_t>(width), 0.0);
  scratch.error.assign(static_cast<std::size_t>(width), 0.0);
  scratch.magnitude.assign(static_cast<std::size_t>(width), 0.0);
  double* __restrict sum = scratch.sum.data();
  double* __restrict error = scratch.error.data();
  double* __restrict magnitude = scratch.magnitude.data();
  for (std::int64_t h = 0; h < in.heads; ++h) {
    const double w = in.weights[h];
    const double* __restrict hi = in.dot_hi + h * in.head_stride;
    const double* __restrict lo = kPair ? in.dot_lo + h * in.head_stride : nullptr;
    for (std::int64_t j = 0; j < width; ++j) {
      const bool positive = dot_is_positive(hi[j]);
      add_term(w, positive ? hi[j] : 0.0, sum[j], error[j], magnitude[j]);
      if constexpr (kPair) add_term(w, positive ? lo[j] : 0.0, sum[j], error[j], magnitude[j]);
    }
  }
  const double m = static_cast<double>(kPair ? 2 * in.heads : in.heads);
  // m u <= 2^-20 is what the bound above assumes; beyond it nothing is certified.
  const bool certifiable = m <= 0x1p33;
  const double k_m = 4.0 * m * (m + 1.0) * 0x1p-106;
  for (std::int64_t j = 0; j < width; ++j) {
    const double c = in.k_scale[j];
    const double v = c * (sum[j] + error[j]);
    const double bound = 2.0 * (std::fabs(c) * (k_m * magnitude[j]) + 0x1p-50 * std::fabs(v));
    const double lo = v - bound;
    const double hi = v + bound;
    const float y_lo = static_cast<float>(lo);
    const float y_hi = static_cast<float>(hi);
    const bool same = y_lo == y_hi;  // also true for -0 == +0: the sign is settled next
    const bool zero_sign_known = y_lo != 0.0f || lo > 0 || hi < 0 || (lo == 0 && hi == 0);
    undecided[j] = static_cast<std::uint8_t>(!(certifiable && same && zero_sign_known));
    y[j] = y_lo != 0.0f ? y_lo : (hi < 0 ? -0.0f : 0.0f);
  }
}

// The same body compiled twice: with FMA and AVX2 (std::fma becomes one instruction, the loops
// vectorize 4 wide) and for the baseline ISA (std::fma is then a correctly rounded library call).
[[gnu::target("avx2,fma")]] void head_sums_avx2(const head_sum_input& in, head_sum_scratch& scratch, float* y,
                                                std::uint8_t* undecided) {
  if (in.dot_lo != nullptr)
    head_sums_body<true>(in, scratch, y, undecided);
  else
    head_sums_body<false>(in, scratch, y, undecided);
}

void head_sums_baseline(const head_sum_input& in, head_sum_scratch& scratch, float* y, std::uint8_t* undecided) {
  if (in.dot_lo != nullptr)
    head_sums_body<true>(in, scratch, y, undecided);
  else
    head_sums_body<false>(in, scratch, y, undecided);
}

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void head_sums(const head_sum_input& in, head_sum_scratch& scratch, float* y, std::uint8_t* undecided) {
  if (cpu_has_avx2_fma())
    head_sums_avx2(in, scratch, y, undecided);
  else
    head_sums_baseline(in, scratch, y, undecided);
}

}  // namespace mqa::exact::detail
