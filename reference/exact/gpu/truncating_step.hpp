// One fused step of 32 products whose terms and result are truncated (Hopper's wgmma, as
// reference/mma's sm90-wgmma describes it) in float32 arithmetic: the same value as
// model_step.hpp's aligned_sum, bit for bit, in about four instructions a product (its PTX: two
// multiplications and an addition a product, a paired multiplication and comparison every two)
// where the generic integer algorithm shifts and rounds each product. Written for
// centre_kernel.hip's device code, and
// compiled for the host too so that tests/reference/exact/gpu hold it to reference/mma.
//
// Why it is exact. Every operand is m 2^(e - 3) with |m| < 16 and e in [-15, 16] for every fp8
// format, so a product p is m 2^(e - 6) with |m| < 2^8 and e the sum of the operands' exponents,
// |p| < 2^(e + 2). The step aligns the products (and the accumulator) to top, the largest e of a
// nonzero product or the accumulator's exponent, and keeps `term_bits` fraction bits of each by
// truncation: a term is trunc(p / 2^u) 2^u with u = top - term_bits, below 2^(u + term_bits + 2).
// - top: an operand's scale is 2^e (0 for a zero operand), a product of two scales is exact
//   (float32 and bfloat16 alike: 8 exponent bits), and the largest is 2^top (0: no nonzero
//   product).
// - A product's term on float32's subnormal grid: with q's values staged times 2^-C (C = 96),
//   p' = q' k = p 2^-C is exact (normal, or a subnormal whose bits lie above 2^-149: e - 6 - C >=
//   -149), and one multiplication by S = 2^(C - 149 - u) rounded toward zero gives
//   trunc(p / 2^u) 2^-149 exactly, since p 2^(-149 - u) < 2^(-149 + term_bits + 2) lies where
//   float32's grid is 2^-149. S is a normal float32 for every u in [-46, 44] (the fp8 formats'
//   exponents, term_bits <= 16, |acc| < 2^45).
// - 32 such terms sum to less than 2^(-149 + term_bits + 7): with term_bits <= 16 every partial
//   sum, in any order, lies below 2^-125 on the grid 2^-149: exact. Scaled back by two powers of
//   two (2^100, then 2^(49 + u)), it is the products' sum exactly.
// - The accumulator's term: acc plus magic = 1.5 2^(23 + u) given acc's sign, rounded toward zero
//   once (|acc| < 2^(top + 1) keeps the sum in magic's binade, whose grid is 2^u), keeps exactly
//   acc's bits above 2^u; subtracting magic is exact. The two sums add exactly (multiples of 2^u
//   below 2^(u + term_bits + 8) <= 2^(u + 24)).
// - The result rule then either truncates (clearing the fraction bits below result_bits, exact for
//   a normal float32) or has nothing to round (term_bits + 8 <= result_bits + 1). Everything stays
//   normal: the result is a nonzero multiple of 2^u >= 2^-46, or zero.
// The step's precondition is what a chain feeds it: acc zero or a normal float32 below 2^45 in
// magnitude (head_dim <= 4096: |dot| < head_dim 2^32).
#pragma once

#include <cstdint>

#include "reference/exact/gpu/model_step.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif

// The step's loops unrolled in device code (registers, not local memory).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define MQA_UNROLL _Pragma("unroll")
#else
#define MQA_UNROLL
#endif

