// What the GPU models' CPU tests draw a step from: a format's fields as the models read them, and
// finite codes in styles that reach each path of a step; and a float32's bits, to compare them.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "reference/fp8/convert.hpp"
#include "reference/gpu/operation.hpp"
#include "support/splitmix.hpp"

namespace mqa::test {

inline std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// The fields operand_of reads (reference/gpu/problem_view's to_code_format is in GPU builds only).
inline gpu::code_format code_format_of(fp8::format f) {
  gpu::code_format c;
  c.mantissa_bits = fp8::traits(f).mantissa_bits;
  c.bias = fp8::traits(f).bias;
  return c;
}

// Finite codes drawn in styles that reach each path of a step: any code (0), subnormals and zeros
// (1), the top binades (2), mostly zeros (3).
inline std::uint8_t draw_code(fp8::format f, std::uint64_t& state, int style) {
  for (;;) {
    auto code = static_cast<std::uint8_t>(splitmix(state));
    if (style == 1) code &= 0x87;
    if (style == 2) code |= 0x70;
    if (style == 3 && splitmix(state) % 4 != 0) code &= 0x80;
    if (std::isfinite(fp8::decode(f, code))) return code;
  }
}

}  // namespace mqa::test
