// The matrix-instruction models against worked examples and against a rational oracle written from
// their description (oracle/fused_sum.hpp). Tolerance: 0 ULP; the models claim every bit. The
// hardware side (H200 probes) is checked in mma_golden_test.cpp.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "oracle/fused_sum.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"
#include "support/splitmix.hpp"

using namespace mqa;
using fp8::format;

namespace {

using mqa::test::splitmix;

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

int min_exponent(format f) { return 1 - fp8::traits(f).bias; }

// Operand values drawn to hit every situation a step has: zeros, subnormals, the largest codes,
// mixed exponents and sign cancellation.
std::vector<double> draw(format f, std::size_t count, std::uint64_t& state, int style) {
  std::vector<double> v(count);
  for (auto& x : v) {
    std::uint8_t code = static_cast<std::uint8_t>(splitmix(state));
    if (style == 1) code &= 0x87;  // subnormals and zeros
    if (style == 2) code |= 0x70;  // the top binades
    const double d = fp8::decode(f, code);
    x = std::isfinite(d) ? d : 0.0;
  }
  return v;
}

}  // namespace

TEST_CASE("sm90 step: a product far below the largest is truncated away", "[mma]") {
  const auto& ins = mma::sm90_wgmma();
  std::vector<double> a(32, 0.0), b(32, 0.0);
  a[0] = 256, b[0] = 1;      // 2^8: the largest exponent
  a[1] = 0.015625, b[1] = 0.0625;  // 2^-10: 18 binades lower, below 2^(8 - 13)
  CHECK(mma::fused_dot_add(ins.step, 0.0f, a, format::e4m3fn, b, format::e4m3fn, ins.nan_bits) == 256.0f);
  a[1] = 0.25, b[1] = 0.125;  // 2^-5: exactly the last kept bit
  CHECK(mma::fused_dot_add(ins.step, 0.0f, a, format::e4m3fn, b, format::e4m3fn, ins.nan_bits) == 256.03125f);
  // Truncation toward zero: a negative small term removes a whole unit of 2^-5, not half.
  a[1] = -0.25, b[1] = 0.0625;  // -2^-6
  CHECK(mma::fused_dot_add(ins.step, 0.0f, a, format::e4m3fn, b, format::e4m3fn, ins.nan_bits) == 256.0f);
}

TEST_CASE("sm90 step: the accumulator joins the alignment and the result keeps 13 fraction bits", "[mma]") {
  const auto& ins = mma::sm90_wgmma();
  std::vector<double> a(32, 0.0), b(32, 0.0);
  a[0] = 1, b[0] = 1;
  // acc = 1 + 2^-20: its low bits fall below 2^(0 - 13) and are truncated.
  CHECK(mma::fused_dot_add(ins.step, 1.0f + 0x1p-20f, a, format::e4m3fn, b, format::e4m3fn, ins.nan_bits) == 2.0f);
  // NaN and the e5m2 infinities.
  a[2] = NAN;
  CHECK(bits(mma::fused_dot_add(ins.step, 0.0f, a, format::e4m3fn, b, format::e4m3fn, ins.nan_bits)) == 0x7FFFFFFFu);
}

