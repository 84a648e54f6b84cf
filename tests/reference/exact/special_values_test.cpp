// Non-finite inputs: NaN codes, e5m2 infinities (inf * 0, +inf + -inf), non-finite, zero,
// negative and subnormal weights and k_scale. Each expectation is written out (logits.hpp's
// rules) and the whole result is also compared with the oracle.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "cases.hpp"

using namespace mqa;
using exact_test::code_of;
using exact_test::first_mismatch;
using exact_test::owned_problem;
using fp8::format;

namespace {

constexpr std::uint32_t kCanonicalNaN = 0x7FC00000u;

exact::result checked(const owned_problem& p, exact::relu_rule rule) {
  exact::result r = exact::compute(p.view(), {rule, 2, {}});
  const auto mismatch = first_mismatch(p, r, rule);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
  return r;
}

}  // namespace

TEST_CASE("a NaN code makes its dot NaN: relu keeps it or makes it 0", "[exact]") {
  const format f = GENERATE(format::e4m3fn, format::e4m3fnuz, format::e5m2, format::e5m2fnuz);
  CAPTURE(fp8::traits(f).name);
  const std::uint8_t nan = f == format::e4m3fn ? 0x7F : (f == format::e5m2 ? 0x7E : 0x80);
  REQUIRE(std::isnan(fp8::decode(f, nan)));
  owned_problem p(2, 3, 2, 4, f, f);
  exact_test::fill_random(p, 31);
  p.ks = {0, 0}, p.ke = {3, 3};
  p.q_at(0, 1, 2) = nan;  // row 0, head 1
  p.k_at(2, 3) = nan;     // key 2
  const exact::relu_rule rule = GENERATE(exact::relu_rule::keeps_nan, exact::relu_rule::fmax);
  const exact::result r = checked(p, rule);
  const bool keeps = rule == exact::relu_rule::keeps_nan;
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      CAPTURE(i, j);
      const float y = r.logits[static_cast<std::size_t>(i * 3 + j)];
      const bool touches_nan = i == 0 || j == 2;
      if (touches_nan && keeps) {
        CHECK(exact_test::bits(y) == kCanonicalNaN);
        CHECK(r.magnitude[static_cast<std::size_t>(i * 3 + j)] == HUGE_VAL);
      } else {
        CHECK(std::isfinite(y));
        CHECK(std::isfinite(r.magnitude[static_cast<std::size_t>(i * 3 + j)]));
      }
    }
}

TEST_CASE("e5m2 infinities follow IEEE: inf * 0 = NaN, +inf + -inf = NaN, relu(-inf) = 0", "[exact]") {
  const format f = format::e5m2;
  const std::uint8_t inf = fp8::inf_code(fp8::traits(f), false), minus_inf = fp8::inf_code(fp8::traits(f), true);
  const std::uint8_t one = code_of(f, 1.0), minus_one = code_of(f, -1.0);
  // One query head q = [+inf, 1, 0, 0] against keys chosen to give each class of dot.
  owned_problem p(1, 5, 1, 4, f, f);
  p.q_at(0, 0, 0) = inf, p.q_at(0, 0, 1) = one;
  p.k_at(0, 0) = 0, p.k_at(0, 1) = one;                    // inf * 0 = NaN
  p.k_at(1, 0) = one;                                      // +inf
  p.k_at(2, 0) = minus_one;                                // -inf: relu gives 0
  p.k_at(3, 0) = one, p.k_at(3, 1) = minus_inf;            // +inf + (1 * -inf) = NaN
  p.k_at(4, 0) = minus_one, p.k_at(4, 1) = minus_inf;      // -inf + -inf = -inf: relu gives 0
  const exact::relu_rule rule = GENERATE(exact::relu_rule::keeps_nan, exact::relu_rule::fmax);
  const float w = GENERATE(2.0f, -2.0f, 0.0f);
  CAPTURE(w, rule == exact::relu_rule::fmax);
  p.w_at(0, 0) = w;
  const exact::result r = checked(p, rule);
  const bool keeps = rule == exact::relu_rule::keeps_nan;
  const auto is_nan = [](float x) { return exact_test::bits(x) == kCanonicalNaN; };
  for (const std::size_t j : {std::size_t{0}, std::size_t{3}}) {  // the NaN dots
    if (keeps)
      CHECK(is_nan(r.logits[j]));
    else
      CHECK(exact_test::bits(r.logits[j]) == 0u);  // fmax(NaN, 0) = 0, times w: exact +0
  }
  if (w == 0.0f)
    CHECK(is_nan(r.logits[1]));  // 0 * inf
  else
    CHECK(r.logits[1] == std::copysign(HUGE_VALF, w));
  CHECK(exact_test::bits(r.logits[2]) == 0u);  // w * relu(-inf) = w * 0: an exact +0
  CHECK(exact_test::bits(r.logits[4]) == 0u);
}

