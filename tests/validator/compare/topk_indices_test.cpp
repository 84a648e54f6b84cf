// Top-k indices judged (validator/compare/topk_indices.hpp): each class on a hand-made row, and a
// correct top-k kernel over 100 seeds of random layouts, judged with its logits through run_suite.
#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <bit>
#include <cmath>
#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../../reference/topk/oracle/admissible_sets.hpp"
#include "support/findings_text.hpp"
#include "kernels/contract.hpp"
#include "kernels/cpu/topk.hpp"
#include "reference/bounds/accumulators.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/compare/topk_indices.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/verdict/verdict.hpp"

using namespace mqa;

namespace {

// A row of six keys [10, 16): exact values 6, 5, 4, 3, 2, 1 (key 10 the largest), each +-0.25,
// except keys 12 and 13 (4 and 3), which overlap: +-1.
struct hand_row {
  std::vector<double> exact{6, 5, 4, 3, 2, 1};
  std::vector<topk::interval> intervals;
  hand_row() {
    for (std::size_t t = 0; t < exact.size(); ++t) intervals.push_back(topk::interval_of(exact[t], t == 2 || t == 3 ? 1.0 : 0.25));
  }
};

std::set<std::string> classes_of(const std::vector<std::int64_t>& entries, kernels::topk_convention c = {.sorted = true},
                                 std::int64_t begin = 10, std::int64_t end = 16) {
  static const hand_row h;
  compare::indices_tallies t;
  const auto from = static_cast<std::size_t>(begin - 10), to = static_cast<std::size_t>(end - 10);
  t.judge({3, begin, end, begin, entries, {h.exact.data() + from, to - from}, {h.intervals.data() + from, to - from}}, c);
  std::vector<compare::finding> found;
  t.append_findings(found);
  std::set<std::string> out;
  for (const auto& f : found) out.insert(std::string(compare::to_string(f.kind)));
  return out;
}

// The classes found in one row of keys [0, w) with these exact values and allowances.
std::set<std::string> classes_in(const std::vector<double>& exact, const std::vector<double>& bounds,
                                 const std::vector<std::int64_t>& entries, kernels::topk_convention c = {}) {
  std::vector<topk::interval> intervals;
  for (std::size_t t = 0; t < exact.size(); ++t) intervals.push_back(topk::interval_of(exact[t], bounds[t]));
  compare::indices_tallies t;
  t.judge({0, 0, static_cast<std::int64_t>(exact.size()), 0, entries, exact, intervals}, c);
  std::vector<compare::finding> found;
  t.append_findings(found);
  std::set<std::string> out;
  for (const auto& f : found) out.insert(std::string(compare::to_string(f.kind)));
  return out;
}

}  // namespace

TEST_CASE("each way a row's indices go wrong has its class", "[compare][topk-indices]") {
  using S = std::set<std::string>;
  SECTION("the top 3, in order, and a tie the bounds allow either way") {
    CHECK(classes_of({10, 11, 12}).empty());
    CHECK(classes_of({10, 11, 13}).empty());  // 3 +- 1 may pass 4 +- 1
    CHECK(classes_of({10, 13, 11}, {.sorted = false}).empty());
    CHECK(classes_of({0, 1, 2}, {.columns = kernels::columns_layout::relative, .sorted = true}).empty());
  }
  SECTION("a key twice") { CHECK(classes_of({10, 11, 11}).count("topk-duplicate")); }
  SECTION("an index past the window, or the relative one read as absolute") {
    CHECK(classes_of({10, 11, 16}) == S{"topk-outside-window"});  // 10 and 11 kept: nothing above them dropped
    CHECK(classes_of({0, 1, 2}).count("topk-outside-window"));
    CHECK(classes_of({10, 11, 12}, {.columns = kernels::columns_layout::relative, .sorted = true}).count("topk-outside-window"));
  }
  SECTION("padding: -1 only where the window is short, in every slot past it") {
    CHECK(classes_of({10, 11, 12, 13, 14, 15, -1, -1}).empty());
    CHECK(classes_of({10, 11, 12, 13, 14, 15, 15, -1}).count("topk-padding"));
    CHECK(classes_of({10, 11, -1}) == S{"topk-padding"});
  }
  SECTION("a dropped key certainly above a kept one") {
    CHECK(classes_of({10, 11, 14}) == S{"topk-inadmissible"});
    CHECK(classes_of({11, 12, 13}).count("topk-inadmissible"));
  }
  SECTION("order, only where the convention promises it") {
    CHECK(classes_of({11, 10, 12}) == S{"topk-unsorted"});
    CHECK(classes_of({11, 10, 12}, {.sorted = false}).empty());
    CHECK(classes_of({10, 11, 13, 12, 14, 15}).empty());  // 4 +- 1 and 3 +- 1: either order
    // 11 (5 +- 0.25) is surely above 13 (3 +- 1), with 12 (4 +- 1) between them overlapping both:
    // no adjacent pair is out of order, yet no descending values fit the list.
    CHECK(classes_of({10, 13, 12, 11, 14, 15}) == S{"topk-unsorted"});
    CHECK(classes_of({10, 12, 13, 11, 14, 15}) == S{"topk-unsorted"});
    CHECK(classes_of({10, 12, 11, 13, 14, 15}).empty());  // 4 +- 1 may reach 5 +- 0.25
  }
}