TEST_CASE("each model's steps equal the rational oracle, every bit", "[mma]") {
  const auto [which, fa, fb] = GENERATE(table<int, format, format>({
      {0, format::e4m3fn, format::e4m3fn},
      {0, format::e5m2, format::e5m2},
      {0, format::e4m3fn, format::e5m2},
      {1, format::e4m3fnuz, format::e4m3fnuz},
      {1, format::e5m2fnuz, format::e5m2fnuz},
      {1, format::e5m2fnuz, format::e4m3fnuz},
  }));
  const mma::instruction& ins = which == 0 ? mma::sm90_wgmma() : mma::gfx942_mfma();
  CAPTURE(ins.name, fp8::traits(fa).name, fp8::traits(fb).name);
  std::uint64_t state = 0x5EED0000u + static_cast<std::uint64_t>(which * 16 + static_cast<int>(fa) * 4 + static_cast<int>(fb));
  const auto g = static_cast<std::size_t>(ins.step.products);
  int compared = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int style = trial % 4;
    const std::vector<double> a = draw(fa, g, state, style), b = draw(fb, g, state, (style + 1) % 4);
    // Accumulators of every size: zero, tiny, comparable, dominant, negative.
    const float accs[] = {0.0f, std::ldexp(1.0f, static_cast<int>(splitmix(state) % 60) - 40) *
                                    (splitmix(state) % 2 ? -1.0f : 1.0f),
                          static_cast<float>(std::ldexp(static_cast<double>(splitmix(state) % 4096), -6)) * -1.0f};
    for (const float acc : accs) {
      const float model = mma::fused_dot_add(ins.step, acc, a, fa, b, fb, ins.nan_bits);
      const float oracle = which == 0 ? mma_oracle::sm90_step(acc, a, min_exponent(fa), b, min_exponent(fb))
                                      : mma_oracle::gfx942_step(acc, a, min_exponent(fa), b, min_exponent(fb));
      CAPTURE(trial, acc, model, oracle);
      REQUIRE(bits(model) == bits(oracle));
      ++compared;
    }
  }
  CHECK(compared == 9000);
}

TEST_CASE("a dot is a chain of steps in ascending k; promotion adds chains in float32", "[mma]") {
  const auto& ins = mma::sm90_wgmma();
  std::uint64_t state = 99;
  const std::vector<double> a = draw(format::e4m3fn, 128, state, 0), b = draw(format::e4m3fn, 128, state, 2);
  float chained = 0;
  for (int s = 0; s < 4; ++s) {
    const std::vector<double> sa(a.begin() + 32 * s, a.begin() + 32 * (s + 1)), sb(b.begin() + 32 * s, b.begin() + 32 * (s + 1));
    chained = mma_oracle::sm90_step(chained, sa, -6, sb, -6);
  }
  CHECK(bits(mma::dot(ins, a, format::e4m3fn, b, format::e4m3fn)) == bits(chained));
  float promoted = 0;
  for (int s = 0; s < 4; s += 2) {
    float chain = 0;
    for (int t = s; t < s + 2; ++t) {
      const std::vector<double> sa(a.begin() + 32 * t, a.begin() + 32 * (t + 1)), sb(b.begin() + 32 * t, b.begin() + 32 * (t + 1));
      chain = mma_oracle::sm90_step(chain, sa, -6, sb, -6);
    }
    promoted += chain;
  }
  CHECK(bits(mma::dot(ins, a, format::e4m3fn, b, format::e4m3fn, 64)) == bits(promoted));
}

