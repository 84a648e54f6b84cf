// One fused step of 32 products whose terms and result are truncated (Hopper's wgmma, as
// reference/mma's sm90-wgmma describes it) in float32 arithmetic: the same value as
// model_step.hpp's aligned_sum, bit for bit, in about six instructions a product instead of the
// generic integer algorithm's forty or so. Written for centre_kernel.hip's device code, and
// compiled for the host too so that tests/reference/exact/gpu hold it to reference/mma.
//
// Why float32 is exact here. Every operand is m 2^(e - 3) with |m| < 16, so a product p is
// m 2^(e - 6) with |m| < 2^8 and e the sum of the operands' exponents: float32 holds it exactly,
// and |p| < 2^(e + 2). The step aligns the products (and the accumulator) to top, the largest e of
// a nonzero product (or the accumulator's exponent), and keeps `term_bits` fraction bits of each
// by truncation: every term is trunc(p / 2^u) 2^u with u = top - term_bits, below
// 2^(u + term_bits + 2). With magic = 1.5 2^(23 + u), |p| + magic lies in [2^(23 + u), 2^(24 + u))
// while term_bits + 2 < 22, where the float32 grid is 2^u: p plus magic given p's sign, computed
// exactly and rounded toward zero once (a fused multiply-add), keeps exactly the bits of p above
// 2^u, truncated toward zero, and subtracting magic again is exact. Thirty-three such terms sum to
// less than 2^(u + term_bits + 8), so with term_bits <= 16 every partial sum, in any order, is a
// multiple of 2^u with at most 24 significant bits: exact. The result rule then either truncates
// (clearing the fraction bits below result_bits, exact for a normal float32) or has nothing to
// round (term_bits + 8 <= result_bits + 1). Normal throughout: u >= 2 e_min - term_bits >= -46
// (e_min >= -15 for every fp8 format), and an accumulator is zero or a previous step's result, a
// multiple of such a 2^u; the step's precondition is exactly that: acc zero or a normal float32.
//
// top as a float: an operand's scale is 2^e with the operand's sign (0 for a zero operand), so a
// product of two scales is 2^e with the product's sign, the largest magnitude among them is 2^top,
// and 0 when every product is zero.
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

// An operand as the float32 step takes it: its value, and 2^e with its sign (0 where the operand
// is zero, or a non-finite code whose element the CPU settles).
struct scaled_operand {
  float value = 0, scale = 0;
};

MQA_HOST_DEVICE inline scaled_operand scaled_operand_of(const code_format& f, std::uint8_t code) {
  if (code_is_nonfinite(f, code)) return {};
  const operand o = operand_of(f, code);
  if (o.m == 0) return {};
  const float scale = exact_power_of_two(o.e);
  return {static_cast<float>(o.m) * exact_power_of_two(o.e - 3), o.m < 0 ? -scale : scale};
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
// elsewhere (the host, for the CPU test against reference/mma, and HIP, whose headers offer
// rounding toward zero only where the device library is built with it) the IEEE operations round
// to nearest, and the fused product plus magic toward zero is the product (exact: eight bits)
// plus magic corrected by the sum's rounding error (Knuth's TwoSum, exact for two finite floats
// whose sum does not overflow): one step toward zero where rounding went away from it.
#if defined(__CUDA_ARCH__)
__device__ inline float mul_rn_f32(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float add_rn_f32(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float sub_rn_f32(float a, float b) { return __fsub_rn(a, b); }
__device__ inline float fma_rz_f32(float a, float b, float c) { return __fmaf_rz(a, b, c); }
__device__ inline float max_magnitude_f32(float a, float b) { return fmaxf(a, fabsf(b)); }
#else
MQA_HOST_DEVICE inline float mul_rn_f32(float a, float b) { return a * b; }
MQA_HOST_DEVICE inline float add_rn_f32(float a, float b) { return a + b; }
MQA_HOST_DEVICE inline float sub_rn_f32(float a, float b) { return a - b; }
MQA_HOST_DEVICE inline float fma_rz_f32(float a, float b, float c) {  // a b exact in float32 (an operand pair's)
  const float product = a * b;
  const float sum = product + c;
  const float c_part = sum - product;
  const float error = (product - (sum - c_part)) + (c - c_part);  // product + c - sum, exactly
  const bool away_from_zero = (sum > 0.0f && error < 0.0f) || (sum < 0.0f && error > 0.0f);
  return away_from_zero ? float_from_bits(bits_of(sum) - 1u) : sum;  // |sum| > 0: one step toward zero
}
MQA_HOST_DEVICE inline float max_magnitude_f32(float a, float b) {
  const float m = b < 0.0f ? -b : b;
  return a > m ? a : m;
}
#endif

// a b truncated toward zero to magic's grid, where sign carries a b's sign (or the sign of zero).
MQA_HOST_DEVICE inline float truncated_term(float a, float b, float sign, float magic) {
  const float signed_magic = float_from_bits((bits_of(sign) & 0x80000000u) | bits_of(magic));
  return sub_rn_f32(fma_rz_f32(a, b, signed_magic), signed_magic);
}

// The step over products q[i] k[i] (q 16-byte aligned) and the accumulator acc (zero or a normal
// float32). Partial maxima and sums in four lanes keep the dependent chains short; every order
// gives the same bits (above).
MQA_HOST_DEVICE inline float truncating_step(const truncating_constants& c, float acc, const scaled_operand* q,
                                             const scaled_operand* k) {
  const auto* pairs = reinterpret_cast<const operand_pair*>(q);
  float scale[kTruncatingProducts];  // each product's 2^e with its sign
  float top[4] = {float_from_bits(bits_of(acc) & 0x7F800000u), 0.0f, 0.0f, 0.0f};
MQA_UNROLL
  for (int j = 0; j < kTruncatingProducts / 2; ++j) {
    const operand_pair two = pairs[j];
    const int i = 2 * j;
    scale[i] = mul_rn_f32(two.first.scale, k[i].scale);
    scale[i + 1] = mul_rn_f32(two.second.scale, k[i + 1].scale);
    top[i % 4] = max_magnitude_f32(top[i % 4], scale[i]);
    top[(i + 1) % 4] = max_magnitude_f32(top[(i + 1) % 4], scale[i + 1]);
  }
  const float largest = max_magnitude_f32(max_magnitude_f32(top[0], top[1]), max_magnitude_f32(top[2], top[3]));
  if (largest == 0.0f) return 0.0f;  // no nonzero product and a zero accumulator
  const float magic = mul_rn_f32(largest, c.magic_per_top);
  float sum[4];
MQA_UNROLL
  for (int j = 0; j < kTruncatingProducts / 2; ++j) {
    const operand_pair two = pairs[j];
    const int i = 2 * j;
    const float first = truncated_term(two.first.value, k[i].value, scale[i], magic);
    const float second = truncated_term(two.second.value, k[i + 1].value, scale[i + 1], magic);
    if (j == 0) {
      sum[0] = add_rn_f32(truncated_term(acc, 1.0f, acc, magic), first);
      sum[1] = second;
    } else if (j == 1) {
      sum[2] = first;
      sum[3] = second;
    } else {
      sum[i % 4] = add_rn_f32(sum[i % 4], first);
      sum[(i + 1) % 4] = add_rn_f32(sum[(i + 1) % 4], second);
    }
  }
  const float total = add_rn_f32(add_rn_f32(sum[0], sum[1]), add_rn_f32(sum[2], sum[3]));
  return float_from_bits(bits_of(total) & c.result_mask);
}

}  // namespace mqa::gpu::model
