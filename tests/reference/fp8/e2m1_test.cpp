// e2m1fn: its 16 codes against the OCP MX v1.0 table (5.3.3), and both producers'
// rounding near every midpoint against a schoolbook oracle that shares no code with reference/fp8:
// the values are written out below, the nearest one is found by comparing distances.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/fp8.hpp"

using namespace mqa::fp8;

namespace {

// OCP MX v1.0 table 5.3.3 (FP4 E2M1): the magnitudes of codes 0b0'00'0 .. 0b0'11'1.
constexpr std::array<double, 8> kMagnitudes{0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

conversion with(profile_id p) { return {format::e2m1fn, p, std::nullopt}; }

// The magnitude code a producer writes for |x| (finite, >= 0): the nearest value; a tie goes to the
// even code (ml_dtypes, IEEE) or the smaller one (DeepGEMM's bucketize); past 6 (or 7, the midpoint
// of 6 and the 8 the format lacks, rounding to even 8) it saturates at 6.
unsigned oracle_code(double magnitude, tie_rule ties) {
  if (magnitude >= 6) return 7;  // nearer 6 than anything below (distances to 0 and 6 would round alike)
  unsigned best = 0;
  for (unsigned c = 1; c < kMagnitudes.size(); ++c) {
    const double here = std::fabs(magnitude - kMagnitudes[c]), there = std::fabs(magnitude - kMagnitudes[best]);
    if (here < there || (here == there && ties == tie_rule::to_even && c % 2 == 0)) best = c;
  }
  return best;  // values beyond 6 are nearest to 6 (and 7 ties to the absent 8: saturated to 6 too)
}

std::uint8_t signed_code(unsigned magnitude_code, bool negative, bool keeps_negative_zero) {
  if (magnitude_code == 0 && !keeps_negative_zero) return 0x0;
  return static_cast<std::uint8_t>(magnitude_code | (negative ? 0x8u : 0u));
}

}  // namespace

TEST_CASE("e2m1fn: all 16 codes decode to the OCP MX table, and nothing else is a code", "[fp8][e2m1]") {
  const format_traits& t = traits(format::e2m1fn);
  CHECK(t.bits == 4);
  CHECK(code_count(t) == 16);
  CHECK(sign_bit(t) == 0x8);
  CHECK(magnitude_mask(t) == 0x7);
  for (unsigned code = 0; code < 16; ++code) {
    CAPTURE(code);
    const double expected = (code & 0x8 ? -1.0 : 1.0) * kMagnitudes[code & 0x7];
    const double got = decode(format::e2m1fn, static_cast<std::uint8_t>(code));
    CHECK(got == expected);
    CHECK(std::signbit(got) == ((code & 0x8) != 0));  // 0x8 is -0
    CHECK_FALSE(is_nan(t, static_cast<std::uint8_t>(code)));
    CHECK_FALSE(is_inf(t, static_cast<std::uint8_t>(code)));
    CHECK(std::bit_cast<std::uint32_t>(decode_f32(format::e2m1fn, profile_id::ml_dtypes, static_cast<std::uint8_t>(code))) ==
          std::bit_cast<std::uint32_t>(static_cast<float>(expected)));
  }
  CHECK(classify(t, 0x0) == code_class::zero);
  CHECK(classify(t, 0x8) == code_class::zero);
  CHECK(classify(t, 0x1) == code_class::subnormal);
  CHECK(classify(t, 0x9) == code_class::subnormal);
  CHECK(classify(t, 0x2) == code_class::normal);
  CHECK(classify(t, 0x7) == code_class::max);
  CHECK(classify(t, 0xF) == code_class::max);
  CHECK(max_finite(format::e2m1fn) == 6.0);
  for (unsigned byte = 16; byte < 256; ++byte) {
    CHECK_FALSE(is_code(t, byte));
    CHECK(std::isnan(decode(format::e2m1fn, static_cast<std::uint8_t>(byte))));
  }
  CHECK(parse_format("e2m1fn") == format::e2m1fn);
}

TEST_CASE("e2m1fn: which profiles produce it", "[fp8][e2m1]") {
  CHECK(covers(rules(profile_id::ml_dtypes), format::e2m1fn));
  CHECK(covers(rules(profile_id::deepgemm), format::e2m1fn));
  CHECK_FALSE(covers(rules(profile_id::deepgemm), format::e4m3fn));
  // torch's float4_e2m1fn_x2 is storage only: torch has no cast that writes e2m1 codes.
  for (const profile_id p : {profile_id::torch, profile_id::cuda_satfinite, profile_id::cuda_nosat,
                             profile_id::hip_satfinite, profile_id::hip_nosat, profile_id::saturate}) {
    CAPTURE(rules(p).name);
    CHECK_FALSE(covers(rules(p), format::e2m1fn));
    const auto why = why_invalid(with(p));
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("does not cover format 'e2m1fn'"));
  }
  CHECK(parse_profile("deepgemm") == profile_id::deepgemm);
}

