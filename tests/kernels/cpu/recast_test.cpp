// The gfx942 recast as the CPU model plants it (kernels/cpu/planted.hpp): correct as each producer
// writes it (the exact logits of the recast problem are the exact logits of the original, NaN bytes
// aside where the producer keeps them), and the two planted bugs byte for byte against the 64-bit
// arithmetic of the FlyDSL helper they come from, written out here.
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/planted.hpp"
#include "reference/exact/logits.hpp"
#include "reference/fp8/convert.hpp"
#include "support/splitmix.hpp"

using namespace mqa;
using kernels::cpu::owned_problem;
using kernels::cpu::pack_recombine;

namespace {

struct recast_inputs {
  std::vector<std::uint8_t> q, k;
  std::vector<float> k_scale, weights;
  std::vector<std::int32_t> ks, ke;
  exact::problem view;
};

// e4m3fn codes of every kind but NaN (nan_every > 0 puts 0x7F/0xFF into k, every nan_every-th key),
// with -0 (0x80) one code in 16.
recast_inputs make_recast_inputs(std::uint64_t seed, std::int64_t nan_every = 0) {
  recast_inputs t;
  const std::int64_t m = 8, n = 40, h = 4, d = 32;
  std::uint64_t state = seed;
  auto code = [&] {
    const auto c = static_cast<std::uint8_t>(test::splitmix(state));
    if ((c & 0x0F) == 0x0F) return std::uint8_t{0x80};
    return (c & 0x7F) == 0x7F ? std::uint8_t(c & 0xFE) : c;
  };
  for (std::int64_t x = 0; x < m * h * d; ++x) t.q.push_back(code());
  for (std::int64_t x = 0; x < n * d; ++x) t.k.push_back(code());
  for (std::int64_t j = 0; j < n; ++j) t.k_scale.push_back(0.25f + static_cast<float>(test::splitmix(state) % 64) / 32);
  for (std::int64_t x = 0; x < m * h; ++x)
    t.weights.push_back(static_cast<float>(static_cast<std::int64_t>(test::splitmix(state) % 200) - 100) / 64);
  if (nan_every > 0)
    for (std::int64_t j = 1; j < n; j += nan_every) t.k[static_cast<std::size_t>(j * d + 9)] = j % 2 ? 0x7F : 0xFF;
  for (std::int64_t i = 0; i < m; ++i) {
    t.ks.push_back(static_cast<std::int32_t>(i));
    t.ke.push_back(static_cast<std::int32_t>(n - i));
  }
  t.view = {m, n, h, d, fp8::format::e4m3fn, fp8::format::e4m3fn, t.q, t.k, t.k_scale, t.weights, t.ks, t.ke};
  return t;
}

bool same_logit_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

// FlyDSL's _fn_to_fnuz_i64 on one pack of 8 codes (element 0 in the low byte of a 64-bit load):
// split into 32-bit halves, 0x80 -> 0x00 in each byte, widen both halves to 64 bits (zero- or
// sign-extending), shift the high one up by 32 and OR them.
std::array<std::uint8_t, 8> flydsl_pack(const std::array<std::uint8_t, 8>& bytes, bool sign_extend) {
  std::uint64_t raw = 0;
  for (int b = 0; b < 8; ++b) raw |= std::uint64_t{bytes[static_cast<std::size_t>(b)]} << (8 * b);
  auto fix = [](std::uint32_t half) {
    std::uint32_t out = 0;
    for (int b = 0; b < 4; ++b) {
      std::uint32_t byte = (half >> (8 * b)) & 0xFF;
      if (byte == 0x80) byte = 0;
      out |= byte << (8 * b);
    }
    return out;
  };
  auto widen = [&](std::uint32_t half) {
    return sign_extend ? static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(half)))
                       : static_cast<std::uint64_t>(half);
  };
  const std::uint64_t out = widen(fix(static_cast<std::uint32_t>(raw))) | (widen(fix(static_cast<std::uint32_t>(raw >> 32))) << 32);
  std::array<std::uint8_t, 8> result{};
  for (int b = 0; b < 8; ++b) result[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(out >> (8 * b));
  return result;
}

// The same, over every pack of every head_dim-long row of a tensor.
std::vector<std::uint8_t> flydsl_packs(std::vector<std::uint8_t> codes, bool sign_extend) {
  for (std::size_t at = 0; at + 8 <= codes.size(); at += 8) {
    std::array<std::uint8_t, 8> pack{};
    for (std::size_t b = 0; b < 8; ++b) pack[b] = codes[at + b];
    pack = flydsl_pack(pack, sign_extend);
    for (std::size_t b = 0; b < 8; ++b) codes[at + b] = pack[b];
  }
  return codes;
}

}  // namespace

