// compute()'s contract at its edges: bad input throws std::invalid_argument naming the operand,
// windows are clamped, empty windows give -inf rows, rows are selected; sample_rows().
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "cases.hpp"

using namespace mqa;
using exact_test::owned_problem;

TEST_CASE("inconsistent sizes throw std::invalid_argument naming the operand", "[exact]") {
  owned_problem p(2, 3, 2, 4);
  exact::problem v = p.view();
  SECTION("q") { v.q = v.q.first(v.q.size() - 1); CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("q has 15 entries, expected 16")); }
  SECTION("k") { v.k = v.k.first(1); CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("k has 1 entries")); }
  SECTION("k_scale") { v.k_scale = {}; CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("k_scale")); }
  SECTION("weights") { v.weights = v.weights.first(3); CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("weights")); }
  SECTION("ks") { v.ks = v.ks.first(1); CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("ks")); }
  SECTION("ke") { v.ke = {}; CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("ke")); }
  SECTION("negative size") { v.heads = -2; CHECK_THROWS_AS(exact::compute(v), std::invalid_argument); }
  SECTION("rows out of range") {
    CHECK_THROWS_WITH(exact::compute(v, {exact::relu_rule::keeps_nan, 1, {0, 2}}), Catch::Contains("outside [0, m = 2)"));
    CHECK_THROWS_AS(exact::compute(v, {exact::relu_rule::keeps_nan, 1, {-1}}), std::invalid_argument);
  }
  SECTION("rows not ascending") {
    CHECK_THROWS_WITH(exact::compute(v, {exact::relu_rule::keeps_nan, 1, {1, 1}}), Catch::Contains("strictly ascending"));
  }
  SECTION("sizes beyond BLAS's 32-bit dimensions") {
    v.head_dim = (std::int64_t{1} << 20) + 1;
    CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("limit"));
  }
  SECTION("a format too wide for exact dots") {
    v.k_format = fp8::format::e8m0fnu;
    CHECK_THROWS_WITH(exact::compute(v), Catch::Contains("e8m0fnu"));
  }
}

TEST_CASE("windows are clamped to max(ks, 0) .. min(ke, n), and empty ones give -inf rows", "[exact]") {
  owned_problem p(7, 5, 2, 4);
  exact_test::fill_random(p, 3);
  p.ks = {-4, 2, 3, 6, 0, -9, 4};
  p.ke = {2, 9, 3, 8, -1, 5, 1};  // rows 2, 3, 4 and 6 are empty (ks == ke, ks >= n, ke <= 0, ks > ke)
  const exact::problem v = p.view();
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected{{0, 2}, {2, 5}, {3, 3}, {6, 6}, {0, 0}, {0, 5}, {4, 4}};
  for (std::int64_t i = 0; i < p.m; ++i) {
    CAPTURE(i);
    const exact::window w = exact::clamped_window(v, i);
    CHECK(w.begin == expected[static_cast<std::size_t>(i)].first);
    CHECK(w.end == expected[static_cast<std::size_t>(i)].second);
  }
  const exact::result r = exact::compute(v);
  const auto mismatch = exact_test::first_mismatch(p, r);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
  for (const std::int64_t i : {2, 3, 4, 6})
    for (std::int64_t j = 0; j < p.n; ++j) {
      CHECK(r.logits[static_cast<std::size_t>(i * p.n + j)] == -HUGE_VALF);
      CHECK(r.magnitude[static_cast<std::size_t>(i * p.n + j)] == 0.0);
    }
}

TEST_CASE("degenerate sizes: no rows, no keys, no heads, no head dimension", "[exact]") {
  auto [m, n, heads, dim] = GENERATE(table<std::int64_t, std::int64_t, std::int64_t, std::int64_t>({
      {0, 4, 2, 4}, {3, 0, 2, 4}, {3, 4, 0, 4}, {3, 4, 2, 0}}));
  CAPTURE(m, n, heads, dim);
  owned_problem p(m, n, heads, dim);
  exact_test::fill_random(p, 1);
  const exact::result r = exact::compute(p.view());
  CHECK(r.logits.size() == static_cast<std::size_t>(m * n));
  const auto mismatch = exact_test::first_mismatch(p, r);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
}

TEST_CASE("sample_rows: first, last, window edges, then seeded random rows", "[exact]") {
  owned_problem p(100, 50, 1, 1);
  for (std::int64_t i = 0; i < 100; ++i) {  // causal-like, with a few odd rows
    p.ks[static_cast<std::size_t>(i)] = 0;
    p.ke[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(std::min<std::int64_t>(i / 2 + 1, 50));
  }
  p.ks[40] = 60, p.ke[40] = 70;  // empty: beyond n
  p.ks[70] = -5;                 // clamped at 0
  const exact::problem v = p.view();
  const auto rows = exact::sample_rows(v, 12, 42);
  CHECK(rows.size() == 12);
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end());
  for (const std::int64_t must : {0, 99, 40, 70}) {
    CAPTURE(must);
    CHECK(std::find(rows.begin(), rows.end(), must) != rows.end());
  }
  CHECK(exact::sample_rows(v, 12, 42) == rows);  // deterministic
  CHECK(exact::sample_rows(v, 12, 43) != rows);  // the seed matters
  CHECK(exact::sample_rows(v, 200, 1).size() == 100);
  CHECK(exact::sample_rows(v, 2, 1) == std::vector<std::int64_t>{0, 99});
  // The sampled rows are valid options.rows.
  exact_test::fill_random(p, 8);
  const exact::result r = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 2, rows});
  CHECK(r.rows == rows);
  exact::problem bad = v;
  bad.ke = bad.ke.first(3);
  CHECK_THROWS_AS(exact::sample_rows(bad, 4, 1), std::invalid_argument);
}
