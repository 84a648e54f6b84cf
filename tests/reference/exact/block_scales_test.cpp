// Block-scaled e2m1fn operands: every value is its code's times 2^(byte - 127), one byte
// per 32 elements. The reference must stay exact, on both dot engines, against the rational oracle
// (which applies the scales itself).
#include <catch2/catch.hpp>

#include <random>
#include <stdexcept>

#include "cases.hpp"

using namespace mqa;
using exact_test::first_mismatch;
using exact_test::owned_problem;

namespace {

void random_scales(std::vector<std::uint8_t>& bytes, int lowest, int highest, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> byte(lowest, highest);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(byte(rng));
}

}  // namespace

TEST_CASE("block-scaled e2m1fn dots are exact on both engines, fp4 and fp8 operands mixed", "[exact][fp4]") {
  const auto [qf, kf, lowest, highest] = GENERATE(table<fp8::format, fp8::format, int, int>({
      {fp8::format::e2m1fn, fp8::format::e2m1fn, 125, 129},    // narrow spans: the float64 GEMM
      {fp8::format::e2m1fn, fp8::format::e2m1fn, 107, 147},    // the whole accepted range: int128
      {fp8::format::e4m3fn, fp8::format::e2m1fn, 107, 147},    // fp8 q, fp4 k
      {fp8::format::e2m1fn, fp8::format::e5m2, 115, 140},      // fp4 q, fp8 k
  }));
  const std::uint64_t seed = GENERATE(1u, 2u);
  owned_problem p(6 * exact_test::kScale, 40, 3, 64, qf, kf);
  exact_test::fill_random(p, seed);
  random_scales(p.q_block_scale, lowest, highest, seed * 7);
  random_scales(p.k_block_scale, lowest, highest, seed * 11);
  CAPTURE(fp8::traits(qf).name, fp8::traits(kf).name, lowest, highest, seed);
  const exact::result r = exact::compute(p.view());
  const auto mismatch = first_mismatch(p, r);
  INFO(mismatch.value_or("none"));
  CHECK_FALSE(mismatch);
}

TEST_CASE("a block scale moves exactly its 32 elements", "[exact][fp4]") {
  owned_problem p(1, 1, 1, 64, fp8::format::e2m1fn, fp8::format::e2m1fn);
  p.q.assign(64, 0x2);  // 1.0
  p.k.assign(64, 0x2);
  p.q_block_scale = {127 + 3, 127};  // block 0 times 8
  p.k_block_scale = {127, 127 - 1};  // block 1 times 1/2
  const exact::result r = exact::compute(p.view());
  CHECK(r.logits[0] == 32 * 8.0f + 32 * 0.5f);
}

TEST_CASE("block scales outside their rules are refused with what is accepted", "[exact][fp4]") {
  owned_problem p(2, 3, 2, 64, fp8::format::e2m1fn, fp8::format::e2m1fn);
  SECTION("a scale beyond 2^20") {
    p.k_block_scale[1] = 200;
    CHECK_THROWS_WITH(exact::compute(p.view()), Catch::Contains("k block scale 1") && Catch::Contains("accepted: 107 .. 147"));
  }
  SECTION("a byte that is no e2m1fn code") {
    p.q[5] = 16;
    CHECK_THROWS_WITH(exact::compute(p.view()), Catch::Contains("q[5] = 16 is not an e2m1fn code"));
  }
  SECTION("missing scales") {
    p.q_block_scale.pop_back();
    CHECK_THROWS_WITH(exact::compute(p.view()), Catch::Contains("q_block_scale has 7 entries, expected 8"));
  }
  SECTION("scales given to an fp8 operand") {
    owned_problem f(1, 1, 1, 32);
    f.k_block_scale = {127};
    CHECK_THROWS_WITH(exact::compute(f.view()), Catch::Contains("its format e4m3fn takes none"));
  }
  SECTION("head_dim not a multiple of 32") {
    owned_problem f(1, 1, 1, 48, fp8::format::e4m3fn, fp8::format::e2m1fn);
    CHECK_THROWS_AS(exact::compute(f.view()), std::invalid_argument);
  }
}

TEST_CASE("block-scaled dots take float64 or int128, never the int8 residues", "[exact][fp4]") {
  owned_problem p(16, 40, 3, 64, fp8::format::e2m1fn, fp8::format::e2m1fn);
  exact_test::fill_random(p, 5);
  SECTION("narrow spans: float64; the whole range: int128; int128 forced agrees bit for bit") {
    random_scales(p.q_block_scale, 126, 128, 3);
    random_scales(p.k_block_scale, 126, 128, 4);
    const exact::result narrow = exact::compute(p.view());
    CHECK(narrow.dots == exact::dot_engine::float64_gemm);
    exact::options o;
    o.dots = exact::dot_engine::int128;
    const exact::result forced = exact::compute(p.view(), o);
    CHECK(forced.dots == exact::dot_engine::int128);
    CHECK(forced.logits == narrow.logits);
    random_scales(p.q_block_scale, 107, 147, 5);
    random_scales(p.k_block_scale, 107, 147, 6);
    CHECK(exact::compute(p.view()).dots == exact::dot_engine::int128);
  }
  SECTION("int8 residues forced: refused, naming the engines that hold block scales") {
    exact::options o;
    o.dots = exact::dot_engine::int8_residues;
    CHECK_THROWS_WITH(exact::compute(p.view(), o), Catch::Contains("float64_gemm or int128"));
  }
}

TEST_CASE("known logits with block scales give the same magnitude and bfloat16 values", "[exact][fp4]") {
  owned_problem p(16, 40, 3, 64, fp8::format::e4m3fn, fp8::format::e2m1fn);
  exact_test::fill_random(p, 9);
  random_scales(p.k_block_scale, 110, 140, 9);
  exact::options o;
  o.bf16_logits = true;
  const exact::result full = exact::compute(p.view(), o);
  o.known_logits = full.logits;
  const exact::result known = exact::compute(p.view(), o);
  CHECK(known.logits == full.logits);
  CHECK(known.magnitude == full.magnitude);
  CHECK(known.logits_bf16 == full.logits_bf16);
}
