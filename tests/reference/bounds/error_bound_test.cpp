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

TEST_CASE("bf16 logits add the last rounding: half a bfloat16 ulp of the value, and bfloat16 underflow", "[bounds][bf16]") {
  const arithmetic fp32{dot_accumulator::fp32, head_accumulator::fp32};
  arithmetic bf16 = fp32;
  bf16.logits = logits_precision::bf16;
  const error_bound f = derive(fp32, 128, 64), b = derive(bf16, 128, 64);
  CHECK(f.per_value == 0);
  CHECK(f.result_overflow == kFloat32Overflow);
  CHECK(b.per_value == 0x1p-8);                  // u of bfloat16: 8 significant bits
  CHECK(b.result_overflow == 0x1.ffp127);        // between bfloat16's max (2 - 2^-7) 2^127 and 2^128
  CHECK(b.relative >= f.relative * (1 + 0x1p-8));  // the float32 bound grows by (1 + u_bf16)
  CHECK(b.relative < f.relative * (1 + 0x1p-8) * (1 + 0x1p-40));
  CHECK(b.absolute >= f.absolute * (1 + 0x1p-8) + 0x1p-134);
  element e;
  e.magnitude = 8;
  e.value_abs = 1;
  // The rounding scales with the value, not with A: at A = 8 |c| it is u |c|, not u A.
  CHECK(b.at(e) - f.at(e) * (1 + 0x1p-8) >= 0x1p-8);
  CHECK(b.at(e) - f.at(e) * (1 + 0x1p-8) < 0x1p-8 * (1 + 0x1p-40) + 0x1p-130);
  // A bit-exact contract stays bit exact: the correctly rounded bfloat16 is demanded.
  arithmetic exact{dot_accumulator::exact, head_accumulator::exact};
  exact.logits = logits_precision::bf16;
  CHECK(derive(exact, 128, 64).bit_exact);
  CHECK(derive(exact, 128, 64).result_overflow == kBfloat16Overflow);
  CHECK(mqa::names::parse(kLogitsPrecisionNames, "bf16") == logits_precision::bf16);
  CHECK_FALSE(mqa::names::parse(kLogitsPrecisionNames, "bfloat16"));
}
