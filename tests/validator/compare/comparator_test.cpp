// The comparator on hand-built outputs: each finding class from the smallest output that shows it,
// and earlier false alarms, pinned.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>

#include "support.hpp"
#include "support/findings_text.hpp"

using namespace mqa;

namespace {

// 16 rows x 40 keys, each row's window 20 keys from its own index; heads of alternating weights.
struct small_case : test::hand_case {
  explicit small_case(float weight_scale = 1.0f, float even = -0.25f, float odd = 0.5f) : hand_case(16, 40, 4, 16) {
    fill_patterned();
    for (std::size_t x = 0; x < weights.size(); ++x) weights[x] = weight_scale * (x % 2 ? odd : even);
    for (std::int64_t i = 0; i < m; ++i) {
      ks[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
      ke[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i + 20);
    }
    finish();
  }
};

}  // namespace

TEST_CASE("the reference itself passes, under every contract", "[compare]") {
  const small_case c;
  for (const auto dot : {bounds::dot_accumulator::exact, bounds::dot_accumulator::fp32, bounds::dot_accumulator::bf16}) {
    kernels::contract k;
    k.dot = dot;
    k.heads = dot == bounds::dot_accumulator::exact ? bounds::head_accumulator::exact : bounds::head_accumulator::fp32;
    CHECK(c.judge(k).pass());
  }
}

TEST_CASE("one element doubled is an error-bound, not a format mix-up", "[compare]") {
  small_case c;
  c.output[3 * c.n + 10] *= 2;
  const auto j = c.judge();
  CHECK(test::finding_classes(j).count("error-bound"));
  CHECK_FALSE(test::finding_classes(j).count("scale-factor"));
  REQUIRE_FALSE(j.findings.empty());
}

TEST_CASE("every in-window value halved is a scale-factor of 2^-1", "[compare]") {
  small_case c;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = c.ks[i]; j < c.ke[i]; ++j) c.output[i * c.n + j] *= 0.5f;
  const auto j = c.judge();
  REQUIRE(test::finding_classes(j).count("scale-factor"));
  CHECK_FALSE(test::finding_classes(j).count("error-bound"));
}

TEST_CASE("a scale-factor does not hide values that should have been NaN", "[compare]") {
  small_case c;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = c.ks[i]; j < c.ke[i]; ++j) c.output[i * c.n + j] *= 0.5f;
  c.reference.logits[5 * c.n + 12] = NAN;  // as if a NaN code sat there
  const auto j = c.judge();
  CHECK(test::finding_classes(j).count("scale-factor"));
  CHECK(test::finding_classes(j).count("error-bound"));
}

TEST_CASE("a correct overflow to -inf is neither a hole nor an inf finding", "[compare]") {
  small_case c(3e37f, -0.5f, 0.45f);  // heads that nearly cancel: partial sums pass float32's range
  int overflowed = 0;
  for (std::size_t x = 0; x < c.output.size(); ++x)
    if (std::isfinite(c.reference.logits[x]) && c.reference.logits[x] < 0 &&
        std::fabs(c.reference.magnitude[x]) * 1.001 >= 0x1.ffffffp127) {
      c.output[x] = -INFINITY;
      ++overflowed;
    }
  REQUIRE(overflowed > 0);
  CHECK(c.judge().pass());
}

TEST_CASE("a finite value one bound away from FLT_MAX is not excused by an infinite half ulp", "[compare]") {
  small_case c;
  c.reference.logits[2 * c.n + 8] = std::numeric_limits<float>::max();
  c.output[2 * c.n + 8] = 1.0f;
  CHECK(test::finding_classes(c.judge()).count("error-bound"));
}

TEST_CASE("the poison value is unwritten, a 0 outside the window is a leak, -inf inside a hole", "[compare]") {
  small_case c;
  c.output[0 * c.n + 5] = std::bit_cast<float>(compare::kPoisonBits);
  c.output[1 * c.n + 30] = 0.0f;
  c.output[9 * c.n + 15] = -INFINITY;
  const auto j = c.judge();
  const std::set<std::string> found = test::finding_classes(j), wanted{"unwritten", "mask-leak", "mask-hole"};
  CHECK(std::includes(found.begin(), found.end(), wanted.begin(), wanted.end()));
  for (const auto& f : j.findings) CHECK_FALSE(f.shift.has_value());  // only a mask-shift has a shape
  for (const auto& f : j.findings)
    if (f.kind == compare::finding_class::mask_leak) CHECK((f.first_row == 1 && f.first_col == 30));
}

TEST_CASE("the end written one key too far in every row is a mask-shift", "[compare]") {
  small_case c;
  for (std::int64_t i = 0; i < c.m; ++i) c.output[i * c.n + c.ke[i]] = 1.0f;
  const auto j = c.judge();
  REQUIRE(j.findings.size() >= 1);
  CHECK(j.findings.front().kind == compare::finding_class::mask_shift);
  CHECK_THAT(j.findings.front().detail, Catch::Contains("end shifted by +1"));
  CHECK(j.findings.front().shift == compare::window_shift{0, 1});
}

TEST_CASE("under dont-care only the windows are judged", "[compare]") {
  small_case c;
  for (std::int64_t i = 0; i < c.m; ++i) c.output[i * c.n + c.n - 1] = 123.0f;
  kernels::contract k;
  k.mask = kernels::masking::dont_care;
  CHECK(c.judge(k).pass());
  CHECK_FALSE(c.judge().pass());
}

TEST_CASE("a finite value where an infinite k_scale decides an infinity is an error-bound, whatever the bound", "[compare]") {
  // Under bf16 weights a row with a zero weight gets an infinite bound
  // term at a key whose k_scale is +inf. That element is decided by its inputs (the kernel must
  // give the infinity), and an infinite bound must not read as "may overflow" and excuse it.
  small_case c;
  c.weights[1] = 0.0f;  // row 0, head 1
  c.k_scale[10] = INFINITY;
  c.finish();
  REQUIRE(std::isinf(c.output[10]));
  c.output[10] = 1.0f;
  for (const auto weights : {bounds::weight_precision::fp32, bounds::weight_precision::bf16}) {
    kernels::contract k;
    k.weights = weights;
    CAPTURE(static_cast<int>(weights));
    const auto j = c.judge(k);
    CHECK(test::finding_classes(j).count("error-bound"));
  }
}

TEST_CASE("+inf where k_scale * weight overflows is excused only where the contract's order forms that product",
          "[compare]") {
  test::hand_case c(4, 40, 2, 16);
  test::make_scale_overflow(c);  // row 1 +inf where every logit is 0
  for (const auto placement : test::kScalePlacements) {
    const compare::judgement j = c.judge(test::float32_with_scale(placement));
    INFO(bounds::to_string(placement) << ": " << (j.pass() ? "passes" : *test::finding_classes(j).begin()));
    const bool forms_the_product = placement == bounds::scale_placement::after_head_sum ||
                                   placement == bounds::scale_placement::into_weights;
    CHECK(j.pass() == forms_the_product);
  }
}
