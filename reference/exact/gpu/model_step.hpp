// The matrix-instruction models of reference/mma as the GPU runs them for a modelled centre: the
// same fused dot-add step over the same parameters (reference/mma/instruction.hpp says what each
// means), written again in plain integer arithmetic that nvcc, ROCm's clang and the host compiler
// all take. It is a second implementation, held to reference/mma bit for bit: on the CPU by
// tests/reference/exact/gpu/model_step_test.cpp (every step and chain it draws, both
// instructions), on the GPU by the [gpu] tests and by exact_logits' cross-check on every call.
// Only finite operands reach it: elements with a NaN or Inf input go to the CPU reference.
//
// Every quantity is an integer times a power of two: an fp8 operand is m 2^(e - 3) (|m| < 16), a
// product m 2^(e - 6), so nothing is rounded except where the instruction rounds.
#pragma once

#include <cstdint>

#include "reference/gpu/operation.hpp"

namespace mqa::gpu::model {

// mma::rounding's values, in its order.
enum class rounding : std::int32_t { toward_zero, down, nearest_even };

// mma::fused_step, field for field.
struct step_rule {
  std::int32_t products = 32;
  std::int32_t even_odd_lanes = 0;
  std::int32_t term_bits = 13;
  rounding term_rule = rounding::toward_zero;
  std::int32_t lane_bits = 0;
  rounding lane_rule = rounding::down;
  std::int32_t accumulator_apart = 0;
  std::int32_t sum_bits = 0, accumulator_bits = 0, accumulator_reach = 0;
  rounding apart_rule = rounding::down;
  std::int32_t result_bits = 23;
  rounding result_rule = rounding::nearest_even;
};

// A dot as a kernel computes it (mma::dot): steps in ascending k from 0; with promote_every > 0 a
// fresh chain every promote_every elements, added into a float32 sum.
struct chain_rule {
  step_rule step;
  std::int32_t promote_every = 0;
};

struct operand {
  std::int32_t m = 0, e = 0;  // m 2^(e - 3); m == 0 for zero
};
struct product {
  std::int32_t m = 0, e = 0;  // m 2^(e - 6)
};

inline constexpr int kNone = -(1 << 29);  // no nonzero term: below every exponent

// A finite code's operand (mma::decompose): a normal value is 1.f x 2^e; a subnormal keeps the
// format's smallest normal exponent with a smaller significand. Fraction bits are widened to 3.
MQA_HOST_DEVICE inline operand operand_of(const code_format& f, std::uint8_t code) {
  const int mb = f.mantissa_bits;
  const int field = (code >> mb) & ((1 << (7 - mb)) - 1);
  const int fraction = code & ((1 << mb) - 1);
  const int significand = (field != 0 ? (1 << mb) | fraction : fraction) << (3 - mb);
  const int m = (code & 0x80) != 0 ? -significand : significand;
  return {m, (field != 0 ? field : 1) - f.bias};
}

MQA_HOST_DEVICE inline int bit_width(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return 64 - __clzll(static_cast<long long>(v));
#else  // the host compilers and clang's HIP device code
  return v == 0 ? 0 : 64 - __builtin_clzll(v);
#endif
}

MQA_HOST_DEVICE inline double double_from_bits(std::uint64_t bits) {
  union {
    std::uint64_t u;
    double d;
  } pun{bits};
  return pun.d;
}

MQA_HOST_DEVICE inline std::uint32_t bits_of(float f) {
  union {
    float f;
    std::uint32_t u;
  } pun{f};
  return pun.u;
}

// m 2^shift as an integer, the bits shifted out (shift < 0) rounded by the rule.
MQA_HOST_DEVICE inline std::int64_t shifted(std::int64_t m, int shift, rounding r) {
  if (shift >= 0) return m * (std::int64_t{1} << shift);  // callers keep |m| 2^shift far below 2^63
  if (m == 0) return 0;
  const int k = -shift;
  if (k >= 62) return r == rounding::down && m < 0 ? -1 : 0;
  const std::int64_t floor = m >> k;  // arithmetic: floor division by 2^k
  const std::int64_t rest = m - floor * (std::int64_t{1} << k);
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

// S 2^unit to a float32 with `bits` fraction bits (below 2^-126 the unit of 2^-126), by the rule.
MQA_HOST_DEVICE inline float round_result(std::int64_t s, int unit, int bits, rounding r) {
  if (s == 0) return 0.0f;
  const auto magnitude = static_cast<std::uint64_t>(s < 0 ? -s : s);
  int e = bit_width(magnitude) - 1 + unit;
  if (e < -126) e = -126;
  const std::int64_t q = shifted(s, unit - (e - bits), r);
  // Exact: q has at most bits + 1 <= 24 significant bits and e - bits >= -149.
  const double rounded = static_cast<double>(q) * double_from_bits(static_cast<std::uint64_t>(e - bits + 1023) << 52);
  if (rounded >= 0x1p128) return float_from_bits(0x7F800000u);
  if (rounded <= -0x1p128) return float_from_bits(0xFF800000u);
  return static_cast<float>(rounded);
}

// The float32 accumulator as M 2^(e - 23), e at least -126.
struct accumulator {
  std::int64_t m = 0;
  int e = kNone;
};
MQA_HOST_DEVICE inline accumulator accumulator_of(float c) {
  const std::uint32_t bits = bits_of(c);
  if ((bits & 0x7FFFFFFFu) == 0) return {};
  const int field = static_cast<int>((bits >> 23) & 0xFF);
  const std::int64_t mantissa = (bits & 0x7FFFFF) | (field != 0 ? 0x800000 : 0);
  return {(bits >> 31) != 0 ? -mantissa : mantissa, field != 0 ? field - 127 : -126};
}

// The nonzero products first, first + stride, ... below end, each kept to `bits` fraction bits of
// their largest exponent (or floor_exponent, if larger): their sum in units of 2^(top - bits),
// and top (kNone: none).
template <class Products>
MQA_HOST_DEVICE inline void aligned_products(const Products& at, int first, int end, int stride, int bits, rounding r,
                                             int floor_exponent, std::int64_t& sum, int& top) {
  top = floor_exponent;
  for (int i = first; i < end; i += stride) {
    const product p = at(i);
    if (p.m != 0 && p.e > top) top = p.e;
  }
  sum = 0;
  if (top == kNone) return;
  const int unit = top - bits;
  const int terms = end > first ? (end - first + stride - 1) / stride : 0;
  // Truncation in 32 bits where it cannot overflow: a product keeps fewer than 2^(bits + 2) (|m|
  // < 2^8, shifted left by at most bits - 6), `terms` of them below 2^31 (mma's aligned_products).
  if (r == rounding::toward_zero && bits <= 21 && terms <= (1 << (29 - bits))) {
    std::int32_t small = 0;
    for (int i = first; i < end; i += stride) {
      const product p = at(i);
      if (p.m == 0) continue;
      const int shift = p.e - 6 - unit;
      const auto magnitude = static_cast<std::uint32_t>(p.m < 0 ? -p.m : p.m);
      const std::uint32_t kept = shift >= 0 ? magnitude << shift : (shift <= -32 ? 0u : magnitude >> -shift);
      small += p.m < 0 ? -static_cast<std::int32_t>(kept) : static_cast<std::int32_t>(kept);
    }
    sum = small;
    return;
  }
  for (int i = first; i < end; i += stride) {
    const product p = at(i);
    if (p.m != 0) sum += shifted(p.m, p.e - 6 - unit, r);
  }
}

// NVIDIA: the accumulator joins the products' alignment.
template <class Products>
MQA_HOST_DEVICE inline float aligned_sum(const step_rule& st, float acc, const Products& at) {
  const accumulator c = accumulator_of(acc);
  std::int64_t s;
  int top;
  aligned_products(at, 0, st.products, 1, st.term_bits, st.term_rule, c.e, s, top);
  if (top == kNone) return 0.0f;
  const int unit = top - st.term_bits;
  if (c.m != 0) s += shifted(c.m, c.e - 23 - unit, st.term_rule);
  return round_result(s, unit, st.result_bits, st.result_rule);
}

// AMD CDNA3: even and odd products in lanes of their own, combined, then the accumulator apart.
template <class Products>
MQA_HOST_DEVICE inline float lane_sum(const step_rule& st, float acc, const Products& at) {
  std::int64_t even, odd;
  int even_top, odd_top;
  aligned_products(at, 0, st.products, 2, st.term_bits, st.term_rule, kNone, even, even_top);
  aligned_products(at, 1, st.products, 2, st.term_bits, st.term_rule, kNone, odd, odd_top);
  const int product_top = even_top > odd_top ? even_top : odd_top;
  std::int64_t products = 0;  // units of 2^(product_top - lane_bits)
  if (even_top != kNone)
    products += shifted(even, (even_top - st.term_bits) - (product_top - st.lane_bits), st.lane_rule);
  if (odd_top != kNone)
    products += shifted(odd, (odd_top - st.term_bits) - (product_top - st.lane_bits), st.lane_rule);
  const accumulator c = accumulator_of(acc);
  const int top = product_top > c.e ? product_top : c.e;
  if (top == kNone) return 0.0f;
  std::int64_t total = 0;  // units of 2^(top - sum_bits)
  if (product_top != kNone)
    total += shifted(products, (product_top - st.lane_bits) - (top - st.sum_bits), st.apart_rule);
  if (c.m != 0 && c.e >= top - st.accumulator_reach)
    total += shifted(c.m, (c.e - 23) - (top - st.accumulator_bits), st.apart_rule) *
             (std::int64_t{1} << (st.sum_bits - st.accumulator_bits));
  return round_result(total, top - st.sum_bits, st.result_bits, st.result_rule);
}

// One step over the products at(0 .. st.products).
template <class Products>
MQA_HOST_DEVICE inline float fused_step(const step_rule& st, float acc, const Products& at) {
  return st.even_odd_lanes != 0 ? lane_sum(st, acc, at) : aligned_sum(st, acc, at);
}

// Products at(k0 + i) as products 0, 1, ... of one step.
template <class Products>
struct step_products {
  const Products& at;
  int k0;
  MQA_HOST_DEVICE product operator()(int i) const { return at(k0 + i); }
};

// The dot of `length` products at(0 .. length) (length a multiple of the step).
template <class Products>
MQA_HOST_DEVICE inline float modelled_dot(const chain_rule& c, int length, const Products& at) {
  const int g = c.step.products;
  float chain = 0.0f, promoted = 0.0f;
  for (int k0 = 0; k0 < length; k0 += g) {
    chain = fused_step(c.step, chain, step_products<Products>{at, k0});
    if (c.promote_every > 0 && (k0 + g) % c.promote_every == 0) {
      promoted = promoted + chain;  // a float32 addition, rounded to nearest
      chain = 0.0f;
    }
  }
  return c.promote_every > 0 ? promoted : chain;
}

}  // namespace mqa::gpu::model
