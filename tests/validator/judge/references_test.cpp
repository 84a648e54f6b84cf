// Where a modelled contract's centre is computed and on which rows: every row where the engines
// say a GPU computes it (operation::engines::on_device), sampled rows past about 2^34
// multiply-adds on the CPU; the engines given are the ones that compute it. The GPU engine itself
// is held to the CPU's model in tests/gpu/centre_gpu.cpp. The centre at one element (what a
// finding outside the sampled rows shows as expected) is the whole row's there.
#include <catch2/catch.hpp>

#include <atomic>
#include <bit>
#include <cmath>

#include "kernels/contract.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"
#include "support/one_case.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/judge.hpp"
#include "validator/judge/references.hpp"

using namespace mqa;

namespace {

struct generated {
  cases::suite suite;
  inputs::tensors t;
  exact::problem p;
  explicit generated(const test::one_case& c)
      : suite(test::parse_one_case(c)), t(inputs::generate(suite.cases[0])), p(inputs::problem_of(suite.cases[0], t)) {}
};

std::vector<std::int64_t> every_row(std::int64_t m) {
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < m; ++i) rows.push_back(i);
  return rows;
}

// A stand-in for the GPU engine: the CPU's computation, counting the centres asked of it; it says
// it models sm90-wgmma without promotion on a device, for prefill and paged problems alike.
struct counting_engines {
  std::atomic<int> centres{0}, asked{0}, paged_asked{0};
  static bool models(const exact::options& o) { return o.dot_model == &mma::sm90_wgmma() && o.promote_every == 0; }
  operation::engines engines() {
    return {[this](const exact::problem& p, const exact::options& o) {
              if (o.dot_model != nullptr) ++centres;
              return exact::compute(p, o);
            },
            [this](const paged::problem& p, const exact::options& o) {
              if (o.dot_model != nullptr) ++centres;
              return paged::compute(p, o);
            },
            [this](const exact::problem&, const exact::options& o) {
              ++asked;
              return models(o);
            },
            [this](const paged::problem&, const exact::options& o) {
              ++paged_asked;
              return models(o);
            }};
  }
};

}  // namespace

TEST_CASE("a modelled centre covers every row where the engines model on a GPU, sampled rows on the CPU", "[judge]") {
  // 1024 rows of 4096 keys x 64 heads x 128: 2^37 multiply-adds, past the CPU's 2^34.
  const generated g({.m = 1024, .n = 4096, .heads = 64, .head_dim = 128, .keys = "layout = { kind = \"causal\" }"});
  const kernels::contract sm90 = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  const std::vector<std::int64_t> all = every_row(g.p.m);

  const std::vector<std::int64_t> on_cpu = judge::centre_rows(g.p, nullptr, all, sm90);
  CHECK(on_cpu.size() == 512);  // 2^34 / (4096 x 64 x 128)
  CHECK(on_cpu.front() == 0);
  CHECK(on_cpu.back() == g.p.m - 1);

  counting_engines gpu;
  CHECK(judge::centre_rows(g.p, nullptr, all, sm90, gpu.engines()) == all);
  CHECK(gpu.asked == 1);
  // An engine that does not model this contract (here: a promotion interval it refuses) leaves the
  // CPU's sample.
  kernels::contract promoted = sm90;
  promoted.promote_every = 64;
  CHECK(judge::centre_rows(g.p, nullptr, all, promoted, gpu.engines()) == on_cpu);
}