TEST_CASE("weights and k_scale: non-finite, zero, negative, subnormal", "[exact]") {
  owned_problem p(6, 6, 3, 8);
  exact_test::fill_random(p, 99);
  p.ks.assign(6, 0), p.ke.assign(6, 6);
  // Make every dot of head 0 positive so that inf * relu(dot) is inf, not NaN, in rows 0..1.
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t d = 0; d < 8; ++d) p.q_at(i, 0, d) = code_of(p.q_format, 0.5);
  for (std::int64_t j = 0; j < 6; ++j)
    for (std::int64_t d = 0; d < 8; ++d) p.k_at(j, d) = code_of(p.k_format, 1.0 + 0.125 * static_cast<double>(d % 4));
  p.w_at(0, 0) = HUGE_VALF;                          // row 0: +inf * c
  p.w_at(1, 0) = HUGE_VALF, p.w_at(1, 1) = -HUGE_VALF;  // row 1: +inf - inf = NaN unless head 1's relu is 0
  p.w_at(2, 2) = std::nanf("");                      // row 2: NaN
  p.w_at(3, 0) = 0x1p-149f, p.w_at(3, 1) = -0x1p-140f, p.w_at(3, 2) = 0x1p-130f;  // row 3: subnormal weights
  p.w_at(4, 0) = 0, p.w_at(4, 1) = -0.0f, p.w_at(4, 2) = 0;  // row 4: all zero
  p.k_scale = {0.0f, -0.0f, -1.5f, HUGE_VALF, std::nanf(""), 0x1p-149f};
  for (const auto rule : {exact::relu_rule::keeps_nan, exact::relu_rule::fmax}) {
    const exact::result r = checked(p, rule);
    const auto at = [&](std::int64_t i, std::int64_t j) { return r.logits[static_cast<std::size_t>(i * 6 + j)]; };
    CHECK(std::isnan(at(0, 0)));                 // inf * c = inf, then * 0 = NaN
    CHECK(at(0, 2) == -HUGE_VALF);               // +inf * -1.5
    CHECK(at(0, 3) == HUGE_VALF);
    for (std::int64_t j = 0; j < 6; ++j) CHECK(std::isnan(at(2, j)));
    for (std::int64_t j = 0; j < 6; ++j) CHECK(std::isnan(at(1, j)));  // inf - inf, or -inf * relu 0
    for (std::int64_t i = 0; i < 6; ++i) CHECK(std::isnan(at(i, 4)));  // c = NaN
    CHECK(exact_test::bits(at(5, 0)) == 0u);     // c = 0, finite sum: exact zero, +0
    CHECK(exact_test::bits(at(5, 1)) == 0u);     // c = -0 as well
    CHECK(std::isnan(at(4, 3)));                 // inf * (sum = 0)
    CHECK(exact_test::bits(at(4, 2)) == 0u);     // -1.5 * 0 = exact zero: +0
  }
}

TEST_CASE("the relu rule matters only where a q or k code is NaN or Inf", "[exact]") {
  const format f = GENERATE(format::e4m3fn, format::e5m2);
  CAPTURE(fp8::traits(f).name);
  owned_problem p(3, 5, 2, 4, f, f);
  exact_test::fill_random(p, 47);
  const std::uint8_t nan = f == format::e4m3fn ? 0x7F : 0x7E;
  SECTION("finite codes, a NaN weight and an infinite k_scale among them: the rules agree bit for bit") {
    p.w_at(1, 0) = std::numeric_limits<float>::quiet_NaN();
    p.k_scale[3] = std::numeric_limits<float>::infinity();
    CHECK_FALSE(exact::relu_rule_matters(p.view()));
    const exact::result a = checked(p, exact::relu_rule::keeps_nan), b = checked(p, exact::relu_rule::fmax);
    REQUIRE(a.logits.size() == b.logits.size());
    for (std::size_t x = 0; x < a.logits.size(); ++x)
      CHECK(std::bit_cast<std::uint32_t>(a.logits[x]) == std::bit_cast<std::uint32_t>(b.logits[x]));
  }
  SECTION("a NaN code in q, or in k: the rules may differ") {
    if (GENERATE(true, false)) p.q_at(2, 1, 0) = nan;
    else p.k_at(4, 3) = nan;
    CHECK(exact::relu_rule_matters(p.view()));
  }
  if (f == format::e5m2) {
    SECTION("an infinite code (inf * 0 is NaN) makes it matter") {
      p.k_at(0, 0) = 0x7C;  // e5m2 +inf
      CHECK(exact::relu_rule_matters(p.view()));
    }
  }
}
