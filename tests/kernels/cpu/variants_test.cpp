// Every correct CPU variant passes under its own contract; every mutant is caught with a finding
// class its planted bug must produce (a mutant that passes means a check went blind).
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cmath>
#include <set>

#include "kernels/cpu/registry.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/fp8/bfloat16.hpp"
#include "reference/fp8/convert.hpp"
#include "validator/judge/references.hpp"
#include "validator/runner/runner.hpp"
#include "support/findings_text.hpp"
#include "support/splitmix.hpp"

using namespace mqa;

namespace {

using mqa::test::splitmix;

struct specials {
  bool negative_zero = false;  // 0x80 codes in k (e4m3fn -0)
  bool nan_codes = false;      // 0x7F codes in k
  bool negative_scale = false;
  bool negative_ks = false;    // ks = -1 on some rows
};

struct test_problem {
  std::vector<std::uint8_t> q, k;
  std::vector<float> k_scale, weights;
  std::vector<std::int32_t> ks, ke;
  std::vector<std::uint8_t> q_block_scale, k_block_scale;
  exact::problem view;
};

// e2m1fn comes with a ue8m0 scale per 32 elements: head_dim 64 gives each token two,
// drawn from 2^-7 .. 2^7, so that a token's blocks differ.
test_problem make_problem(fp8::format fmt, std::uint64_t seed, specials s = {}) {
  test_problem t;
  const bool fp4 = exact::uses_block_scales(fmt);
  const std::int64_t m = 128, n = 200, h = 8, d = fp4 ? 64 : 32;
  std::uint64_t state = seed;
  const fp8::conversion c{fmt, fp8::profile_id::ml_dtypes, std::nullopt};
  auto uniform = [&] { return static_cast<double>(splitmix(state) >> 11) * 0x1p-53; };
  auto code = [&] { return fp8::encode(c, (uniform() * 2 - 1) * 3.0); };
  for (std::int64_t x = 0; x < m * h * d; ++x) t.q.push_back(code());
  for (std::int64_t x = 0; x < n * d; ++x) t.k.push_back(code());
  for (std::int64_t j = 0; j < n; ++j) t.k_scale.push_back(static_cast<float>(0.5 + uniform()));
  for (std::int64_t x = 0; x < m * h; ++x) t.weights.push_back(static_cast<float>(uniform() * 2 - 1));
  for (std::int64_t i = 0; i < m; ++i) {
    const auto start = static_cast<std::int32_t>(splitmix(state) % 60);
    const auto length = static_cast<std::int32_t>(splitmix(state) % 150);
    t.ks.push_back(start);
    t.ke.push_back(i % 17 == 5 ? start : start + length);  // some empty rows
  }
  if (s.negative_zero)
    for (std::int64_t j = 0; j < n; j += 7) t.k[static_cast<std::size_t>(j * d + 3)] = 0x80;
  if (s.nan_codes)
    for (std::int64_t j = 3; j < n; j += 29) t.k[static_cast<std::size_t>(j * d + 5)] = 0x7F;
  if (s.negative_scale)
    for (std::int64_t j = 0; j < n; j += 5) t.k_scale[static_cast<std::size_t>(j)] = j % 10 ? -0.75f : 0.0f;
  if (s.negative_ks)
    for (std::int64_t i = 0; i < m; i += 9) t.ks[static_cast<std::size_t>(i)] = -1;
  if (fp4) {
    for (std::int64_t x = 0; x < m * h * d / 32; ++x) t.q_block_scale.push_back(static_cast<std::uint8_t>(120 + splitmix(state) % 15));
    for (std::int64_t x = 0; x < n * d / 32; ++x) t.k_block_scale.push_back(static_cast<std::uint8_t>(120 + splitmix(state) % 15));
  }
  t.view = {m, n, h, d, fmt, fmt, t.q, t.k, t.k_scale, t.weights, t.ks, t.ke, t.q_block_scale, t.k_block_scale};
  return t;
}

// nullopt where the variant's instruction does not take the problem (formats, head_dim).
std::optional<runner::outcome> run_judged(const kernels::variant& v, const exact::problem& p) {
  if (const auto* model = bounds::traits(v.declared.dot).model)
    if (mma::why_unusable(*model, p.q_format, p.k_format, p.head_dim, v.declared.promote_every)) return std::nullopt;
  if (v.refuses && v.refuses(p)) return std::nullopt;
  const exact::result reference = exact::compute(p, judge::reference_options(v.declared));
  const auto centre = judge::centre_for(v.declared, p, nullptr, reference);
  return runner::run(v, p, nullptr, reference, centre ? &*centre : nullptr, std::nullopt);
}

}  // namespace

