// The fused dot-add step and the chain of steps over a dot product (instruction.hpp). Every
// quantity is an integer times a power of two: terms are int64 significands scaled to a common
// unit, so the model itself rounds nothing except where the instruction does.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "reference/mma/instruction.hpp"

namespace mqa::mma {
namespace {

constexpr int kOperandFraction = 3;  // operand significands m * 2^-3: fp8 has at most 3 fraction bits
constexpr int kProductFraction = 2 * kOperandFraction;
constexpr int kNone = std::numeric_limits<int>::min() / 4;  // no nonzero term: below every exponent

// m * 2^shift as an integer, the bits shifted out rounded by the rule (shift < 0).
std::int64_t shifted(std::int64_t m, int shift, rounding r) {
  if (shift >= 0) return m * (std::int64_t{1} << shift);  // callers keep |m| 2^shift far below 2^63
  if (m == 0) return 0;
  const int k = -shift;
  if (k >= 62) {  // every bit goes: what is left is the rule's rounding of a tiny fraction
    if (r == rounding::down && m < 0) return -1;
    return 0;
  }
  const std::int64_t floor = m >> k;  // arithmetic shift (C++20): floor division by 2^k
  const std::int64_t rest = m - floor * (std::int64_t{1} << k);  // in [0, 2^k)
  switch (r) {
    case rounding::down: return floor;
    case rounding::toward_zero: return m < 0 && rest != 0 ? floor + 1 : floor;
    case rounding::nearest_even: {
      const std::int64_t half = std::int64_t{1} << (k - 1);
      return rest > half || (rest == half && (floor & 1) != 0) ? floor + 1 : floor;
    }
  }
  return floor;
}

// The float32 accumulator as M * 2^(e - 23), e its exponent (at least -126).
struct accumulator {
  std::int64_t m = 0;
  int e = kNone;
};
accumulator accumulator_of(float c) {
  if (c == 0) return {};
  const auto bits = std::bit_cast<std::uint32_t>(c);
  const auto field = static_cast<int>((bits >> 23) & 0xFF);
  const std::int64_t mantissa = (bits & 0x7FFFFF) | (field != 0 ? 0x800000 : 0);  // subnormal: no hidden bit
  return {(bits >> 31) ? -mantissa : mantissa, field != 0 ? field - 127 : -126};
}

// 2^e exactly, for e a double's normal exponent.
double power_of_two(int e) { return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52); }

int min_exponent(fp8::format f) { return 1 - fp8::traits(f).bias; }

// S * 2^unit rounded to float32 with `bits` fraction bits (subnormals below 2^-126 keep the unit of
// 2^-126), by the rule.
float round_result(std::int64_t s, int unit, int bits, rounding r) {
  if (s == 0) return 0.0f;
  const auto magnitude = static_cast<std::uint64_t>(s < 0 ? -s : s);
  const int e = std::max(static_cast<int>(std::bit_width(magnitude)) - 1 + unit, -126);  // floor(log2 |s 2^unit|)
  const std::int64_t q = shifted(s, unit - (e - bits), r);
  // Exact: q has at most bits + 1 <= 24 significant bits and e - bits >= -149.
  const double rounded = static_cast<double>(q) * power_of_two(e - bits);
  if (std::fabs(rounded) >= 0x1p128) return std::copysign(INFINITY, rounded);
  return static_cast<float>(rounded);
}

// Non-finite operands: what IEEE arithmetic makes of the exact sum (inf * 0 and +inf + -inf are NaN).
float nonfinite_result(float acc, std::span<const double> a, std::span<const double> b, std::uint32_t nan_bits) {
  double sum = acc;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  if (std::isnan(sum)) return std::bit_cast<float>(nan_bits);
  return static_cast<float>(sum);
}

// Whether `terms` products truncated toward zero to `bits` fraction bits of the largest exponent
// sum within 32 bits (aligned_products below says why).
constexpr bool truncation_fits_32_bits(int bits, std::size_t terms) {
  return bits <= 21 && terms <= (std::size_t{1} << (29 - bits));
}

// The sum of the nonzero products i in [first, end) by `stride`, each kept to `bits` fraction
// bits of their largest exponent; returns the sum in units of 2^(top - bits) and top (kNone: none).
std::pair<std::int64_t, int> aligned_products(std::span<const operand> a, std::span<const operand> b, std::size_t first,
                                              std::size_t stride, int bits, rounding r, int floor_exponent = kNone) {
  int top = floor_exponent;
  for (std::size_t i = first; i < a.size(); i += stride)
    if (a[i].m != 0 && b[i].m != 0) top = std::max(top, a[i].e + b[i].e);
  if (top == kNone) return {0, kNone};
  const int unit = top - bits;
  std::int64_t s = 0;
  // Truncation in 32 bits, without a branch per product (the model's inner loop: a sampled centre
  // runs it 2^34 times): the magnitude's floor with the sign put back. A nonzero product has
  // |m_a m_b| <= 15 * 15 < 2^8 and, as its exponent is at most top, a shift of at most bits - 6,
  // so it keeps fewer than 2^(bits + 2); `terms` of them stay below 2^31 when checked here. A zero
  // product adds 0 whatever its shift; the shifts are clamped only to keep them defined.
  static_assert(kProductFraction == 6);
  const std::size_t terms = a.size() > first ? (a.size() - first + stride - 1) / stride : 0;
  if (r == rounding::toward_zero && truncation_fits_32_bits(bits, terms)) {
    std::int32_t sum = 0;
    for (std::size_t i = first; i < a.size(); i += stride) {
      const std::int32_t product = a[i].m * b[i].m;
      const int shift = a[i].e + b[i].e - kProductFraction - unit;
      const auto magnitude = static_cast<std::uint32_t>(product < 0 ? -product : product);
      const std::uint32_t kept = (magnitude << std::clamp(shift, 0, 23)) >> std::clamp(-shift, 0, 31);
      sum += product < 0 ? -static_cast<std::int32_t>(kept) : static_cast<std::int32_t>(kept);
    }
    return {sum, top};
  }
  for (std::size_t i = first; i < a.size(); i += stride)
    if (a[i].m != 0 && b[i].m != 0)
      s += shifted(static_cast<std::int64_t>(a[i].m) * b[i].m, a[i].e + b[i].e - kProductFraction - unit, r);
  return {s, top};
}

// NVIDIA: the accumulator joins the alignment of the products.
float aligned_sum(const fused_step& st, float acc, std::span<const operand> a, std::span<const operand> b) {
  const accumulator c = accumulator_of(acc);
  auto [s, top] = aligned_products(a, b, 0, 1, st.term_bits, st.term_rule, c.e);
  if (top == kNone) return 0.0f;
  const int unit = top - st.term_bits;
  if (c.m != 0) s += shifted(c.m, c.e - 23 - unit, st.term_rule);
  return round_result(s, unit, st.result_bits, st.result_rule);
}

// AMD CDNA3: even and odd products in lanes of their own, combined, then the accumulator apart.
float lane_sum(const fused_step& st, float acc, std::span<const operand> a, std::span<const operand> b) {
  const auto [even, even_top] = aligned_products(a, b, 0, 2, st.term_bits, st.term_rule);
  const auto [odd, odd_top] = aligned_products(a, b, 1, 2, st.term_bits, st.term_rule);
  const int product_top = std::max(even_top, odd_top);
  std::int64_t products = 0;  // units of 2^(product_top - lane_bits)
  if (even_top != kNone)
    products += shifted(even, (even_top - st.term_bits) - (product_top - st.lane_bits), st.lane_rule);
  if (odd_top != kNone)
    products += shifted(odd, (odd_top - st.term_bits) - (product_top - st.lane_bits), st.lane_rule);
  const accumulator c = accumulator_of(acc);
  const int top = std::max(product_top, c.e);
  if (top == kNone) return 0.0f;
  std::int64_t total = 0;  // units of 2^(top - sum_bits)
  if (product_top != kNone)
    total += shifted(products, (product_top - st.lane_bits) - (top - st.sum_bits), st.apart_rule);
  if (c.m != 0 && c.e >= top - st.accumulator_reach)
    total += shifted(c.m, (c.e - 23) - (top - st.accumulator_bits), st.apart_rule) *
             (std::int64_t{1} << (st.sum_bits - st.accumulator_bits));
  return round_result(total, top - st.sum_bits, st.result_bits, st.result_rule);
}

// The steps of one dot in ascending k from 0; with promotion, a fresh chain every promote_every
// elements whose result a float32 FADD adds into the promoted sum (DeepGEMM).
template <class Step>
float chained(const instruction& ins, std::size_t length, std::int64_t promote_every, Step step) {
  const auto g = static_cast<std::size_t>(ins.step.products);
  float chain = 0, promoted = 0;
  for (std::size_t k0 = 0; k0 < length; k0 += g) {
    chain = step(chain, k0, g);
    if (promote_every > 0 && (k0 + g) % static_cast<std::size_t>(promote_every) == 0) {
      promoted = promoted + chain;
      chain = 0;
    }
  }
  return promote_every > 0 ? promoted : chain;
}

// dot_row's lanes: kLanes keys side by side through one step after another, the same operations
// as one dot at a time (aligned_sum), so the same bits. Each lane's top is the largest exponent of
// its nonzero products and its accumulator's; each product is kept by aligned_products' 32-bit
// truncation (a zero product adds 0); the accumulator, top >= its exponent, is shifted right by at
// least 23 - term_bits, toward zero. lanes_apply keeps |S| below 2^24, and round_result's
// truncation toward zero keeps result_bits + 1 significant bits of |S| (fewer below 2^-126, where
// the unit is 2^(-126 - result_bits)): drop the rest, then float(q) * 2^unit', one IEEE
// multiplication, exact or overflowing to infinity as round_result does. float(|S|) is exact, and
// its exponent field is floor(log2 |S|). (unit = top - term_bits lies in [-147, 127]: top is at
// least -126 with a nonzero C, at least a product's exponent (>= -28) without, and at most 128, an
// infinite C's; operands from decompose() of fp8 values, as dot_row's callers give.) Every shift
// count is clamped to [0, 31] first: a vector ?: computes both of its arms in every lane.
constexpr std::size_t kLanes = key_lanes::kLanes;
using lane_vector = std::int32_t __attribute__((vector_size(kLanes * sizeof(std::int32_t))));
using lane_floats = float __attribute__((vector_size(kLanes * sizeof(float))));

bool lanes_apply(const fused_step& st) {
  if (st.even_odd_lanes || st.term_rule != rounding::toward_zero || st.term_bits < 1 || st.term_bits > 21 ||
      st.result_bits < 1 || st.result_bits > 23 || st.result_rule != rounding::toward_zero)
    return false;
  // |S| < 2^24: each product keeps at most 15 * 15 * 2^(term_bits - 6), C at most 2^(term_bits + 1).
  const double largest_sum = static_cast<double>(st.products) * 225 * std::ldexp(1.0, std::max(st.term_bits - 6, 0)) +
                             std::ldexp(1.0, st.term_bits + 1);
  return largest_sum < 0x1p24;
}

// Inlined into lane_group only, so no vector crosses a call and the ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
[[gnu::always_inline]] inline lane_vector load_lanes(const std::int32_t* from) {
  lane_vector v;
  std::memcpy(&v, from, sizeof v);
  return v;
}

[[gnu::always_inline]] inline void lane_group(const instruction& ins, std::span<const operand> a,
                                              const std::int32_t* km, const std::int32_t* ke,
                                              std::int64_t promote_every, float* out) {
  const fused_step& st = ins.step;
  const auto g = static_cast<std::size_t>(st.products);
  lane_floats chain = {}, promoted = {};
  for (std::size_t k0 = 0; k0 < a.size(); k0 += g) {
    // accumulator_of, lane by lane.
    lane_vector bits;
    std::memcpy(&bits, &chain, sizeof bits);
    const lane_vector field = (bits >> 23) & 0xFF;
    const lane_vector significand = (bits & 0x7FFFFF) | (field != 0 ? 0x800000 : 0);
    const lane_vector c_exponent = (bits & 0x7FFFFFFF) == 0 ? kNone : (field != 0 ? field - 127 : -126);
    lane_vector top = c_exponent;
    for (std::size_t i = k0; i < k0 + g; ++i) {
      if (a[i].m == 0) continue;  // zero in every lane: decides nothing, adds nothing
      const lane_vector exponent = a[i].e + load_lanes(ke + i * kLanes);
      // top = max(top, exponent) where the product is nonzero, with masks made by sign bits (-1 or
      // 0; the values are far from overflow): GCC does a ?: on two joined comparisons lane by lane.
      const lane_vector m = load_lanes(km + i * kLanes);
      top += (exponent - top) & ((m | -m) >> 31) & ((top - exponent) >> 31);
    }
    const lane_vector unit = top - st.term_bits;
    lane_vector sum = {};
    for (std::size_t i = k0; i < k0 + g; ++i) {
      if (a[i].m == 0) continue;
      const lane_vector product = a[i].m * load_lanes(km + i * kLanes);
      const lane_vector shift = a[i].e + load_lanes(ke + i * kLanes) - kProductFraction - unit;
      const lane_vector magnitude = product < 0 ? -product : product;
      const lane_vector left = shift < 0 ? 0 : (shift > 23 ? 23 : shift);
      const lane_vector right = shift > 0 ? 0 : (shift < -31 ? 31 : -shift);
      const lane_vector kept = (magnitude << left) >> right;
      sum += product < 0 ? -kept : kept;
    }
    const lane_vector c_right = unit - (c_exponent - 23);  // >= 23 - term_bits; an absent C has no bits
    const lane_vector c_kept = significand >> (c_right > 31 ? 31 : c_right);
    sum += bits < 0 ? -c_kept : c_kept;
    // round_result(S, unit, result_bits, toward_zero), lane by lane.
    const lane_vector magnitude = sum < 0 ? -sum : sum;
    const lane_floats exact = __builtin_convertvector(magnitude, lane_floats);
    lane_vector exact_bits;
    std::memcpy(&exact_bits, &exact, sizeof exact_bits);
    const lane_vector log2 = ((exact_bits >> 23) & 0xFF) - 127;  // floor(log2 |S|); S = 0 keeps 0 below
    const lane_vector by_bits = log2 - st.result_bits, by_range = -126 - st.result_bits - unit;
    const lane_vector drop = by_bits > by_range ? by_bits : by_range;
    const lane_vector dropped = drop < 0 ? 0 : (drop > 31 ? 31 : drop);
    const lane_vector kept = magnitude >> dropped;
    const lane_vector kept_unit = unit + dropped;  // dropped = drop wherever kept is not 0
    // 2^kept_unit as a float (normal or subnormal); a lane without terms has S = 0 and any unit.
    const lane_vector clamped = kept_unit < -149 ? -149 : (kept_unit > 127 ? 127 : kept_unit);
    const lane_vector subnormal_shift = clamped < -126 ? clamped + 149 : 0;  // in [0, 22]
    const lane_vector scale_bits = clamped >= -126 ? (clamped + 127) << 23 : (lane_vector{} + 1) << subnormal_shift;
    lane_floats scale;
    std::memcpy(&scale, &scale_bits, sizeof scale);
    const lane_floats value = __builtin_convertvector(kept, lane_floats) * scale;
    // The sign of a nonzero result (round_result gives +0 where everything was truncated away),
    // put in by the sign bit: a ?: on two joined masks would run lane by lane.
    lane_vector value_bits;
    std::memcpy(&value_bits, &value, sizeof value_bits);
    value_bits ^= (sum >> 31) & ((kept | -kept) >> 31) & static_cast<std::int32_t>(0x80000000u);
    std::memcpy(&chain, &value_bits, sizeof chain);
    if (promote_every > 0 && (k0 + g) % static_cast<std::size_t>(promote_every) == 0) {
      promoted = promoted + chain;
      chain = lane_floats{};
    }
  }
  const lane_floats result = promote_every > 0 ? promoted : chain;
  std::memcpy(out, &result, sizeof result);
}

void lane_group_portable(const instruction& ins, std::span<const operand> a, const std::int32_t* km,
                         const std::int32_t* ke, std::int64_t promote_every, float* out) {
  lane_group(ins, a, km, ke, promote_every, out);
}
[[gnu::target("avx2")]] void lane_group_avx2(const instruction& ins, std::span<const operand> a, const std::int32_t* km,
                                             const std::int32_t* ke, std::int64_t promote_every, float* out) {
  lane_group(ins, a, km, ke, promote_every, out);
}
[[gnu::target("avx512f,avx512bw,avx512dq,avx512vl")]] void lane_group_avx512(const instruction& ins, std::span<const operand> a,
                                                          const std::int32_t* km, const std::int32_t* ke,
                                                          std::int64_t promote_every, float* out) {
  lane_group(ins, a, km, ke, promote_every, out);
}

using lane_group_fn = void (*)(const instruction&, std::span<const operand>, const std::int32_t*, const std::int32_t*,
                               std::int64_t, float*);

}  // namespace

