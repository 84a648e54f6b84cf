#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "reference/fp8.hpp"

using namespace mqa::fp8;

namespace {
conversion with(format f, profile_id p, std::optional<double> bound = std::nullopt) { return {f, p, bound}; }
}  // namespace

TEST_CASE("every non-NaN code round-trips through its value under every profile covering the format", "[fp8]") {
  for (const profile& p : all_profiles()) {
    for (const format_traits& t : kFormats) {
      if (!covers(p, t.id)) continue;
      for (unsigned code = 0; code < 256; ++code) {
        const auto c = static_cast<std::uint8_t>(code);
        CAPTURE(p.name, t.name, code);
        if (is_nan(t, c)) {
          CHECK(is_nan(t, encode(with(t.id, p.id), decode(t.id, c))));
          continue;
        }
        // cuda-satfinite and saturate take Inf to max by design.
        if (is_inf(t, c) && (p.inf == inf_rule::to_max || p.clamps_to_format_max)) continue;
        CHECK(encode(with(t.id, p.id), decode(t.id, c)) == c);
        CHECK(encode(with(t.id, p.id), static_cast<float>(decode(t.id, c))) == c);
      }
    }
  }
}

// The midpoint m of two neighbouring codes is exact in float64. Inputs a hair either side of it
// in float64 (1 ulp of double, 2^-40 relative) must round to the nearer code; float32(x) would be
// m itself, so a converter that went through float first would tie instead (double rounding).
TEST_CASE("float64 inputs next to every rounding midpoint round to the nearer code, never twice", "[fp8]") {
  for (const format_traits& t : kFormats) {
    const conversion c = with(t.id, profile_id::ml_dtypes);
    std::vector<std::pair<double, std::uint8_t>> ladder;  // positive finite values ascending
    for (unsigned code = 0; code < (t.is_signed ? 0x80u : 0x100u); ++code) {
      const double v = decode(t.id, static_cast<std::uint8_t>(code));
      if (std::isfinite(v)) ladder.emplace_back(v, static_cast<std::uint8_t>(code));
    }
    std::sort(ladder.begin(), ladder.end());
    for (std::size_t i = 0; i + 1 < ladder.size(); ++i) {
      const auto [a, code_a] = ladder[i];
      const auto [b, code_b] = ladder[i + 1];
      const double m = (a + b) / 2;  // exact
      CAPTURE(t.name, a, b);
      const std::uint8_t even = t.mantissa_bits == 0 ? code_b : (code_a % 2 == 0 ? code_a : code_b);
      CHECK(encode(c, m) == even);
      CHECK(encode(c, std::nextafter(m, 0.0)) == code_a);
      CHECK(encode(c, std::nextafter(m, HUGE_VAL)) == code_b);
      const double nudge = m * 0x1p-40;
      REQUIRE(static_cast<float>(m + nudge) == static_cast<float>(m));
      CHECK(encode(c, m + nudge) == code_b);
      CHECK(encode(c, m - nudge) == code_a);
      if (t.is_signed && a > 0) {
        CHECK(encode(c, -(m + nudge)) == (code_b | 0x80));
        CHECK(encode(c, -(m - nudge)) == (code_a | 0x80));
      }
    }
  }
}

