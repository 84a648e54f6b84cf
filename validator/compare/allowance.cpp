#include "allowance.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "reference/fp8/convert.hpp"

namespace mqa::compare {
namespace {

// Past this the float32 rounding of a real number is +inf (FLT_MAX + half an ulp): where
// intermediates overflow. The stored result's own threshold is the bound's (bfloat16's is lower).
constexpr double kOverflowThreshold = bounds::kFloat32Overflow;
constexpr double kUp = 1 + 0x1p-50;  // the roundings of a few products, upward

// Whether some intermediate of an order the contract allows may reach float32's overflow threshold
// (error_bound::largest_intermediate). It grows with unscaled_magnitude, so the separable upper
// bound element_at gives decides every element it keeps below the threshold, as the tighter
// A / |s| would; only the others pay for the division.
bool intermediate_may_overflow(const bounds::error_bound& bound, bounds::element& e, double magnitude) {
  if (bound.largest_intermediate(e) < kOverflowThreshold) return false;
  if (e.scale_abs > 0) e.unscaled_magnitude = std::min(e.unscaled_magnitude, magnitude / e.scale_abs * kUp);
  return bound.largest_intermediate(e) >= kOverflowThreshold;
}

// ---- The lanes: allowance_at for kLanes keys at once, each lane the same operations in the
// same order as the definition (no contraction: this file is built with -ffp-contract=off), so
// each lane's bits are the definition's. A vector ?: computes both of its arms in every lane; the
// arms here are plain arithmetic, whose infinities and NaNs in unselected lanes are discarded.
constexpr std::size_t kLanes = 8;
using lanes = double __attribute__((vector_size(kLanes * sizeof(double))));
using lane_bits = std::int64_t __attribute__((vector_size(kLanes * sizeof(std::int64_t))));
using lane_floats = float __attribute__((vector_size(kLanes * sizeof(float))));
using lane_words = std::int32_t __attribute__((vector_size(kLanes * sizeof(std::int32_t))));

// Inlined into the per-instruction-set functions only, so no vector crosses a call and the ABI
// note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
template <class V>
[[gnu::always_inline]] inline V load(const void* from) {
  V v;
  std::memcpy(&v, from, sizeof v);
  return v;
}
[[gnu::always_inline]] inline lanes splat(double x) { return lanes{} + x; }
[[gnu::always_inline]] inline lanes as_doubles(lane_bits b) {
  lanes d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
[[gnu::always_inline]] inline lane_bits as_bits(lanes d) {
  lane_bits b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}
// std::max(a, b) and std::min(a, b), lane by lane: the first argument unless the second wins by <.
[[gnu::always_inline]] inline lanes max_of(lanes a, lanes b) { return a < b ? b : a; }
[[gnu::always_inline]] inline lanes min_of(lanes a, lanes b) { return b < a ? b : a; }

// largest_intermediate (reference/bounds/error_bound.cpp), lanes of `unscaled` and the row's
// per-placement constants.
[[gnu::always_inline]] inline lanes largest_intermediate(const bounds::error_bound& bound, lanes magnitude,
                                                          lanes unscaled, lanes scaled_weight_max,
                                                          lanes scaled_dot_max) {
  const double grown = 1 + bound.relative;
  lanes largest = magnitude * grown;
  switch (bound.scale) {
    case bounds::scale_placement::after_head_sum:
      largest = max_of(max_of(largest, unscaled * grown), scaled_weight_max * grown);
      break;
    case bounds::scale_placement::into_weights: largest = max_of(largest, scaled_weight_max * grown); break;
    case bounds::scale_placement::before_relu:
    case bounds::scale_placement::into_keys_bf16:
      largest = max_of(largest, scaled_dot_max * (1 + bound.dot_relative) * (1 + 0x1p-7));
      break;
  }
  return largest * (1 + 0x1p-50);
}

// Keys [begin, begin + kLanes * groups) of the row; the bound is not bit-exact.
[[gnu::always_inline]] inline void lane_groups(const bounds::error_bound& bound, const row_figures& r,
                                               const key_figures& k, std::int64_t begin, std::int64_t groups,
                                               const float* centre_row, const double* magnitude_row,
                                               double* allowed, std::uint8_t* may_overflow) {
  const lanes infinity = splat(INFINITY);
  // The row's terms of bound.at, each the product the definition forms.
  const double weights_abs = r.weights_abs * kUp, weighted_q_abs = r.weighted_q_abs * kUp;
  const double weight_term = bound.per_weight * weights_abs, weighted_q_term = bound.per_weighted_q * weighted_q_abs;
  const bool intermediates = !(bound.bit_exact || bound.heads_exact);
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t j = begin + g * static_cast<std::int64_t>(kLanes);
    const lane_floats expected = load<lane_floats>(centre_row + j);
    const lanes magnitude_in = load<lanes>(magnitude_row + j);
    const lanes s = load<lanes>(k.scale_abs.data() + j), kmax = load<lanes>(k.k_max.data() + j);
    // A = inf: decided by a non-finite input (magnitude 0 in the element, nothing excused).
    const lane_bits decided = (as_bits(magnitude_in) & ~(lane_bits{} + INT64_MIN)) == as_bits(infinity);
    const lanes magnitude = decided ? lanes{} : magnitude_in;
    // half_ulp(expected): 2^(max(field, 1) - 151), 0 for Inf and NaN.
    const lane_words words = load<lane_words>(&expected);
    const lane_bits field = __builtin_convertvector((words >> 23) & 0xFF, lane_bits);
    const lane_bits power = (field < 1 ? lane_bits{} + 1 : field) - 151 + 1023;
    const lanes half = field == 0xFF ? lanes{} : as_doubles(power << 52);
    const lanes expected_abs = as_doubles(as_bits(__builtin_convertvector(expected, lanes)) & ~(lane_bits{} + INT64_MIN));
    const lane_bits finite = field != 0xFF;
    const lanes value_abs = finite ? (expected_abs + half) * (1 + 0x1p-50) : lanes{};
    const lanes dots_abs = r.q_abs * kmax * kUp;
    const lanes small_weight_dots_abs = r.small_weight_q_abs * kmax * kUp;
    // bound.at, its sum in the definition's order.
    lanes sum = bound.relative * magnitude + bound.per_scale * s;
    sum = sum + weight_term;
    sum = sum + bound.per_dot * dots_abs;
    sum = sum + bound.per_scaled_small_dot * s * small_weight_dots_abs;
    sum = sum + weighted_q_term;
    sum = sum + bound.per_value * value_abs;
    sum = sum + bound.absolute;
    const lanes allowed_here = sum * (1 + 0x1p-50) + half;
    std::memcpy(allowed + (j - begin), &allowed_here, sizeof allowed_here);

    lane_bits overflow = expected_abs + allowed_here >= bound.result_overflow;
    if (intermediates) {
      const lanes unscaled = r.weighted_q_abs * kmax * kUp;
      const lanes scaled_weight_max = s * r.weight_max * kUp;
      const lanes scaled_dot_max = s * r.q_head_max * kmax * kUp;
      const lane_bits reaches =
          largest_intermediate(bound, magnitude, unscaled, scaled_weight_max, scaled_dot_max) >= kOverflowThreshold;
      bool any = false;
      for (std::size_t l = 0; l < kLanes; ++l) any |= reaches[l] != 0;
      if (any) {  // rare: the tighter A / |s| where |s| > 0 (intermediate_may_overflow)
        const lanes tighter = s > 0 ? min_of(unscaled, magnitude / s * kUp) : unscaled;
        overflow |= reaches &
                    (largest_intermediate(bound, magnitude, tighter, scaled_weight_max, scaled_dot_max) >= kOverflowThreshold);
      }
    }
    overflow &= ~decided;
    for (std::size_t l = 0; l < kLanes; ++l) may_overflow[j - begin + static_cast<std::int64_t>(l)] = overflow[l] != 0;
  }
}

using lane_groups_fn = void (*)(const bounds::error_bound&, const row_figures&, const key_figures&, std::int64_t,
                                std::int64_t, const float*, const double*, double*, std::uint8_t*);

void lane_groups_portable(const bounds::error_bound& b, const row_figures& r, const key_figures& k, std::int64_t begin,
                          std::int64_t groups, const float* c, const double* m, double* a, std::uint8_t* o) {
  lane_groups(b, r, k, begin, groups, c, m, a, o);
}
[[gnu::target("avx2")]] void lane_groups_avx2(const bounds::error_bound& b, const row_figures& r, const key_figures& k,
                                              std::int64_t begin, std::int64_t groups, const float* c, const double* m,
                                              double* a, std::uint8_t* o) {
  lane_groups(b, r, k, begin, groups, c, m, a, o);
}
[[gnu::target("avx512f,avx512bw,avx512dq,avx512vl")]] void lane_groups_avx512(
    const bounds::error_bound& b, const row_figures& r, const key_figures& k, std::int64_t begin, std::int64_t groups,
    const float* c, const double* m, double* a, std::uint8_t* o) {
  lane_groups(b, r, k, begin, groups, c, m, a, o);
}

lane_groups_fn lane_groups_for(mma::lane_isa isa) {
  if (isa == mma::lane_isa::best) {
    static const mma::lane_isa best = mma::lane_isa_available(mma::lane_isa::avx512) ? mma::lane_isa::avx512
                                      : mma::lane_isa_available(mma::lane_isa::avx2) ? mma::lane_isa::avx2
                                                                                      : mma::lane_isa::portable;
    isa = best;
  }
  if (!mma::lane_isa_available(isa))
    throw std::invalid_argument("compare::allowances: this CPU lacks the instruction set asked for");
  return isa == mma::lane_isa::avx512 ? lane_groups_avx512
         : isa == mma::lane_isa::avx2 ? lane_groups_avx2
                                       : lane_groups_portable;
}

}  // namespace

bounds::element element_at(const row_figures& r, const key_figures& k, std::size_t j, double magnitude) {
  bounds::element e;
  const double s = k.scale_abs[j], kmax = k.k_max[j];
  e.magnitude = magnitude;
  e.scale_abs = s;
  e.weights_abs = r.weights_abs * kUp;
  e.dots_abs = r.q_abs * kmax * kUp;
  e.weighted_q_abs = r.weighted_q_abs * kUp;
  e.small_weight_dots_abs = r.small_weight_q_abs * kmax * kUp;
  // An upper bound of sum_h |w_h| P_h without a division per element; intermediate_may_overflow
  // tightens it where that matters.
  e.unscaled_magnitude = r.weighted_q_abs * kmax * kUp;
  e.scaled_weight_max = s * r.weight_max * kUp;
  e.scaled_dot_max = s * r.q_head_max * kmax * kUp;
  return e;
}

double half_ulp(float x) {
  const std::uint32_t field = (std::bit_cast<std::uint32_t>(x) >> 23) & 0xFFu;
  if (field == 0xFFu) return 0;
  const int k = static_cast<int>(std::max<std::uint32_t>(field, 1)) - 151;  // in [-150, 103]
  return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

key_figures key_figures_of(const exact::problem& p) {
  key_figures f;
  f.scale_abs.resize(static_cast<std::size_t>(p.n));
  f.k_max.assign(static_cast<std::size_t>(p.n), 0.0);
  f.finite.assign(static_cast<std::size_t>(p.n), 1);
  for (std::int64_t j = 0; j < p.n; ++j) {
    const double scale = std::fabs(static_cast<double>(p.k_scale[static_cast<std::size_t>(j)]));
    f.scale_abs[static_cast<std::size_t>(j)] = scale;
    bool finite = std::isfinite(scale);
    double m = 0;
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      const double v = std::fabs(exact::k_value(p, j * p.head_dim + d));  // block scales applied
      if (std::isfinite(v))
        m = std::max(m, v);  // non-finite codes decide their elements (A = inf)
      else
        finite = false;
    }
    f.k_max[static_cast<std::size_t>(j)] = m;
    f.finite[static_cast<std::size_t>(j)] = finite;
  }
  return f;
}

row_figures row_figures_of(const exact::problem& p, std::int64_t i, double small_weight_below) {
  row_figures f;
  for (std::int64_t h = 0; h < p.heads; ++h) {
    const double w = std::fabs(static_cast<double>(p.weights[static_cast<std::size_t>(i * p.heads + h)]));
    f.finite = f.finite && std::isfinite(w);
    double q = 0;
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      const double v = std::fabs(exact::q_value(p, (i * p.heads + h) * p.head_dim + d));
      if (std::isfinite(v))
        q += v;
      else
        f.finite = false;
    }
    f.weights_abs += w;
    f.weight_max = std::max(f.weight_max, w);
    f.q_abs += q;
    f.q_head_max = std::max(f.q_head_max, q);
    f.weighted_q_abs += w * q;
    if (w < small_weight_below) f.small_weight_q_abs += q;
  }
  return f;
}