TEST_CASE("each producer's recast keeps the exact logits of e4m3fn operands", "[kernels][planted][recast]") {
  const recast_inputs t = make_recast_inputs(GENERATE(1u, 2u, 3u));
  const exact::result before = exact::compute(t.view);
  for (const fp8::recast& r : fp8::all_recasts()) {
    owned_problem p(t.view);
    kernels::cpu::recast_for_gfx942(p, r);
    CAPTURE(r.name);
    CHECK(p.view.q_format == fp8::format::e4m3fnuz);
    CHECK(p.view.k_format == fp8::format::e4m3fnuz);
    const exact::result after = exact::compute(p.view);
    REQUIRE(after.logits.size() == before.logits.size());
    std::size_t differ = 0;
    for (std::size_t x = 0; x < before.logits.size(); ++x) differ += !same_logit_bits(before.logits[x], after.logits[x]);
    CHECK(differ == 0);
  }
}

TEST_CASE("a recast by value keeps NaN keys NaN; one by bytes reads them as +-240", "[kernels][planted][recast]") {
  const recast_inputs t = make_recast_inputs(4, 7);
  const exact::result before = exact::compute(t.view);
  auto nan_elements = [](const exact::result& r) {
    std::size_t count = 0;
    for (float x : r.logits) count += std::isnan(x);
    return count;
  };
  REQUIRE(nan_elements(before) > 0);
  for (const fp8::recast& r : fp8::all_recasts()) {
    owned_problem p(t.view);
    kernels::cpu::recast_for_gfx942(p, r);
    CAPTURE(r.name);
    const std::size_t after = nan_elements(exact::compute(p.view));
    CHECK(after == (r.method == fp8::recast_method::by_value ? nan_elements(before) : 0));
  }
  // The mutants' base: FlyDSL's bytes with the NaN bytes made fnuz's NaN keeps every logit.
  owned_problem p(t.view);
  kernels::cpu::recast_for_gfx942(p, kernels::cpu::keeping_nan(fp8::rules(fp8::recast_id::flydsl)));
  const exact::result after = exact::compute(p.view);
  for (std::size_t x = 0; x < before.logits.size(); ++x) CHECK(same_logit_bits(before.logits[x], after.logits[x]));
}

TEST_CASE("the recast's factors land where the producer puts them", "[kernels][planted][recast]") {
  const recast_inputs t = make_recast_inputs(5);
  for (const fp8::recast& r : fp8::all_recasts()) {
    owned_problem p(t.view);
    kernels::cpu::recast_for_gfx942(p, r);
    CAPTURE(r.name);
    const bool all_on_k = r.factor == fp8::factor_home::k_scale;
    for (std::size_t j = 0; j < t.k_scale.size(); ++j) CHECK(p.k_scale[j] == t.k_scale[j] * (all_on_k ? 4 : 2));
    for (std::size_t x = 0; x < t.weights.size(); ++x) CHECK(p.weights[x] == t.weights[x] * (all_on_k ? 1 : 2));
  }
}

TEST_CASE("FlyDSL's recast, widened either way, matches the helper's 64-bit arithmetic pack by pack",
          "[kernels][planted][recast]") {
  const recast_inputs t = make_recast_inputs(GENERATE(6u, 7u), 5);
  for (const bool sign_extend : {false, true}) {
    owned_problem p(t.view);
    kernels::cpu::recast_for_gfx942(p, fp8::rules(fp8::recast_id::flydsl),
                                    sign_extend ? pack_recombine::sign_extended : pack_recombine::zero_extended);
    CAPTURE(sign_extend);
    CHECK(p.q == flydsl_packs(t.q, sign_extend));
    CHECK(p.k == flydsl_packs(t.k, sign_extend));
  }
  // The bug shows: a negative element 3 somewhere, so some pack differs between the two widenings.
  CHECK(flydsl_packs(t.k, true) != flydsl_packs(t.k, false));
}

TEST_CASE("a -0 scrubbed to 0x81 is e4m3fnuz's smallest negative subnormal, every other code as FlyDSL writes it",
          "[kernels][planted][recast]") {
  const recast_inputs t = make_recast_inputs(8);
  const fp8::recast flydsl = fp8::rules(fp8::recast_id::flydsl);
  owned_problem scrubbed(t.view), correct(t.view);
  kernels::cpu::recast_for_gfx942(scrubbed, kernels::cpu::scrubbing_negative_zero_to(flydsl, 0x81));
  kernels::cpu::recast_for_gfx942(correct, flydsl);
  std::size_t changed = 0;
  for (std::size_t x = 0; x < t.k.size(); ++x) {
    CAPTURE(x, t.k[x]);
    CHECK(scrubbed.k[x] == (t.k[x] == 0x80 ? 0x81 : correct.k[x]));
    changed += t.k[x] == 0x80;
  }
  CHECK(changed > 0);
  // Times the factor, 0x81 is -2^-9: minus the smallest e4m3fn subnormal where the input was -0.
  CHECK(fp8::decode(fp8::format::e4m3fnuz, 0x81) * fp8::recast_factor(flydsl) == -0x1p-9);
}
