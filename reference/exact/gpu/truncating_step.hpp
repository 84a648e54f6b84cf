// One fused step of 32 products whose terms and result are truncated (Hopper's wgmma, as
// reference/mma's sm90-wgmma describes it) in float32 arithmetic: the same value as
// model_step.hpp's aligned_sum, bit for bit, in about seven instructions a product instead of the
// generic integer algorithm's forty or so. Written for centre_kernel.hip's device code, and
// compiled for the host too so that tests/reference/exact/gpu hold it to model_step.hpp.
//
// Why float32 is exact here. Every operand is m 2^(e - 3) with |m| < 16, so a product p is
// m 2^(e - 6) with |m| < 2^8 and e the sum of the operands' exponents: float32 holds it exactly,
// and p < 2^(e + 2). The step aligns the products (and the accumulator) to top, the largest e of a
// nonzero product (or the accumulator's exponent), and keeps `term_bits` fraction bits of each by
// truncation: every term is trunc(p / 2^u) 2^u with u = top - term_bits, below 2^(u + term_bits + 2).
// With magic = 1.5 2^(23 + u), p + magic lies in [2^(23 + u), 2^(24 + u)) while
// term_bits + 2 < 22, where the float32 grid is 2^u: adding with rounding toward zero and magic
// given p's sign keeps exactly the bits of p above 2^u, truncated toward zero, and subtracting
// magic again is exact. Thirty-three such terms sum to less than 2^(u + term_bits + 8), so with
// term_bits <= 16 every partial sum, in any order, is a multiple of 2^u with at most 24 significant
// bits: exact. The result rule then either truncates (clearing the fraction bits below
// result_bits, exact for a normal float32) or has nothing to round (term_bits + 8 <= result_bits
// + 1). Normal: u >= 2 e_min - term_bits >= -30 - 16 (e_min >= -15 for every fp8 format), and an
// accumulator is zero or a previous step's result, itself a multiple of such a 2^u.
//
// top as a float: an operand's scale is 2^e (0 for a zero operand), a product's scale the
// product of two scales, so the largest of them is 2^top, and 0 when every product is zero.
#pragma once

#include <cstdint>

#include "reference/exact/gpu/model_step.hpp"

// The step's loops unrolled in device code (registers, not local memory).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define MQA_UNROLL _Pragma("unroll")
#else
#define MQA_UNROLL
#endif

