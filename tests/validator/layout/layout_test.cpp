// What each layout promises, on small cases written as a suite would write them.
#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <set>

#include "validator/case/load.hpp"
#include "validator/layout/layout.hpp"

using mqa::cases::case_spec;
using mqa::layout::windows;
using ints = std::vector<std::int32_t>;

namespace {

case_spec one_case(std::int64_t m, std::int64_t n, const std::string& layout, std::uint64_t seed = 0) {
  const std::string text = fmt::format(
      "[suite]\nname = \"t\"\n[[case]]\nname = \"c\"\nm = {}\nn = {}\nheads = 1\nhead_dim = 1\nseed = {}\nlayout = {}\n", m, n,
      seed, layout);
  return mqa::cases::parse_suite(text, "test.toml").cases.at(0);
}

windows make(std::int64_t m, std::int64_t n, const std::string& layout, std::uint64_t seed = 0) {
  return mqa::layout::make_windows(one_case(m, n, layout, seed));
}

bool in_range(const windows& w, std::int64_t n) {
  for (std::size_t i = 0; i < w.ks.size(); ++i)
    if (!(0 <= w.ks[i] && w.ks[i] <= w.ke[i] && w.ke[i] <= n)) return false;
  return true;
}

}  // namespace

TEST_CASE("causal: the queries are the last m tokens, row i sees keys 0 to n - m + i", "[layout]") {
  const windows w = make(4, 10, R"({ kind = "causal" })");
  CHECK(w.ks == ints{0, 0, 0, 0});
  CHECK(w.ke == ints{7, 8, 9, 10});
}

TEST_CASE("sliding: the causal end, at most `window` keys", "[layout]") {
  const windows w = make(4, 10, R"({ kind = "sliding", window = 8 })");
  CHECK(w.ks == ints{0, 0, 1, 2});
  CHECK(w.ke == ints{7, 8, 9, 10});
}

TEST_CASE("packed: each request's rows see only that request's keys, causally", "[layout]") {
  // Requests: 2 rows over keys [0, 4), 1 row over [4, 5), 3 rows over [5, 12).
  const windows w = make(6, 12, R"({ kind = "packed", query_lengths = [2, 1, 3], context_lengths = [4, 1, 7] })");
  CHECK(w.ks == ints{0, 0, 4, 5, 5, 5});
  CHECK(w.ke == ints{3, 4, 5, 10, 11, 12});
}

TEST_CASE("packed with `requests`: the seed splits rows and keys into that many requests", "[layout]") {
  for (std::uint64_t seed : {0u, 1u, 2u, 99u}) {
    CAPTURE(seed);
    const windows w = make(20, 70, R"({ kind = "packed", requests = 6 })", seed);
    REQUIRE(in_range(w, 70));
    // A request starts where ks changes; within one, ke grows by one per row.
    std::set<std::int32_t> starts(w.ks.begin(), w.ks.end());
    CHECK(starts.size() == 6);
    CHECK(w.ks.front() == 0);
    CHECK(w.ke.back() == 70);
    for (std::size_t i = 1; i < w.ks.size(); ++i) {
      if (w.ks[i] == w.ks[i - 1]) {
        CHECK(w.ke[i] == w.ke[i - 1] + 1);
      } else {
        CHECK(w.ks[i] >= w.ke[i - 1]);  // a new request: none of the previous one's keys
      }
    }
  }
}

TEST_CASE("context-parallel: DeepGEMM's two mirrored chunks", "[layout]") {
  // m = 4, n = 16: chunk 2, cp_size 4; default rank 4 / 3 = 1 holds chunks 1 and 6 of 8.
  const windows w = make(4, 16, R"({ kind = "context-parallel" })");
  CHECK(w.ks == ints{0, 0, 0, 0});
  CHECK(w.ke == ints{2, 3, 12, 13});
  // Rank 0: its first row sees nothing (DeepGEMM leaves the row's own key out).
  const windows first = make(4, 16, R"({ kind = "context-parallel", cp_rank = 0 })");
  CHECK(first.ke == ints{0, 1, 14, 15});
  CHECK(mqa::layout::empty_rows(first, 16) == 1);
}

