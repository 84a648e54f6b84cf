// Where a modelled contract's centre is computed and on which rows: every row where the engines
// say a GPU computes it (operation::engines::on_device), sampled rows past about 2^34
// multiply-adds on the CPU; the engines given are the ones that compute it. The GPU engine itself
// is held to the CPU's model in tests/gpu/centre_gpu.cpp.
#include <catch2/catch.hpp>

#include <atomic>

#include "kernels/contract.hpp"
#include "reference/mma/instruction.hpp"
#include "support/one_case.hpp"
#include "validator/inputs/inputs.hpp"
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

// A stand-in for the GPU engine: the CPU's computation, counting the centres asked of it.
struct counting_engines {
  std::atomic<int> centres{0}, asked{0};
  operation::engines engines() {
    return {[this](const exact::problem& p, const exact::options& o) {
              if (o.dot_model != nullptr) ++centres;
              return exact::compute(p, o);
            },
            {},
            [this](const exact::problem&, const exact::options& o) {
              ++asked;
              return o.dot_model == &mma::sm90_wgmma() && o.promote_every == 0;
            }};
  }
};

}  // namespace

TEST_CASE("a modelled centre covers every row where the engines model on a GPU, sampled rows on the CPU", "[judge]") {
  // 1024 rows of 4096 keys x 64 heads x 128: 2^37 multiply-adds, past the CPU's 2^34.
  const generated g({.m = 1024, .n = 4096, .heads = 64, .head_dim = 128, .keys = "layout = { kind = \"causal\" }"});
  const kernels::contract sm90 = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  const std::vector<std::int64_t> all = every_row(g.p.m);

  const std::vector<std::int64_t> on_cpu = judge::centre_rows(g.p, all, sm90);
  CHECK(on_cpu.size() == 512);  // 2^34 / (4096 x 64 x 128)
  CHECK(on_cpu.front() == 0);
  CHECK(on_cpu.back() == g.p.m - 1);

  counting_engines gpu;
  CHECK(judge::centre_rows(g.p, all, sm90, gpu.engines()) == all);
  CHECK(gpu.asked == 1);
  // An engine that does not model this contract (here: a promotion interval it refuses) leaves the
  // CPU's sample.
  kernels::contract promoted = sm90;
  promoted.promote_every = 64;
  CHECK(judge::centre_rows(g.p, all, promoted, gpu.engines()) == on_cpu);
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