TEST_CASE("NaN ranks strictly above +inf, as torch.topk ranks it", "[compare][topk-indices]") {
  using S = std::set<std::string>;
  const std::vector<double> exact{INFINITY, NAN, 1}, bounds(3, 0.5);
  CHECK(classes_in(exact, bounds, {1}).empty());
  CHECK(classes_in(exact, bounds, {0}) == S{"topk-inadmissible"});
  CHECK(classes_in(exact, bounds, {1, 0}, {.sorted = true}).empty());
  CHECK(classes_in(exact, bounds, {0, 1}, {.sorted = true}) == S{"topk-unsorted"});
}

TEST_CASE("a NaN is promised whatever its bound; an excused overflow or a NaN bound ranks anywhere below it",
          "[compare][topk-indices]") {
  using S = std::set<std::string>;
  SECTION("a NaN key dropped for an excused overflow, or one with a NaN bound, is inadmissible") {
    CHECK(classes_in({NAN, 1}, {INFINITY, 0.5}, {1}) == S{"topk-inadmissible"});
    CHECK(classes_in({NAN, 1}, {NAN, 0.5}, {1}) == S{"topk-inadmissible"});
    CHECK(classes_in({NAN, 1}, {0.5, INFINITY}, {1}) == S{"topk-inadmissible"});
    CHECK(classes_in({NAN, 1}, {0.5, NAN}, {1}) == S{"topk-inadmissible"});
  }
  SECTION("a key with a NaN bound, or an excused overflow, may outrank any number but not a NaN") {
    for (const double bound : {static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
      CAPTURE(bound);
      CHECK(classes_in({-INFINITY, 5, 1}, {bound, 0.5, 0.5}, {0}).empty());
      CHECK(classes_in({-2, 5, INFINITY}, {bound, 0.5, 0.5}, {0, 2}, {.sorted = true}).empty());  // both +inf
      CHECK(classes_in({-2, 5, NAN}, {bound, 0.5, 0.5}, {2, 0}, {.sorted = true}).empty());
      CHECK(classes_in({-2, 5, NAN}, {bound, 0.5, 0.5}, {0, 2}, {.sorted = true}) == S{"topk-unsorted"});
    }
  }
}

TEST_CASE("a duplicate or a misplaced -1 is its own fault, not an inadmissible kept set", "[compare][topk-indices]") {
  using S = std::set<std::string>;
  const std::vector<double> exact{4, 3, 2, 1}, bounds(4, 0.25);
  // k = 3: the top 3 are {0, 1, 2}; a lost slot displacing key 1 leaves {0, 2}, part of them.
  CHECK(classes_in(exact, bounds, {0, 0, 2}) == S{"topk-duplicate"});
  CHECK(classes_in(exact, bounds, {0, -1, 2}) == S{"topk-padding"});
  CHECK(classes_in(exact, bounds, {0, 7, 2}) == S{"topk-outside-window"});
  CHECK(classes_in(exact, bounds, {2, 2, 2}) == S{"topk-duplicate"});  // two slots lost, two keys above
  // Keys 1 and 2 both surely above the kept key 3, one slot free: no admissible set holds {0, 3}.
  CHECK(classes_in(exact, bounds, {0, 0, 3}) == S{"topk-duplicate", "topk-inadmissible"});
  CHECK(classes_in(exact, bounds, {0, -1, 3}) == S{"topk-padding", "topk-inadmissible"});
  CHECK(classes_in(exact, bounds, {3, 3, 3}) == S{"topk-duplicate", "topk-inadmissible"});
}

// The rule against the oracle, which shares no code with it: on small random rows, a kept set
// (fewer keys than due where slots are lost to duplicates, -1 or outside indices) is judged
// inadmissible exactly when no admissible set of k' keys contains it.
TEST_CASE("inadmissible exactly when the kept keys extend to no admissible set", "[compare][topk-indices]") {
  std::mt19937_64 rng(20261204);
  int faulty = 0, fine = 0, short_sets = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const int w = 1 + static_cast<int>(rng() % 8);
    const int k = 1 + static_cast<int>(rng() % 10);
    const int due = std::min(k, w);
    std::vector<double> exact, bounds;
    std::vector<test::topk_oracle::key_interval> plain;
    for (int j = 0; j < w; ++j) {
      exact.push_back(static_cast<double>(static_cast<int>(rng() % 9) - 4));
      const double choices[] = {0.0, 0.5, 1.0, 2.0};
      bounds.push_back(choices[rng() % 4]);
      plain.push_back({exact.back() - bounds.back(), exact.back() + bounds.back()});
    }
    // A random set of s <= k' distinct keys, the other slots lost to repeats, -1 or outside keys.
    const int s = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(due));
    std::vector<std::int64_t> order(static_cast<std::size_t>(w));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::int64_t> entries(order.begin(), order.begin() + s);
    std::uint32_t kept = 0;
    for (const std::int64_t key : entries) kept |= 1u << key;
    while (static_cast<int>(entries.size()) < k) {
      const int how = static_cast<int>(rng() % 3);
      entries.push_back(how == 0 ? -1 : how == 1 ? entries[rng() % static_cast<std::uint64_t>(s)] : w + 3);
    }
    std::shuffle(entries.begin(), entries.end(), rng);
    const bool expected = !test::topk_oracle::extendable(plain, kept, k);
    CAPTURE(trial, w, k, exact, bounds, entries);
    CHECK(classes_in(exact, bounds, entries).count("topk-inadmissible") == (expected ? 1u : 0u));
    (expected ? faulty : fine) += 1;
    short_sets += s < due ? 1 : 0;
  }
  // Both outcomes, and many sets with slots lost.
  CHECK(faulty > 400);
  CHECK(fine > 400);
  CHECK(short_sets > 1000);
}

