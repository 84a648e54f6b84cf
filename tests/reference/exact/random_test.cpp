// compute() against the oracle, bit for bit, on random inputs in every supported format pair.
#include <catch2/catch.hpp>

#include "cases.hpp"

using namespace mqa;
using exact_test::fill_random;
using exact_test::first_mismatch;
using exact_test::kScale;
using exact_test::owned_problem;
using fp8::format;

TEST_CASE("random inputs match the oracle bit for bit in every format pair", "[exact]") {
  auto [qf, kf] = GENERATE(table<format, format>({
      {format::e4m3fn, format::e4m3fn},
      {format::e4m3fnuz, format::e4m3fnuz},
      {format::e5m2, format::e5m2},
      {format::e5m2fnuz, format::e5m2fnuz},
      {format::e4m3fn, format::e5m2},
      {format::e5m2fnuz, format::e4m3fnuz},
      {format::e4m3b11fnuz, format::e4m3fn},
  }));
  CAPTURE(fp8::traits(qf).name, fp8::traits(kf).name);
  owned_problem p(3 * kScale, 11 * kScale, 4, 16, qf, kf);
  fill_random(p, 1000 + static_cast<std::uint64_t>(qf) * 16 + static_cast<std::uint64_t>(kf));
  const exact::result r = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 2, {}});
  REQUIRE(r.rows.size() == static_cast<std::size_t>(p.m));
  const auto mismatch = first_mismatch(p, r);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
}

TEST_CASE("random inputs across several row and key blocks, many threads, both relu rules", "[exact]") {
  // More rows than a block (8) and keys than a key block (512) so that block edges are crossed.
  owned_problem p(10 + kScale, 530, 3, 8);
  fill_random(p, 77);
  p.ks[0] = 0, p.ke[0] = 530;  // one row spans every key block
  const auto rule = GENERATE(exact::relu_rule::keeps_nan, exact::relu_rule::fmax);
  const exact::result r = exact::compute(p.view(), {rule, 3, {}});
  const auto mismatch = first_mismatch(p, r, rule);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
}

TEST_CASE("the result does not depend on the thread count or on which rows are asked for", "[exact]") {
  owned_problem p(20, 64, 4, 32);
  fill_random(p, 5);
  const exact::result all = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 1, {}});
  const exact::result threaded = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 5, {}});
  CHECK(all.logits == threaded.logits);
  CHECK(all.magnitude == threaded.magnitude);
  const std::vector<std::int64_t> some{0, 7, 8, 19};
  const exact::result subset = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 2, some});
  REQUIRE(subset.rows == some);
  for (std::size_t r = 0; r < some.size(); ++r)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const auto full_at = static_cast<std::size_t>(some[r] * p.n + j);
      const auto sub_at = r * static_cast<std::size_t>(p.n) + static_cast<std::size_t>(j);
      CHECK(exact_test::bits(all.logits[full_at]) == exact_test::bits(subset.logits[sub_at]));
      CHECK(all.magnitude[full_at] == subset.magnitude[sub_at]);
    }
}

TEST_CASE("a perturbed result is detected by the comparison", "[exact]") {
  owned_problem p(2, 9, 2, 8);
  fill_random(p, 9);
  p.ks = {0, 0}, p.ke = {9, 9};
  exact::result r = exact::compute(p.view());
  REQUIRE(!first_mismatch(p, r));
  SECTION("one ulp off in one logit") {
    float& x = r.logits[5];
    x = std::nextafter(x, HUGE_VALF);
    const auto mismatch = first_mismatch(p, r);
    REQUIRE(mismatch);
    CHECK_THAT(*mismatch, Catch::Contains("logit[0, 5]"));
  }
  SECTION("a sign of zero") {
    p.w_at(1, 0) = 0, p.w_at(1, 1) = 0;
    r = exact::compute(p.view());
    REQUIRE(exact_test::bits(r.logits[9]) == 0u);  // exact zero is +0
    r.logits[9] = -0.0f;
    CHECK(first_mismatch(p, r));
  }
  SECTION("a magnitude below the exact A") {
    r.magnitude[3] = std::nextafter(r.magnitude[3] / (1 + 0x1p-40), 0.0);
    CHECK(first_mismatch(p, r));
  }
  SECTION("a window one key too long") {
    p.ke[1] = 8;
    CHECK(first_mismatch(p, r));
  }
}

TEST_CASE("the indexer's head count and head_dim (H=64, D=128) against the oracle", "[exact]") {
  // 64 heads make the fast path's bound (m = 64 terms) and the dgemm depth those of DeepSeek's shape.
  owned_problem p(2, 2 * kScale, 64, 128);
  fill_random(p, 64128);
  p.ks = {0, -1}, p.ke = {static_cast<std::int32_t>(p.n), static_cast<std::int32_t>(p.n) + 5};
  const exact::result r = exact::compute(p.view());
  const auto mismatch = first_mismatch(p, r);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
}

TEST_CASE("heads that nearly cancel: random pairs of equal weight and opposite sign", "[exact]") {
  // Heads 2k and 2k+1 get the same query up to one code and opposite weights, so each pair leaves
  // a small difference of large dots, or nothing: low bits and exact zeros, often past the fast path.
  const auto [qf, kf] = GENERATE(table<format, format>({{format::e4m3fn, format::e4m3fn}, {format::e5m2, format::e4m3fnuz}}));
  CAPTURE(fp8::traits(qf).name, fp8::traits(kf).name);
  owned_problem p(4 * kScale, 16, 8, 16, qf, kf);
  fill_random(p, 4242 + static_cast<std::uint64_t>(qf));
  std::mt19937_64 rng(7);
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t h = 0; h < p.heads; h += 2) {
      for (std::int64_t d = 0; d < p.head_dim; ++d) p.q_at(i, h + 1, d) = p.q_at(i, h, d);
      if (rng() % 2) {  // one code's last bit, unless that makes a NaN or Inf code
        std::uint8_t& code = p.q_at(i, h + 1, static_cast<std::int64_t>(rng() % 16));
        if (std::isfinite(fp8::decode(qf, code ^ 1u))) code ^= 1u;
      }
      p.w_at(i, h + 1) = -p.w_at(i, h);
    }
  const exact::result r = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 2, {}});
  const auto mismatch = first_mismatch(p, r);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
  CHECK(r.undecided_by_fast_path > 0);  // the construction does reach the fallback
}