TEST_CASE("e2m1fn: float32 and float64 inputs near every midpoint round as each producer does", "[fp8][e2m1]") {
  const profile_id id = GENERATE(profile_id::ml_dtypes, profile_id::deepgemm);
  const profile& p = rules(id);
  CAPTURE(p.name);
  const bool keeps_negative_zero = !p.drops_zero_sign;
  std::vector<double> around;
  for (std::size_t i = 0; i + 1 <= kMagnitudes.size(); ++i) {
    const double a = kMagnitudes[i], b = i + 1 < kMagnitudes.size() ? kMagnitudes[i + 1] : 8.0;
    const double m = (a + b) / 2;
    for (const double x : {a, b, m, m * (1 + 0x1p-40), m * (1 - 0x1p-40), static_cast<double>(std::nextafter(static_cast<float>(m), 0.0f)),
                           static_cast<double>(std::nextafter(static_cast<float>(m), 100.0f)), std::nextafter(m, 0.0),
                           std::nextafter(m, 100.0)})
      around.push_back(x);
  }
  for (const double x : {1e-30, 1e-45, 0x1p-149, 7.5, 8.0, 1e6, 3.4e38}) around.push_back(x);
  for (const double x : around) {
    CAPTURE(x);
    // float32: one rounding of the float32's own value.
    if (const auto f = static_cast<float>(x); std::isfinite(f)) {
      const unsigned c = oracle_code(static_cast<double>(f), p.ties);
      CHECK(encode(with(id), f) == signed_code(c, false, keeps_negative_zero));
      CHECK(encode(with(id), -f) == signed_code(c, true, keeps_negative_zero));
    }
    // float64: ml_dtypes rounds to float32 first; DeepGEMM's torch ops compare the double itself.
    const double seen = p.float64 == float64_path::through_float32 ? static_cast<double>(static_cast<float>(x)) : x;
    const unsigned c = oracle_code(seen, p.ties);
    CHECK(encode(with(id), x) == signed_code(c, false, keeps_negative_zero));
    CHECK(encode(with(id), -x) == signed_code(c, true, keeps_negative_zero));
  }
}