TEST_CASE("a paged problem's centre covers every row where the engines model its requests on a GPU", "[judge]") {
  // The rows of a paged problem (what centre_rows reads of it): 128 rows of 65536 keys x 64 heads
  // x 128, 2^36 multiply-adds; the paged problem itself is only named.
  exact::problem rows;
  rows.m = 128, rows.n = 65536, rows.heads = 64, rows.head_dim = 128;
  const std::vector<std::uint8_t> q(static_cast<std::size_t>(rows.m * rows.heads * rows.head_dim));
  const std::vector<float> weights(static_cast<std::size_t>(rows.m * rows.heads), 1.0f);
  std::vector<std::int32_t> ks(static_cast<std::size_t>(rows.m)), ke(static_cast<std::size_t>(rows.m));
  for (std::int64_t i = 0; i < rows.m; ++i) ke[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(512 * (i + 1));
  rows.q = q, rows.weights = weights, rows.ks = ks, rows.ke = ke;
  const paged::problem cache;
  const kernels::contract sm90 = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  const std::vector<std::int64_t> all = every_row(rows.m);

  const std::vector<std::int64_t> on_cpu = judge::centre_rows(rows, &cache, all, sm90);
  CHECK(on_cpu.size() == 32);  // 2^34 / (65536 x 64 x 128)
  counting_engines gpu;
  CHECK(judge::centre_rows(rows, &cache, all, sm90, gpu.engines()) == all);
  CHECK(gpu.paged_asked == 1);
  CHECK(gpu.asked == 0);  // the rows without keys are not a dense problem to ask about
  // Engines that model dense problems on a device but say nothing of paged ones leave the sample.
  operation::engines dense_only = gpu.engines();
  dense_only.paged_on_device = {};
  CHECK(judge::centre_rows(rows, &cache, all, sm90, dense_only) == on_cpu);
  kernels::contract promoted = sm90;
  promoted.promote_every = 64;
  CHECK(judge::centre_rows(rows, &cache, all, promoted, gpu.engines()) == on_cpu);
}

TEST_CASE("the centre is computed by the engines given, on the rows centre_rows chose", "[judge]") {
  const generated g({.m = 12, .n = 96, .heads = 4, .head_dim = 64, .keys = "layout = { kind = \"random\" }"});
  const kernels::contract sm90 = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  counting_engines gpu;
  judge::reference_cache references(g.p, nullptr, gpu.engines(), 1);
  const exact::result* centre = references.centre(sm90);
  REQUIRE(centre != nullptr);
  CHECK(gpu.centres == 1);
  CHECK(centre->rows == every_row(g.p.m));
  // The same bits as the CPU's own centre (the stand-in computes on the CPU).
  const std::optional<exact::result> cpu = judge::centre_on(sm90, g.p, nullptr, every_row(g.p.m), 1);
  REQUIRE(cpu);
  CHECK(cpu->logits == centre->logits);
  // A contract without a model has no centre and asks the engines for none.
  const kernels::contract fp32 = kernels::declared_arithmetic(bounds::dot_accumulator::fp32);
  CHECK(references.centre(fp32) == nullptr);
  CHECK(gpu.centres == 1);
}

TEST_CASE("the centre at one element is the whole row's centre there", "[judge]") {
  const generated g({.m = 6, .n = 48, .heads = 4, .head_dim = 64, .keys = "layout = { kind = \"random\" }"});
  const auto dot = GENERATE(bounds::dot_accumulator::sm90_wgmma, bounds::dot_accumulator::fp32);
  const kernels::contract c = kernels::declared_arithmetic(dot);
  for (const std::int64_t i : {1, 4}) {
    exact::options o = bounds::is_modelled(dot) ? judge::centre_options(c, 1) : judge::reference_options(c, 1);
    o.rows = {i};
    const exact::result row = exact::compute(g.p, o);
    const exact::window w = exact::clamped_window(g.p, i);
    REQUIRE(w.end > w.begin);
    for (const std::int64_t j : {w.begin, (w.begin + w.end) / 2, w.end - 1}) {
      CAPTURE(i, j);
      CHECK(std::bit_cast<std::uint32_t>(judge::centre_at(c, g.p, nullptr, i, j)) ==
            std::bit_cast<std::uint32_t>(row.logits[static_cast<std::size_t>(j)]));
    }
  }
}

TEST_CASE("a finding first seen outside the sampled centre shows the centre there as expected", "[judge]") {
  const generated g({.m = 8, .n = 48, .heads = 4, .head_dim = 64, .keys = "layout = { kind = \"random\" }"});
  const kernels::contract sm90 = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  const exact::result reference = exact::compute(g.p, judge::reference_options(sm90, 1));
  const std::optional<exact::result> centre = judge::centre_on(sm90, g.p, nullptr, {0, g.p.m - 1}, 1);
  REQUIRE(centre);
  std::vector<float> output = reference.logits;
  for (std::size_t r = 0; r < 2; ++r)
    std::copy_n(centre->logits.begin() + static_cast<std::ptrdiff_t>(r) * g.p.n, g.p.n,
                output.begin() + centre->rows[r] * g.p.n);
  exact::options o = judge::centre_options(sm90, 1);
  o.rows = {3};
  const exact::result row = exact::compute(g.p, o);
  // The NaN planted at row 3's last key whose centre is not zero.
  const exact::window w = exact::clamped_window(g.p, 3);
  std::int64_t j = w.end - 1;
  while (j >= w.begin && row.logits[static_cast<std::size_t>(j)] == 0) --j;
  REQUIRE(j >= w.begin);
  output[static_cast<std::size_t>(3 * g.p.n + j)] = NAN;
  compare::subject s =
      compare::subject_of(g.p, nullptr, sm90, std::nullopt, {output.data(), g.p.m, g.p.n, g.p.n}, 1);
  s.reference = &reference;
  s.centre = &*centre;
  const compare::judgement judged = judge::judge(s);
  REQUIRE(judged.findings.size() == 1);
  const compare::finding& f = judged.findings[0];
  CHECK(f.kind == compare::finding_class::nan);
  CHECK((f.first_row == 3 && f.first_col == j));
  CHECK(f.expected_bits == std::bit_cast<std::uint32_t>(row.logits[static_cast<std::size_t>(j)]));
}
