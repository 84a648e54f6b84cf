#include <catch2/catch.hpp>

#include <algorithm>

#include "reference/fp8.hpp"
#include "support.hpp"
#include "validator/inputs/inputs.hpp"

using namespace mqa;

namespace {

std::size_t count_codes(const std::vector<std::uint8_t>& codes, std::uint8_t code) {
  return static_cast<std::size_t>(std::count(codes.begin(), codes.end(), code));
}

inputs::tensors with(const std::string& keys) { return inputs::generate(test::input_case(8, 16, 4, 32, keys)); }

}  // namespace

TEST_CASE("no special values unless asked", "[inputs][special]") {
  const auto t = with("");
  for (const auto code : t.k) REQUIRE_FALSE(fp8::is_nan(fp8::traits(fp8::format::e4m3fn), code));
  CHECK(count_codes(t.k, 0x80) == 0);
  CHECK(count_codes(t.q, 0x80) == 0);
}

TEST_CASE("nan: the profile's NaN code in both tensors", "[inputs][special]") {
  const auto t = with("special = [\"nan\"]\nspecial_count = 3");
  const auto nan_codes = [](const std::vector<std::uint8_t>& v) { return count_codes(v, 0x7F) + count_codes(v, 0xFF); };
  CHECK(nan_codes(t.q) >= 1);
  CHECK(nan_codes(t.k) >= 1);
  // cuda-satfinite drops the sign: only 0x7F.
  const auto cuda = with("special = [\"nan\"]\nspecial_count = 8\nprofile = \"cuda-satfinite\"");
  CHECK(count_codes(cuda.k, 0x7F) >= 1);
  CHECK(count_codes(cuda.k, 0xFF) == 0);
}

TEST_CASE("negative-underflow: 0x80 (-0) in OCP e4m3fn, never in fnuz where 0x80 is NaN", "[inputs][special]") {
  const auto ocp = with("special = [\"negative-underflow\"]\nspecial_in = \"k\"");
  CHECK(count_codes(ocp.k, 0x80) >= 1);
  CHECK(count_codes(ocp.q, 0x80) == 0);  // special_in = "k"
  const auto fnuz = with("special = [\"negative-underflow\"]\nk_format = \"e4m3fnuz\"\nq_format = \"e4m3fnuz\"");
  CHECK(count_codes(fnuz.k, 0x80) == 0);
  CHECK(count_codes(fnuz.q, 0x80) == 0);
}

TEST_CASE("subnormal and largest codes", "[inputs][special]") {
  const auto plain = with("k_format = \"e5m2\"\ndistribution = \"uniform\"");
  const auto t = with("k_format = \"e5m2\"\ndistribution = \"uniform\"\nspecial = [\"subnormal\", \"largest\"]\nspecial_count = 4");
  const auto& traits = fp8::traits(fp8::format::e5m2);
  auto count_class = [&](const std::vector<std::uint8_t>& v, fp8::code_class c) {
    return std::count_if(v.begin(), v.end(), [&](std::uint8_t code) { return fp8::classify(traits, code) == c; });
  };
  CHECK(count_class(t.k, fp8::code_class::subnormal) > count_class(plain.k, fp8::code_class::subnormal));
  CHECK(count_class(t.k, fp8::code_class::max) > count_class(plain.k, fp8::code_class::max));
}

TEST_CASE("zero-k-scale and negative-k-scale touch only k_scale", "[inputs][special]") {
  const auto plain = with("");
  const auto t = with("special = [\"zero-k-scale\", \"negative-k-scale\"]");
  CHECK(std::count(t.k_scale.begin(), t.k_scale.end(), 0.0f) >= 1);
  CHECK(std::count_if(t.k_scale.begin(), t.k_scale.end(), [](float s) { return s < 0; }) >= 1);
  CHECK(t.k == plain.k);
  CHECK(t.q == plain.q);
  for (std::size_t j = 0; j < t.k_scale.size(); ++j)
    CHECK((t.k_scale[j] == plain.k_scale[j] || t.k_scale[j] == 0 || t.k_scale[j] == -plain.k_scale[j]));
}
