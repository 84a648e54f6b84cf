// A mutant's coverage is judged by finding class alone, so `run` diagnoses a mutant's findings
// only when asked (run_options::diagnose_mutants); a correct variant's findings are diagnosed as
// before. Coverage must not depend on the choice.
#include <catch2/catch.hpp>

#include "support/paths.hpp"
#include "validator/case/load.hpp"
#include "validator/verdict/verdict.hpp"

using namespace mqa;

namespace {

verdict::suite_report inclusive_end_suite(bool diagnose_mutants) {
  const cases::suite s = cases::load_suite(test::source_dir() / "cases" / "bugs" / "11-inclusive-end.toml");
  verdict::run_options o;
  o.variants = {"mutant-inclusive-end"};
  o.diagnose_mutants = diagnose_mutants;
  return verdict::run_suite(s, o);
}

bool any_diagnosis(const verdict::suite_report& r) {
  for (const auto& c : r.results)
    for (const auto& f : c.judgement.findings)
      if (f.diagnosis) return true;
  return false;
}

}  // namespace

TEST_CASE("a mutant is caught without its diagnosis unless the run asks for it", "[verdict][diagnose]") {
  const verdict::suite_report quiet = inclusive_end_suite(false);
  REQUIRE(quiet.mutants.size() == 1);
  CHECK_FALSE(quiet.mutants[0].caught_by.empty());
  CHECK(quiet.expectations_hold());
  CHECK_FALSE(any_diagnosis(quiet));

  const verdict::suite_report asked = inclusive_end_suite(true);
  CHECK(asked.mutants[0].caught_by == quiet.mutants[0].caught_by);
  CHECK(any_diagnosis(asked));
}
