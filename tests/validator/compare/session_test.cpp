// compare::judge_session: an output judged in row blocks (each block's reference and centre
// computed for its rows only, as `check` does) gets judge()'s judgement exactly, findings, metrics,
// heat map and notes alike, for a prefill problem, a paged one, and a modelled contract judged on
// sampled rows.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"
#include "reports/report.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/inputs/inputs.hpp"
#include "support.hpp"

using namespace mqa;

namespace {

std::vector<std::int64_t> rows_in(const std::vector<std::int64_t>& rows, std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(out), [&](std::int64_t i) { return i >= first && i < last; });
  return out;
}

// The reference's logits with something of every kind wrong: one key scaled by 2 in every row
// (scale-factor evidence), one element far off, a leak outside a window, a never-written element,
// a NaN.
std::vector<float> damaged(const exact::problem& p, const exact::result& reference) {
  std::vector<float> out = reference.logits;
  for (std::int64_t i = 0; i < p.m; ++i) {
    const exact::window w = exact::clamped_window(p, i);
    for (std::int64_t j = w.begin; j < w.end; ++j) {
      float& v = out[static_cast<std::size_t>(i * p.n + j)];
      if (j == w.begin + 1 && std::isfinite(v)) v *= 2;
      if (i == p.m / 2 && j == w.end - 1 && std::isfinite(v)) v = v * 1.5f + 1.0f;
    }
    if (i == 3 && w.end < p.n) out[static_cast<std::size_t>(i * p.n + w.end)] = 0.0f;
    if (i == p.m - 2 && !w.empty()) out[static_cast<std::size_t>(i * p.n + w.begin)] = std::bit_cast<float>(compare::kPoisonBits);
    if (i == 5 && !w.empty()) out[static_cast<std::size_t>(i * p.n + w.end - 1)] = NAN;
  }
  return out;
}

// judge() over the whole output against the same judgement block by block.
void same_in_blocks(const exact::problem& p, const paged::problem* paged, kernels::contract contract,
                    const std::function<exact::result(const exact::options&)>& compute) {
  exact::options all;
  all.relu = contract.relu;
  const exact::result reference = compute(all);
  // A modelled contract's centre on a sample of the rows (as judge::centre_for takes past its
  // budget): every other row, the last one too.
  std::vector<std::int64_t> centre_rows;
  const mma::instruction* model = bounds::traits(contract.dot).model;
  std::optional<exact::result> centre;
  if (model) {
    for (std::int64_t i = 0; i < p.m; i += 2) centre_rows.push_back(i);
    if (centre_rows.back() != p.m - 1) centre_rows.push_back(p.m - 1);
    exact::options o = all;
    o.rows = centre_rows;
    o.dot_model = model;
    centre = compute(o);
  }
  const std::vector<float> output = damaged(p, reference);
  compare::subject in;
  in.problem = &p;
  in.paged = paged;
  in.reference = &reference;
  in.centre = centre ? &*centre : nullptr;
  in.output = {const_cast<float*>(output.data()), p.m, p.n, p.n};
  in.contract = contract;
  in.poisoned = true;
  in.threads = 2;
  const compare::judgement whole = compare::judge(in);
  REQUIRE_FALSE(whole.pass());

  const std::int64_t block = GENERATE(1, 3, 8);
  CAPTURE(block);
  compare::judge_session session(in);
  for (std::int64_t first = 0; first < p.m; first += block) {
    const std::int64_t last = std::min(p.m, first + block);
    exact::options o = all;
    o.rows.resize(static_cast<std::size_t>(last - first));
    std::iota(o.rows.begin(), o.rows.end(), first);
    const exact::result part = compute(o);
    if (!model) {
      session.add(part, nullptr);
      continue;
    }
    o.rows = rows_in(centre_rows, first, last);
    if (o.rows.empty()) continue;
    o.dot_model = model;
    const exact::result part_centre = compute(o);
    session.add(part, &part_centre);
  }
  const compare::judgement blocks = session.finish();
  CHECK(reports::judgement_json(blocks).dump(1) == reports::judgement_json(whole).dump(1));
  CHECK(blocks.notes == whole.notes);
}

}  // namespace