TEST_CASE("dot_row gives every key the bits of the rational oracle's chain, on each instruction set the CPU has",
          "[mma]") {
  const auto [which, fa, fb] = GENERATE(table<int, format, format>({
      {0, format::e4m3fn, format::e4m3fn},
      {0, format::e5m2, format::e5m2},
      {0, format::e5m2, format::e4m3fn},
      {1, format::e4m3fnuz, format::e5m2fnuz},  // AMD: its even and odd lanes, one dot at a time
  }));
  const auto isa = GENERATE(mma::lane_isa::best, mma::lane_isa::avx512, mma::lane_isa::avx2, mma::lane_isa::portable);
  if (!mma::lane_isa_available(isa)) {
    WARN("this CPU lacks the instruction set: not run");
    return;
  }
  const mma::instruction& ins = which == 0 ? mma::sm90_wgmma() : mma::gfx942_mfma();
  CAPTURE(ins.name, fp8::traits(fa).name, fp8::traits(fb).name, static_cast<int>(isa));
  std::uint64_t state = 0xD07D0000u + static_cast<std::uint64_t>(which * 16 + static_cast<int>(fa) * 4 + static_cast<int>(fb));
  const auto g = static_cast<std::size_t>(ins.step.products);
  int compared = 0;
  for (const std::size_t dim : {g, 4 * g, 8 * g}) {
    // 37 keys: two full groups of lanes and a partial one. Each key and the row mix the draw's
    // styles (zeros, subnormals, top binades) so that lanes of one group take different paths.
    std::vector<double> row = draw(fa, dim, state, 0);
    for (std::size_t d = 0; d < dim; d += 3) row[d] = draw(fa, 1, state, static_cast<int>(d % 4))[0];
    std::vector<std::vector<double>> keys;
    std::vector<mma::operand> key_operands;
    for (int j = 0; j < 37; ++j) {
      keys.push_back(draw(fb, dim, state, j % 4));
      for (const double v : keys.back()) key_operands.push_back(mma::decompose(v, fb));
    }
    std::vector<mma::operand> row_operands;
    for (const double v : row) row_operands.push_back(mma::decompose(v, fa));
    const mma::key_lanes lanes = mma::lanes_of(key_operands, dim);
    for (const std::int64_t promote : {std::int64_t{0}, static_cast<std::int64_t>(g), static_cast<std::int64_t>(dim)}) {
      std::vector<float> out(keys.size());
      mma::dot_row(ins, row_operands, lanes, promote, out, isa);
      for (std::size_t j = 0; j < keys.size(); ++j) {
        // The oracle's chain of steps (instruction.hpp's dot), promoted every `promote` elements.
        float chain = 0, promoted = 0;
        for (std::size_t k0 = 0; k0 < dim; k0 += g) {
          const std::vector<double> sa(row.begin() + static_cast<std::ptrdiff_t>(k0), row.begin() + static_cast<std::ptrdiff_t>(k0 + g));
          const std::vector<double> sb(keys[j].begin() + static_cast<std::ptrdiff_t>(k0),
                                       keys[j].begin() + static_cast<std::ptrdiff_t>(k0 + g));
          chain = which == 0 ? mma_oracle::sm90_step(chain, sa, min_exponent(fa), sb, min_exponent(fb))
                             : mma_oracle::gfx942_step(chain, sa, min_exponent(fa), sb, min_exponent(fb));
          if (promote > 0 && (k0 + g) % static_cast<std::size_t>(promote) == 0) promoted += chain, chain = 0;
        }
        const float oracle = promote > 0 ? promoted : chain;
        CAPTURE(dim, promote, j, out[j], oracle);
        REQUIRE(bits(out[j]) == bits(oracle));
        ++compared;
      }
    }
  }
  CHECK(compared == 3 * 3 * 37);
  // Sizes that disagree are a caller's bug, refused before any lane reads past its buffers.
  const std::vector<mma::operand> row(2 * g), keys(3 * 2 * g);
  const mma::key_lanes lanes = mma::lanes_of(keys, 2 * g);
  std::vector<float> out(3);
  CHECK_THROWS_AS(mma::dot_row(ins, std::span(row).first(g), lanes, 0, out), std::invalid_argument);
  CHECK_THROWS_AS(mma::dot_row(ins, row, lanes, 0, std::span(out).first(2)), std::invalid_argument);
}

TEST_CASE("an instruction refuses formats it does not take, and head_dim off its K", "[mma]") {
  CHECK(mma::why_unusable(mma::sm90_wgmma(), format::e4m3fn, format::e5m2, 128, 0) == std::nullopt);
  const auto fnuz = mma::why_unusable(mma::sm90_wgmma(), format::e4m3fnuz, format::e4m3fn, 128, 0);
  REQUIRE(fnuz);
  CHECK_THAT(*fnuz, Catch::Contains("e4m3fnuz") && Catch::Contains("accepted: e4m3fn, e5m2"));
  CHECK(mma::why_unusable(mma::gfx942_mfma(), format::e4m3fn, format::e4m3fn, 128, 0));
  CHECK_THAT(*mma::why_unusable(mma::sm90_wgmma(), format::e4m3fn, format::e4m3fn, 100, 0), Catch::Contains("multiple of 32"));
  CHECK(mma::why_unusable(mma::sm90_wgmma(), format::e4m3fn, format::e4m3fn, 128, 48));
  CHECK(mma::why_unusable(mma::sm90_wgmma(), format::e4m3fn, format::e4m3fn, 128, 64) == std::nullopt);
}