TEST_CASE("compressed: ke = start + (position + 1) / ratio, so the first rows are empty", "[layout]") {
  const windows w = make(8, 6, R"({ kind = "compressed", ratio = 4, start = 2 })");
  CHECK(w.ks == ints{2, 2, 2, 2, 2, 2, 2, 2});
  CHECK(w.ke == ints{2, 2, 2, 3, 3, 3, 3, 4});
  CHECK(mqa::layout::empty_rows(w, 6) == 3);
  const windows later = make(2, 6, R"({ kind = "compressed", ratio = 4, first_position = 10 })");
  CHECK(later.ke == ints{2, 3});  // positions 10 and 11
}

TEST_CASE("random: windows anywhere, not 4-aligned, with the asked share of empty rows", "[layout]") {
  const std::int64_t m = 4000, n = 333;
  const windows w = make(m, n, R"({ kind = "random", empty_fraction = 0.25 })", 5);
  REQUIRE(in_range(w, n));
  const auto empty = mqa::layout::empty_rows(w, n);
  CHECK(empty > m / 4 - 150);
  CHECK(empty < m / 4 + 150);
  std::int64_t unaligned = 0, positive_start = 0, empty_not_at_zero = 0;
  for (std::size_t i = 0; i < w.ks.size(); ++i) {
    unaligned += w.ks[i] % 4 != 0;
    positive_start += w.ks[i] > 0;
    empty_not_at_zero += w.ks[i] == w.ke[i] && w.ks[i] > 0;
  }
  CHECK(unaligned > m / 2);
  CHECK(positive_start > m / 2);
  CHECK(empty_not_at_zero > 0);
  CHECK(mqa::layout::empty_rows(make(50, n, R"({ kind = "random", empty_fraction = 0.0 })"), n) == 0);
  CHECK(mqa::layout::empty_rows(make(50, n, R"({ kind = "random", empty_fraction = 1.0 })"), n) == 50);
}

TEST_CASE("layouts drawn from the seed are the same for the same seed and differ for another", "[layout]") {
  for (const char* layout : {R"({ kind = "random" })", R"({ kind = "packed", requests = 4 })"}) {
    CAPTURE(layout);
    const windows a = make(40, 90, layout, 1), b = make(40, 90, layout, 1), c = make(40, 90, layout, 2);
    CHECK(a.ks == b.ks);
    CHECK(a.ke == b.ke);
    CHECK((a.ks != c.ks || a.ke != c.ke));
  }
}

TEST_CASE("explicit: the arrays of the file, as they are", "[layout]") {
  const windows w = make(3, 9, R"({ kind = "explicit", ks = [0, 3, 5], ke = [9, 3, 6] })");
  CHECK(w.ks == ints{0, 3, 5});
  CHECK(w.ke == ints{9, 3, 6});
}

TEST_CASE("out_of_range plants the four window faults, and only when asked", "[layout]") {
  const std::int64_t m = 16, n = 48;
  CHECK(in_range(make(m, n, R"({ kind = "causal" })"), n));
  const windows w = make(m, n, R"({ kind = "causal", out_of_range = true })");
  int past_end = 0, negative_start = 0, inverted = 0, padding = 0, changed = 0;
  const windows clean = make(m, n, R"({ kind = "causal" })");
  for (std::size_t i = 0; i < w.ks.size(); ++i) {
    changed += w.ks[i] != clean.ks[i] || w.ke[i] != clean.ke[i];
    past_end += w.ke[i] > n;
    negative_start += w.ks[i] < 0 && w.ke[i] >= 0;
    inverted += w.ks[i] > w.ke[i];
    padding += w.ks[i] == -1 && w.ke[i] == -1;
  }
  CHECK(changed == m / 4);
  CHECK(past_end == 1);
  CHECK(negative_start == 1);
  CHECK(inverted == 1);
  CHECK(padding == 1);
}

TEST_CASE("empty rows, longest window and top-k's default count clamped windows", "[layout]") {
  const windows w{{-5, 3, 4, 7, -1}, {2, 3, 2, 20, -1}};  // [0,2) [3,3) inverted [7,10) padding, n = 10
  CHECK(mqa::layout::empty_rows(w, 10) == 3);
  CHECK(mqa::layout::longest_window(w, 10) == 3);
  CHECK(mqa::layout::default_topk(w, 10) == 3);
  CHECK(mqa::layout::default_topk(windows{{0}, {0}}, 10) == 1);  // nothing to rank: k is still a count
  CHECK(mqa::layout::default_topk(make(1, 5000, R"({ kind = "causal" })"), 5000) == 2048);
}
