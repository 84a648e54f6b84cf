// Delta debugging finds a 1-minimal selection, and a shrunk bundle is an ordinary bundle whose
// arrays are its inputs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "support/scratch_dir.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/shrink/shrink.hpp"
#include "validator/shrink/shrunk_bundle.hpp"

using namespace mqa;

namespace {

cut::selection everything(std::int64_t m, std::int64_t n, std::int64_t heads, std::int64_t dims) {
  auto iota = [](std::int64_t count) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(count));
    for (std::int64_t x = 0; x < count; ++x) v[static_cast<std::size_t>(x)] = x;
    return v;
  };
  return {iota(m), iota(n), iota(heads), iota(dims)};
}

bool holds(const std::vector<std::int64_t>& v, std::int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST_CASE("minimize keeps exactly what the failure needs", "[shrink]") {
  // Fails when rows 3 and 17 and key 40 are kept (a bug that needs two rows and one key).
  std::size_t calls = 0;
  const shrink::still_fails fails = [&](const cut::selection& s) {
    ++calls;
    return holds(s.rows, 3) && holds(s.rows, 17) && holds(s.keys, 40);
  };
  shrink::plan p;
  SECTION("rows and keys only") {
    const shrink::outcome o = shrink::minimize(everything(32, 100, 8, 64), fails, p);
    CHECK(o.kept.rows == std::vector<std::int64_t>{3, 17});
    CHECK(o.kept.keys == std::vector<std::int64_t>{40});
    CHECK(o.kept.heads.size() == 8);
    CHECK(o.kept.dims.size() == 64);
    CHECK(o.candidates == calls);
    CHECK_FALSE(o.budget_ran_out);
  }
  SECTION("heads and head_dim in whole groups") {
    p.heads = p.dims = true;
    p.dim_group = 32;
    const shrink::outcome o = shrink::minimize(everything(32, 100, 8, 64), fails, p);
    CHECK(o.kept.heads.size() == 1);
    CHECK(o.kept.dims.size() == 32);
  }
  SECTION("the focus row alone is tried first") {
    p.focus_row = 3;
    const shrink::outcome o = shrink::minimize(everything(32, 100, 8, 64), fails, p);
    CHECK(o.kept.rows == std::vector<std::int64_t>{3, 17});  // row 3 alone does not fail
  }
  SECTION("a spent budget stops at a selection that still fails") {
    p.max_candidates = 5;
    const shrink::outcome o = shrink::minimize(everything(32, 100, 8, 64), fails, p);
    CHECK(o.budget_ran_out);
    CHECK(o.candidates == 5);
    CHECK(fails(o.kept));
  }
}

TEST_CASE("ranges are written compactly", "[shrink]") {
  CHECK(shrink::ranges({0, 1, 2, 3, 7, 9, 10}) == "0-3, 7, 9-10");
  CHECK(shrink::ranges({5}) == "5");
  CHECK(shrink::ranges({0, 2, 4, 6, 8, 10, 12}, 12) == "0, 2, 4, 6, ...");
}

TEST_CASE("a shrunk bundle is an ordinary bundle whose arrays are its inputs", "[shrink]") {
  const test::scratch_dir dir("shrunk-bundle");
  const cases::suite s = cases::parse_suite(
      "[suite]\nname = \"quick\"\n[[case]]\nname = \"c\"\nm = 10\nn = 30\nheads = 4\nhead_dim = 16\n"
      "layout = { kind = \"sliding\", window = 7 }\nspecial = [\"negative-k-scale\"]\n",
      "q.toml");
  const bundle::bundle original = bundle::make_bundle(s.cases.front(), s.name);
  const exact::problem p = inputs::problem_of(original.spec, original.inputs);
  cut::selection kept = cut::selection::everything(p);
  kept.rows = {2, 9};
  kept.keys = {0, 5, 17, 18, 25, 29};
  const bundle::bundle small = shrink::shrunk_bundle(original, kept, cut::cut_problem(p, kept));

  CHECK(small.spec.m == 2);
  CHECK(small.spec.n == 6);
  CHECK(small.spec.layout.kind == cases::layout_kind::explicit_windows);
  // Rows 2 and 9 see [16, 23) and [23, 30): of the kept keys, 17, 18 and 25, 29.
  CHECK(small.spec.layout.ks == std::vector<std::int64_t>{2, 4});
  CHECK(small.spec.layout.ke == std::vector<std::int64_t>{4, 6});
  CHECK(*small.spec.topk <= 6);
  CHECK(small.spec.origin == "shrunk from case 'c' of suite 'quick' (m = 10, n = 30, heads = 4, head_dim = 16)");
  CHECK(small.spec.description == "kept rows [2, 9], keys [0, 5, 17-18, 25, 29], heads [0-3], head_dim elements [0-15]");

  bundle::write_bundle(small, dir.root / "small");
  const bundle::bundle back = bundle::load_bundle(dir.root / "small");  // no generator asked
  CHECK(back.spec.origin == small.spec.origin);
  CHECK(back.inputs.q == small.inputs.q);
  CHECK(back.reference == small.reference);
  CHECK_THROWS_WITH(inputs::generate(back.spec), Catch::Contains("has origin") && Catch::Contains("no generator"));
}