TEST_CASE("profiles differ exactly where the vendors do", "[fp8][profile]") {
  SECTION("HIP NOSAT checks overflow before rounding: 448 < x <= 464 is NaN, RNE libraries give 448") {
    CHECK(encode(with(format::e4m3fn, profile_id::hip_nosat), 449.0) == 0x7F);
    CHECK(encode(with(format::e4m3fn, profile_id::hip_nosat), -449.0) == 0xFF);
    CHECK(encode(with(format::e4m3fn, profile_id::ml_dtypes), 449.0) == 0x7E);
    CHECK(encode(with(format::e4m3fn, profile_id::cuda_nosat), 464.0) == 0x7E);
    CHECK(encode(with(format::e4m3fnuz, profile_id::hip_nosat), 241.0) == 0x80);
    CHECK(encode(with(format::e4m3fnuz, profile_id::hip_nosat), -241.0) == 0x80);
    CHECK(encode(with(format::e5m2, profile_id::hip_nosat), 57345.0) == 0x7C);
  }
  SECTION("HIP SATFINITE clamps finite values but lets Inf through: NaN in fnuz and e4m3fn, Inf in e5m2") {
    CHECK(encode(with(format::e4m3fnuz, profile_id::hip_satfinite), 1e9) == 0x7F);
    CHECK(encode(with(format::e4m3fnuz, profile_id::hip_satfinite), HUGE_VAL) == 0x80);
    CHECK(encode(with(format::e4m3fn, profile_id::hip_satfinite), -HUGE_VAL) == 0xFF);
    CHECK(encode(with(format::e5m2, profile_id::hip_satfinite), HUGE_VAL) == 0x7C);
    CHECK(encode(with(format::e5m2, profile_id::hip_satfinite), std::nan("")) == 0x7F);
  }
  SECTION("CUDA SATFINITE takes Inf and overflow to max and every NaN to 0x7F") {
    CHECK(encode(with(format::e4m3fn, profile_id::cuda_satfinite), -HUGE_VAL) == 0xFE);
    CHECK(encode(with(format::e5m2, profile_id::cuda_satfinite), 1e6) == 0x7B);
    CHECK(encode(with(format::e4m3fn, profile_id::cuda_satfinite), -std::nan("")) == 0x7F);
  }
  SECTION("NaN bytes of e5m2: ml_dtypes 0x7E, torch 0x7F") {
    CHECK(encode(with(format::e5m2, profile_id::ml_dtypes), -std::nan("")) == 0xFE);
    CHECK(encode(with(format::e5m2, profile_id::torch), -std::nan("")) == 0xFF);
  }
  SECTION("fnuz has no -0: a negative value that underflows is 0x00, never the NaN 0x80") {
    for (const profile& p : all_profiles()) {
      if (!covers(p, format::e4m3fnuz)) continue;
      CAPTURE(p.name);
      CHECK(encode(with(format::e4m3fnuz, p.id), -1e-9) == 0x00);
      CHECK(encode(with(format::e4m3fnuz, p.id), -0.0) == 0x00);
    }
    CHECK(encode(with(format::e4m3fn, profile_id::ml_dtypes), -1e-9) == 0x80);
  }
  SECTION("a saturation bound clamps first, even above the format's max (the 448-for-fnuz bug)") {
    CHECK(encode(with(format::e4m3fnuz, profile_id::saturate), 1e6) == 0x7F);            // 240
    CHECK(encode(with(format::e4m3fnuz, profile_id::saturate, 224.0), 1e6) == 0x7E);     // 224
    CHECK(encode(with(format::e4m3fnuz, profile_id::saturate, 448.0), 300.0) == 0x80);   // NaN
    CHECK(encode(with(format::e4m3fnuz, profile_id::saturate, 224.0), -HUGE_VAL) == 0xFE);
    CHECK(std::isnan(decode(format::e4m3fnuz, encode(with(format::e4m3fnuz, profile_id::saturate), std::nan("")))));
  }
  SECTION("e8m0: ml_dtypes makes zero and negatives NaN, torch takes |x| and maps 0 to 0x00") {
    CHECK(encode(with(format::e8m0fnu, profile_id::ml_dtypes), -4.0) == 0xFF);
    CHECK(encode(with(format::e8m0fnu, profile_id::torch), -4.0) == 0x81);
    CHECK(encode(with(format::e8m0fnu, profile_id::ml_dtypes), 0.0) == 0xFF);
    CHECK(encode(with(format::e8m0fnu, profile_id::torch), 0.0) == 0x00);
    CHECK(encode(with(format::e8m0fnu, profile_id::ml_dtypes), 3.0) == 0x81);  // ties up
  }
}

TEST_CASE("a conversion a profile cannot make is refused with what is accepted", "[fp8][profile]") {
  const auto why = why_invalid(with(format::e4m3fnuz, profile_id::cuda_satfinite));
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("cuda-satfinite") && Catch::Contains("e4m3fn, e5m2"));
  CHECK(why_invalid(with(format::e4m3fn, profile_id::saturate, -1.0)));
  CHECK(why_invalid(with(format::e8m0fnu, profile_id::torch, 2.0)));
  CHECK_FALSE(why_invalid(with(format::e4m3fnuz, profile_id::hip_nosat)));
  for (const profile& p : all_profiles()) CHECK(parse_profile(p.name) == p.id);
  CHECK_FALSE(parse_profile("cuda"));
}

TEST_CASE("code classes", "[fp8]") {
  const auto& fn = traits(format::e4m3fn);
  CHECK(classify(fn, 0x00) == code_class::zero);
  CHECK(classify(fn, 0x80) == code_class::zero);
  CHECK(classify(fn, 0x07) == code_class::subnormal);
  CHECK(classify(fn, 0x08) == code_class::normal);
  CHECK(classify(fn, 0x7E) == code_class::max);
  CHECK(classify(fn, 0xFF) == code_class::nan);
  const auto& e5 = traits(format::e5m2);
  CHECK(classify(e5, 0xFC) == code_class::inf);
  CHECK(classify(e5, 0x7D) == code_class::nan);
  CHECK(classify(traits(format::e4m3fnuz), 0x80) == code_class::nan);
  CHECK(classify(traits(format::e8m0fnu), 0x00) == code_class::normal);
  int nans = 0;
  for (unsigned c = 0; c < 256; ++c) nans += is_nan(e5, static_cast<std::uint8_t>(c));
  CHECK(nans == 6);
}
