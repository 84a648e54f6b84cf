#include <catch2/catch.hpp>

#include <bit>
#include <cmath>

#include "reference/fp8.hpp"
#include "support.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/inputs/quantize.hpp"

using namespace mqa;
using cases::scale_kind;

TEST_CASE("token scales are amax / bound, or that rounded up to a power of two", "[inputs][quantize]") {
  const std::vector<float> values{1, -3, 2, /**/ 0.5f, 0.25f, -0.125f, /**/ 0, 0, 0};
  const auto fp32 = inputs::token_scales(values, 3, 448.0, scale_kind::fp32);
  CHECK(fp32 == std::vector<float>{3.0f / 448.0f, 0.5f / 448.0f, 1e-4f / 448.0f});  // all-zero token: amax floor
  const auto ue8m0 = inputs::token_scales(values, 3, 448.0, scale_kind::ue8m0);
  for (std::size_t t = 0; t < 3; ++t) {
    CHECK(ue8m0[t] >= fp32[t]);
    CHECK(ue8m0[t] < 2 * fp32[t]);
    CHECK((std::bit_cast<std::uint32_t>(ue8m0[t]) & 0x007FFFFFu) == 0);  // a power of two
  }
}

TEST_CASE("quantized inputs decode back to the real values within half a code step", "[inputs][quantize]") {
  const auto [format_name, scale] = GENERATE(table<std::string, std::string>({
      {"e4m3fn", "fp32"}, {"e4m3fnuz", "fp32"}, {"e5m2", "ue8m0"}, {"e4m3fn", "ue8m0"}, {"e4m3b11fnuz", "fp32"}}));
  CAPTURE(format_name, scale);
  const cases::case_spec c = test::input_case(
      4, 8, 2, 64, fmt::format("q_format = \"{0}\"\nk_format = \"{0}\"\nk_scale = \"{1}\"\nq_scale = \"{1}\"", format_name, scale));
  const inputs::tensors t = inputs::generate(c);
  const fp8::format f = c.k_format;
  const double max = fp8::max_finite(f);
  const int mantissa = fp8::traits(f).mantissa_bits;
  for (std::int64_t j = 0; j < t.n; ++j) {
    double amax = 0;
    for (std::int64_t d = 0; d < t.head_dim; ++d) {
      const std::uint8_t code = t.k[j * t.head_dim + d];
      REQUIRE_FALSE(fp8::is_nan(fp8::traits(f), code));
      amax = std::max(amax, std::abs(fp8::decode(f, code)));
    }
    // The largest element of each key lands at the top of the format's range: at the bound for
    // fp32 scales, within a factor two below it for ue8m0.
    CHECK(amax <= max);
    CHECK(amax >= (scale == "fp32" ? max * (1 - std::ldexp(1.0, -mantissa)) : max / 2 * (1 - std::ldexp(1.0, -mantissa))));
  }
  for (const float s : t.k_scale) CHECK(s > 0);
}

TEST_CASE("q's scale is folded into the weights: weights / q_scale is the drawn weight", "[inputs][quantize]") {
  // With ue8m0 scales the fold is exact, so the ratio of two cases' weights that differ only in
  // the bound is exactly the ratio of the power-of-two scales.
  const auto a = inputs::generate(test::input_case(3, 4, 2, 16, "q_scale = \"ue8m0\"\nbound = 448.0"));
  const auto b = inputs::generate(test::input_case(3, 4, 2, 16, "q_scale = \"ue8m0\"\nbound = 112.0"));
  for (std::size_t i = 0; i < a.weights.size(); ++i) CHECK(b.weights[i] == 4 * a.weights[i]);
}