key_figures paged_key_figures(const paged::problem& p, std::int64_t request) {
  const auto& values = fp8::decode_table(p.k_format);
  key_figures f;
  f.scale_abs.assign(static_cast<std::size_t>(p.max_context), 0.0);
  f.k_max.assign(static_cast<std::size_t>(p.max_context), 0.0);
  f.finite.assign(static_cast<std::size_t>(p.max_context), 1);
  const std::int64_t keys = paged::request_keys(p, request);
  const paged::gathered_keys g = paged::gather(p, request, keys);  // e2m1fn: unpacked, with block scales
  const std::int64_t blocks = p.head_dim / exact::kBlockSize;
  for (std::int64_t j = 0; j < keys; ++j) {
    const double scale = std::fabs(static_cast<double>(g.k_scale[static_cast<std::size_t>(j)]));
    f.scale_abs[static_cast<std::size_t>(j)] = scale;
    bool finite = std::isfinite(scale);
    double m = 0;
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      double v = std::fabs(values[g.k[static_cast<std::size_t>(j * p.head_dim + d)]]);
      if (!g.k_block_scale.empty())
        v = std::ldexp(v, static_cast<int>(g.k_block_scale[static_cast<std::size_t>(j * blocks + d / exact::kBlockSize)]) -
                              exact::kBlockScaleBias);
      if (std::isfinite(v))
        m = std::max(m, v);
      else
        finite = false;
    }
    f.k_max[static_cast<std::size_t>(j)] = m;
    f.finite[static_cast<std::size_t>(j)] = finite;
  }
  return f;
}

