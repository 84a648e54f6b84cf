// bf16 logits: the reference's bfloat16 is rounded once from the exact value. Where the
// float32 result is itself a bfloat16 midpoint, rounding that float32 again would tie; the exact
// value's side of the midpoint must decide instead.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "cases.hpp"
#include "reference/fp8/bfloat16.hpp"

using namespace mqa;
using exact_test::code_of;
using exact_test::owned_problem;

TEST_CASE("bfloat16 rounding: nearest even from float32 and from double, Inf, NaN, subnormals", "[fp8][bf16]") {
  CHECK(fp8::bfloat16_bits(1.0f) == 0x3F80);
  CHECK(fp8::bfloat16_bits(1.0f + 0x1p-8f) == 0x3F80);             // a tie: to even
  CHECK(fp8::bfloat16_bits(1.0f + 0x1p-7f + 0x1p-8f) == 0x3F82);   // a tie: to even, upward
  CHECK(fp8::bfloat16_bits(1.0 + 0x1p-8 + 0x1p-40) == 0x3F81);     // a double just above: one rounding
  CHECK(fp8::bfloat16_bits(-1.0 - 0x1p-8 - 0x1p-40) == 0xBF81);
  CHECK(fp8::bfloat16_bits(0x1.ffp127) == 0x7F80);                 // the overflow threshold ties to 2^128: Inf
  CHECK(fp8::bfloat16_bits(std::nextafter(0x1.ffp127, 0.0)) == 0x7F7F);
  CHECK(fp8::bfloat16_bits(0x1p-134) == 0x0000);                   // half the smallest subnormal: to even 0
  CHECK(fp8::bfloat16_bits(0x1.8p-134) == 0x0001);
  CHECK(fp8::bfloat16_bits(-0.0f) == 0x8000);
  CHECK(fp8::bfloat16_bits(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(fp8::bfloat16_bits(-std::numeric_limits<double>::quiet_NaN()) == 0xFFC0);
  CHECK(std::bit_cast<std::uint32_t>(fp8::bfloat16_value(0x3F81)) == 0x3F810000u);
  // Every float32 whose low half is below, at and above the midpoint, for a run of high halves.
  for (std::uint32_t high = 0x3F80; high < 0x3F90; ++high)
    for (const std::uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      const float x = std::bit_cast<float>((high << 16) | low);
      const std::uint32_t expected = low < 0x8000u ? high : (low > 0x8000u ? high + 1 : (high % 2 ? high + 1 : high));
      CAPTURE(high, low);
      CHECK(fp8::bfloat16_bits(x) == expected);
    }
}

TEST_CASE("the bf16 reference rounds the exact value once: a float32 midpoint does not tie", "[exact][bf16]") {
  // Two heads, q = k = 1: the value is w0 + w1. w0 = 1 + 2^-8 is a bfloat16 midpoint; w1 = +-2^-40
  // moves the exact value off it by far less than half a float32 ulp, so the float32 is w0 itself.
  const auto [w1, expected] = GENERATE(table<float, float>({
      {0x1p-40f, 1.0f + 0x1p-7f},  // above the midpoint: up
      {-0x1p-40f, 1.0f},           // below: down
      {0.0f, 1.0f},                // on it: to even
  }));
  owned_problem p(1, 1, 2, 1);
  p.q.assign(2, code_of(fp8::format::e4m3fn, 1.0));
  p.k.assign(1, code_of(fp8::format::e4m3fn, 1.0));
  p.weights = {1.0f + 0x1p-8f, w1};
  exact::options o;
  o.bf16_logits = true;
  const exact::result r = exact::compute(p.view(), o);
  CAPTURE(w1);
  CHECK(r.logits[0] == 1.0f + 0x1p-8f);
  REQUIRE(r.logits_bf16.size() == 1);
  CHECK(r.logits_bf16[0] == expected);
  CHECK(exact::compute(p.view()).logits_bf16.empty());  // only when asked
}

TEST_CASE("the bf16 reference agrees with rounding the float32 wherever that is no midpoint", "[exact][bf16]") {
  owned_problem p(24, 40, 4, 32, fp8::format::e5m2, fp8::format::e4m3fn);
  exact_test::fill_random(p, 77);
  exact::options o;
  o.bf16_logits = true;
  const exact::result r = exact::compute(p.view(), o);
  REQUIRE(r.logits_bf16.size() == r.logits.size());
  std::size_t compared = 0;
  for (std::size_t x = 0; x < r.logits.size(); ++x) {
    const float f = r.logits[x];
    if (!std::isfinite(f) || (std::bit_cast<std::uint32_t>(f) & 0xFFFFu) == 0x8000u) continue;
    CHECK(r.logits_bf16[x] == fp8::round_to_bfloat16(f));
    ++compared;
  }
  CHECK(compared > 100);
}
