#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <limits>
#include <vector>

#include "oracle/nearest_code.hpp"
#include "reference/fp8.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

using namespace mqa::fp8;

namespace {
conversion with(format f, profile_id p, std::optional<double> bound = std::nullopt) { return {f, p, bound}; }

// Positive finite values of a format, ascending, with their codes.
std::vector<std::pair<double, std::uint8_t>> ladder_of(const format_traits& t) {
  std::vector<std::pair<double, std::uint8_t>> ladder;
  for (unsigned code = 0; code < (t.is_signed ? code_count(t) / 2 : code_count(t)); ++code) {
    const double v = decode(t.id, static_cast<std::uint8_t>(code));
    if (std::isfinite(v)) ladder.emplace_back(v, static_cast<std::uint8_t>(code));
  }
  std::sort(ladder.begin(), ladder.end());
  return ladder;
}

}  // namespace

TEST_CASE("every non-NaN code round-trips through its value under every profile covering the format", "[fp8]") {
  for (const profile& p : all_profiles()) {
    for (const format_traits& t : kFormats) {
      if (!covers(p, t.id)) continue;
      for (unsigned code = 0; code < code_count(t); ++code) {
        const auto c = static_cast<std::uint8_t>(code);
        CAPTURE(p.name, t.name, code);
        if (is_nan(t, c)) {
          CHECK(is_nan(t, encode(with(t.id, p.id), decode(t.id, c))));
          continue;
        }
        // cuda-satfinite and saturate take Inf to max by design.
        if (is_inf(t, c) && (p.inf == inf_rule::to_max || p.clamps_to_format_max)) continue;
        // A profile that writes no -0 (DeepGEMM's fp4 cast) gives +0 for it.
        if (p.drops_zero_sign && c == sign_bit(t)) {
          CHECK(encode(with(t.id, p.id), decode(t.id, c)) == 0x00);
          continue;
        }
        CHECK(encode(with(t.id, p.id), decode(t.id, c)) == c);
        CHECK(encode(with(t.id, p.id), static_cast<float>(decode(t.id, c))) == c);
      }
    }
  }
}

// The midpoint m of two neighbouring codes is exact in float64. Inputs a hair either side of it
// in float64 (1 ulp of double, 2^-40 relative) must round to the nearer code when the producer
// rounds the double once (CUDA's __nv_cvt_double_to_fp8, ROCm's __hip_cvt_double_to_fp8);
// float32(x) would be m itself, so a converter that went through float first would tie instead.
TEST_CASE("float64 inputs next to every rounding midpoint round once under the direct producers", "[fp8][float64]") {
  for (const profile& p : all_profiles()) {
    if (p.float64 != float64_path::direct) continue;
    for (const format_traits& t : kFormats) {
      if (!covers(p, t.id)) continue;
      const conversion c = with(t.id, p.id);
      const auto ladder = ladder_of(t);
      for (std::size_t i = 0; i + 1 < ladder.size(); ++i) {
        const auto [a, code_a] = ladder[i];
        const auto [b, code_b] = ladder[i + 1];
        const double m = (a + b) / 2;  // exact
        CAPTURE(p.name, t.name, a, b);
        const std::uint8_t even = p.ties == tie_rule::toward_zero ? code_a
                                  : t.mantissa_bits == 0          ? code_b
                                                                  : (code_a % 2 == 0 ? code_a : code_b);
        CHECK(encode(c, m) == even);
        CHECK(encode(c, std::nextafter(m, 0.0)) == code_a);
        CHECK(encode(c, std::nextafter(m, HUGE_VAL)) == code_b);
        const double nudge = m * 0x1p-40;
        REQUIRE(static_cast<float>(m + nudge) == static_cast<float>(m));
        CHECK(encode(c, m + nudge) == code_b);
        CHECK(encode(c, m - nudge) == code_a);
        if (t.is_signed && a > 0) {
          CHECK(encode(c, -(m + nudge)) == (code_b | sign_bit(t)));
          CHECK(encode(c, -(m - nudge)) == (code_a | sign_bit(t)));
        }
      }
    }
  }
}