TEST_CASE("e2m1fn: a sweep of float32 inputs in [0, 8] against the oracle", "[fp8][e2m1]") {
  const profile_id id = GENERATE(profile_id::ml_dtypes, profile_id::deepgemm);
  const profile& p = rules(id);
  CAPTURE(p.name);
  std::int64_t mismatches = 0;
  // Every 2^10-th float32 from 0 to 8, and every float32 within 2^7 ulps of a midpoint.
  std::vector<float> inputs;
  for (std::uint32_t bits = 0; bits <= std::bit_cast<std::uint32_t>(8.0f); bits += 1024) inputs.push_back(std::bit_cast<float>(bits));
  for (std::size_t i = 0; i + 1 < kMagnitudes.size(); ++i) {
    const auto m = static_cast<float>((kMagnitudes[i] + kMagnitudes[i + 1]) / 2);
    const std::uint32_t mb = std::bit_cast<std::uint32_t>(m);
    for (std::uint32_t d = 0; d < 128; ++d) {
      inputs.push_back(std::bit_cast<float>(mb + d));
      if (mb >= d) inputs.push_back(std::bit_cast<float>(mb - d));
    }
  }
  for (const float f : inputs) {
    const std::uint8_t expected = signed_code(oracle_code(f, p.ties), false, !p.drops_zero_sign);
    if (encode(with(id), f) != expected && ++mismatches <= 3) UNSCOPED_INFO("input " << f);
  }
  CHECK(mismatches == 0);
  CHECK(inputs.size() > 100000);
}

TEST_CASE("e2m1fn: ties, zeros, Inf, overflow and NaN where the producers differ", "[fp8][e2m1]") {
  const conversion ml = with(profile_id::ml_dtypes), dg = with(profile_id::deepgemm);
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  SECTION("ties: ml_dtypes to the even code, DeepGEMM's bucketize(right=False) to the smaller magnitude") {
    CHECK(encode(ml, 0.25f) == 0x0);
    CHECK(encode(dg, 0.25f) == 0x0);
    CHECK(encode(ml, 0.75f) == 0x2);  // 1.0
    CHECK(encode(dg, 0.75f) == 0x1);  // 0.5
    CHECK(encode(ml, 1.75f) == 0x4);  // 2.0
    CHECK(encode(dg, 1.75f) == 0x3);  // 1.5
    CHECK(encode(ml, 3.5f) == 0x6);   // 4.0
    CHECK(encode(dg, 3.5f) == 0x5);   // 3.0
    CHECK(encode(ml, -5.0f) == 0xE);  // -4.0: both even and smaller
    CHECK(encode(dg, -5.0f) == 0xE);
  }
  SECTION("double rounding: ml_dtypes goes through float32, DeepGEMM compares the double") {
    CHECK(encode(ml, 0.75 - 0x1p-40) == 0x2);  // float32(x) = 0.75, a tie, to even 1.0
    CHECK(encode(dg, 0.75 - 0x1p-40) == 0x1);  // below the midpoint: 0.5
    CHECK(encode(dg, 0.75 + 0x1p-40) == 0x2);
  }
  SECTION("zeros: ml_dtypes keeps -0 (0x8), DeepGEMM writes no sign on a zero code") {
    CHECK(encode(ml, -0.0f) == 0x8);
    CHECK(encode(ml, -0.1f) == 0x8);
    CHECK(encode(dg, -0.0f) == 0x0);
    CHECK(encode(dg, -0.1f) == 0x0);
    CHECK(encode(dg, -0.3f) == 0x9);
  }
  SECTION("no Inf in the format: overflow and Inf saturate to +-6 in both") {
    for (const conversion& c : {ml, dg}) {
      CHECK(encode(c, 6.9f) == 0x7);
      CHECK(encode(c, 7.0f) == 0x7);  // the midpoint of 6 and the absent 8
      CHECK(encode(c, 1e30f) == 0x7);
      CHECK(encode(c, -1e30f) == 0xF);
      CHECK(encode(c, HUGE_VALF) == 0x7);
      CHECK(encode(c, -HUGE_VALF) == 0xF);
      CHECK(encode(c, -HUGE_VAL) == 0xF);
    }
  }
  SECTION("no NaN in the format: ml_dtypes writes its quiet_NaN() -0 (negated: +0), DeepGEMM +6") {
    CHECK(encode(ml, kNaN) == 0x8);
    CHECK(encode(ml, -kNaN) == 0x0);
    CHECK(encode(dg, kNaN) == 0x7);
    CHECK(encode(dg, -kNaN) == 0x7);
    CHECK(encode(dg, -std::numeric_limits<double>::quiet_NaN()) == 0x7);
  }
}
