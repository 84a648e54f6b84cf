#include "verdict.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "kernels/registry.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"
#include "validator/activity.hpp"
#include "validator/input_error.hpp"
#include "validator/inputs/inputs.hpp"
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
  return !results.empty() && std::none_of(results.begin(), results.end(), [](const auto& r) { return r.judged; });
}

std::vector<std::string> suite_report::broken_expectations() const {
  std::vector<std::string> broken;
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

suite_report run_suite(const cases::suite& s, const run_options& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<const kernels::variant*> chosen = select_variants(s, o.variants);
  suite_report report;
  report.suite_name = s.name;
  report.file = s.file.string();
  report.shard = o.shard;
  for (const auto* v : chosen) {
    report.variants.push_back({v->name, !v->must_produce.empty(), kernels::describe(v->declared)});
    if (!v->must_produce.empty()) report.mutants.push_back({v->name, v->bug_class, v->must_produce, {}});
  }

  auto owned = [&](std::size_t case_index, std::size_t variant_index) {
    return !o.shard || o.shard->owns(case_index * chosen.size() + variant_index);
  };
  std::size_t total = 0;
  for (std::size_t ci = 0; ci < s.cases.size(); ++ci)
    for (std::size_t vi = 0; vi < chosen.size(); ++vi) total += owned(ci, vi);
  std::size_t done = 0;
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  for (std::size_t ci = 0; ci < s.cases.size(); ++ci) {
    const cases::case_spec* c = &s.cases[ci];
    case_record& record = report.cases.emplace_back();
    record = {c->name, std::nullopt, c->m, c->n, c->heads, c->head_dim, c->clean_logits, c->topk};
    bool any = false;
    for (std::size_t vi = 0; vi < chosen.size(); ++vi) any |= owned(ci, vi);
    if (!any) continue;  // another shard's case: its inputs are not generated here
    const activity::scope doing(fmt::format("case '{}' (m={}, n={}, heads={}, head_dim={})", c->name, c->m, c->n,
                                            c->heads, c->head_dim));
    const auto case_start = clock::now();
    case_timing timing{c->name};
    const inputs::tensors t = inputs::generate(*c);
    record.inputs_fingerprint = inputs::fingerprint(t);
    timing.inputs_seconds = since(case_start);
    // A paged case (issue 13) is judged by its rows (p: no keys) and its cache (paged).
    const exact::problem p = inputs::problem_of(*c, t);
    std::optional<paged::problem> paged;
    if (t.paged) paged = inputs::paged_problem_of(*c, t);
    // Computed once per (relu rule, bf16 logits) the variants declare.
    std::map<std::pair<exact::relu_rule, bool>, exact::result> references;
    // Centres of modelled contracts, once per (relu rule, model, promotion, bf16 logits) the variants declare.
    std::map<std::tuple<exact::relu_rule, bounds::dot_accumulator, std::int64_t, bool>, exact::result> centres;
    // Which variants run on this case, each with its effective contract, its reference and its
    // centre; the others are skipped with the reason. Decided and computed first, so that the
    // next variant's launches can begin while one is judged without sharing the device (or
    // OpenBLAS) with a reference computation.
    struct planned {
      std::size_t vi;
      kernels::variant judged;
      const exact::result* reference = nullptr;
      const exact::result* centre = nullptr;
    };
    std::vector<planned> plan;
    for (std::size_t vi = 0; vi < chosen.size(); ++vi) {
      if (!owned(ci, vi)) continue;
      const kernels::variant* v = chosen[vi];
      auto skip = [&](std::string reason) {
        if (o.progress) o.progress(done, total, fmt::format("{} x {}", c->name, v->name));
        report.skipped.push_back({c->name, v->name, std::move(reason)});
        ++done;
      };
      if (const auto why = operation_mismatch(*v, *c)) {
        skip(*why);
        continue;
      }
      const mma::instruction* model = bounds::traits(v->declared.dot).model;
      if (model != nullptr) {
        if (const auto why = mma::why_unusable(*model, c->q_format, c->k_format, c->head_dim, v->declared.promote_every)) {
          skip(*why);
          continue;
        }
      }
      if (v->refuses) {
        if (const auto why = v->refuses(p)) {
          skip(*why);
          continue;
        }
      }
      if ((v->declared.q_format && *v->declared.q_format != c->q_format) ||
          (v->declared.k_format && *v->declared.k_format != c->k_format)) {
        skip(fmt::format("the variant consumes {} x {} only", fp8::traits(v->declared.q_format.value_or(c->q_format)).name,
                         fp8::traits(v->declared.k_format.value_or(c->k_format)).name));
        continue;
      }
      kernels::variant judged = *v;
      judged.declared = effective_contract(*v, *c);
      const activity::scope running(fmt::format("variant '{}'", v->name));
      const bool bf16 = judged.declared.logits == bounds::logits_precision::bf16;
      auto it = references.find({judged.declared.relu, bf16});
      if (it == references.end()) {
        if (o.progress) o.progress(done, total, fmt::format("{} x {}", c->name, v->name));
        exact::options eo;
        eo.relu = judged.declared.relu;
        eo.threads = o.threads;
        eo.bf16_logits = bf16;
        const auto reference_start = clock::now();
        exact::result computed = paged ? (o.paged_reference ? o.paged_reference(*paged, eo) : paged::compute(*paged, eo))
                                       : (o.reference ? o.reference(p, eo) : exact::compute(p, eo));
        it = references.emplace(std::pair{judged.declared.relu, bf16}, std::move(computed)).first;
        timing.reference_seconds += since(reference_start);
      }
      const exact::result* centre = nullptr;
      if (bounds::is_modelled(judged.declared.dot)) {
        const auto key = std::tuple{judged.declared.relu, judged.declared.dot, judged.declared.promote_every, bf16};
        auto found = centres.find(key);
        if (found == centres.end()) {
          const auto centre_start = clock::now();
          found = centres
                      .emplace(key, paged ? *runner::centre_for(judged.declared, *paged, p, it->second, o.threads)
                                          : *runner::centre_for(judged.declared, p, it->second, o.threads))
                      .first;
          timing.reference_seconds += since(centre_start);
          timing.centre_seconds += since(centre_start);
        }
        centre = &found->second;
      }
      plan.push_back({vi, std::move(judged), &it->second, centre});
    }

    // Two pairs of output buffers, taken in turn: one variant's launches write one pair while the
    // previous variant's outputs in the other are judged. The queue runs the launches one after
    // another (declared after the buffers: it finishes its launch before they go).
    runner::buffers outputs[2];
    runner::launch_queue queue;
    auto start_launches = [&](std::size_t k) {
      return runner::start(queue, plan[k].judged, p, paged ? &*paged : nullptr, outputs[k % 2], o.threads);
    };
    runner::launches next;
    for (std::size_t k = 0; k < plan.size(); ++k) {
      const kernels::variant* v = chosen[plan[k].vi];
      const kernels::variant& judged = plan[k].judged;
      if (o.progress) o.progress(done, total, fmt::format("{} x {}", c->name, v->name));
      const activity::scope running(fmt::format("variant '{}'", v->name));
      runner::launches mine = next.started() ? std::move(next) : start_launches(k);
      next = k + 1 < plan.size() ? start_launches(k + 1) : runner::launches{};
      runner::outcome out =
          paged ? runner::run(judged, *paged, p, *plan[k].reference, plan[k].centre, c->topk, o.threads, o.diagnose,
                              nullptr, std::move(mine))
                : runner::run(judged, p, *plan[k].reference, plan[k].centre, c->topk, o.threads, o.diagnose, nullptr,
                              std::move(mine));
      case_result r;
      r.case_name = c->name;
      r.variant = v->name;
      r.is_mutant = !v->must_produce.empty();
      r.kernel_seconds = out.launch.kernel_seconds;
      r.seconds = out.seconds;
      for (const auto& f : out.judgement.findings)
        for (const auto& expected : v->must_produce)
          if (compare::to_string(f.kind) == expected) r.caught = true;
      r.judgement = std::move(out.judgement);
      if (r.caught)
        for (auto& m : report.mutants)
          if (m.variant == v->name) m.caught_by.push_back(c->name);
      report.results.push_back(std::move(r));
      ++done;
    }
    timing.total_seconds = since(case_start);
    report.timings.push_back(timing);
  }
  if (o.progress) o.progress(total, total, "");
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace mqa::verdict