TEST_CASE("correct CPU variants pass under their own contracts", "[kernels][validator]") {
  const auto [fmt_, special] = GENERATE(table<fp8::format, specials>({
      {fp8::format::e4m3fn, specials{}},
      {fp8::format::e4m3fnuz, specials{}},
      {fp8::format::e5m2, specials{}},
      {fp8::format::e4m3fn, specials{true, true, true, true}},
      {fp8::format::e2m1fn, specials{}},
  }));
  const std::uint64_t seed = GENERATE(1u, 2u);
  const test_problem t = make_problem(fmt_, seed, special);
  for (const auto& v : kernels::cpu::cpu_variants()) {
    if (!v.must_produce.empty() || !v.run) continue;  // paged-only variants: tests/kernels/cpu/paged_test.cpp
    const auto judged = run_judged(v, t.view);
    if (!judged) continue;
    const runner::outcome& r = *judged;
    CAPTURE(v.name, fp8::traits(fmt_).name, seed, test::findings_text(r));
    CHECK(r.judgement.pass());
    CHECK_FALSE(r.judgement.suspected);  // an honest kernel is never suspected of handing back the answer
    if (v.name == "exact" || v.name == "exact-bf16") CHECK(r.judgement.stats.ulps.max == 0);
  }
}

TEST_CASE("the lower-precision models fail under a float32 contract", "[kernels][validator]") {
  const test_problem t = make_problem(fp8::format::e4m3fn, 7);
  for (const auto& v : kernels::cpu::cpu_variants()) {
    if (v.name != "fp22-truncated" && v.name != "bf16-dot") continue;
    kernels::variant relabelled = v;
    relabelled.declared.dot = bounds::dot_accumulator::fp32;
    const runner::outcome r = *run_judged(relabelled, t.view);
    CAPTURE(v.name, test::findings_text(r));
    REQUIRE_FALSE(r.judgement.findings.empty());
    CHECK(r.judgement.findings.front().kind == compare::finding_class::error_bound);
  }
}

TEST_CASE("every mutant is caught with a class its bug must produce", "[kernels][validator][mutants]") {
  for (const auto& v : kernels::cpu::cpu_variants()) {
    if (v.must_produce.empty() || !v.run) continue;  // paged-only mutants: tests/kernels/cpu/paged_test.cpp
    specials s;
    if (v.name == "mutant-fnuz-keeps-0x80" || v.name == "mutant-fnuz-scrub-0x81") s.negative_zero = true;
    if (v.name == "mutant-fnuz-nan-bytes" || v.name == "mutant-topk-nan-lowest") s.nan_codes = true;
    if (v.name == "mutant-scale-before-relu") s.negative_scale = true;
    if (v.name == "mutant-unsigned-window") s.negative_ks = true;
    const bool fp4 = v.name == "mutant-fp4-scale-per-token";
    const test_problem t = make_problem(fp4 ? fp8::format::e2m1fn : fp8::format::e4m3fn, 11, s);
    const auto judged = run_judged(v, t.view);
    REQUIRE(judged);
    const runner::outcome& r = *judged;
    std::set<std::string> classes;
    for (const auto& f : r.judgement.findings) classes.insert(std::string(compare::to_string(f.kind)));
    bool caught = false;
    for (const auto& expected : v.must_produce) caught = caught || classes.count(expected);
    CAPTURE(v.name, v.bug_class, test::findings_text(r));
    CHECK(caught);
  }
}

// A bit-exact bf16 kernel writes the correctly rounded bfloat16 of each logit: keys whose exact
// values differ can tie there, and a consumer ranking its output cannot tell them apart. Its
// top-k may keep any of the tied keys (here k = 16 of windows up to 150 keys: ties at the k-th
// value are common), which is no finding.
TEST_CASE("a bit-exact bf16 kernel's top-k may keep any of the keys its bf16 values tie", "[kernels][validator][topk]") {
  const test_problem t = make_problem(fp8::format::e4m3fn, 4242);
  const auto& variants = kernels::cpu::cpu_variants();
  const auto v = std::find_if(variants.begin(), variants.end(), [](const auto& x) { return x.name == "exact-bf16"; });
  REQUIRE(v != variants.end());
  const exact::result reference = exact::compute(t.view, judge::reference_options(v->declared));
  std::int64_t rows_with_ties = 0;  // rows whose 16th and 17th largest values tie in bfloat16
  for (std::size_t r = 0; r < reference.rows.size(); ++r) {
    const exact::window w = exact::clamped_window(t.view, reference.rows[r]);
    if (w.end - w.begin <= 16) continue;
    std::vector<float> row(reference.logits_bf16.begin() + static_cast<std::ptrdiff_t>(r * t.view.n + w.begin),
                           reference.logits_bf16.begin() + static_cast<std::ptrdiff_t>(r * t.view.n + w.end));
    std::vector<float> exact_row(reference.logits.begin() + static_cast<std::ptrdiff_t>(r * t.view.n + w.begin),
                                 reference.logits.begin() + static_cast<std::ptrdiff_t>(r * t.view.n + w.end));
    std::sort(exact_row.begin(), exact_row.end(), std::greater<>());
    rows_with_ties += fp8::round_to_bfloat16(exact_row[15]) == fp8::round_to_bfloat16(exact_row[16]) && exact_row[15] != exact_row[16];
  }
  REQUIRE(rows_with_ties > 0);  // the case shows what the test is about
  const runner::outcome out = runner::run(*v, t.view, nullptr, reference, nullptr, 16);
  INFO(test::findings_text(out));
  CHECK(out.judgement.pass());
}
