// The CPU top-k stage (kernels/cpu/topk.hpp) ranks by the float order itself: values one ULP apart
// are two ranks, NaN above +inf, -0 equal to +0 (ties to the lower key).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/topk.hpp"

using namespace mqa;

namespace {

// Row 0's keys [0, values.size()) ranked, all of them: the correct top-k's order.
std::vector<std::int64_t> ranked(std::vector<float> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  const std::vector<std::int32_t> ks{0}, ke{static_cast<std::int32_t>(n)};
  exact::problem p;
  p.m = 1;
  p.n = n;
  p.ks = ks;
  p.ke = ke;
  std::vector<std::int64_t> out(values.size(), -7);
  kernels::cpu::select_topk({}, p, kernels::output_view{values.data(), 1, n, n},
                            kernels::indices_view{out.data(), 1, n});
  return out;
}

}  // namespace

TEST_CASE("the CPU top-k ranks values one ULP apart as two", "[topk][cpu-topk]") {
  const float one = 1.0f, above = std::nextafter(1.0f, 2.0f), two_above = std::nextafter(above, 2.0f);
  const float below = std::nextafter(1.0f, 0.0f);
  CHECK(ranked({one, above}) == std::vector<std::int64_t>{1, 0});
  CHECK(ranked({one, two_above, below, above}) == std::vector<std::int64_t>{1, 3, 0, 2});
  const float minus_one = -1.0f, minus_above = std::nextafter(-1.0f, 0.0f);  // -0.99999994
  CHECK(ranked({minus_one, minus_above}) == std::vector<std::int64_t>{1, 0});
  // The least positive subnormal above +0, and -0 tied with +0 (the lower key first).
  CHECK(ranked({0.0f, std::nextafter(0.0f, 1.0f), -0.0f}) == std::vector<std::int64_t>{1, 0, 2});
}

TEST_CASE("the CPU top-k ranks NaN above +inf and -inf last", "[topk][cpu-topk]") {
  CHECK(ranked({INFINITY, NAN, -INFINITY, 3.0f}) == std::vector<std::int64_t>{1, 0, 3, 2});
  CHECK(ranked({-INFINITY, -NAN, INFINITY}) == std::vector<std::int64_t>{1, 2, 0});
}