// A modelled contract judges its sampled rows only (the model runs on the CPU); an index kernel's
// window, duplicate and padding faults need no exact value and are found on the other rows too.
TEST_CASE("under a modelled contract, indices are checked for structure on every row", "[compare][topk-indices]") {
  const cases::suite s = cases::parse_suite(R"([suite]
name = "s"
[[case]]
name = "c"
m = 16
n = 40
heads = 4
head_dim = 32
seed = 9
layout = { kind = "causal" }
)", "s.toml");
  const inputs::tensors t = inputs::generate(s.cases[0]);
  const exact::problem p = inputs::problem_of(s.cases[0], t);
  const kernels::contract contract = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  const exact::result reference = exact::compute(p, {});
  exact::options sampled;
  sampled.rows = {0, 4, 8, 12, 15};  // rows 9 and 10 left out
  sampled.dot_model = bounds::traits(contract.dot).model;
  REQUIRE(sampled.dot_model != nullptr);
  const exact::result centre = exact::compute(p, sampled);
  const std::int64_t k = 4;
  std::vector<std::int64_t> indices(static_cast<std::size_t>(p.m * k));
  const kernels::indices_view v{indices.data(), p.m, k};
  kernels::cpu::select_topk({}, p, {const_cast<float*>(reference.logits.data()), p.m, p.n, p.n}, v);
  compare::subject in;
  in.problem = &p;
  in.reference = &reference;
  in.centre = &centre;
  in.output = {const_cast<float*>(reference.logits.data()), p.m, p.n, p.n};
  in.contract = contract;
  in.threads = 1;
  in.indices = v;
  auto structural = [&] {
    std::map<std::string, std::int64_t> first_row;
    for (const auto& f : compare::judge(in).findings)
      if (f.kind == compare::finding_class::topk_duplicate || f.kind == compare::finding_class::topk_padding ||
          f.kind == compare::finding_class::topk_outside_window)
        first_row[std::string(compare::to_string(f.kind))] = f.first_row;
    return first_row;
  };
  CHECK(structural().empty());
  REQUIRE(exact::clamped_window(p, 9).end - exact::clamped_window(p, 9).begin >= k);
  v.row(9)[3] = v.row(9)[0];
  v.row(10)[1] = -1;
  const auto found = structural();
  CHECK(found == std::map<std::string, std::int64_t>{{"topk-duplicate", 9}, {"topk-padding", 10}});
  const compare::judgement j = compare::judge(in);
  REQUIRE(!j.notes.empty());
  CHECK(j.notes.back().find("judged on 5 of 16 rows") != std::string::npos);
  CHECK(j.notes.back().ends_with("the other 11 for unwritten values, masking, NaN and infinities, and the top-k indices "
                                 "for their window, duplicates and padding"));
}

