#include "verdict.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "kernels/registry/registry.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/activity.hpp"
#include "validator/input_error.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/references.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::verdict {

std::vector<const kernels::variant*> select_variants(const cases::suite& s, const std::vector<std::string>& given) {
  std::vector<const kernels::variant*> chosen;
  const std::vector<std::string>& names = given.empty() ? s.variants : given;
  if (names.empty()) {
    for (const auto& v : kernels::all_variants()) chosen.push_back(&v);
    return chosen;
  }
  for (const auto& name : names) {
    const kernels::variant* v = kernels::find_variant(name);
    if (!v && kernels::is_gpu_variant_name(name))
      throw input_error(fmt::format("variant '{}' runs on a GPU: {}", name, kernels::why_no_gpu()));
    if (!v) {
      std::string known;
      for (const auto& k : kernels::all_variants()) known += (known.empty() ? "" : ", ") + k.name;
      throw input_error(fmt::format("unknown variant '{}' (known: {})", name, known));
    }
    chosen.push_back(v);
  }
  return chosen;
}

kernels::contract effective_contract(const kernels::variant& v, const cases::case_spec& c) {
  kernels::contract k = v.declared;
  if (!c.clean_logits || k.columns == kernels::columns_layout::relative) k.mask = kernels::masking::dont_care;
  return k;
}

std::optional<std::string> operation_mismatch(const kernels::variant& v, const cases::case_spec& c) {
  const bool paged = c.layout.kind == cases::layout_kind::paged;
  if (paged && !v.run_paged) return "the variant implements the prefill operation, not paged decode";
  if (!paged && !v.run) return "the variant implements paged decode only";
  return std::nullopt;
}

std::optional<double> case_result::overhead_seconds() const {
  if (launches.size() != 2) return std::nullopt;
  double overhead = 0;
  for (const auto& l : launches) {
    if (!l.kernel_seconds) return std::nullopt;
    overhead += l.exchange_seconds - *l.kernel_seconds;
  }
  return overhead;
}

std::optional<double> case_result::kernel_noise() const {
  if (!kernel_seconds_median || kernel_seconds <= 0) return std::nullopt;
  return (*kernel_seconds_median - kernel_seconds) / kernel_seconds;
}

std::string skipped_pair::sentence() const { return fmt::format("{} on {}: {}", variant, case_name, reason); }

std::string failing_model_sentence(std::string_view variant, std::string_view case_name) {
  return fmt::format("correct variant '{}' has findings on case '{}'", variant, case_name);
}

std::string blind_mutant_sentence(std::string_view variant, std::string_view bug_class) {
  return fmt::format("mutant '{}' ({}) was caught by no case: a check went blind", variant, bug_class);
}

std::string unjudged_sentence(std::string_view variant, std::string_view case_name, std::string_view error) {
  return fmt::format("'{}' could not be judged on case '{}': {}", variant, case_name, error.substr(0, error.find('\n')));
}

bool suite_report::expectations_hold() const { return broken_expectations().empty(); }

bool suite_report::nothing_judged() const {
  const bool none = std::none_of(results.begin(), results.end(), [](const auto& r) { return r.judged; });
  // A shard may own no pair at all; a whole run whose every pair was skipped judged nothing either.
  return none && (!results.empty() || (!shard && !skipped.empty()));
}

std::string every_pair_skipped_sentence(std::size_t skipped) {
  return fmt::format("not one case was judged: every pair ({}) was skipped (the report's skipped pairs say why)",
                     skipped);
}

std::vector<std::string> suite_report::broken_expectations() const {
  std::vector<std::string> broken;
  if (results.empty() && !shard && !skipped.empty()) broken.push_back(every_pair_skipped_sentence(skipped.size()));
  for (const auto& r : results)
    if (!r.error.empty())
      broken.push_back(unjudged_sentence(r.variant, r.case_name, r.error));
    else if (!r.as_expected())
      broken.push_back(failing_model_sentence(r.variant, r.case_name));
  if (shard) return broken;
  // A mutant every case refused (its bug needs inputs the suite does not hold: fp4 block scales) was
  // not exercised, which the skipped pairs say; one that ran and was never caught went blind.
  for (const auto& m : mutants) {
    const bool ran = std::ranges::any_of(results, [&](const case_result& r) { return r.variant == m.variant; });
    if (m.caught_by.empty() && ran) broken.push_back(blind_mutant_sentence(m.variant, m.bug_class));
  }
  return broken;
}

