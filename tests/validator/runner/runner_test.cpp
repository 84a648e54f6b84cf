// The runner's contract with a variant (validator/runner/runner.hpp): a deterministic variant is
// launched twice, in order, never both at once, even though the second launch runs while the
// first output is judged; what the second launch writes or throws reaches the result.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "support/one_case.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/runner/runner.hpp"

using namespace mqa;

namespace {

struct runner_fixture {
  cases::suite s = test::parse_one_case({.suite = "runner", .name = "causal", .m = 24, .n = 80, .heads = 4, .head_dim = 32,
                                         .keys = "seed = 11\nlayout = { kind = \"causal\" }"});
  inputs::tensors t = inputs::generate(s.cases.front());
  exact::problem p = inputs::problem_of(s.cases.front(), t);
  exact::result reference = exact::compute(p, {});
};

// Writes the exact logits; `on_launch` may change the output or throw, per launch index. Every
// call is logged as 10 * tag + index.
template <class OnLaunch>
kernels::variant copying(const exact::result& r, std::vector<int>& calls, std::atomic<int>& in_flight,
                         bool& overlapped_launches, OnLaunch on_launch, int tag = 0) {
  kernels::variant v;
  v.name = "copy";
  v.declared = kernels::declared_arithmetic(bounds::dot_accumulator::exact);
  v.run = [&r, &calls, &in_flight, &overlapped_launches, on_launch, tag](const exact::problem& p,
                                                                         const kernels::output_view& out, int index) {
    overlapped_launches |= in_flight.fetch_add(1) != 0;
    calls.push_back(10 * tag + index);
    for (std::size_t row = 0; row < r.rows.size(); ++row)
      for (std::int64_t j = 0; j < p.n; ++j) out.row(r.rows[row])[j] = r.logits[row * static_cast<std::size_t>(p.n) + j];
    on_launch(out, index);
    in_flight.fetch_sub(1);
    return kernels::launch_report{};
  };
  return v;
}

}  // namespace

TEST_CASE("a deterministic variant is launched twice, in order, one launch at a time", "[runner]") {
  runner_fixture f;
  std::vector<int> calls;
  std::atomic<int> in_flight{0};
  bool overlapped_launches = false;
  const auto v = copying(f.reference, calls, in_flight, overlapped_launches, [](const kernels::output_view&, int) {});
  REQUIRE(v.declared.deterministic);
  const runner::outcome out = runner::run(v, f.p, nullptr, f.reference, nullptr, std::nullopt, 2);
  CHECK(out.judgement.pass());
  CHECK(calls == std::vector<int>{0, 1});
  CHECK_FALSE(overlapped_launches);
  // Buffers and launches ran on the launch queue; what the judging waited for is part of them.
  CHECK(out.seconds.launches > 0);

  SECTION("a variant that does not declare determinism is launched once, nothing alongside") {
    calls.clear();
    kernels::variant once = v;
    once.declared.deterministic = false;
    const runner::outcome single = runner::run(once, f.p, nullptr, f.reference, nullptr, std::nullopt, 2);
    CHECK(calls == std::vector<int>{0});
  }
}

TEST_CASE("what the second launch writes and throws reaches the result", "[runner]") {
  runner_fixture f;
  std::vector<int> calls;
  std::atomic<int> in_flight{0};
  bool overlapped_launches = false;

  SECTION("one bit changed in the second launch is nondeterministic, and only that") {
    const auto v = copying(f.reference, calls, in_flight, overlapped_launches, [&](const kernels::output_view& out, int index) {
      if (index == 1) out.row(f.p.m - 1)[0] = std::nextafter(out.row(f.p.m - 1)[0], 1.0f);
    });
    const runner::outcome out = runner::run(v, f.p, nullptr, f.reference, nullptr, std::nullopt, 2);
    REQUIRE(out.judgement.findings.size() == 1);
    CHECK(out.judgement.findings[0].kind == compare::finding_class::nondeterministic);
    CHECK(out.judgement.findings[0].first_row == f.p.m - 1);
    CHECK(out.judgement.findings[0].first_col == 0);
  }
  SECTION("an exception of the second launch is the run's") {
    const auto v = copying(f.reference, calls, in_flight, overlapped_launches, [](const kernels::output_view&, int index) {
      if (index == 1) throw std::runtime_error("device lost in the second launch");
    });
    CHECK_THROWS_WITH(runner::run(v, f.p, nullptr, f.reference, nullptr, std::nullopt, 2), "device lost in the second launch");
  }
}

TEST_CASE("launches started ahead on one queue run in order, and each run takes its own", "[runner]") {
  runner_fixture f;
  std::vector<int> calls;
  std::atomic<int> in_flight{0};
  bool overlapped_launches = false;
  // The second variant's first launch differs from its second: its run must judge its own outputs.
  const auto a = copying(f.reference, calls, in_flight, overlapped_launches, [](const kernels::output_view&, int) {}, 1);
  const auto b = copying(
      f.reference, calls, in_flight, overlapped_launches,
      [](const kernels::output_view& out, int index) {
        if (index == 1) out.row(0)[0] = -out.row(0)[0] - 1;
      },
      2);
  runner::buffers first, second;  // before the queue: it finishes its launches before they go
  runner::launch_queue queue;
  runner::launches ahead_a = runner::start(queue, a, f.p, nullptr, first, 2);
  runner::launches ahead_b = runner::start(queue, b, f.p, nullptr, second, 2);
  const runner::outcome out_a = runner::run(a, f.p, nullptr, f.reference, nullptr, std::nullopt, 2, false, nullptr, std::move(ahead_a));
  const runner::outcome out_b = runner::run(b, f.p, nullptr, f.reference, nullptr, std::nullopt, 2, false, nullptr, std::move(ahead_b));
  CHECK(calls == std::vector<int>{10, 11, 20, 21});
  CHECK_FALSE(overlapped_launches);
  CHECK(out_a.judgement.pass());
  REQUIRE(out_b.judgement.findings.size() == 1);
  CHECK(out_b.judgement.findings[0].kind == compare::finding_class::nondeterministic);
}
