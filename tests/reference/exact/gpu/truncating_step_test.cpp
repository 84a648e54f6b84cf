// The float32 form of a truncating step (reference/exact/gpu/truncating_step.hpp), compiled here
// for the CPU, against reference/mma's sm90-wgmma step (integer arithmetic, sharing no code with
// it) and against the GPU model's generic integer step. Tolerance: 0 ULP; the centre claims
// reference/mma's bits. The [gpu] tests hold the device's instructions to the same on the H200.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/exact/gpu/model_rule.hpp"
#include "reference/exact/gpu/truncating_step.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"
#include "step_draws.hpp"
#include "support/splitmix.hpp"

using namespace mqa;
using fp8::format;

namespace {

using mqa::test::bits;
using mqa::test::code_format_of;
using mqa::test::draw_code;
using mqa::test::splitmix;
namespace model = gpu::model;

// One step's operands in the three forms: values (reference/mma), integer operands (the generic
// step), step operands (the float32 step; q's values times 2^-C, as the kernel stages them).
struct drawn_step {
  std::vector<double> a, b;
  std::vector<model::operand> oa, ob;
  model::step_operands sa{}, sb{};
};

void set_operand(model::step_operands& s, int i, model::scaled_operand o, bool prescaled) {
  s.value[i] = prescaled ? o.value * std::ldexp(1.0f, -model::kQPrescale) : o.value;
  model::scale_pair& pair = s.scale[i / 2];
  pair = i % 2 == 0 ? model::scale_pair_of(o.scale, pair.high) : model::scale_pair_of(pair.low, o.scale);
}

drawn_step draw_step(format fa, format fb, std::uint64_t& state, int style) {
  const gpu::code_format ca = code_format_of(fa), cb = code_format_of(fb);
  drawn_step d;
  for (int i = 0; i < model::kTruncatingProducts; ++i) {
    const std::uint8_t x = draw_code(fa, state, style), y = draw_code(fb, state, (style + 1 + i) % 4);
    d.a.push_back(fp8::decode(fa, x));
    d.b.push_back(fp8::decode(fb, y));
    d.oa.push_back(model::operand_of(ca, x));
    d.ob.push_back(model::operand_of(cb, y));
    set_operand(d.sa, i, model::scaled_operand_of(ca, x), true);
    set_operand(d.sb, i, model::scaled_operand_of(cb, y), false);
  }
  return d;
}

struct generic_products {
  const drawn_step& d;
  model::product operator()(int i) const {
    const auto at = static_cast<std::size_t>(i);
    return {d.oa[at].m * d.ob[at].m, d.oa[at].e + d.ob[at].e};
  }
};

float truncating(const model::chain_rule& rule, float acc, const drawn_step& d) {
  return model::truncating_step(model::truncating_constants_of(rule.step), acc, d.sa, d.sb);
}

}  // namespace

TEST_CASE("the float32 form takes Hopper's truncating step and no other", "[mma][model]") {
  CHECK(model::truncating_form(model::chain_rule_of(mma::sm90_wgmma(), 0), 128));
  CHECK(model::truncating_form(model::chain_rule_of(mma::sm90_wgmma(), 64), 4096));
  CHECK_FALSE(model::truncating_form(model::chain_rule_of(mma::sm90_wgmma(), 0), 4128));  // dots past 2^44
  CHECK_FALSE(model::truncating_form(model::chain_rule_of(mma::gfx942_mfma(), 0), 128));  // lanes apart, rounded
  model::chain_rule wide = model::chain_rule_of(mma::sm90_wgmma(), 0);
  wide.step.term_bits = 17;  // its sums would pass float32's 24 bits
  CHECK_FALSE(model::truncating_form(wide, 128));
  model::chain_rule rounded = model::chain_rule_of(mma::sm90_wgmma(), 0);
  rounded.step.result_rule = model::rounding::nearest_even;  // 21-bit sums rounded to 13 bits: not a mask
  CHECK_FALSE(model::truncating_form(rounded, 128));
}

TEST_CASE("the float32 truncating step equals reference/mma's sm90-wgmma step, every bit", "[mma][model]") {
  const auto [fa, fb] = GENERATE(table<format, format>({
      {format::e4m3fn, format::e4m3fn},
      {format::e5m2, format::e5m2},
      {format::e4m3fn, format::e5m2},
      {format::e5m2, format::e4m3fn},
  }));
  // Hopper's result keeps 13 fraction bits, which hides most errors of one unit in a term; a
  // result keeping all 23 shows every term's truncation.
  const int result_bits = GENERATE(13, 23);
  mma::instruction ins = mma::sm90_wgmma();
  ins.step.result_bits = result_bits;
  const model::chain_rule rule = model::chain_rule_of(ins, 0);
  REQUIRE(model::truncating_form(rule, 128));
  CAPTURE(fp8::traits(fa).name, fp8::traits(fb).name, result_bits);
  std::uint64_t state = 0x7A0C0000u + static_cast<std::uint64_t>(static_cast<int>(fa) * 8 + static_cast<int>(fb));
  int compared = 0, chained = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    const drawn_step d = draw_step(fa, fb, state, trial % 4);
    // The accumulators the step takes (its precondition, truncating_step.hpp): zero, or a normal
    // float32 of any sign and bits below 2^45 (a chain's dots cannot reach it, nor a subnormal).
    const float accs[] = {
        0.0f, -0.0f,
        std::ldexp(1.0f, static_cast<int>(splitmix(state) % 95) - 50) * (splitmix(state) % 2 ? -1.0f : 1.0f),
        std::bit_cast<float>((static_cast<std::uint32_t>(splitmix(state)) & 0x807FFFFFu) |
                             static_cast<std::uint32_t>(splitmix(state) % 171 + 1) << 23)};
    for (const float acc : accs) {
      const float fast = truncating(rule, acc, d);
      const float want = mma::fused_dot_add(ins.step, acc, d.a, fa, d.b, fb, ins.nan_bits);
      const float generic = model::fused_step(rule.step, acc, generic_products{d});
      CAPTURE(trial, acc, fast, want, generic);
      REQUIRE(bits(fast) == bits(want));
      REQUIRE(bits(fast) == bits(generic));
      ++compared;
    }
    // And a chain of four steps, each fed the last one's result.
    float acc = 0.0f, want = 0.0f;
    for (int step = 0; step < 4; ++step) {
      const drawn_step s = step == 0 ? d : draw_step(fa, fb, state, (trial + step) % 4);
      acc = truncating(rule, acc, s);
      want = mma::fused_dot_add(ins.step, want, s.a, fa, s.b, fb, ins.nan_bits);
      REQUIRE(bits(acc) == bits(want));
      ++chained;
    }
  }
  CHECK(compared == 20000);
  CHECK(chained == 20000);
}

TEST_CASE("the float32 truncating step can fail: one term bit fewer changes bits", "[mma][model]") {
  const mma::instruction& ins = mma::sm90_wgmma();
  model::chain_rule rule = model::chain_rule_of(ins, 0);
  rule.step.term_bits -= 1;
  std::uint64_t state = 11;
  int differing = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const drawn_step d = draw_step(format::e4m3fn, format::e4m3fn, state, 0);
    differing += bits(truncating(rule, 0.0f, d)) !=
                 bits(mma::fused_dot_add(ins.step, 0.0f, d.a, format::e4m3fn, d.b, format::e4m3fn, ins.nan_bits));
  }
  CHECK(differing > 50);
}
