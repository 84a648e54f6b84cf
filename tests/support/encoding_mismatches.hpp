// Golden encodings checked bit for bit: every input encoded under one conversion against the code a
// third party wrote for it (tests/data/golden/*/README.md).
#pragma once

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <xtensor/xarray.hpp>

#include "reference/fp8.hpp"

namespace mqa::test {

// The number of inputs whose code differs from the expected one (one per input, or the test
// stops), the first five reported in full: input bits and value, expected and actual code.
template <class Float, class Bits>
std::size_t encoding_mismatches(const fp8::conversion& c, const xt::xarray<Bits>& in,
                                const xt::xarray<std::uint8_t>& expected) {
  REQUIRE(expected.size() == in.size());
  std::size_t count = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Float x = std::bit_cast<Float>(in(i));
    const std::uint8_t got = fp8::encode(c, x);
    if (got != expected(i) && ++count <= 5)
      UNSCOPED_INFO(fmt::format("input 0x{:0{}X} ({}): expected 0x{:02X}, got 0x{:02X}", in(i), 2 * sizeof(Bits), x,
                                expected(i), got));
  }
  return count;
}

}  // namespace mqa::test
