// A cut keeps what it keeps: the exact logits of the cut problem are the source's at the kept rows
// and keys, windows keep exactly the kept keys inside and out-of-range rows out of range.
#include <catch2/catch.hpp>

#include <bit>

#include "validator/case/load.hpp"
#include "validator/cut/cut.hpp"

using namespace mqa;

namespace {

struct generated_case {
  cases::case_spec spec;
  inputs::tensors t;
  exact::problem p;
  explicit generated_case(const std::string& keys) {
    spec = cases::parse_suite("[suite]\nname = \"t\"\n[[case]]\nname = \"c\"\n" + keys, "t.toml").cases.front();
    t = inputs::generate(spec);
    p = inputs::problem_of(spec, t);
  }
};

}  // namespace

TEST_CASE("window bounds are remapped over the kept keys", "[cut]") {
  const std::vector<std::int64_t> keys{1, 4, 5, 9};  // of n = 10
  struct row {
    std::int32_t v, expected;
  };
  const auto r = GENERATE(values<row>({
      {0, 0}, {1, 0}, {2, 1}, {4, 1}, {5, 2}, {6, 3}, {9, 3}, {10, 4},  // kept keys below v
      {-1, -1}, {-3, -3},                                               // negative: unchanged
      {11, 5}, {14, 8},                                                 // past n: as far past n'
  }));
  CAPTURE(r.v);
  CHECK(cut::remap_bound(r.v, keys, 10) == r.expected);
}

TEST_CASE("the cut problem's exact logits are the source's at the kept rows and keys", "[cut]") {
  const generated_case g(
      "m = 12\nn = 40\nheads = 4\nhead_dim = 32\nlayout = { kind = \"causal\", out_of_range = true }\n"
      "special = [\"nan\", \"negative-k-scale\"]\nseed = 7");
  const exact::result whole = exact::compute(g.p);
  cut::selection s = cut::selection::everything(g.p);
  s.rows = {0, 3, 4, 8, 11};
  s.keys = {0, 1, 2, 7, 8, 20, 21, 22, 30, 38, 39};
  const cut::problem c = cut::cut_problem(g.p, s);
  const exact::problem v = c.view();
  REQUIRE(v.m == 5);
  REQUIRE(v.n == 11);
  const exact::result part = exact::compute(v);
  const exact::result expected = cut::cut_result(whole, g.p.n, s.rows, s.keys);
  for (std::size_t x = 0; x < part.logits.size(); ++x) {
    CAPTURE(x / 11, x % 11);
    CHECK(std::bit_cast<std::uint32_t>(part.logits[x]) == std::bit_cast<std::uint32_t>(expected.logits[x]));
  }
  for (std::size_t r = 0; r < s.rows.size(); ++r) {
    const exact::window before = exact::clamped_window(g.p, s.rows[r]), after = exact::clamped_window(v, static_cast<std::int64_t>(r));
    std::vector<std::int64_t> inside_before, inside_after;
    for (std::size_t k = 0; k < s.keys.size(); ++k) {
      if (s.keys[k] >= before.begin && s.keys[k] < before.end) inside_before.push_back(static_cast<std::int64_t>(k));
      if (static_cast<std::int64_t>(k) >= after.begin && static_cast<std::int64_t>(k) < after.end)
        inside_after.push_back(static_cast<std::int64_t>(k));
    }
    CAPTURE(s.rows[r]);
    CHECK(inside_before == inside_after);
    const bool out_of_range_before = g.p.ks[static_cast<std::size_t>(s.rows[r])] < 0 || g.p.ke[static_cast<std::size_t>(s.rows[r])] > g.p.n;
    const bool out_of_range_after = v.ks[r] < 0 || v.ke[r] > v.n;
    CHECK(out_of_range_before == out_of_range_after);
  }
}

TEST_CASE("heads and head_dim elements are cut from q, k and the weights", "[cut]") {
  const generated_case g("m = 3\nn = 5\nheads = 4\nhead_dim = 8");
  cut::selection s = cut::selection::everything(g.p);
  s.heads = {1, 3};
  s.dims = {0, 5, 6};
  const cut::problem c = cut::cut_problem(g.p, s);
  const exact::problem v = c.view();
  REQUIRE(v.heads == 2);
  REQUIRE(v.head_dim == 3);
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::size_t h = 0; h < 2; ++h) {
      CHECK(v.weights[static_cast<std::size_t>(i) * 2 + h] == g.p.weights[static_cast<std::size_t>(i * 4 + s.heads[h])]);
      for (std::size_t d = 0; d < 3; ++d)
        CHECK(v.q[(static_cast<std::size_t>(i) * 2 + h) * 3 + d] ==
              g.p.q[static_cast<std::size_t>((i * 4 + s.heads[h]) * 8 + s.dims[d])]);
    }
  for (std::size_t j = 0; j < 5; ++j)
    for (std::size_t d = 0; d < 3; ++d) CHECK(v.k[j * 3 + d] == g.p.k[j * 8 + static_cast<std::size_t>(s.dims[d])]);
}

TEST_CASE("a selection out of order or range is refused", "[cut]") {
  const generated_case g("m = 3\nn = 5\nheads = 2\nhead_dim = 4");
  cut::selection s = cut::selection::everything(g.p);
  SECTION("unsorted") { s.rows = {2, 1}; }
  SECTION("repeated") { s.keys = {1, 1}; }
  SECTION("past the end") { s.dims = {4}; }
  CHECK_THROWS_AS(cut::cut_problem(g.p, s), std::invalid_argument);
}
