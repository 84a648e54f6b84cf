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
#include "reference/operation.hpp"
#include "reference/paged/problem.hpp"
#include "validator/case/case.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/runner/runner.hpp"
#include "validator/verdict/shard.hpp"

namespace mqa::verdict {

// One launch of a kernel that lives elsewhere (`run --kernel`), as its adapter answered it.
struct adapter_launch {
  std::optional<double> kernel_seconds;  // the adapter's own measure ("seconds"), when it gave one
  double response_seconds = 0;           // request sent to response read: the adapter's whole turn
  double exchange_seconds = 0;           // poisoned output written, request, response, output read back
  double output_written_seconds = 0;     // the poisoned output file written (part of exchange_seconds)
  double output_read_seconds = 0;        // the adapter's output read back (part of exchange_seconds)
};

struct case_result {
  std::string case_name;
  std::string variant;
  bool is_mutant = false;
  compare::judgement judgement;
  bool judged = true;  // false: the judgement is empty because `error` came first
  // Why the case could not be judged, or not completely (an external kernel's adapter failed);
  // empty for every built-in variant. First line: the summary; further lines: the adapter's stderr.
  std::string error;
  // The launch's own timer. An external kernel's: the best of launch 2 and its timing launches
  // (launch 1 may include a JIT compilation), each the adapter's "seconds" where every one of them
  // gave it, else the adapter's whole turn (docs/protocol.md, "Timing").
  double kernel_seconds = 0;
  // An external kernel's timed launches (launch 2 and the timing launches): how many, their
  // median; kernel_seconds is their best. 0 and unset for built-in variants and older reports.
  int kernel_launches = 0;
  std::optional<double> kernel_seconds_median;
  // (median - best) / best: how far a typical launch strays from the best; 0 for one launch.
  std::optional<double> kernel_noise() const;
  // An external kernel's launch 1 ("seconds"), apart: its warm-up, where a JIT compiles.
  std::optional<double> warmup_seconds;
  // The stages, host-timed. An external kernel fills only judge, determinism, suspicion and
  // diagnosis (its launches are adapter turns, in `launches`).
  runner::stage_seconds seconds;
  std::vector<adapter_launch> launches;  // external kernels: the launches answered
  std::vector<adapter_launch> timing_launches;  // external kernels: the timing launches, after the two judged
  std::optional<double> inputs_written_seconds;  // external kernels: the case's inputs written for the adapter
  bool caught = false;  // mutants: a finding of an expected class
  // The expectation of this row alone: correct variants pass; mutants are not judged per case;
  // an error is never as expected.
  bool as_expected() const { return error.empty() && (is_mutant || judgement.pass()); }
  // "pass" / "FAIL" for correct variants; "caught" / "silent" / "other" (findings, none of its
  // class) for mutants; "error" where the case could not be judged.
  std::string_view outcome() const {
    if (!error.empty()) return "error";
    if (is_mutant) return caught ? "caught" : (judgement.pass() ? "silent" : "other");
    return judgement.pass() ? "pass" : "FAIL";
  }
  // The adapter's overhead on this case: the launches' exchange time less the kernel time the
  // adapter reported; unknown unless both launches were answered with "seconds".
  std::optional<double> overhead_seconds() const;
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

// The kernel of `mqacheck run --kernel`: what was run, and how its adapter behaved.
struct external_kernel {
  std::string command;
  std::string label;     // the adapter's, or empty when it gave none
  std::string contract;   // kernels::describe of the declared contract
  std::string operation;  // what it computes (--operation): "prefill", "paged" or "both"
  double timeout_seconds = 0;
  int adapter_starts = 0;          // 1 unless the adapter had to be restarted after a failure
  // Run in mqacheck's own process (api/suite_run.hpp), not behind an adapter: no adapter starts,
  // no timeout.
  bool in_process = false;
  std::vector<std::string> notes;  // label changes, an unclean exit at the end
};

// What a case judged its variants on: reports are compared (`mqacheck diff`) and put together
// (`mqacheck merge`) case by case only where these agree.
struct case_record {
  std::string name;
  // inputs::fingerprint of the generated inputs; unset where this run generated none (a shard
  // runs no pair of the case).
  std::optional<std::uint64_t> inputs_fingerprint;
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  bool clean_logits = true;
  std::optional<std::int64_t> topk;  // as the case sets it; unset: the default
};

// A selected variant, in selection order (the order of the pairs, shard.hpp).
struct variant_record {
  std::string name;
  bool is_mutant = false;
  std::string contract;  // kernels::describe of the declared contract
};

// A pair not run: the variant does not take the case's formats, or refuses its shape.
struct skipped_pair {
  std::string case_name, variant, reason;
  std::string sentence() const;  // "VARIANT on CASE: REASON"
};

struct suite_report {
  std::string suite_name;
  std::string file;
  std::vector<case_record> cases;        // every case of the suite, in suite order
  std::vector<variant_record> variants;  // every selected variant, in order
  std::optional<verdict::shard> shard;   // set when only one shard's pairs were run
  std::vector<case_result> results;
  std::vector<case_timing> timings;  // per case run: generating inputs, the exact reference, everything
  std::vector<skipped_pair> skipped;
  std::vector<mutant_coverage> mutants;
  std::optional<external_kernel> kernel;  // set by run_kernel_suite
  double seconds = 0;
  bool expectations_hold() const;
  // Not one case could be judged (an adapter that never answered, a kernel that takes none of the
  // suite's cases: every pair skipped): the run shows nothing.
  bool nothing_judged() const;
  // Sentences, for the summary. A shard's report leaves out mutants caught by no case of the
  // shard: another shard may catch them, and `mqacheck merge` judges coverage over all.
  std::vector<std::string> broken_expectations() const;
};

// The sentences of broken_expectations(), also for reports put together from shards.
std::string failing_model_sentence(std::string_view variant, std::string_view case_name);
std::string blind_mutant_sentence(std::string_view variant, std::string_view bug_class);
// A whole run in which every pair was skipped (`skipped` of them).
std::string every_pair_skipped_sentence(std::size_t skipped);
// A result an external kernel's adapter failed on (`run --kernel`): `error`'s first line.
std::string unjudged_sentence(std::string_view variant, std::string_view case_name, std::string_view error);

struct run_options {
  std::vector<std::string> variants;  // empty: the suite's [suite] variants, else every registered variant
  std::optional<verdict::shard> shard;  // run only this shard's pairs (shard.hpp)
  unsigned threads = 0;
  std::function<void(std::size_t done, std::size_t total, const std::string& what)> progress;
  // The exact reference engines: exact::compute and paged::compute (on every core) unless the
  // caller has faster ones that give the same bits (the command line's GPU reference).
  operation::engines engines;
  bool diagnose = true;  // findings get the cause validator/diagnose reproduces
  // Also a mutant's findings (a variant with must_produce). Its coverage is judged by finding
  // class alone and its planted bug is known, so by default its diagnosis is not paid for.
  bool diagnose_mutants = false;
  // Called with every output's subject and the comparator's judgement of it (runner::run's hook):
  // the [gpu] tests hold the device comparator to the host's with it.
  runner::judged_hook judged;
};

// The variants a run selects: `names`, else the suite's [suite] variants, else every registered
// variant. An unknown name is an input_error; commands call this to check their arguments before
// any work (run_suite calls it again).
std::vector<const kernels::variant*> select_variants(const cases::suite& s, const std::vector<std::string>& names);

// Throws input_error for an unknown variant name.
suite_report run_suite(const cases::suite& s, const run_options& o);

// The contract a case judges a variant under: the case's clean_logits = false relaxes masking.
kernels::contract effective_contract(const kernels::variant& v, const cases::case_spec& c);

// Why a variant cannot run a case's operation (prefill or paged decode), or nullopt.
std::optional<std::string> operation_mismatch(const kernels::variant& v, const cases::case_spec& c);

}  // namespace mqa::verdict
