// A run that judged nothing shows nothing: not one case judged (every pair skipped, or every
// result an error) is a broken expectation and `mqacheck run`'s exit status 2, never "every
// expectation holds". A shard may own no pair at all: that alone is not a failure of the run.
#include <catch2/catch.hpp>

#include "api/suite_run.hpp"
#include "validator/verdict/verdict.hpp"

using namespace mqa;

namespace {

verdict::case_result result(bool judged, std::string error = {}) {
  verdict::case_result r;
  r.case_name = "causal";
  r.variant = "kernel";
  r.judged = judged;
  r.error = std::move(error);
  return r;
}

}  // namespace

TEST_CASE("a run whose every pair was skipped judged nothing, and says so", "[verdict]") {
  verdict::suite_report r;
  r.skipped = {{"causal", "kernel", "the kernel does not take this case: 70 heads"},
               {"packed", "kernel", "the kernel does not take this case: 70 heads"}};
  CHECK(r.nothing_judged());
  CHECK_FALSE(r.expectations_hold());
  REQUIRE(r.broken_expectations().size() == 1);
  CHECK(r.broken_expectations()[0] == verdict::every_pair_skipped_sentence(2));
  CHECK(r.broken_expectations()[0].find("not one case was judged") == 0);
  CHECK(api::run_exit_status(r) == 2);

  SECTION("one pair judged among the skipped ones is a run") {
    r.results = {result(true)};
    CHECK_FALSE(r.nothing_judged());
    CHECK(r.expectations_hold());
    CHECK(api::run_exit_status(r) == 0);
  }
  SECTION("every result an error judged nothing either") {
    r.results = {result(false, "launch 1: the kernel raised")};
    CHECK(r.nothing_judged());
    CHECK(api::run_exit_status(r) == 2);
  }
  SECTION("a shard whose pairs were all skipped leaves coverage to the merge") {
    r.shard = verdict::shard{2, 3};
    CHECK_FALSE(r.nothing_judged());
    CHECK(r.broken_expectations().empty());
  }
}

TEST_CASE("a shard that owns no pair is not a run that judged nothing", "[verdict]") {
  verdict::suite_report r;
  r.shard = verdict::shard{3, 3};
  CHECK_FALSE(r.nothing_judged());
  CHECK(r.expectations_hold());
  CHECK(api::run_exit_status(r) == 0);
}
