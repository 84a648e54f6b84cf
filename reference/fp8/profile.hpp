// Conversion profiles: what a given producer (ml_dtypes, torch, CUDA, HIP) actually does
// when it turns a float32 or a float64 into an fp8 code, and which NaN bits it gives back when
// decoding. A float64 is not always rounded once: ml_dtypes and torch round it to float32 first.
// Profiles are data over the one algorithm in convert.hpp; every rule names its source in
// profile.cpp, the single place where the vendors' behaviour is written down.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "format.hpp"

namespace mqa::fp8 {

enum class profile_id : std::uint8_t {
  ml_dtypes,
  torch,
  cuda_satfinite,
  cuda_nosat,
  hip_satfinite,
  hip_nosat,
  saturate,
  deepgemm,
};

// A finite value whose rounded magnitude exceeds the format's largest finite value.
enum class overflow_rule : std::uint8_t {
  to_nonfinite,                  // IEEE style, decided after rounding: Inf where the format has one, else NaN
  to_nonfinite_before_rounding,  // |x| > max is NaN/Inf before rounding (HIP's software path)
  to_max,                        // saturate to +-max
};

// An infinite input.
enum class inf_rule : std::uint8_t {
  to_nonfinite,  // Inf where the format has one, else NaN (sign kept)
  to_max,        // +-max
};

// What a NaN input becomes in a format that has no NaN (e2m1fn).
enum class nan_without_code : std::uint8_t {
  opposite_signed_zero,  // ml_dtypes: quiet_NaN() is the code 0b1'00'0 (-0), negated for a negative NaN (+0)
  positive_max,          // DeepGEMM's bucketize sorts NaN past the last midpoint: +max (0x7) whatever the sign
};

// The code a NaN input becomes, where the format leaves a choice (fnuz and e8m0 have one NaN code;
// e4m3fn's is S.1111.111 with or without the sign; e2m1fn has none and substitutes a number).
struct nan_rule {
  bool keeps_sign;             // false: every NaN input gives the positive NaN code
  std::uint8_t e5m2_mantissa;  // mantissa of e5m2's NaN code: 2 -> 0x7E, 3 -> 0x7F
  bool e5m2_takes_payload;     // e5m2 ORs the input's two top fraction bits into that mantissa
  nan_without_code finite_only = nan_without_code::opposite_signed_zero;
};

// How a value exactly halfway between two neighbouring codes rounds.
enum class tie_rule : std::uint8_t {
  to_even,      // IEEE round to nearest even (e8m0, with no mantissa, rounds ties up)
  toward_zero,  // to the smaller magnitude: torch.bucketize(|x|, midpoints, right=False) (DeepGEMM's fp4 cast)
};

// What a producer does with a float64 input.
enum class float64_path : std::uint8_t {
  through_float32,  // rounds it to float32 (ties to even), then converts the float32: rounded twice
                    // near a midpoint, and the float32 rules (NaN, e8m0 subnormals) apply
  direct,           // rounds the double once; a NaN follows the profile's float64_nan rule
};

// The float32 bits a NaN code decodes to.
enum class nan_decoding : std::uint8_t {
  quiet_keep_sign,  // 0x7FC00000 with the code's sign bit (ml_dtypes)
  c10,              // torch's c10 widening: payload shifted up, quiet bit set; fnuz and e8m0 give 0x7F800001
};

struct profile {
  profile_id id;
  std::string_view name;
  std::uint8_t formats;  // bit i set: covers kFormats[i]
  tie_rule ties;
  overflow_rule overflow;
  inf_rule inf;
  nan_rule nan;                    // a float32 NaN input
  bool unsigned_takes_magnitude;   // e8m0: drop the sign (torch) instead of NaN for negatives
  bool unsigned_zero_is_nan;       // e8m0: zero is NaN (ml_dtypes) or code 0x00 (torch)
  bool clamps_to_format_max;       // without an explicit bound, clamp every non-NaN input to +-max first
  bool e8m0_float32_subnormal_up;  // e8m0 from a float32 subnormal: anything above 2^-127 is 2^-126
  bool drops_zero_sign;            // a negative value that rounds to zero gives +0 (no -0 written)
  float64_path float64;            // a float64 input (`mqacheck fp8 encode`, float64 .npy files)
  nan_rule float64_nan;            // a float64 NaN on the direct path (through float32, `nan` applies)
  nan_decoding decode_nan;
  std::string_view source;          // where the rules come from
  std::string_view float64_source;  // where the float64 path comes from
};

std::span<const profile> all_profiles();
const profile& rules(profile_id p);
std::optional<profile_id> parse_profile(std::string_view name);
std::string_view profile_names();

// Recasts: how a library hands OCP e4m3fn operands to gfx942's fp8 MFMA, which reads e4m3fnuz.
// fnuz's bias is one larger, so the same byte is worth half as much there: a library rewrites each
// e4m3fn operand's codes and multiplies a scale by the factor 2^(bias(to) - bias(from)) so that
// code x scale keeps the OCP value. The codes are not a float's conversion but a code's, so a
// recast is a row of its own (one per producer, cited in profile.cpp); recast_code (convert.hpp) is
// the one algorithm over the rows.
enum class recast_id : std::uint8_t {
  aiter_triton,
  flydsl,
  vllm_normalize,
};

enum class recast_method : std::uint8_t {
  by_value,  // decode, divide by the factor, encode in `to` under the `encoder` profile's rules
  by_bytes,  // keep the byte and read it in `to` (half the value); only -0 is rewritten first
};

// Where the factors of the converted operands go.
enum class factor_home : std::uint8_t {
  k_scale,    // every converted operand's factor multiplies k_scale (q's too: relu is positively homogeneous)
  own_scale,  // each operand's own scale: q's (folded into the weights here) and k_scale
};

struct recast {
  recast_id id;
  std::string_view name;
  format from;
  format to;
  recast_method method;
  profile_id encoder;                   // by_value: whose rules encode the divided value
  std::uint8_t negative_zero_becomes;   // by_bytes: the byte written for `from`'s -0 (0x80, fnuz's NaN)
  std::optional<std::uint8_t> nan_bytes_become;  // by_bytes: the byte written for `from`'s NaN codes;
                                                 // none: kept (0x7F/0xFF are +-240 in e4m3fnuz)
  factor_home factor;
  std::string_view source;              // where the rules come from
};

std::span<const recast> all_recasts();
const recast& rules(recast_id r);

constexpr bool covers(const profile& p, format f) {
  return (p.formats >> static_cast<unsigned>(f)) & 1u;
}

}  // namespace mqa::fp8