namespace {

using clock = std::chrono::steady_clock;
double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

// Why variant v does not run on case c, or nullopt when it does.
std::optional<std::string> why_skipped(const kernels::variant& v, const cases::case_spec& c, const exact::problem& p) {
  if (auto why = operation_mismatch(v, c)) return why;
  if (const mma::instruction* model = bounds::traits(v.declared.dot).model)
    if (auto why = mma::why_unusable(*model, c.q_format, c.k_format, c.head_dim, v.declared.promote_every))
      return why;
  if (v.refuses)
    if (auto why = v.refuses(p)) return why;
  if ((v.declared.q_format && *v.declared.q_format != c.q_format) ||
      (v.declared.k_format && *v.declared.k_format != c.k_format))
    return fmt::format("the variant consumes {} x {} only", fp8::traits(v.declared.q_format.value_or(c.q_format)).name,
                       fp8::traits(v.declared.k_format.value_or(c.k_format)).name);
  return std::nullopt;
}

// One variant on one case, as planned before any launch: its effective contract, its reference
// and its centre.
struct planned {
  const kernels::variant* declared;
  kernels::variant judged;
  const exact::result* reference = nullptr;
  const exact::result* centre = nullptr;
};

// The run of a suite: the report it fills and its progress through the (case, variant) pairs.
class suite_run {
 public:
  suite_run(const cases::suite& s, const run_options& o) : s_(s), o_(o), chosen_(select_variants(s, o.variants)) {
    report_.suite_name = s.name;
    report_.file = s.file.string();
    report_.shard = o.shard;
    for (const auto* v : chosen_) {
      report_.variants.push_back({v->name, !v->must_produce.empty(), kernels::describe(v->declared)});
      if (!v->must_produce.empty()) report_.mutants.push_back({v->name, v->bug_class, v->must_produce, {}});
    }
    for (std::size_t ci = 0; ci < s.cases.size(); ++ci)
      for (std::size_t vi = 0; vi < chosen_.size(); ++vi) total_ += owned(ci, vi);
  }

  suite_report finish(clock::time_point start) {
    if (o_.progress) o_.progress(total_, total_, "");
    report_.seconds = since(start);
    return std::move(report_);
  }

  void run_case(std::size_t ci) {
    const cases::case_spec& c = s_.cases[ci];
    case_record& record = report_.cases.emplace_back();
    record = {c.name, std::nullopt, c.m, c.n, c.heads, c.head_dim, c.clean_logits, c.topk};
    bool any = false;
    for (std::size_t vi = 0; vi < chosen_.size(); ++vi) any |= owned(ci, vi);
    if (!any) return;  // another shard's case: its inputs are not generated here
    const activity::scope doing(
        fmt::format("case '{}' (m={}, n={}, heads={}, head_dim={})", c.name, c.m, c.n, c.heads, c.head_dim));
    const auto case_start = clock::now();
    case_timing timing{c.name};
    const inputs::tensors t = inputs::generate(c);
    record.inputs_fingerprint = inputs::fingerprint(t);
    timing.inputs_seconds = since(case_start);
    // A paged case is judged by its rows (p: no keys) and its cache (paged).
    const exact::problem p = inputs::problem_of(c, t);
    std::optional<paged::problem> paged;
    if (t.paged) paged = inputs::paged_problem_of(c, t);
    // References and centres once per what the variants' contracts change in them.
    judge::reference_cache references(p, paged ? &*paged : nullptr, o_.engines, o_.threads);
    const std::vector<planned> plan = plan_case(ci, p, references);
    timing.reference_seconds = references.reference_seconds();
    timing.centre_seconds = references.centre_seconds();
    run_planned(c, p, paged ? &*paged : nullptr, plan);
    timing.total_seconds = since(case_start);
    report_.timings.push_back(timing);
  }

