// Adversarial rounding: exact float32 midpoints (ties to even), values a hair off them,
// cancellation between heads, subnormal results, overflow, and dots that float64 cannot hold.
// Dots are made 1 (q[.,h,0] = k[.,0] = 1) so that the weights spell the exact sum directly.
#include <catch2/catch.hpp>

#include <cfloat>

#include "cases.hpp"

using namespace mqa;
using exact_test::first_mismatch;
using exact_test::owned_problem;

namespace {

// One row per entry of `rows`, one key: logit = c * sum_h rows[i][h] (every dot is 1).
owned_problem spelled_sums(const std::vector<std::vector<float>>& rows, float c,
                           fp8::format f = fp8::format::e4m3fn) {
  std::size_t heads = 0;
  for (const auto& r : rows) heads = std::max(heads, r.size());
  owned_problem p(static_cast<std::int64_t>(rows.size()), 1, static_cast<std::int64_t>(heads), 4, f, f);
  p.k_at(0, 0) = exact_test::code_of(f, 1.0);
  p.k_scale[0] = c;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t h = 0; h < heads; ++h) {
      p.q_at(static_cast<std::int64_t>(i), static_cast<std::int64_t>(h), 0) = exact_test::code_of(f, 1.0);
      p.w_at(static_cast<std::int64_t>(i), static_cast<std::int64_t>(h)) = h < rows[i].size() ? rows[i][h] : 0.0f;
    }
  return p;
}

std::vector<float> logits_of(const owned_problem& p, std::int64_t* undecided = nullptr) {
  const exact::result r = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 2, {}});
  const auto mismatch = first_mismatch(p, r);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
  if (undecided) *undecided = r.undecided_by_fast_path;
  return r.logits;
}

constexpr float kUlpAt1 = 0x1p-23f;

}  // namespace

TEST_CASE("exact float32 midpoints round to even, and a hair away they do not", "[exact]") {
  const float odd = 1.0f + kUlpAt1;  // significand ends in 1
  const std::vector<std::vector<float>> rows{
      {1.0f, 0x1p-24f},                         // tie between 1 (even) and 1 + ulp: 1
      {odd, 0x1p-24f},                          // tie between 1 + ulp (odd) and 1 + 2 ulp: up
      {1.0f, 0x1p-24f, 0x1p-70f},               // a hair above the tie: up
      {odd, 0x1p-24f, -0x1p-70f},               // a hair below the tie: down
      {0x1p20f, 1.0f, -0x1p20f, 0x1p-24f},      // the tie behind a cancellation of 2^20
      {-odd, -0x1p-24f},                        // negative tie: to even, away from zero here
      {3.0f, -2.0f, 0x1p-24f, 0x1p-90f, -0x1p-90f},  // tie restored after +-2^-90
  };
  std::int64_t undecided = 0;
  const std::vector<float> y = logits_of(spelled_sums(rows, 1.0f), &undecided);
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == 1.0f + 2 * kUlpAt1);
  CHECK(y[2] == 1.0f + kUlpAt1);
  CHECK(y[3] == 1.0f + kUlpAt1);
  CHECK(y[4] == 1.0f);
  CHECK(y[5] == -(1.0f + 2 * kUlpAt1));
  CHECK(y[6] == 1.0f);
  // A tie can never be certified by the float64 enclosure: at least the five ties went to the fallback.
  CHECK(undecided >= 5);
}

TEST_CASE("heads that cancel exactly give +0, nearly give the remainder", "[exact]") {
  const std::vector<std::vector<float>> rows{
      {0x1.fffffep100f, -0x1.fffffep100f},            // exact zero: +0
      {-0x1p30f, 0x1p30f, 0.0f},                      // exact zero again
      {0x1p30f, -0x1p30f, 0x1p-100f},                 // 2^-100 survives 2^30 - 2^30
      {0x1.000002p0f, -1.0f, 0x1p-149f},              // 2^-23 + 2^-149
      {0x1p100f, -0x1p100f, -0x1p-149f, 0x1p-149f},   // zero from four terms
  };
  std::int64_t undecided = 0;
  const std::vector<float> y = logits_of(spelled_sums(rows, -3.0f), &undecided);
  CHECK(exact_test::bits(y[0]) == 0u);
  CHECK(exact_test::bits(y[1]) == 0u);
  CHECK(y[2] == -3.0f * 0x1p-100f);
  CHECK(y[3] == -3.0f * 0x1p-23f);  // the 2^-149 is far below the float32 lsb here
  CHECK(exact_test::bits(y[4]) == 0u);
}

TEST_CASE("subnormal results are correctly rounded, signs of underflow kept", "[exact]") {
  // c = 2^-149, the subnormal lsb: the value is sum * 2^-149, so the sums below are in lsb units.
  const std::vector<std::vector<float>> rows{
      {2.0f, 0.5f},                // 2.5 lsb: tie, to even 2
      {3.0f, 0.5f},                // 3.5 lsb: tie, to even 4
      {0.5f},                      // half the smallest subnormal: tie between 0 and 1 lsb: +0
      {0.5f, 0x1p-40f},            // a hair above: 1 lsb
      {-0.25f},                    // rounds to zero from below: -0
      {0x1p23f, -0.5f},            // just below 2^-126 by half an lsb: tie, to even 2^-126
      {0x1p23f - 1, 0.25f},        // largest subnormal and a quarter: stays subnormal
  };
  const std::vector<float> y = logits_of(spelled_sums(rows, 0x1p-149f));
  CHECK(y[0] == 2 * 0x1p-149f);
  CHECK(y[1] == 4 * 0x1p-149f);
  CHECK(exact_test::bits(y[2]) == 0u);
  CHECK(y[3] == 0x1p-149f);
  CHECK(exact_test::bits(y[4]) == 0x80000000u);
  CHECK(y[5] == FLT_MIN);
  CHECK(y[6] == std::nextafter(FLT_MIN, 0.0f));
}

