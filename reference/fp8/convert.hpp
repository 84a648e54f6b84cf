// fp8 <-> float conversion: one generic algorithm over format traits and profile rules.
//
// Decoding is exact (every fp8 value is a double, and a float too). Encoding rounds to nearest
// with ties to even, once, from the input's own value. A float64 input is converted as its
// producer converts one (profile::float64): ml_dtypes and torch round it to float32 first
// (ties to even) and convert that float32, so a value just off an fp8 midpoint can land on the
// midpoint and tie (double rounding); CUDA's and ROCm's double conversions round it once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "format.hpp"
#include "profile.hpp"

namespace mqa::fp8 {

// One way of producing codes: a format, the producer's rules, and an optional clamp bound
// applied to every non-NaN input before conversion (vLLM's `x.clamp(-B, B)`; a bound above the
// format's max lets a case reproduce "448 used for fnuz").
struct conversion {
  format fmt = format::e4m3fn;
  profile_id profile = profile_id::ml_dtypes;
  std::optional<double> bound;
};

// Empty when the conversion is usable; otherwise what is wrong and what is accepted.
std::optional<std::string> why_invalid(const conversion& c);

// Exact value of a code; NaN codes give a quiet NaN with the code's sign. A byte that is not a
// code of the format (16 and above for e2m1fn) decodes to a quiet NaN too: callers that take
// bytes from outside check is_code first.
double decode(format f, std::uint8_t code);
// The float32 a producer hands back, NaN bits included.
float decode_f32(format f, profile_id p, std::uint8_t code);
// The exact values of all 256 bytes (see decode), computed once per format.
const std::array<double, 256>& decode_table(format f);

// Largest finite value of the format.
double max_finite(format f);

// A float64 follows the profile's float64 path; a float32 is rounded once.
std::uint8_t encode(const conversion& c, double x);
std::uint8_t encode(const conversion& c, float x);
// Each element's code is the one encode(c, x) gives; float32 spans go through a memo of it
// (built on a conversion's first use, 128 KiB, kept for the process).
void encode(const conversion& c, std::span<const float> in, std::span<std::uint8_t> out);
void encode(const conversion& c, std::span<const double> in, std::span<std::uint8_t> out);
void decode(format f, profile_id p, std::span<const std::uint8_t> in, std::span<float> out);

// What one converted operand's scale is multiplied by: 2^(bias(to) - bias(from)), the ratio of a
// byte's value in `from` to its value in `to` (2 for e4m3fn -> e4m3fnuz).
double recast_factor(const recast& r);
// The code a producer's recast writes for one code of r.from.
std::uint8_t recast_code(const recast& r, std::uint8_t code);

}  // namespace mqa::fp8
