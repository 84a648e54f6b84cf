// The GPU's copy of the instruction models (reference/exact/gpu/model_step.hpp), compiled here for
// the CPU, against reference/mma's models and the rational oracle of tests/reference/mma/oracle.
// Tolerance: 0 ULP; the GPU centre claims reference/mma's bits. The [gpu] tests hold the compiled
// device code to the same on the H200.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/exact/gpu/model_rule.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"
#include "../../mma/oracle/fused_sum.hpp"
#include "step_draws.hpp"
#include "support/splitmix.hpp"

using namespace mqa;
using fp8::format;

namespace {

using mqa::test::bits;
using mqa::test::code_format_of;
using mqa::test::draw_code;
using mqa::test::splitmix;

int min_exponent(format f) { return 1 - fp8::traits(f).bias; }

// The products of two rows of codes, as the GPU's model reads them.
struct code_products {
  const std::vector<gpu::model::operand>& a;
  const std::vector<gpu::model::operand>& b;
  gpu::model::product operator()(int i) const {
    const auto at = static_cast<std::size_t>(i);
    return {a[at].m * b[at].m, a[at].e + b[at].e};
  }
};

struct drawn_dot {
  std::vector<double> a, b;                    // values, for reference/mma and the oracle
  std::vector<gpu::model::operand> oa, ob;     // operands, for the GPU's model
};

drawn_dot draw_dot(format fa, format fb, std::size_t length, std::uint64_t& state, int style) {
  const gpu::code_format ca = code_format_of(fa), cb = code_format_of(fb);
  drawn_dot d;
  for (std::size_t i = 0; i < length; ++i) {
    const std::uint8_t x = draw_code(fa, state, style), y = draw_code(fb, state, (style + 1 + static_cast<int>(i)) % 4);
    d.a.push_back(fp8::decode(fa, x));
    d.b.push_back(fp8::decode(fb, y));
    d.oa.push_back(gpu::model::operand_of(ca, x));
    d.ob.push_back(gpu::model::operand_of(cb, y));
  }
  return d;
}

struct instruction_case {
  int which;
  format fa, fb;
};
const mma::instruction& instruction_of(int which) { return which == 0 ? mma::sm90_wgmma() : mma::gfx942_mfma(); }

}  // namespace

TEST_CASE("the GPU model decomposes every finite code as reference/mma does", "[mma][model]") {
  for (const format f : {format::e4m3fn, format::e5m2, format::e4m3fnuz, format::e5m2fnuz, format::e4m3b11fnuz}) {
    const gpu::code_format c = code_format_of(f);
    int compared = 0;
    for (int code = 0; code < 256; ++code) {
      const double v = fp8::decode(f, static_cast<std::uint8_t>(code));
      if (!std::isfinite(v)) continue;
      const mma::operand want = mma::decompose(v, f);
      const gpu::model::operand got = gpu::model::operand_of(c, static_cast<std::uint8_t>(code));
      CAPTURE(fp8::traits(f).name, code, v);
      REQUIRE(got.m == want.m);
      if (want.m != 0) REQUIRE(got.e == want.e);  // a zero's exponent decides nothing
      ++compared;
    }
    CHECK(compared >= 248);  // e5m2 has the fewest finite codes: 256 less 6 NaNs and 2 infinities
  }
}