TEST_CASE("a finding of the indices carries its row, keys and values", "[compare][topk-indices]") {
  hand_row h;
  compare::indices_tallies t;
  t.judge({7, 10, 16, 10, std::vector<std::int64_t>{10, 11, 14}, h.exact, h.intervals}, {.sorted = true});
  std::vector<compare::finding> found;
  t.append_findings(found);
  REQUIRE(found.size() == 1);
  const compare::finding& f = found[0];
  CHECK(f.kind == compare::finding_class::topk_inadmissible);
  CHECK(f.count == 1);
  CHECK(f.first_row == 7);
  CHECK(f.first_col == 12);  // the dropped key with the highest lower end
  CHECK(std::bit_cast<float>(f.expected_bits) == 4.0f);
  CHECK(std::bit_cast<float>(f.actual_bits) == 2.0f);  // the kept key 14's exact value
  CHECK(f.detail.find("drops key 12 (exact 4, lower end 3) and keeps key 14 (exact 2, upper end 2.25)") != std::string::npos);
}

// Random layouts, sizes and k, 100 seeds: the correct indexer (fp32-naive logits, then the top-k
// kernel) passes every one, with its indices judged; each mutant of the same stage in the same run
// must be caught somewhere with the class it plants, so the run can fail.
TEST_CASE("a correct top-k kernel passes 100 seeds of random layouts", "[compare][topk-indices]") {
  std::mt19937_64 rng(32);
  std::string toml = "[suite]\nname = \"topk-seeds\"\n[defaults]\nheads = 4\nhead_dim = 32\n";
  const char* layouts[] = {"{ kind = \"random\" }", "{ kind = \"random\", out_of_range = true }",
                           "{ kind = \"causal\" }", "{ kind = \"packed\", requests = 3 }",
                           "{ kind = \"sliding\", window = 17 }"};
  for (int seed = 1; seed <= 100; ++seed) {
    const std::int64_t m = 8 + static_cast<std::int64_t>(rng() % 24), n = m + static_cast<std::int64_t>(rng() % 200);
    const std::int64_t k = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
    toml += fmt::format("[[case]]\nname = \"s{}\"\nseed = {}\nm = {}\nn = {}\ntopk = {}\nlayout = {}\n", seed, seed, m, n,
                        k, layouts[seed % 5]);
    if (seed % 10 == 0) toml += "special = [\"nan\"]\nspecial_in = \"k\"\n";
  }
  const cases::suite s = cases::parse_suite(toml, "topk-seeds.toml");
  verdict::run_options o;
  // Each planted bug and the class it must show on some seed.
  const std::map<std::string, std::string> planted{
      {"mutant-topk-duplicate", "topk-duplicate"},      {"mutant-topk-one-past-end", "topk-outside-window"},
      {"mutant-topk-relative-as-absolute", "topk-outside-window"}, {"mutant-topk-no-padding", "topk-padding"},
      {"mutant-topk-bf16-ranked", "topk-inadmissible"}, {"mutant-topk-nan-lowest", "topk-inadmissible"},
      {"mutant-topk-ascending", "topk-unsorted"}};
  o.variants = {"fp32-topk"};
  for (const auto& [mutant, finding] : planted) o.variants.push_back(mutant);
  o.threads = 1;
  o.diagnose = false;
  const verdict::suite_report r = verdict::run_suite(s, o);
  std::int64_t correct = 0;
  for (const auto& c : r.results) {
    if (c.variant != "fp32-topk") continue;
    ++correct;
    std::string found;
    for (const auto& f : c.judgement.findings) found += fmt::format("{}: {}; ", compare::to_string(f.kind), f.detail);
    CAPTURE(c.case_name, c.error, found);
    CHECK(c.outcome() == "pass");
    CHECK(c.judgement.stats.decidedness.rows > 0);
  }
  CHECK(correct == 100);
  CHECK(r.expectations_hold());
  std::set<std::string> shown;  // "mutant class" pairs seen
  for (const auto& c : r.results)
    for (const auto& f : c.judgement.findings) shown.insert(c.variant + " " + std::string(compare::to_string(f.kind)));
  for (const auto& [mutant, finding] : planted) {
    CAPTURE(mutant, finding);
    CHECK(shown.count(mutant + " " + finding));
  }
}