TEST_CASE("an output judged in row blocks gets judge()'s judgement", "[compare][session]") {
  const std::string text = R"([suite]
name = "s"
[[case]]
name = "prefill"
m = 19
n = 48
heads = 4
head_dim = 32
seed = 5
distribution = "outliers"
layout = { kind = "causal" }
[[case]]
name = "paged"
m = 12
n = 90
heads = 4
head_dim = 32
seed = 6
layout = { kind = "paged", next_n = 2, block_kv = 16, context_lengths = [90, 17, 0, 40, 64, 33] }
)";
  const cases::suite s = cases::parse_suite(text, "session.toml");
  const auto dot = GENERATE(bounds::dot_accumulator::fp32, bounds::dot_accumulator::sm90_wgmma);
  CAPTURE(static_cast<int>(dot));
  const kernels::contract contract = kernels::declared_arithmetic(dot);

  SECTION("prefill") {
    const inputs::tensors t = inputs::generate(s.cases[0]);
    const exact::problem p = inputs::problem_of(s.cases[0], t);
    same_in_blocks(p, nullptr, contract, [&](const exact::options& o) { return exact::compute(p, o); });
  }
  SECTION("paged") {
    const inputs::tensors t = inputs::generate(s.cases[1]);
    const exact::problem rows = inputs::problem_of(s.cases[1], t);
    const paged::problem p = inputs::paged_problem_of(s.cases[1], t);
    same_in_blocks(rows, &p, contract, [&](const exact::options& o) { return paged::compute(p, o); });
  }
}

// judge_session::add_clean: rows another comparator judged (the device comparator) and found clean.
TEST_CASE("rows judged elsewhere and clean finish the judgement as their own add() would", "[compare][session]") {
  test::hand_case c(8, 24, 2, 16);
  c.fill_patterned();
  for (std::int64_t i = 0; i < c.m; ++i) c.ks[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  c.finish();
  const compare::subject s = c.subject();
  auto rows_of = [&](std::vector<std::int64_t> rows) {
    exact::options o;
    o.rows = std::move(rows);
    return exact::compute(c.p, o);
  };
  auto judged = [&](const exact::result& reference) {
    compare::judge_session session(s);
    session.add(reference, nullptr);
    return session.finish();
  };

  SECTION("its metrics are the clean rows', the recall summed in row order, the decidedness summarised") {
    compare::clean_rows clean;
    clean.rows = {1, 3};
    clean.stats.rows_judged = 2;
    clean.stats.in_window = 44;
    clean.stats.compared = 44;
    for (const std::uint64_t u : {0, 0, 3, 2048}) clean.stats.ulps.add(u);
    clean.stats.max_error_over_bound_seen = 0.25;
    clean.stats.worst_row = 3, clean.stats.worst_col = 7;
    clean.stats.topk_rows = 2;
    clean.recalls = {{3, 0.5}, {1, 0.1}};
    clean.decided = {{1, {23, 8, 8, 15, 0}}, {3, {21, 8, 7, 13, 1}}};
    compare::judge_session session(s);
    session.add_clean(clean);
    const compare::judgement j = session.finish();
    CHECK(j.pass());
    CHECK(j.notes.empty());
    CHECK(j.stats.rows_judged == 2);
    CHECK(j.stats.ulps.counts == clean.stats.ulps.counts);
    CHECK(j.stats.ulps.max == 2048);
    CHECK(j.stats.worst_row == 3);
    CHECK(j.stats.worst_col == 7);
    CHECK(std::bit_cast<std::uint64_t>(j.stats.topk_recall_sum) == std::bit_cast<std::uint64_t>(0.1 + 0.5));
    CHECK(j.stats.decidedness.rows == 2);
    CHECK(j.stats.decidedness.ambiguous == 1);
    CHECK(j.stats.decidedness.worst_row == 3);
  }

  SECTION("after rows add() judged, the clean rows' counts and histograms join theirs") {
    const compare::judgement whole = judged(c.reference);
    const compare::judgement second_half = judged(rows_of({4, 5, 6, 7}));
    compare::clean_rows clean;
    clean.rows = {4, 5, 6, 7};
    clean.stats = second_half.stats;
    compare::judge_session session(s);
    session.add(rows_of({0, 1, 2, 3}), nullptr);
    session.add_clean(clean);  // no per-key evidence: the first part's keys stay as they were
    const compare::judgement j = session.finish();
    CHECK(j.pass());
    CHECK(j.stats.rows_judged == whole.stats.rows_judged);
    CHECK(j.stats.in_window == whole.stats.in_window);
    CHECK(j.stats.compared == whole.stats.compared);
    CHECK(j.stats.ulps.counts == whole.stats.ulps.counts);
    CHECK(j.stats.scaled.magnitude.units.counts == whole.stats.scaled.magnitude.units.counts);
    CHECK(j.stats.worst_row == whole.stats.worst_row);
    CHECK(j.stats.heat.error_over_bound == whole.stats.heat.error_over_bound);
  }

  SECTION("a modelled contract's sample and empty windows leave the notes add() leaves") {
    compare::clean_rows clean;
    clean.rows = {2, 6};
    clean.centred = true;
    clean.stats.rows_judged = 2;
    clean.stats.rows_with_empty_window = 2;
    compare::judge_session session(s);
    session.add_clean(clean);
    const compare::judgement j = session.finish();
    REQUIRE(j.notes.size() == 2);
    CHECK(j.notes[0] == "every window is empty: only masking was judged");
    CHECK(j.notes[1].starts_with("judged on 2 of 8 rows"));
  }
}
