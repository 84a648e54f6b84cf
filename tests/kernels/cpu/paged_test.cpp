// The CPU model's paged decode path (kernels/cpu/paged.hpp): every correct model runs it and
// passes under its own contract, and every planted bug of the decode path is caught with a
// finding of its class, each on the case shape that shows it.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <map>
#include <set>

#include "kernels/cpu/registry.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/references.hpp"
#include "validator/runner/runner.hpp"
#include "support/findings_text.hpp"
#include "support/one_case.hpp"
#include "support/paged_case.hpp"

using namespace mqa;

namespace {

using test::paged_case;

paged_case make(const std::string& layout, const std::string& extra = "") {
  return test::generate_paged(
      test::parse_one_case({.m = 12, .n = 260, .heads = 8, .head_dim = 32,
                            .keys = fmt::format("seed = 31\n{}\nlayout = {}", extra, layout)})
          .cases.front());
}

std::optional<runner::outcome> run_judged(const kernels::variant& v, const paged_case& c) {
  if (const auto* model = bounds::traits(v.declared.dot).model)
    if (mma::why_unusable(*model, c.problem.q_format, c.problem.k_format, c.problem.head_dim, v.declared.promote_every))
      return std::nullopt;
  if (v.refuses && v.refuses(c.rows)) return std::nullopt;
  exact::options o;
  o.relu = v.declared.relu;
  const exact::result reference = paged::compute(c.problem, o);
  const auto centre = judge::centre_for(v.declared, c.rows, &c.problem, reference);
  return runner::run(v, c.rows, &c.problem, reference, centre ? &*centre : nullptr, std::nullopt);
}

}  // namespace

TEST_CASE("correct CPU models pass on the paged operation under their own contracts", "[kernels][paged]") {
  const auto [layout, extra] = GENERATE(table<std::string, std::string>({
      {R"({ kind = "paged", next_n = 2, block_kv = 16, context_lengths = [0, 32, 100, 259, 17, 1], num_blocks = 60 })", ""},
      {R"({ kind = "paged", next_n = 3, block_kv = 8, context_lens_2d = true, fill = "shared-prefix", shared_blocks = 3, unused_entries = "minus-one", page_bytes = 512 })",
       R"(special = ["nan", "negative-k-scale", "zero-k-scale"])"},
      {R"({ kind = "paged", next_n = 4, block_kv = 64, unused_entries = "stale", fill = "sequential" })",
       "q_format = \"e5m2\"\nk_format = \"e5m2\""},
  }));
  const paged_case c = make(layout, extra);
  int judged = 0;
  for (const auto& v : kernels::cpu::cpu_variants()) {
    if (!v.must_produce.empty()) continue;
    // bf16 logits and relative columns are the prefill kernel's options only.
    if (!v.run_paged) {
      CHECK((v.declared.logits == bounds::logits_precision::bf16 || v.declared.columns == kernels::columns_layout::relative));
      continue;
    }
    const auto r = run_judged(v, c);
    if (!r) continue;
    ++judged;
    CAPTURE(v.name, layout, test::findings_text(*r));
    CHECK(r->judgement.pass());
    if (v.name == "exact") CHECK(r->judgement.stats.ulps.max == 0);
  }
  CHECK(judged >= 6);
}

TEST_CASE("every planted bug of the decode path is caught with its class", "[kernels][paged][mutants]") {
  // Each bug on the shape that shows it: a cache past the simulated 2^16 bytes, 1-D lengths with
  // next_n > 1 (L - t), 2-D lengths that differ within a request, a shuffled pool.
  const std::map<std::string, std::string> shape{
      {"mutant-paged-block-offset32",
       R"({ kind = "paged", next_n = 2, block_kv = 64, context_lengths = [260, 130, 200, 64, 250, 99], num_blocks = 60 })"},
      {"mutant-paged-interleaved-scales", R"({ kind = "paged", next_n = 2, block_kv = 16 })"},
      {"mutant-paged-window-without-next-n", R"({ kind = "paged", next_n = 3, block_kv = 16, context_min = 3 })"},
      {"mutant-paged-logical-blocks", R"({ kind = "paged", next_n = 1, block_kv = 16, context_min = 50 })"},
      {"mutant-paged-shared-context-length", R"({ kind = "paged", next_n = 3, block_kv = 32, context_lens_2d = true })"},
  };
  const std::vector<kernels::variant> variants = kernels::cpu::cpu_variants();
  const kernels::variant* correct = nullptr;
  for (const auto& w : variants)
    if (w.name == "fp32-naive") correct = &w;
  REQUIRE(correct != nullptr);
  int mutants = 0;
  for (const auto& v : variants) {
    if (v.must_produce.empty() || v.run) continue;  // the paged-only ones
    ++mutants;
    CAPTURE(v.name);
    REQUIRE(shape.count(v.name) == 1);
    const paged_case c = make(shape.at(v.name));
    const runner::outcome r = *run_judged(v, c);
    std::set<std::string> classes;
    for (const auto& f : r.judgement.findings) classes.insert(std::string(compare::to_string(f.kind)));
    bool caught = false;
    for (const auto& expected : v.must_produce) caught = caught || classes.count(expected);
    CAPTURE(test::findings_text(r));
    CHECK(caught);
    // The same kernel without its bug is clean on the same case: the finding is the bug's.
    CHECK(run_judged(*correct, c)->judgement.pass());
  }
  CHECK(mutants == 5);
}

TEST_CASE("the simulated 32-bit block offset reads zeros from the first page past 2^16 bytes", "[kernels][paged]") {
  // Pages of 64 x (32 + 4) = 2304 bytes: page 28 starts at 64512 < 2^16, page 29 at 66816.
  const paged_case c = make(
      R"({ kind = "paged", next_n = 1, block_kv = 64, max_blocks = 2, num_blocks = 40, context_lengths = [64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64], block_table = [[28, 0], [29, 0], [0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [5, 0], [6, 0], [7, 0], [8, 0], [39, 0]] })");
  const std::vector<kernels::variant> variants = kernels::cpu::cpu_variants();
  const kernels::variant* mutant = nullptr;
  for (const auto& v : variants)
    if (v.name == "mutant-paged-block-offset32") mutant = &v;
  REQUIRE(mutant != nullptr);
  const auto stride = runner::padded_stride(c.problem.max_context);
  std::vector<float> out(static_cast<std::size_t>(c.problem.rows() * stride), 1.0f);
  mutant->run_paged(c.problem, {out.data(), c.problem.rows(), c.problem.max_context, stride}, 0);
  const exact::result reference = paged::compute(c.problem);
  auto row = [&](std::int64_t i) { return out.data() + i * stride; };
  auto exact_row = [&](std::int64_t i) { return reference.logits.data() + i * c.problem.max_context; };
  int nonzero_right = 0;
  for (std::int64_t j = 0; j < 64; ++j) {
    CHECK(row(1)[j] == 0.0f);   // page 29: zeros, exactly 0.0 as ROCm/aiter#4774 reports
    CHECK(row(11)[j] == 0.0f);  // page 39
    nonzero_right += row(0)[j] != 0.0f && exact_row(0)[j] != 0.0f;
  }
  CHECK(nonzero_right > 32);  // page 28 still reads its keys
}