TEST_CASE("overflow rounds to infinity from the midpoint 2^128 - 2^103 on", "[exact]") {
  // c = 2^100: FLT_MAX = (2^24 - 1) 2^104 is the sum (2^24 - 1) * 16; the midpoint adds 8.
  const float top = (0x1p24f - 1) * 16;
  const std::vector<std::vector<float>> rows{
      {top},                          // FLT_MAX exactly
      {top, 8.0f},                    // the midpoint: ties to "even" 2^128, i.e. +inf
      {top, 8.0f, -0x1p-60f},         // a hair below: FLT_MAX
      {-top, -8.0f},                  // -inf
      {0x1p100f, 0x1p100f},           // 2^201: far beyond
  };
  const std::vector<float> y = logits_of(spelled_sums(rows, 0x1p100f));
  CHECK(y[0] == FLT_MAX);
  CHECK(y[1] == HUGE_VALF);
  CHECK(y[2] == FLT_MAX);
  CHECK(y[3] == -HUGE_VALF);
  CHECK(y[4] == HUGE_VALF);
}

TEST_CASE("e5m2 dots beyond float64's 53 bits are exact, ties included", "[exact]") {
  // k = [57344, 2^-16, 0, 0]. Head 0: q = [57344, 2^-16]: dot = 57344^2 + 2^-32 (a 64-bit integer
  // of units; float64 would drop the 2^-32). Head 1: q = [57344, 0]: 57344^2. Head 2: q = [0, 2^-16].
  for (const fp8::format f : {fp8::format::e5m2, fp8::format::e5m2fnuz}) {
    CAPTURE(fp8::traits(f).name);
    owned_problem p(3, 1, 3, 4, f, f);
    const std::uint8_t big = exact_test::code_of(f, 57344.0), tiny = exact_test::code_of(f, 0x1p-16);
    p.k_at(0, 0) = big, p.k_at(0, 1) = tiny;
    for (std::int64_t i = 0; i < 3; ++i) {
      p.q_at(i, 0, 0) = big, p.q_at(i, 0, 1) = tiny;
      p.q_at(i, 1, 0) = big;
      p.q_at(i, 2, 1) = tiny;
    }
    p.w_at(0, 0) = 1, p.w_at(0, 1) = -1, p.w_at(0, 2) = 0;           // 2^-32 out of a 2^31.6 cancellation
    p.w_at(1, 0) = 1, p.w_at(1, 1) = -1, p.w_at(1, 2) = 0x1p-24f;     // 2^-32 (1 + 2^-24): tie, to even
    p.w_at(2, 0) = 1, p.w_at(2, 1) = -1, p.w_at(2, 2) = 0x1.8p-23f;  // 2^-32 (1 + 3 2^-24): tie, up
    const std::vector<float> y = logits_of(p);
    CHECK(y[0] == 0x1p-32f);
    CHECK(y[1] == 0x1p-32f);
    CHECK(y[2] == 0x1p-32f * (1 + 0x1p-22f));
  }
}

TEST_CASE("float64 dots are exact up to the engine's limit", "[exact]") {
  // e4m3fn with head_dim 1024, all +-448 with an alternating pattern: partial sums reach 2^27.6.
  // e4m3fn x e5m2 with head_dim 8 is the widest float64 case (8 * 448 * 57344 units of 2^-25).
  auto [qf, kf, dim] = GENERATE(table<fp8::format, fp8::format, std::int64_t>({
      {fp8::format::e4m3fn, fp8::format::e4m3fn, 1024},
      {fp8::format::e4m3fn, fp8::format::e5m2, 8},
      {fp8::format::e4m3fn, fp8::format::e5m2, 9},
  }));
  CAPTURE(fp8::traits(qf).name, fp8::traits(kf).name, dim);
  owned_problem p(2, 2, 2, dim, qf, kf);
  const double q_max = fp8::max_finite(qf), k_max = fp8::max_finite(kf);
  for (std::int64_t d = 0; d < dim; ++d) {
    p.k_at(0, d) = exact_test::code_of(kf, k_max);
    p.k_at(1, d) = exact_test::code_of(kf, d == 0 ? fp8::decode(kf, 1) : k_max);  // the smallest value once
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t h = 0; h < 2; ++h)
        p.q_at(i, h, d) = exact_test::code_of(qf, (d + h) % 3 == 2 ? -q_max : q_max);
  }
  p.q_at(1, 0, 0) = exact_test::code_of(qf, fp8::decode(qf, 1));  // smallest x largest, then the rest
  p.w_at(0, 1) = -1, p.w_at(1, 1) = -0.75f;
  (void)logits_of(p);
}