// ml_dtypes and torch convert a float64 by rounding it to float32 first. The oracle here shares
// no code with reference/fp8: the C++ cast (the FPU's round to nearest even) makes the float32,
// and tests/reference/fp8/oracle's schoolbook nearest-value search, over ml_dtypes' own decode
// tables, picks the code. Inputs: near every midpoint, the float32 boundaries on either side of
// it (where the cast stops landing on the midpoint), and a float64 ulp around each.
TEST_CASE("ml_dtypes and torch round a float64 to float32 first: twice near a midpoint", "[fp8][float64]") {
  const profile_id id = GENERATE(profile_id::ml_dtypes, profile_id::torch);
  const profile& p = rules(id);
  REQUIRE(p.float64 == float64_path::through_float32);
  for (const format_traits& t : kFormats) {
    // e2m1fn has no decode table among the fp8 goldens (tests/data/golden/fp4 has its own files);
    // its midpoints are checked against the OCP value table in e2m1_test.cpp.
    if (!covers(p, t.id) || t.id == format::e2m1fn) continue;
    CAPTURE(p.name, t.name);
    const auto table =
        mqa::io::read_npy<std::uint32_t>(mqa::test::golden_fp8_dir() / fmt::format("ml_dtypes.{}.decode_f32bits.npy", t.name));
    mqa::oracle::nearest_code oracle(std::string(t.name), std::vector<std::uint32_t>(table.begin(), table.end()));

    std::vector<double> inputs;
    const auto ladder = ladder_of(t);
    for (std::size_t i = 0; i + 1 < ladder.size(); ++i) {
      const double m = (ladder[i].first + ladder[i + 1].first) / 2;
      const auto f = static_cast<float>(m);
      REQUIRE(static_cast<double>(f) == m);  // every fp8 midpoint is a float32
      const double up = std::nextafter(f, HUGE_VALF), down = std::nextafter(f, 0.0f);
      for (const double x : {m, m * (1 + 0x1p-40), m * (1 - 0x1p-40), up, down, (m + up) / 2, (m + down) / 2})
        for (const double y : {x, std::nextafter(x, 0.0), std::nextafter(x, HUGE_VAL)}) inputs.push_back(y);
    }
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());

    const conversion c = with(t.id, id);
    int differing_from_one_rounding = 0;
    for (const double x : inputs) {  // ascending: the oracle sweeps
      const auto positive = static_cast<std::uint8_t>(oracle.positive(static_cast<float>(x)));
      CAPTURE(x);
      CHECK(encode(c, x) == positive);
      const std::uint8_t negative =
          t.is_signed ? static_cast<std::uint8_t>(oracle.negative_of(positive))
                      : (p.unsigned_takes_magnitude ? positive : static_cast<std::uint8_t>(oracle.nan(false)));
      CHECK(encode(c, -x) == negative);
      differing_from_one_rounding += encode(c, x) != encode(with(t.id, id), static_cast<float>(x)) ? 1 : 0;
    }
    CHECK(differing_from_one_rounding == 0);  // the float64 cast is the float32 cast of float32(x)
    CHECK(inputs.size() > 8 * ladder.size());
  }
}

TEST_CASE("double rounding, one example: 1.0625 + 2^-40 in e4m3fn", "[fp8][float64]") {
  // 1.0625 is the midpoint of 1.0 (0x38) and 1.125 (0x39); x lies above it by far less than half
  // a float32 ulp, so float32(x) is the midpoint and ties to the even 0x38.
  const double x = 1.0625 + 0x1p-40;
  CHECK(encode(with(format::e4m3fn, profile_id::ml_dtypes), x) == 0x38);
  CHECK(encode(with(format::e4m3fn, profile_id::torch), x) == 0x38);
  CHECK(encode(with(format::e4m3fn, profile_id::saturate), x) == 0x38);
  CHECK(encode(with(format::e4m3fn, profile_id::cuda_satfinite), x) == 0x39);
  CHECK(encode(with(format::e4m3fn, profile_id::hip_nosat), x) == 0x39);
  // e8m0 through float32: a float64 in (2^-127, 2^-126) becomes a float32 subnormal, and the
  // float32 rule sends it up to 2^-126; 2^-127 itself stays.
  CHECK(encode(with(format::e8m0fnu, profile_id::ml_dtypes), 0x1.4p-127) == 0x01);
  CHECK(encode(with(format::e8m0fnu, profile_id::torch), 0x1.00001p-127) == 0x01);
  CHECK(encode(with(format::e8m0fnu, profile_id::torch), 0x1p-127) == 0x00);
  // Closer to 2^-127 than half a float32 subnormal step (2^-150), it is 2^-127 in float32: 0x00.
  CHECK(encode(with(format::e8m0fnu, profile_id::ml_dtypes), 0x1.0000001p-127) == 0x00);
  // ... and below half of float32's smallest subnormal it is zero: NaN in ml_dtypes, 0x00 in torch.
  CHECK(encode(with(format::e8m0fnu, profile_id::ml_dtypes), 0x1p-151) == 0xFF);
  CHECK(encode(with(format::e8m0fnu, profile_id::torch), 0x1p-151) == 0x00);
}

