// The bound is derived, not chosen: these pin the derivation's numbers (reference/bounds/README.md).
#include <catch2/catch.hpp>

#include <cmath>

#include "reference/bounds/error_bound.hpp"

using namespace mqa::bounds;

TEST_CASE("gamma_n is n u / (1 - n u), never rounded down", "[bounds]") {
  CHECK(gamma(0, 0x1p-24) == 0);
  CHECK(gamma(1, 0x1p-24) >= 0x1p-24 / (1 - 0x1p-24));
  CHECK(gamma(127, 0x1p-24) >= 127 * 0x1p-24);
  CHECK(gamma(127, 0x1p-24) < 127.001 * 0x1p-24);
}

TEST_CASE("bounds grow with the declared arithmetic, D and H", "[bounds]") {
  const auto exact = derive({dot_accumulator::exact, head_accumulator::exact}, 128, 64);
  CHECK(exact.bit_exact);
  const auto fp32 = derive({dot_accumulator::fp32, head_accumulator::fp32}, 128, 64);
  CHECK_FALSE(fp32.bit_exact);
  // (1 + gamma_127)(1 + gamma_64)(1 + u) - 1 = about 192 u.
  CHECK(fp32.relative >= 192 * 0x1p-24);
  CHECK(fp32.relative < 193 * 0x1p-24);
  const auto fp22 = derive({dot_accumulator::fp22_truncated, head_accumulator::fp32}, 128, 64);
  const auto bf16 = derive({dot_accumulator::bf16, head_accumulator::fp32}, 128, 64);
  CHECK(fp22.relative > 128 * 0x1p-13);
  CHECK(bf16.relative > 0x1p-8);
  CHECK(fp32.relative < bf16.relative);
  CHECK(bf16.relative < fp22.relative);
  CHECK(derive({dot_accumulator::fp32, head_accumulator::fp32}, 256, 64).relative > fp32.relative);
  CHECK(derive({dot_accumulator::fp32, head_accumulator::fp32}, 128, 128).relative > fp32.relative);
  // k_scale before relu trades the final product for one per head: H + 1 roundings on every path
  // either way, so the two agree to first order (they differ in the u^2 terms of composing factors).
  const double before_relu = derive({dot_accumulator::fp32, head_accumulator::fp32, scale_placement::before_relu}, 128, 64).relative;
  CHECK(std::fabs(before_relu - fp32.relative) <= (192.0 * 192.0) * 0x1p-48);
  // Underflow: half a subnormal step per rounding, scaled by what multiplies it afterwards.
  element tiny;
  tiny.scale_abs = 1;
  tiny.weights_abs = 1;
  CHECK(fp32.at(tiny) > 0);
  CHECK(fp32.at(tiny) < 1e-40);
}