bool lane_isa_available(lane_isa isa) {
  switch (isa) {
    case lane_isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    case lane_isa::avx2: return __builtin_cpu_supports("avx2");
    case lane_isa::best:
    case lane_isa::portable: return true;
  }
  return false;
}

namespace {

lane_group_fn lane_group_for(lane_isa isa) {
  if (isa == lane_isa::best) {
    static const lane_isa best = lane_isa_available(lane_isa::avx512) ? lane_isa::avx512
                                 : lane_isa_available(lane_isa::avx2)  ? lane_isa::avx2
                                                                        : lane_isa::portable;
    isa = best;
  }
  if (!lane_isa_available(isa)) throw std::invalid_argument("mma::dot_row: this CPU lacks the instruction set asked for");
  return isa == lane_isa::avx512 ? lane_group_avx512 : isa == lane_isa::avx2 ? lane_group_avx2 : lane_group_portable;
}

bool all_finite(float acc, std::span<const double> a, std::span<const double> b) {
  bool finite = std::isfinite(acc);
  for (std::size_t i = 0; i < a.size(); ++i) finite = finite && std::isfinite(a[i]) && std::isfinite(b[i]);
  return finite;
}

}  // namespace

operand decompose(double v, fp8::format f) {
  // v is an fp8 value, so a normal double with at most 3 fraction bits: read its exponent and top
  // mantissa bits directly (this runs for every operand of every modelled dot).
  if (v == 0) return {};
  const auto bits = std::bit_cast<std::uint64_t>(v);
  const int exponent = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  const auto mantissa = static_cast<std::int32_t>(((bits >> 49) & 0x7) | 0x8);  // 1.fff as fff + 8
  const std::int32_t sign = (bits >> 63) ? -1 : 1;
  const int min_e = min_exponent(f);
  if (exponent >= min_e) return {sign * mantissa, exponent};
  // A subnormal of its format: a smaller significand at the smallest normal exponent.
  return {sign * (mantissa >> (min_e - exponent)), min_e};
}

