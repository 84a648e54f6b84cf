// The verdict stage: every case of a suite against every selected variant, with the expectations
// that make the run meaningful. A correct variant must show no finding on any case; a mutant
// must be caught (a finding of a class its bug produces) on at least one case of the suite, or a
// check went blind. Exit status 0 means every expectation held.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/variant.hpp"
#include "validator/case/case.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::verdict {

struct case_result {
  std::string case_name;
  std::string variant;
  bool is_mutant = false;
  compare::judgement judgement;
  double kernel_seconds = 0;
  runner::stage_seconds seconds;  // the runner's stages, host-timed (kernel_seconds: the launch's own timer)
  bool caught = false;  // mutants: a finding of an expected class
  // The expectation of this row alone: correct variants pass; mutants are not judged per case.
  bool as_expected() const { return is_mutant || judgement.pass(); }
  // "pass" / "FAIL" for correct variants; "caught" / "silent" / "other" (findings, none of its class) for mutants.
  std::string_view outcome() const {
    if (is_mutant) return caught ? "caught" : (judgement.pass() ? "silent" : "other");
    return judgement.pass() ? "pass" : "FAIL";
  }
};

struct mutant_coverage {
  std::string variant;
  std::string bug_class;
  std::vector<std::string> must_produce;
  std::vector<std::string> caught_by;  // cases
};

struct case_timing {
  std::string case_name;
  double inputs_seconds = 0, reference_seconds = 0, total_seconds = 0;
  double centre_seconds = 0;  // modelled contracts' centres (part of reference_seconds)
};

struct suite_report {
  std::string suite_name;
  std::string file;
  std::vector<case_result> results;
  std::vector<case_timing> timings;  // per case: generating inputs, the exact reference, everything
  std::vector<std::string> skipped;  // variant x case pairs not run: the variant does not take the case's formats
  std::vector<mutant_coverage> mutants;
  double seconds = 0;
  bool expectations_hold() const;
  std::vector<std::string> broken_expectations() const;  // sentences, for the summary
};

struct run_options {
  std::vector<std::string> variants;  // empty: the suite's [suite] variants, else every registered variant
  unsigned threads = 0;
  std::function<void(std::size_t done, std::size_t total, const std::string& what)> progress;
  // The exact reference engine: exact::compute unless the caller has a faster one that gives the
  // same bits (the GPU reference of kernels/hip).
  std::function<exact::result(const exact::problem&, const exact::options&)> reference;
};

// The variants a run selects: `names`, else the suite's [suite] variants, else every registered
// variant. An unknown name is an input_error; commands call this to check their arguments before
// any work (run_suite calls it again).
std::vector<const kernels::variant*> select_variants(const cases::suite& s, const std::vector<std::string>& names);

// Throws input_error for an unknown variant name.
suite_report run_suite(const cases::suite& s, const run_options& o);

// The contract a case judges a variant under: the case's clean_logits = false relaxes masking.
kernels::contract effective_contract(const kernels::variant& v, const cases::case_spec& c);

}  // namespace mqa::verdict
