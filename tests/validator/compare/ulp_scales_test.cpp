// The condition-free ULP scales (compare/ulp_scales.hpp) on correct CPU arithmetic models: small,
// ordered as the models' arithmetic is, where the raw ULP distance of the same output is huge
// because head sums with weights of both signs cancel.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cmath>
#include <string>

#include "support/judged_model.hpp"

using namespace mqa;

namespace {

std::string figures(const compare::metrics& m) {
  const auto& a = m.scaled.magnitude;
  return fmt::format("ULPs of A p50 {} p99 {} p99.9 {} max {}; conditioned share {:.4f} p99 {} max {}; raw p50 {} p99 {} max {}",
                     *a.percentile(0.5), *a.percentile(0.99), *a.percentile(0.999), *a.max(), *m.share_well_conditioned(),
                     m.scaled.conditioned.percentile(0.99), m.scaled.conditioned.max, m.ulps.percentile(0.5),
                     m.ulps.percentile(0.99), m.ulps.max);
}

}  // namespace

// A priori worst cases, in ULPs of A (ulp(A) >= 2^-24 A in float32, and each rounding of a partial
// sum of head terms errs by at most its unit roundoff times A):
//   fp32: head_dim + heads + 2 roundings of 2^-24 A (dot, head sum, weight and k_scale products)
//     = 130 ULPs of A at head_dim = heads = 64;
//   bf16-dot: one round-to-nearest to 8 significant bits per dot (2^-9 of A over the heads) plus the
//     fp32 head sum: 2^15 + 130;
//   sm90-wgmma: a 13-bit truncating accumulator chained over head_dim (2^-13 of A per step) plus the
//     fp32 head sum: 64 * 2^11 + 130.
// The measured figures sit far below these (errors of both signs average out over 64 heads); the
// test asserts the worst cases and the order the accumulators' precisions imply.
TEST_CASE("ULPs of the magnitude are small and ordered as the arithmetic where raw ULPs explode",
          "[compare][ulp-scales]") {
  const compare::judgement fp32 = test::judged_model("fp32-naive");
  const compare::judgement wgmma = test::judged_model("sm90-wgmma");
  const compare::judgement bf16 = test::judged_model("bf16-dot");
  INFO("fp32-naive: " << figures(fp32.stats));
  INFO("sm90-wgmma: " << figures(wgmma.stats));
  INFO("bf16-dot: " << figures(bf16.stats));
  REQUIRE(fp32.pass());
  REQUIRE(wgmma.pass());
  REQUIRE(bf16.pass());
  const auto& a32 = fp32.stats.scaled.magnitude;
  const auto& aw = wgmma.stats.scaled.magnitude;
  const auto& a16 = bf16.stats.scaled.magnitude;
  CHECK(*a32.max() <= 130);
  CHECK(*a16.max() <= 32768 + 130);
  CHECK(*aw.max() <= 64 * 2048 + 130);
  // fp32 rounds at 2^-24, the truncating 13-bit accumulator at 2^-13: 2^11 apart per rounding
  // (asserted with 2^3 to spare for how errors of random sign average); bfloat16's single rounding of
  // each dot to 8 bits is coarser still than the 13-bit chain over 64 products (measured 1.8x at p50
  // and p99 on this case).
  for (const double p : {0.5, 0.99}) {
    CAPTURE(p);
    CHECK(*aw.percentile(p) >= 256 * *a32.percentile(p));
    CHECK(*a16.percentile(p) > *aw.percentile(p));
  }
  CHECK(*a16.max() > *aw.max());

  // The same fp32 output in raw ULPs: where a head sum cancels, one rounding of a term is
  // thousands of ULPs of the result (measured 23477 at the worst element, against 0.25 ULP of A).
  CHECK(fp32.stats.ulps.max >= 16384);
  CHECK(*a32.max() < 1);
  // Over the well-conditioned elements (|exact| >= 2^-8 A) raw ULPs are bounded by the magnitude
  // figure times 2^8 (and 2 for the binade ULPs of A and of the value may differ by).
  REQUIRE(fp32.stats.scaled.conditioned.total > 0);
  CHECK(static_cast<double>(fp32.stats.scaled.conditioned.max) <= std::ceil(*a32.max()) * 512);
  CHECK(*fp32.stats.share_well_conditioned() < 1);  // the case does cancel
}

TEST_CASE("the magnitude scale in unit tests: one ULP of A, a zero error, bfloat16 units", "[compare][ulp-scales]") {
  CHECK(compare::ulp_of_magnitude(1.0, false) == std::ldexp(1.0, -23));
  CHECK(compare::ulp_of_magnitude(1.5, false) == std::ldexp(1.0, -23));
  CHECK(compare::ulp_of_magnitude(1.0, true) == std::ldexp(1.0, -7));
  CHECK(compare::ulp_of_magnitude(0.0, false) == std::ldexp(1.0, -149));  // float32's subnormal spacing
  compare::fractional_ulp_histogram h;
  CHECK_FALSE(h.max());
  h.add(0);
  h.add(0.001);  // rounded up to one unit: never counted as exact
  h.add(2.5);
  CHECK(*h.percentile(0.3) == 0);
  CHECK(*h.percentile(0.5) == std::ldexp(1.0, -8));
  CHECK(*h.max() == 2.5);
  CHECK(compare::well_conditioned(1.0, 256.0));
  CHECK_FALSE(compare::well_conditioned(0.99, 256.0));
}

// The comparator multiplies an error by per_ulp_of_magnitude instead of dividing it by
// ulp_of_magnitude: the two are reciprocal powers of two, so the product is the quotient's double.
TEST_CASE("an error over the ULP of A: the product by the reciprocal is the quotient", "[compare][ulp-scales]") {
  const bool bfloat16 = GENERATE(false, true);
  const double magnitudes[] = {0.0, -0.0, 1e-320, 0x1p-1022, 0x1p-127, 0x1p-126, 0.75, 1.0, 3.0, 0x1p127,
                               0x1p1023, 1.7e308, INFINITY, NAN};
  const double errors[] = {0.0, 1e-320, 0x1p-1074, 0x1p-1000, 1e-9, 0.3, 1.0, 1e30, 0x1p128, 1e300};
  for (const double a : magnitudes) {
    const double ulp = compare::ulp_of_magnitude(a, bfloat16), per_ulp = compare::per_ulp_of_magnitude(a, bfloat16);
    CAPTURE(bfloat16, a, ulp, per_ulp);
    CHECK(ulp * per_ulp == 1.0);
    for (const double e : errors) {
      CAPTURE(e);
      CHECK(e * per_ulp == e / ulp);
    }
  }
}