namespace mqa::gpu::model {

inline constexpr int kTruncatingProducts = 32;
inline constexpr int kQPrescale = 96;  // C above: q's values are staged times 2^-C

// Whether truncating_step computes this chain's steps for dots of head_dim (otherwise the generic
// integer form does).
MQA_HOST_DEVICE inline bool truncating_form(const chain_rule& c, std::int64_t head_dim) {
  const step_rule& s = c.step;
  return s.products == kTruncatingProducts && s.even_odd_lanes == 0 && s.term_rule == rounding::toward_zero &&
         s.term_bits >= 0 && s.term_bits <= 16 && s.result_bits >= 0 && s.result_bits <= 23 &&
         (s.result_rule == rounding::toward_zero || s.term_bits + 8 <= s.result_bits + 1) && head_dim <= 4096;
}

// An operand as the step takes it: its value, and 2^e (0 where the operand is zero, or a
// non-finite code whose element the CPU settles).
struct scaled_operand {
  float value = 0, scale = 0;
};

MQA_HOST_DEVICE inline scaled_operand scaled_operand_of(const code_format& f, std::uint8_t code) {
  if (code_is_nonfinite(f, code)) return {};
  const operand o = operand_of(f, code);
  if (o.m == 0) return {};
  return {static_cast<float>(o.m) * exact_power_of_two(o.e - 3), exact_power_of_two(o.e)};
}

// Two operands' scales side by side: on NVIDIA GPUs two bfloat16 in a register, multiplied and
// compared two at a time; elsewhere two float32.
#if defined(__CUDACC__)
using scale_pair = __nv_bfloat162;
#define MQA_STEP __device__
__device__ inline scale_pair scale_pair_of(float low, float high) { return __floats2bfloat162_rn(low, high); }
__device__ inline scale_pair pair_product(scale_pair a, scale_pair b) { return __hmul2(a, b); }
__device__ inline scale_pair pair_max(scale_pair a, scale_pair b) { return __hmax2(a, b); }
__device__ inline float pair_largest(scale_pair a) { return fmaxf(__low2float(a), __high2float(a)); }
#else
struct scale_pair {
  float low = 0, high = 0;
};
#define MQA_STEP MQA_HOST_DEVICE
MQA_HOST_DEVICE inline scale_pair scale_pair_of(float low, float high) { return {low, high}; }
MQA_HOST_DEVICE inline scale_pair pair_product(scale_pair a, scale_pair b) { return {a.low * b.low, a.high * b.high}; }
MQA_HOST_DEVICE inline scale_pair pair_max(scale_pair a, scale_pair b) {
  return {a.low > b.low ? a.low : b.low, a.high > b.high ? a.high : b.high};
}
MQA_HOST_DEVICE inline float pair_largest(scale_pair a) { return a.low > a.high ? a.low : a.high; }
#endif

// A step's operands on one side: 32 values (q's times 2^-C) and their scales in 16 pairs.
struct alignas(16) step_operands {
  float value[kTruncatingProducts];
  scale_pair scale[kTruncatingProducts / 2];
};

// Constants of a chain's step, per launch.
struct truncating_constants {
  float magic_per_top = 0;           // 1.5 2^(23 - term_bits): the accumulator's magic is 2^top times this
  std::uint32_t grid_scale_bits = 0;  // bits(S) = grid_scale_bits - bits(2^top)
  std::uint32_t back_scale_bits = 0;  // bits(2^(49 + u)) = bits(2^top) + back_scale_bits
  std::uint32_t result_mask = 0;      // the float32 bits the result keeps
};

MQA_HOST_DEVICE inline truncating_constants truncating_constants_of(const step_rule& s) {
  truncating_constants c;
  c.magic_per_top = 1.5f * exact_power_of_two(23 - s.term_bits);
  // S = 2^(C - 149 - top + term_bits): exponent field C - 22 + term_bits - top, that is
  // (C + 105 + term_bits) - (top + 127).
  c.grid_scale_bits = static_cast<std::uint32_t>(kQPrescale + 105 + s.term_bits) << 23;
  // 2^(49 + top - term_bits): field (top + 127) + 49 - term_bits.
  c.back_scale_bits = static_cast<std::uint32_t>(49 - s.term_bits) << 23;
  c.result_mask = s.result_rule == rounding::toward_zero ? ~((1u << (23 - s.result_bits)) - 1u) : ~0u;
  return c;
}

// float32 operations with the rounding named. CUDA's device code has an instruction for each;
// elsewhere (the host, for the CPU test against reference/mma, and HIP, whose headers offer
// rounding toward zero only where the device library is built with it) the operations the IEEE
// default rounds to nearest, and the two rounded toward zero computed in double and brought to
// float32 toward zero. The product (an 8-bit float times a power of two) is exact in double. The
// sum of the accumulator and magic is exact unless the accumulator has bits more than 29 binades
// below magic's grid; the double's rounding then moves it by less than a grid step and cannot
// reach the next point of the grid, which would take 30 significant bits where a float32 has 24.
// Subnormal float32 values must be kept, not flushed (no fast-math flags anywhere).
#if defined(__CUDA_ARCH__)
__device__ inline float mul_rn_f32(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float add_rn_f32(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float sub_rn_f32(float a, float b) { return __fsub_rn(a, b); }
__device__ inline float mul_rz_f32(float a, float b) { return __fmul_rz(a, b); }
__device__ inline float add_rz_f32(float a, float b) { return __fadd_rz(a, b); }
#else
MQA_HOST_DEVICE inline float float_toward_zero(double exact) {
  float f = static_cast<float>(exact);
  if ((f > 0.0f && static_cast<double>(f) > exact) || (f < 0.0f && static_cast<double>(f) < exact))
    f = float_from_bits(bits_of(f) - 1u);  // one step toward zero
  return f;
}
MQA_HOST_DEVICE inline float mul_rn_f32(float a, float b) { return a * b; }
MQA_HOST_DEVICE inline float add_rn_f32(float a, float b) { return a + b; }
MQA_HOST_DEVICE inline float sub_rn_f32(float a, float b) { return a - b; }
MQA_HOST_DEVICE inline float mul_rz_f32(float a, float b) {
  return float_toward_zero(static_cast<double>(a) * static_cast<double>(b));
}
MQA_HOST_DEVICE inline float add_rz_f32(float a, float b) {
  return float_toward_zero(static_cast<double>(a) + static_cast<double>(b));
}
#endif

// The step over products q[i] k[i] and the accumulator acc (the precondition above). Partial
// maxima and sums in four lanes keep the dependent chains short; every order gives the same bits.
MQA_STEP inline float truncating_step(const truncating_constants& c, float acc, const step_operands& q,
                                      const step_operands& k) {
  scale_pair top[2] = {pair_product(q.scale[0], k.scale[0]), pair_product(q.scale[1], k.scale[1])};
MQA_UNROLL
  for (int j = 2; j < kTruncatingProducts / 2; ++j) top[j % 2] = pair_max(top[j % 2], pair_product(q.scale[j], k.scale[j]));
  const float acc_scale = float_from_bits(bits_of(acc) & 0x7F800000u);
  const float largest = pair_largest(pair_max(top[0], top[1]));
  const float scale = largest > acc_scale ? largest : acc_scale;
  if (scale == 0.0f) return 0.0f;  // no nonzero product and a zero accumulator
  const float grid = float_from_bits(c.grid_scale_bits - bits_of(scale));
  float sum[4];
MQA_UNROLL
  for (int i = 0; i < kTruncatingProducts; ++i) {
    const float term = mul_rz_f32(mul_rn_f32(q.value[i], k.value[i]), grid);
    sum[i % 4] = i < 4 ? term : add_rn_f32(sum[i % 4], term);
  }
  const float products = add_rn_f32(add_rn_f32(sum[0], sum[1]), add_rn_f32(sum[2], sum[3]));
  const float magic = mul_rn_f32(scale, c.magic_per_top);
  const float signed_magic = float_from_bits((bits_of(acc) & 0x80000000u) | bits_of(magic));
  const float acc_term = sub_rn_f32(add_rz_f32(acc, signed_magic), signed_magic);
  const float back = float_from_bits(bits_of(scale) + c.back_scale_bits);
  const float total = add_rn_f32(mul_rn_f32(mul_rn_f32(products, 0x1p100f), back), acc_term);
  return float_from_bits(bits_of(total) & c.result_mask);
}

}  // namespace mqa::gpu::model