TEST_CASE("the GPU model's steps equal reference/mma's and the rational oracle's, every bit", "[mma][model]") {
  const auto [which, fa, fb] = GENERATE(table<int, format, format>({
      {0, format::e4m3fn, format::e4m3fn},
      {0, format::e5m2, format::e5m2},
      {0, format::e4m3fn, format::e5m2},
      {1, format::e4m3fnuz, format::e4m3fnuz},
      {1, format::e5m2fnuz, format::e5m2fnuz},
      {1, format::e5m2fnuz, format::e4m3fnuz},
  }));
  const mma::instruction& ins = instruction_of(which);
  const gpu::model::chain_rule rule = gpu::model::chain_rule_of(ins, 0);
  CAPTURE(ins.name, fp8::traits(fa).name, fp8::traits(fb).name);
  std::uint64_t state = 0x6E0D0000u + static_cast<std::uint64_t>(which * 16 + static_cast<int>(fa) * 4 + static_cast<int>(fb));
  const auto g = static_cast<std::size_t>(ins.step.products);
  int compared = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const drawn_dot d = draw_dot(fa, fb, g, state, trial % 4);
    // Accumulators of every size and sign, float32 subnormals among them.
    const float accs[] = {0.0f,
                          std::ldexp(1.0f, static_cast<int>(splitmix(state) % 60) - 40) * (splitmix(state) % 2 ? -1.0f : 1.0f),
                          std::bit_cast<float>(static_cast<std::uint32_t>(splitmix(state) % 0x800000u)),
                          std::bit_cast<float>(static_cast<std::uint32_t>(splitmix(state)) & 0xBFFFFFFFu)};
    for (const float acc : accs) {
      const float gpu_step = gpu::model::fused_step(rule.step, acc, code_products{d.oa, d.ob});
      const float cpu_step = mma::fused_dot_add(ins.step, acc, d.a, fa, d.b, fb, ins.nan_bits);
      CAPTURE(trial, acc, gpu_step, cpu_step);
      REQUIRE(bits(gpu_step) == bits(cpu_step));
      if (std::fabs(acc) < 0x1p100f) {  // the oracle's rationals stay small
        const float oracle = which == 0 ? mma_oracle::sm90_step(acc, d.a, min_exponent(fa), d.b, min_exponent(fb))
                                        : mma_oracle::gfx942_step(acc, d.a, min_exponent(fa), d.b, min_exponent(fb));
        REQUIRE(bits(gpu_step) == bits(oracle));
      }
      ++compared;
    }
  }
  CHECK(compared == 8000);
}

TEST_CASE("the GPU model's dots equal reference/mma's at every depth and promotion interval", "[mma][model]") {
  const auto [which, fa, fb] = GENERATE(table<int, format, format>({
      {0, format::e4m3fn, format::e4m3fn},
      {0, format::e5m2, format::e4m3fn},
      {1, format::e4m3fnuz, format::e4m3fnuz},
      {1, format::e4m3fnuz, format::e5m2fnuz},
  }));
  const mma::instruction& ins = instruction_of(which);
  CAPTURE(ins.name, fp8::traits(fa).name, fp8::traits(fb).name);
  std::uint64_t state = 0xC4A10000u + static_cast<std::uint64_t>(which * 16 + static_cast<int>(fa) * 4 + static_cast<int>(fb));
  int compared = 0;
  for (const std::int64_t dim : {32, 128, 256}) {
    for (const std::int64_t promote : {std::int64_t{0}, std::int64_t{32}, std::int64_t{64}, dim}) {
      if (promote > 0 && dim % promote != 0) continue;
      const gpu::model::chain_rule rule = gpu::model::chain_rule_of(ins, promote);
      for (int trial = 0; trial < 200; ++trial) {
        const drawn_dot d = draw_dot(fa, fb, static_cast<std::size_t>(dim), state, trial % 4);
        const float gpu_dot = gpu::model::modelled_dot(rule, static_cast<int>(dim), code_products{d.oa, d.ob});
        const float cpu_dot = mma::dot(ins, d.a, fa, d.b, fb, promote);
        CAPTURE(dim, promote, trial, gpu_dot, cpu_dot);
        REQUIRE(bits(gpu_dot) == bits(cpu_dot));
        ++compared;
      }
    }
  }
  CHECK(compared == 200 * (3 + 4 + 4));
}

TEST_CASE("the GPU model can fail: one parameter changed changes bits", "[mma][model]") {
  // A check that could not fail would pass a broken copy: with the term bits one short, the same
  // draws give different results.
  const mma::instruction& ins = mma::sm90_wgmma();
  gpu::model::chain_rule rule = gpu::model::chain_rule_of(ins, 0);
  rule.step.term_bits -= 1;
  std::uint64_t state = 7;
  int differing = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const drawn_dot d = draw_dot(format::e4m3fn, format::e4m3fn, 128, state, 0);
    differing += bits(gpu::model::modelled_dot(rule, 128, code_products{d.oa, d.ob})) !=
                 bits(mma::dot(ins, d.a, format::e4m3fn, d.b, format::e4m3fn));
  }
  CHECK(differing > 20);
}
