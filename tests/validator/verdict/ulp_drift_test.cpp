// `diff --max-drift` (validator/verdict/diff.hpp, ulp-drift): a kernel whose head-sum order changed
// moves its error in ULPs of the magnitude, and the diff says so past the limit; an unchanged
// report, a report without the figures, and a diff without the limit do not regress.
#include <catch2/catch.hpp>

#include "reports/report.hpp"
#include "support/judged_model.hpp"
#include "support/small_run.hpp"
#include "validator/verdict/diff.hpp"
#include "validator/verdict/read_report.hpp"

using namespace mqa;
using nlohmann::json;

namespace {


verdict::report_diff diff(const json& before, const json& after, std::optional<double> max_drift) {
  return verdict::diff_reports({"base.json", &before}, {"new.json", &after},
                               {.max_slowdown = std::nullopt, .max_drift = max_drift});
}

// The small run's report with one pair's magnitude-ULP figures those of `j`: a release of the
// fp32 kernel whose arithmetic is the judged one's.
json report_with(const compare::judgement& j) {
  json r = test::small_report();
  test::result_in(r, "causal", "fp32-naive")["metrics"]["magnitude_ulp"] = reports::judgement_json(j).at("metrics").at("magnitude_ulp");
  return r;
}

}  // namespace

TEST_CASE("a head-sum order that moves the magnitude-ULP distribution is ulp-drift past the limit",
          "[verdict][diff][ulp-drift]") {
  // Pairwise heads (log2(64) = 6 roundings deep) against left to right (63 deep): the same fp32
  // contract, both within its bound.
  const compare::judgement tree = test::judged_model("fp32-naive", [](kernels::cpu::model_config& c) { c.pairwise_heads = true; });
  const compare::judgement sequential = test::judged_model("fp32-naive");
  REQUIRE(tree.pass());
  REQUIRE(sequential.pass());
  const json before = report_with(tree), after = report_with(sequential);
  verdict::check_report(before, "base.json");
  verdict::check_report(after, "new.json");
  const double p99_before = *tree.stats.scaled.magnitude.percentile(0.99);
  const double p99_after = *sequential.stats.scaled.magnitude.percentile(0.99);
  CAPTURE(p99_before, p99_after);
  // The distribution moves (measured: see docs/contracts.md); the rule is tested only where it does.
  REQUIRE(p99_after > 1.5 * p99_before);

  const auto drifted = diff(before, after, 1.5);
  REQUIRE(drifted.regressions.size() == 1);
  CHECK(drifted.regressions[0].kind == "ulp-drift");
  CHECK(drifted.regressions[0].case_name == "causal");
  CHECK(drifted.regressions[0].variant == "fp32-naive");
  CHECK(drifted.regressions[0].text.find("p99") != std::string::npos);

  CHECK_FALSE(diff(before, after, std::nullopt).regressed());  // off by default
  CHECK_FALSE(diff(after, before, 1.5).regressed());            // an error that shrinks is no regression
  CHECK_FALSE(diff(before, before, 1.5).regressed());           // unchanged
  CHECK_FALSE(diff(before, after, p99_after / p99_before * 1.01 + 1).regressed());  // within a wider limit
}

TEST_CASE("reports without the magnitude-ULP figures load and never drift", "[verdict][diff][ulp-drift]") {
  json old = test::small_report();
  for (auto& r : old.at("results"))
    if (r.at("metrics").is_object()) {
      r["metrics"].erase("magnitude_ulp");
      r["metrics"].erase("conditioned_ulp");
    }
  verdict::check_report(old, "old.json");
  CHECK_FALSE(diff(old, test::small_report(), 1.0).regressed());
  CHECK_FALSE(diff(test::small_report(), old, 1.0).regressed());

  json bad = test::small_report();
  test::result_in(bad, "causal", "fp32-naive")["metrics"]["magnitude_ulp"]["p99"] = "large";
  CHECK_THROWS(verdict::check_report(bad, "bad.json"));
}
