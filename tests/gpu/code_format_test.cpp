// The GPU kernels' fp8 decoding (reference/gpu/operation.hpp, plain C++ as well as device code)
// against the reference's, for every code of every format the kernels take. No GPU needed: this
// test runs with the CPU tests.
#include <catch2/catch.hpp>

#include <cmath>

#include "reference/fp8/convert.hpp"
#include "reference/gpu/operation.hpp"

namespace {

using mqa::gpu::code_format;
using mqa::gpu::nan_rule;

struct format_case {
  mqa::fp8::format format;
  code_format rule;
};

}  // namespace

TEST_CASE("GPU fp8 decoding matches the reference for all 256 codes", "[gpu-decode]") {
  const format_case cases[] = {
      {mqa::fp8::format::e4m3fn, {3, 7, nan_rule::all_ones}},
      {mqa::fp8::format::e4m3fnuz, {3, 8, nan_rule::negative_zero}},
      {mqa::fp8::format::e5m2, {2, 15, nan_rule::ieee}},
      {mqa::fp8::format::e5m2fnuz, {2, 16, nan_rule::negative_zero}},
      {mqa::fp8::format::e4m3b11fnuz, {3, 11, nan_rule::negative_zero}},
  };
  for (const auto& c : cases) {
    for (unsigned code = 0; code < 256; ++code) {
      const auto byte = static_cast<std::uint8_t>(code);
      const double expected = mqa::fp8::decode(c.format, byte);
      const float got = mqa::gpu::decode_code(c.rule, byte);
      INFO(mqa::fp8::traits(c.format).name << " code " << code << ": expected " << expected << ", got " << got);
      if (std::isnan(expected)) {
        CHECK(std::isnan(got));
      } else {
        CHECK(static_cast<double>(got) == expected);
        CHECK(std::signbit(got) == std::signbit(expected));
      }
      CHECK(mqa::gpu::code_is_nonfinite(c.rule, byte) == !std::isfinite(expected));
    }
  }
}