allowance allowance_at(const bounds::error_bound& bound, const row_figures& row, const key_figures& keys,
                       std::size_t j, float expected, double magnitude) {
  // A = inf marks an element whose value a non-finite input decided (logits.hpp): no rounding
  // can excuse anything there, the kernel must give the same NaN or infinity.
  const bool decided_by_input = std::isinf(magnitude);
  bounds::element el = element_at(row, keys, j, decided_by_input ? 0.0 : magnitude);
  // |centre| <= |RN32(centre)| + half its ulp.
  el.value_abs = std::isfinite(expected) ? (std::fabs(static_cast<double>(expected)) + half_ulp(expected)) * (1 + 0x1p-50) : 0.0;
  allowance a;
  a.allowed = bound.bit_exact ? 0.0 : bound.at(el) + half_ulp(expected);
  // Overflow either way is excused where the arithmetic may legitimately cross float32's
  // overflow threshold: the exact value plus the bound, or some intermediate result of an
  // order the contract allows (partial head sums before k_scale, k_scale * w, ...) reaches it.
  a.may_overflow = !bound.bit_exact && !decided_by_input &&
                   (std::fabs(static_cast<double>(expected)) + a.allowed >= bound.result_overflow ||
                    intermediate_may_overflow(bound, el, magnitude));
  return a;
}

void allowances(const bounds::error_bound& bound, const row_figures& row, const key_figures& keys,
                std::int64_t begin, std::int64_t end, const float* centre_row, const double* magnitude_row,
                double* allowed, std::uint8_t* may_overflow, mma::lane_isa isa) {
  if (end <= begin) return;
  const auto count = static_cast<std::size_t>(end - begin);
  if (bound.bit_exact) {  // the correctly rounded value itself: nothing allowed, nothing excused
    std::fill(allowed, allowed + count, 0.0);
    std::fill(may_overflow, may_overflow + count, std::uint8_t{0});
    return;
  }
  const auto groups = static_cast<std::int64_t>(count / kLanes);
  lane_groups_for(isa)(bound, row, keys, begin, groups, centre_row, magnitude_row, allowed, may_overflow);
  for (std::int64_t j = begin + groups * static_cast<std::int64_t>(kLanes); j < end; ++j) {
    const allowance a = allowance_at(bound, row, keys, static_cast<std::size_t>(j), centre_row[j], magnitude_row[j]);
    allowed[j - begin] = a.allowed;
    may_overflow[j - begin] = a.may_overflow ? 1 : 0;
  }
}

}  // namespace mqa::compare
