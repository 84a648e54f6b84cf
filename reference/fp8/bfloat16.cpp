#include "bfloat16.hpp"

#include <cmath>

#include "grid.hpp"

namespace mqa::fp8 {
namespace {

constexpr int kMantissaBits = 7;
constexpr int kBias = 127;

}  // namespace

std::uint16_t bfloat16_bits(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isnan(x)) return static_cast<std::uint16_t>(sign | 0x7FC0u);
  if (std::isinf(x)) return static_cast<std::uint16_t>(sign | 0x7F80u);
  if (x == 0) return sign;
  // float32's exponent range with 7 fraction bits; a carry past the top binade is the Inf code.
  const detail::on_grid r = detail::round_to_grid(std::fabs(x), kMantissaBits, 1 - kBias);
  const std::uint64_t magnitude =
      r.exponent > kBias ? 0x7F80u
                         : std::min<std::uint64_t>((static_cast<std::uint64_t>(r.exponent + kBias - 1) << kMantissaBits) +
                                                       r.significand,
                                                   0x7F80u);
  return static_cast<std::uint16_t>(sign | magnitude);
}

std::uint16_t bfloat16_bits(float x) { return bfloat16_bits(static_cast<double>(x)); }

float bfloat16_value(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace mqa::fp8