float fused_dot_add(const fused_step& st, float acc, std::span<const operand> a, std::span<const operand> b) {
  return st.even_odd_lanes ? lane_sum(st, acc, a, b) : aligned_sum(st, acc, a, b);
}

float fused_dot_add(const fused_step& st, float acc, std::span<const double> a, fp8::format fa,
                    std::span<const double> b, fp8::format fb, std::uint32_t nan_bits) {
  if (!all_finite(acc, a, b)) return nonfinite_result(acc, a, b, nan_bits);
  operand x[64], y[64];
  for (std::size_t i = 0; i < a.size(); ++i) x[i] = decompose(a[i], fa), y[i] = decompose(b[i], fb);
  return fused_dot_add(st, acc, std::span<const operand>(x, a.size()), std::span<const operand>(y, b.size()));
}

float dot(const instruction& ins, std::span<const operand> a, std::span<const operand> b, std::int64_t promote_every) {
  return chained(ins, a.size(), promote_every, [&](float acc, std::size_t k0, std::size_t g) {
    return fused_dot_add(ins.step, acc, a.subspan(k0, g), b.subspan(k0, g));
  });
}

float dot(const instruction& ins, std::span<const double> a, fp8::format fa, std::span<const double> b,
          fp8::format fb, std::int64_t promote_every) {
  return chained(ins, a.size(), promote_every, [&](float acc, std::size_t k0, std::size_t g) {
    return fused_dot_add(ins.step, acc, a.subspan(k0, g), fa, b.subspan(k0, g), fb, ins.nan_bits);
  });
}