 private:
  bool owned(std::size_t case_index, std::size_t variant_index) const {
    return !o_.shard || o_.shard->owns(case_index * chosen_.size() + variant_index);
  }

  void progress(const cases::case_spec& c, const kernels::variant& v) {
    if (o_.progress) o_.progress(done_, total_, fmt::format("{} x {}", c.name, v.name));
  }

  // Which variants run on the case, each with its effective contract, its reference and its
  // centre; the others are skipped with the reason. Decided and computed first, so that the next
  // variant's launches can begin while one is judged without sharing the device (or OpenBLAS)
  // with a reference computation.
  std::vector<planned> plan_case(std::size_t ci, const exact::problem& p, judge::reference_cache& references) {
    const cases::case_spec& c = s_.cases[ci];
    std::vector<planned> plan;
    for (std::size_t vi = 0; vi < chosen_.size(); ++vi) {
      if (!owned(ci, vi)) continue;
      const kernels::variant* v = chosen_[vi];
      if (auto why = why_skipped(*v, c, p)) {
        progress(c, *v);
        report_.skipped.push_back({c.name, v->name, std::move(*why)});
        ++done_;
        continue;
      }
      kernels::variant judged = *v;
      judged.declared = effective_contract(*v, c);
      const activity::scope running(fmt::format("variant '{}'", v->name));
      progress(c, *v);
      const exact::result* reference = &references.reference(judged.declared);
      const exact::result* centre = references.centre(judged.declared);
      plan.push_back({v, std::move(judged), reference, centre});
    }
    return plan;
  }

  // Two pairs of output buffers, taken in turn: one variant's launches write one pair while the
  // previous variant's outputs in the other are judged. The queue runs the launches one after
  // another (declared after the buffers: it finishes its launch before they go).
  void run_planned(const cases::case_spec& c, const exact::problem& p, const paged::problem* paged,
                   const std::vector<planned>& plan) {
    runner::buffers outputs[2];
    runner::launch_queue queue;
    auto start_launches = [&](std::size_t k) {
      return runner::start(queue, plan[k].judged, p, paged, outputs[k % 2], o_.threads);
    };
    runner::launches next;
    for (std::size_t k = 0; k < plan.size(); ++k) {
      const kernels::variant& v = *plan[k].declared;
      progress(c, v);
      const activity::scope running(fmt::format("variant '{}'", v.name));
      runner::launches mine = next.started() ? std::move(next) : start_launches(k);
      next = k + 1 < plan.size() ? start_launches(k + 1) : runner::launches{};
      const bool diagnose = o_.diagnose && (v.must_produce.empty() || o_.diagnose_mutants);
      runner::outcome out = runner::run(plan[k].judged, p, paged, *plan[k].reference, plan[k].centre, c.topk,
                                        o_.threads, diagnose, nullptr, std::move(mine), o_.judged);
      record(c, v, std::move(out));
      ++done_;
    }
  }

  void record(const cases::case_spec& c, const kernels::variant& v, runner::outcome out) {
    case_result r;
    r.case_name = c.name;
    r.variant = v.name;
    r.is_mutant = !v.must_produce.empty();
    r.kernel_seconds = out.launch.kernel_seconds;
    r.seconds = out.seconds;
    for (const auto& f : out.judgement.findings)
      for (const auto& expected : v.must_produce)
        if (compare::to_string(f.kind) == expected) r.caught = true;
    r.judgement = std::move(out.judgement);
    if (r.caught)
      for (auto& m : report_.mutants)
        if (m.variant == v.name) m.caught_by.push_back(c.name);
    report_.results.push_back(std::move(r));
  }

  const cases::suite& s_;
  const run_options& o_;
  std::vector<const kernels::variant*> chosen_;
  suite_report report_;
  std::size_t total_ = 0, done_ = 0;
};

}  // namespace

suite_report run_suite(const cases::suite& s, const run_options& o) {
  const auto start = clock::now();
  suite_run run(s, o);
  for (std::size_t ci = 0; ci < s.cases.size(); ++ci) run.run_case(ci);
  return run.finish(start);
}

}  // namespace mqa::verdict