TEST_CASE("a float64 NaN: CUDA keeps its sign and builds e5m2's code from its payload", "[fp8][float64]") {
  auto nan_with = [](std::uint64_t bits) { return std::bit_cast<double>(bits); };
  for (const profile_id id : {profile_id::cuda_satfinite, profile_id::cuda_nosat}) {
    CAPTURE(rules(id).name);
    CHECK(encode(with(format::e5m2, id), nan_with(0x7FF8000000000000)) == 0x7E);  // the default quiet NaN
    CHECK(encode(with(format::e5m2, id), nan_with(0xFFF8000000000000)) == 0xFE);
    CHECK(encode(with(format::e5m2, id), nan_with(0x7FFC000000000000)) == 0x7F);  // fraction bit 50 set
    CHECK(encode(with(format::e5m2, id), nan_with(0x7FF4000000000000)) == 0x7F);
    CHECK(encode(with(format::e5m2, id), nan_with(0x7FF0000000000001)) == 0x7E);
    CHECK(encode(with(format::e4m3fn, id), nan_with(0xFFF8000000000000)) == 0xFF);
    // A float32 NaN keeps CUDA's float rule: canonical 0x7F, sign dropped.
    CHECK(encode(with(format::e5m2, id), -std::numeric_limits<float>::quiet_NaN()) == 0x7F);
    CHECK(encode(with(format::e4m3fn, id), -std::numeric_limits<float>::quiet_NaN()) == 0x7F);
  }
  // Through float32 the payload is gone and the float32 rule writes the code.
  CHECK(encode(with(format::e5m2, profile_id::ml_dtypes), nan_with(0xFFFC000000000000)) == 0xFE);
  CHECK(encode(with(format::e5m2, profile_id::torch), nan_with(0x7FF8000000000000)) == 0x7F);
  CHECK(encode(with(format::e5m2, profile_id::hip_nosat), nan_with(0xFFF8000000000000)) == 0xFF);
}

TEST_CASE("the float64 path does not depend on the thread's rounding mode", "[fp8][float64]") {
  const std::vector<double> inputs{1.0625 + 0x1p-40, 1.0625 - 0x1p-40, 0x1.0000001p-127, 300.0 + 0x1p-30,
                                   -1.0625 - 0x1p-40, 0x1.ffffffp+127, 1e300, 0x1p-149 * 0.75};
  std::vector<std::uint8_t> nearest;
  for (const double x : inputs) nearest.push_back(encode(with(format::e8m0fnu, profile_id::torch), x));
  for (const double x : inputs) nearest.push_back(encode(with(format::e4m3fn, profile_id::ml_dtypes), x));
  const int saved = std::fegetround();
  for (const int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    std::fesetround(mode);
    std::vector<std::uint8_t> got;
    for (const double x : inputs) got.push_back(encode(with(format::e8m0fnu, profile_id::torch), x));
    for (const double x : inputs) got.push_back(encode(with(format::e4m3fn, profile_id::ml_dtypes), x));
    std::fesetround(saved);
    CAPTURE(mode);
    CHECK(got == nearest);
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
  SECTION("CUDA SATFINITE takes Inf and overflow to max and every float32 NaN to 0x7F") {
    CHECK(encode(with(format::e4m3fn, profile_id::cuda_satfinite), -HUGE_VAL) == 0xFE);
    CHECK(encode(with(format::e5m2, profile_id::cuda_satfinite), 1e6) == 0x7B);
    CHECK(encode(with(format::e4m3fn, profile_id::cuda_satfinite), -std::numeric_limits<float>::quiet_NaN()) == 0x7F);
    CHECK(encode(with(format::e4m3fn, profile_id::cuda_satfinite), -std::numeric_limits<double>::quiet_NaN()) == 0xFF);
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

// The span conversion (which looks float32 codes up in a memo where the conversion allows one)
// gives each element the code its single conversion gives: every top half of the float32 encoding
// at low halves 0, 1, 0x8000, 0xFFFF and two drawn ones, under every profile and format it covers,
// without a bound, with one the memo takes (a float32 with its low half zero) and with one it does
// not (the single conversion, element by element).
TEST_CASE("a float32 span converts element by element as single values do", "[fp8]") {
  const auto bound = GENERATE(std::optional<double>{}, std::optional<double>{248.0}, std::optional<double>{248.0 + 0x1p-20});
  std::vector<float> values;
  for (std::uint32_t top = 0; top < 0x10000u; ++top) {
    const std::uint32_t drawn = (top * 2654435761u) >> 16;
    for (const std::uint32_t low : {0u, 1u, 0x8000u, 0xFFFFu, drawn | 1u, (drawn * 40503u) & 0xFFFFu})
      values.push_back(std::bit_cast<float>(top << 16 | low));
  }
  std::vector<std::uint8_t> codes(values.size());
  for (const profile& p : all_profiles()) {
    for (const format_traits& t : kFormats) {
      const conversion c = with(t.id, p.id, bound);
      if (why_invalid(c)) continue;
      encode(c, values, codes);
      std::size_t mismatches = 0, first = 0;
      for (std::size_t i = 0; i < values.size(); ++i)
        if (codes[i] != encode(c, values[i]) && mismatches++ == 0) first = i;
      CAPTURE(p.name, t.name, bound.value_or(0), std::bit_cast<std::uint32_t>(values[first]), codes[first],
              encode(c, values[first]));
      CHECK(mismatches == 0);
    }
  }
}