namespace mqa::gpu::model {

inline constexpr int kTruncatingProducts = 32;

// Whether truncating_step computes this chain's steps (otherwise the generic integer form does).
MQA_HOST_DEVICE inline bool truncating_form(const chain_rule& c) {
  const step_rule& s = c.step;
  return s.products == kTruncatingProducts && s.even_odd_lanes == 0 && s.term_rule == rounding::toward_zero &&
         s.term_bits >= 0 && s.term_bits <= 16 && s.result_bits >= 0 && s.result_bits <= 23 &&
         (s.result_rule == rounding::toward_zero || s.term_bits + 8 <= s.result_bits + 1);
}

// An operand as the float32 step takes it: its value, and 2^e (0 where the operand is zero,
// or a non-finite code whose element the CPU settles).
struct scaled_operand {
  float value = 0, scale = 0;
};

MQA_HOST_DEVICE inline scaled_operand scaled_operand_of(const code_format& f, std::uint8_t code) {
  if (code_is_nonfinite(f, code)) return {};
  const operand o = operand_of(f, code);
  if (o.m == 0) return {};
  return {static_cast<float>(o.m) * exact_power_of_two(o.e - 3), exact_power_of_two(o.e)};
}

// Two operands, 16-byte aligned: the q side of a step is read two at a time.
struct alignas(16) operand_pair {
  scaled_operand first, second;
};

// Constants of a chain's step, per launch.
struct truncating_constants {
  float magic_per_top = 0;        // 1.5 2^(23 - term_bits): magic = 2^top times this
  std::uint32_t result_mask = 0;  // the float32 bits the result keeps
};

MQA_HOST_DEVICE inline truncating_constants truncating_constants_of(const step_rule& s) {
  truncating_constants c;
  c.magic_per_top = 1.5f * exact_power_of_two(23 - s.term_bits);
  c.result_mask = s.result_rule == rounding::toward_zero ? ~((1u << (23 - s.result_bits)) - 1u) : ~0u;
  return c;
}

// float32 operations with the rounding named. CUDA's device code has an instruction for each;
// elsewhere (the host, for the CPU test against model_step.hpp, and HIP, whose headers offer
// rounding toward zero only where the device library is built with it) the IEEE operations round
// to nearest and the sum toward zero is that sum corrected by its rounding error (Knuth's TwoSum,
// exact for any two finite floats whose sum does not overflow): one step toward zero where
// rounding went away from it.
#if defined(__CUDA_ARCH__)
__device__ inline float mul_rn_f32(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float add_rn_f32(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float sub_rn_f32(float a, float b) { return __fsub_rn(a, b); }
__device__ inline float add_rz_f32(float a, float b) { return __fadd_rz(a, b); }
__device__ inline float max_f32(float a, float b) { return fmaxf(a, b); }
#else
MQA_HOST_DEVICE inline float mul_rn_f32(float a, float b) { return a * b; }
MQA_HOST_DEVICE inline float add_rn_f32(float a, float b) { return a + b; }
MQA_HOST_DEVICE inline float sub_rn_f32(float a, float b) { return a - b; }
MQA_HOST_DEVICE inline float add_rz_f32(float a, float b) {
  const float sum = a + b;
  const float b_part = sum - a;
  const float error = (a - (sum - b_part)) + (b - b_part);  // a + b - sum, exactly
  const bool away_from_zero = (sum > 0.0f && error < 0.0f) || (sum < 0.0f && error > 0.0f);
  return away_from_zero ? float_from_bits(bits_of(sum) - 1u) : sum;  // |sum| > 0: one step toward zero
}
MQA_HOST_DEVICE inline float max_f32(float a, float b) { return a > b ? a : b; }
#endif

// magic with x's sign: adding it toward zero truncates x to magic's grid, toward zero.
MQA_HOST_DEVICE inline float truncated_term(float x, float magic) {
  const float signed_magic = float_from_bits((bits_of(x) & 0x80000000u) | bits_of(magic));
  return sub_rn_f32(add_rz_f32(x, signed_magic), signed_magic);
}

// The step over products q[i] k[i] (q 16-byte aligned) and the accumulator acc. Partial maxima
// and sums in four lanes keep the dependent chains short; every order gives the same bits (above).
MQA_HOST_DEVICE inline float truncating_step(const truncating_constants& c, float acc, const scaled_operand* q,
                                             const scaled_operand* k) {
  const auto* pairs = reinterpret_cast<const operand_pair*>(q);
  float product[kTruncatingProducts];
  float top[4] = {float_from_bits(bits_of(acc) & 0x7F800000u), 0.0f, 0.0f, 0.0f};
MQA_UNROLL
  for (int j = 0; j < kTruncatingProducts / 2; ++j) {
    const operand_pair two = pairs[j];
    const int i = 2 * j;
    product[i] = mul_rn_f32(two.first.value, k[i].value);
    product[i + 1] = mul_rn_f32(two.second.value, k[i + 1].value);
    top[i % 4] = max_f32(top[i % 4], mul_rn_f32(two.first.scale, k[i].scale));
    top[(i + 1) % 4] = max_f32(top[(i + 1) % 4], mul_rn_f32(two.second.scale, k[i + 1].scale));
  }
  const float scale = max_f32(max_f32(top[0], top[1]), max_f32(top[2], top[3]));
  if (scale == 0.0f) return 0.0f;  // no nonzero product and a zero accumulator
  const float magic = mul_rn_f32(scale, c.magic_per_top);
  float sum[4] = {add_rn_f32(truncated_term(acc, magic), truncated_term(product[0], magic)),
                  truncated_term(product[1], magic), truncated_term(product[2], magic),
                  truncated_term(product[3], magic)};
MQA_UNROLL
  for (int i = 4; i < kTruncatingProducts; ++i)
    sum[i % 4] = add_rn_f32(sum[i % 4], truncated_term(product[i], magic));
  const float total = add_rn_f32(add_rn_f32(sum[0], sum[1]), add_rn_f32(sum[2], sum[3]));
  return float_from_bits(bits_of(total) & c.result_mask);
}

}  // namespace mqa::gpu::model
