// The in-process suite runner's judge (api/suite_run.hpp): a kernel the caller launches is judged
// as `run --kernel` judges one behind an adapter. Its outputs here come from the CPU model of the
// declared arithmetic (the honest kernel); the Python package's tests (python/tests/test_suite_run.py)
// hold whole reports to the adapter path's.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "api/suite_run.hpp"
#include "kernels/cpu/registry.hpp"
#include "support/scratch_dir.hpp"
#include "validator/input_error.hpp"

using namespace mqa;

namespace {

const char* const kSuite = R"(
[suite]
name = "in-process"
[[case]]
name = "causal"
m = 24
n = 96
heads = 4
head_dim = 64
layout = { kind = "causal" }
)";

// One per TEST_CASE (CTest runs them as processes of their own, side by side).
struct suite_file {
  test::scratch_dir dir;
  std::filesystem::path path = dir.root / "suite.toml";
  explicit suite_file(std::string_view test) : dir(test) { std::ofstream(path) << kSuite; }
};

api::suite_run_options options_of(const suite_file& f, std::vector<std::string> flags = {"--accumulate", "fp32"}) {
  api::suite_run_options o;
  o.cases_file = f.path.string();
  o.kernel.command = "test";
  o.kernel.timing_launches = 0;
  CLI::App app{"contract"};
  o.kernel.declared.add_to(app);
  std::vector<std::string> reversed(flags.rbegin(), flags.rend());
  app.parse(reversed);
  o.threads = 1;
  return o;
}

// The honest fp32 kernel's output in a poisoned [m, stride] buffer.
std::vector<float> honest(const verdict::kernel_case& c, std::int64_t stride) {
  std::vector<float> out(static_cast<std::size_t>(c.problem.m * stride), NAN);
  for (const auto& m : kernels::cpu::arithmetic_models())
    if (m.declared.dot == bounds::dot_accumulator::fp32) {
      kernels::cpu::run_model(m.config, c.problem, {out.data(), c.problem.m, c.problem.n, stride}, 0);
      return out;
    }
  FAIL("no model declares a float32 accumulator");
  return out;
}

api::output_array array_of(std::vector<float>& v, std::int64_t m, std::int64_t cols, std::int64_t stride) {
  return {v.data(), api::output_array::element::float32, m, cols, stride, -1};
}

}  // namespace

TEST_CASE("a kernel launched by the caller is judged as run --kernel judges it", "[api]") {
  const suite_file f("suite-run-judged");
  api::suite_run run(options_of(f));
  const verdict::kernel_case* c = run.next();
  REQUIRE(c != nullptr);
  const std::int64_t stride = run.output_stride();
  CHECK(stride > run.output_width());
  std::vector<float> first = honest(*c, stride), second = first;
  const api::output_array a = array_of(first, c->problem.m, stride, stride);
  api::output_array b = array_of(second, c->problem.m, stride, stride);

  SECTION("the honest kernel passes, judged on the host") {
    CHECK(run.record(&a, &b, {{1e-3, 2e-3, 1e-4}, {1e-3, 2e-3, 1e-4}}, {}, "") == "host");
    CHECK(run.next() == nullptr);
    const verdict::suite_report r = run.finish("honest");
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].error.empty());
    CHECK(r.results[0].judgement.pass());
    REQUIRE(r.kernel);
    CHECK(r.kernel->in_process);
    CHECK(r.kernel->adapter_starts == 0);
    CHECK(r.results[0].overhead_seconds().value() == Approx(2e-3));
    CHECK(r.expectations_hold());
  }
  SECTION("launch 2 differing is the determinism finding") {
    second[static_cast<std::size_t>(5 * stride + 3)] += 1.0f;
    run.record(&a, &b, {}, {}, "");
    const verdict::suite_report r = run.finish("");
    REQUIRE(r.results[0].judgement.findings.size() == 1);
    CHECK(r.results[0].judgement.findings[0].kind == compare::finding_class::nondeterministic);
    CHECK(r.results[0].variant == "kernel");
  }
  SECTION("launch 2 of the wrong shape: the case's error, launch 1 still judged") {
    b.cols = c->problem.n - 1;
    CHECK(run.record(&a, &b, {}, {}, "") == "host");
    const verdict::suite_report r = run.finish("");
    CHECK_THAT(r.results[0].error, Catch::Contains("launch 2's output"));
    CHECK(r.results[0].judged);
    CHECK(r.results[0].judgement.pass());
  }
  SECTION("a reference changed in memory during the launches voids the judgement") {
    auto& reference = const_cast<exact::result&>(*c->reference);
    reference.logits[7] = std::nextafter(reference.logits[7], INFINITY);
    CHECK(run.record(&a, &b, {}, {}, "") == "not judged");
    const verdict::suite_report r = run.finish("");
    CHECK_THAT(r.results[0].error, Catch::Contains("reference changed in its memory"));
    CHECK_FALSE(r.results[0].judged);
    CHECK_FALSE(r.expectations_hold());
  }
  SECTION("a kernel's own refusal skips the case") {
    run.unsupported("not this layout");
    const verdict::suite_report r = run.finish("");
    CHECK(r.results.empty());
    REQUIRE(r.skipped.size() == 1);
    CHECK(r.skipped[0].reason == "the kernel does not take this case: not this layout");
  }
}

TEST_CASE("the in-process runner refuses what it cannot judge before any case, and misuse", "[api]") {
  const suite_file f("suite-run-refused");
  CHECK_THROWS_WITH(api::suite_run(options_of(f, {"--accumulate", "fp32", "--logits-dtype", "bf16"})),
                    Catch::Contains("--logits-dtype bf16"));
  api::suite_run_options wrong_case = options_of(f);
  wrong_case.case_names = {"absent"};
  CHECK_THROWS_AS(api::suite_run(wrong_case), input_error);
  api::suite_run run(options_of(f));
  CHECK_THROWS_AS(run.record(nullptr, nullptr, {}, {}, ""), std::logic_error);  // no case under way yet
}
