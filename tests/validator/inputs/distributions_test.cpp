#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "validator/inputs/distributions.hpp"

using namespace mqa::inputs;
using mqa::cases::distribution;

namespace {

std::vector<float> filled(distribution d, bool keys, std::size_t rows, std::int64_t row_length) {
  std::vector<float> v(rows * static_cast<std::size_t>(row_length));
  fill(d, keys, counter_rng(11, stream::k_values), v, row_length);
  return v;
}

}  // namespace

TEST_CASE("uniform values lie within +-1, normal ones within +-6", "[inputs][distribution]") {
  for (const float x : filled(distribution::uniform, true, 100, 64)) REQUIRE(std::abs(x) <= 1.0f);
  for (const float x : filled(distribution::normal, true, 100, 64)) REQUIRE(std::abs(x) < 6.0f);
}

TEST_CASE("outliers: one element in 64 scaled by 2^4 .. 2^10", "[inputs][distribution]") {
  const std::vector<float> plain = filled(distribution::normal, true, 1000, 128);
  const std::vector<float> v = filled(distribution::outliers, true, 1000, 128);
  int scaled = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == plain[i]) continue;  // the same normal draws underneath
    const double ratio = static_cast<double>(v[i]) / plain[i];
    const int exponent = static_cast<int>(std::lround(std::log2(ratio)));
    REQUIRE(ratio == std::ldexp(1.0, exponent));
    REQUIRE(exponent >= 4);
    REQUIRE(exponent <= 10);
    ++scaled;
  }
  CHECK(std::abs(scaled - 2000) < 250);  // 128000 / 64, ~5.6 sigma
}

TEST_CASE("near-ties keys: one shared row, at most one element moved by 1/8, the largest never", "[inputs][distribution]") {
  const std::int64_t d = 32;
  const std::vector<float> v = filled(distribution::near_ties, true, 400, d);
  auto magnitude_max = [&](std::size_t row) {
    float m = 0;
    for (std::int64_t j = 0; j < d; ++j) m = std::max(m, std::abs(v[row * d + j]));
    return m;
  };
  int copies = 0;
  std::vector<int> moved_in_row(400);
  // Most rows keep each element's base value (the column's median); count the others per row.
  for (std::int64_t j = 0; j < d; ++j) {
    std::vector<float> column;
    for (std::size_t r = 0; r < 400; ++r) column.push_back(v[r * d + j]);
    std::vector<float> sorted = column;
    std::sort(sorted.begin(), sorted.end());
    const float common = sorted[200];  // most rows keep the base value
    for (std::size_t r = 0; r < 400; ++r) {
      if (column[r] == common) continue;
      ++moved_in_row[r];
      const double ratio = static_cast<double>(column[r]) / common;
      REQUIRE((std::abs(ratio - 1.125) < 1e-6 || std::abs(ratio - 0.875) < 1e-6));
    }
  }
  for (std::size_t r = 0; r < 400; ++r) {
    REQUIRE(moved_in_row[r] <= 1);
    copies += moved_in_row[r] == 0;
    REQUIRE(magnitude_max(r) == magnitude_max(0));  // one amax, so one scale, for every key
  }
  CHECK(std::abs(copies - 100) < 40);
}

TEST_CASE("near-ties applies to keys; queries stay normal", "[inputs][distribution]") {
  CHECK(filled(distribution::near_ties, false, 10, 16) == filled(distribution::normal, false, 10, 16));
}

TEST_CASE("a tensor filled in parts is the tensor filled at once", "[inputs][distribution]") {
  const auto d = GENERATE(distribution::normal, distribution::uniform, distribution::outliers, distribution::near_ties);
  const bool keys = GENERATE(true, false);
  constexpr std::int64_t kRowLength = 16;
  const std::vector<float> whole = filled(d, keys, 10, kRowLength);
  std::vector<float> parts(whole.size());
  for (const auto& [first, rows] : {std::pair{0, 3}, std::pair{3, 6}, std::pair{9, 1}})
    fill(d, keys, counter_rng(11, stream::k_values),
         std::span<float>(parts).subspan(static_cast<std::size_t>(first * kRowLength),
                                         static_cast<std::size_t>(rows * kRowLength)),
         kRowLength, static_cast<std::uint64_t>(first * kRowLength));
  CHECK(parts == whole);
}

// A span of normal values is each value's standard_normal rounded to float, however the span is
// filled (eight lanes at a time where the CPU has AVX-512): at offsets and lengths that leave
// every remainder, near the top of the index range too.
TEST_CASE("normal values are standard_normal's element by element", "[inputs][distribution]") {
  const counter_rng rng(20261204, stream::q_values);
  const std::uint64_t first = GENERATE(std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{1} << 40, ~std::uint64_t{0} - 4096);
  const std::size_t length = GENERATE(std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{13}, std::size_t{4099});
  std::vector<float> values(length);
  fill(distribution::normal, false, rng, values, 1, first);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < length; ++i)
    differing += std::bit_cast<std::uint32_t>(values[i]) !=
                 std::bit_cast<std::uint32_t>(static_cast<float>(standard_normal(rng, first + i)));
  CAPTURE(first, length);
  CHECK(differing == 0);
}
