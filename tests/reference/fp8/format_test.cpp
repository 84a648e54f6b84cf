#include <catch2/catch.hpp>

#include "reference/fp8.hpp"

using namespace mqa::fp8;

TEST_CASE("format limits follow from the traits", "[fp8]") {
  auto [f, max, min_subnormal] = GENERATE(table<format, double, double>({
      {format::e4m3fn, 448.0, 0x1p-9},
      {format::e4m3fnuz, 240.0, 0x1p-10},
      {format::e5m2, 57344.0, 0x1p-16},
      {format::e5m2fnuz, 57344.0, 0x1p-17},
      {format::e4m3b11fnuz, 30.0, 0x1p-13},
      {format::e8m0fnu, 0x1p127, 0x1p-127},
      {format::e2m1fn, 6.0, 0.5},
  }));
  CAPTURE(traits(f).name);
  CHECK(max_finite(f) == max);
  CHECK(decode(f, 0x01) == (traits(f).has_zero ? min_subnormal : 0x1p-126));
  CHECK(decode(f, 0x00) == (traits(f).has_zero ? 0.0 : min_subnormal));
}
