#include "distributions.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace mqa::inputs {

double standard_normal(const counter_rng& rng, std::uint64_t index) {
  // Six 64-bit draws give the twelve 32-bit uniforms.
  std::int64_t sum = 0;
  for (std::uint64_t t = 0; t < 6; ++t) {
    const std::uint64_t b = rng.bits(6 * index + t);
    sum += static_cast<std::int64_t>(b & 0xFFFFFFFFu) + static_cast<std::int64_t>(b >> 32);
  }
  // The mean of the sum is 12 * (2^32 - 1) / 2.
  constexpr std::int64_t kMean = 6 * ((std::int64_t{1} << 32) - 1);
  return static_cast<double>(sum - kMean) * 0x1p-32;  // |sum - mean| < 2^36: exact
}

double uniform_signed(const counter_rng& rng, std::uint64_t index) {
  const auto u = static_cast<std::int64_t>(rng.bits(index) >> 11);  // [0, 2^53)
  return static_cast<double>(u - (std::int64_t{1} << 52)) * 0x1p-52;
}

namespace {

using filler = void (*)(const counter_rng&, std::span<float>, std::int64_t, std::uint64_t);

void normal(const counter_rng& rng, std::span<float> values, std::int64_t, std::uint64_t first) {
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(standard_normal(rng, first + i));
}

void uniform(const counter_rng& rng, std::span<float> values, std::int64_t, std::uint64_t first) {
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(uniform_signed(rng, first + i));
}

void outliers(const counter_rng& rng, std::span<float> values, std::int64_t, std::uint64_t first) {
  const counter_rng which = rng.fork(1);
  for (std::size_t at = 0; at < values.size(); ++at) {
    const std::uint64_t i = first + at;
    double v = standard_normal(rng, i);
    if (which.below(2 * i, 64) == 0) {
      const auto exponent = 4 + static_cast<int>(which.below(2 * i + 1, 7));
      v *= static_cast<double>(std::uint64_t{1} << exponent);  // exact
    }
    values[at] = static_cast<float>(v);
  }
}

void near_ties(const counter_rng& rng, std::span<float> values, std::int64_t row_length, std::uint64_t first) {
  const auto d = static_cast<std::size_t>(row_length);
  std::vector<float> base(d);
  for (std::size_t j = 0; j < d; ++j) base[j] = static_cast<float>(standard_normal(rng, j));
  std::size_t largest = 0;
  for (std::size_t j = 1; j < d; ++j)
    if (std::abs(base[j]) > std::abs(base[largest])) largest = j;  // |x| is exact: no libm rounding
  const counter_rng moves = rng.fork(1);
  const std::size_t rows = values.size() / d;
  for (std::size_t local = 0; local < rows; ++local) {
    const std::uint64_t r = first / d + local;
    std::copy(base.begin(), base.end(), values.begin() + static_cast<std::ptrdiff_t>(local * d));
    if (d < 2 || moves.below(3 * r, 4) == 0) continue;  // an exact copy: logits tie exactly
    std::size_t j = moves.below(3 * r + 1, d - 1);
    if (j >= largest) ++j;  // the largest element sets the scale: keep it
    const double step = (moves.bits(3 * r + 2) & 1) ? 0.125 : -0.125;
    values[local * d + j] = static_cast<float>(static_cast<double>(base[j]) * (1.0 + step));
  }
}

// Indexed by cases::distribution.
constexpr std::array<filler, 4> kFillers{normal, uniform, outliers, near_ties};

}  // namespace

void fill(cases::distribution d, bool keys, const counter_rng& rng, std::span<float> values, std::int64_t row_length,
          std::uint64_t first) {
  if (d == cases::distribution::near_ties && !keys) d = cases::distribution::normal;
  kFillers[static_cast<std::size_t>(d)](rng, values, row_length, first);
}

}  // namespace mqa::inputs