// The key's operands at lane position (j, d).
std::size_t lane_index(std::size_t j, std::size_t d, std::size_t dim) { return ((j / kLanes) * dim + d) * kLanes + j % kLanes; }

key_lanes lanes_of(std::span<const operand> keys, std::size_t dim) {
  key_lanes out;
  out.dim = dim;
  out.keys = dim ? keys.size() / dim : 0;
  const std::size_t groups = (out.keys + kLanes - 1) / kLanes;
  out.m.assign(groups * dim * kLanes, 0);
  out.e.assign(groups * dim * kLanes, 0);
  for (std::size_t j = 0; j < out.keys; ++j)
    for (std::size_t d = 0; d < dim; ++d) {
      out.m[lane_index(j, d, dim)] = keys[j * dim + d].m;
      out.e[lane_index(j, d, dim)] = keys[j * dim + d].e;
    }
  return out;
}

void dot_row(const instruction& ins, std::span<const operand> a, const key_lanes& keys, std::int64_t promote_every,
             std::span<float> out, lane_isa isa) {
  const std::size_t dim = keys.dim;
  if (a.size() != dim || out.size() != keys.keys || dim % static_cast<std::size_t>(ins.step.products) != 0)
    throw std::invalid_argument("mma::dot_row: the row, the keys and the output must agree (a.size() == keys.dim, "
                                "out.size() == keys.keys, dim a multiple of the step)");
  if (!lanes_apply(ins.step)) {  // AMD's even and odd lanes: one dot at a time
    std::vector<operand> key(dim);
    for (std::size_t j = 0; j < keys.keys; ++j) {
      for (std::size_t d = 0; d < dim; ++d) key[d] = {keys.m[lane_index(j, d, dim)], keys.e[lane_index(j, d, dim)]};
      out[j] = dot(ins, a, key, promote_every);
    }
    return;
  }
  const lane_group_fn group = lane_group_for(isa);
  float lanes[kLanes];
  for (std::size_t j0 = 0; j0 < keys.keys; j0 += kLanes) {
    const std::size_t at = (j0 / kLanes) * dim * kLanes;
    group(ins, a, keys.m.data() + at, keys.e.data() + at, promote_every, lanes);
    std::copy_n(lanes, std::min(kLanes, keys.keys - j0), out.begin() + static_cast<std::ptrdiff_t>(j0));
  }
}

}  // namespace mqa::mma
