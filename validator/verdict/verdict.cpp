#include "verdict.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "kernels/registry.hpp"
#include "reference/mma/instruction.hpp"
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
  if (!c.clean_logits) k.mask = kernels::masking::dont_care;
  return k;
}

bool suite_report::expectations_hold() const { return broken_expectations().empty(); }

std::vector<std::string> suite_report::broken_expectations() const {
  std::vector<std::string> broken;
  for (const auto& r : results)
    if (!r.as_expected())
      broken.push_back(fmt::format("correct variant '{}' has findings on case '{}'", r.variant, r.case_name));
  for (const auto& m : mutants)
    if (m.caught_by.empty())
      broken.push_back(fmt::format("mutant '{}' ({}) was caught by no case: a check went blind", m.variant, m.bug_class));
  return broken;
}

suite_report run_suite(const cases::suite& s, const run_options& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<const kernels::variant*> chosen = select_variants(s, o.variants);
  suite_report report;
  report.suite_name = s.name;
  report.file = s.file.string();
  for (const auto* v : chosen)
    if (!v->must_produce.empty()) report.mutants.push_back({v->name, v->bug_class, v->must_produce, {}});

  std::vector<const cases::case_spec*> cases;
  for (const auto& c : s.cases) cases.push_back(&c);

  const std::size_t total = cases.size() * chosen.size();
  std::size_t done = 0;
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  for (const cases::case_spec* c : cases) {
    const activity::scope doing(fmt::format("case '{}' (m={}, n={}, heads={}, head_dim={})", c->name, c->m, c->n,
                                            c->heads, c->head_dim));
    const auto case_start = clock::now();
    case_timing timing{c->name};
    const inputs::tensors t = inputs::generate(*c);
    timing.inputs_seconds = since(case_start);
    const exact::problem p = inputs::problem_of(*c, t);
    std::map<exact::relu_rule, exact::result> references;  // computed once per relu rule the variants declare
    // Centres of modelled contracts, once per (relu rule, model, promotion) the variants declare.
    std::map<std::tuple<exact::relu_rule, bounds::dot_accumulator, std::int64_t>, exact::result> centres;
    runner::buffers outputs;  // reused by every variant of the case
    for (const kernels::variant* v : chosen) {
      if (o.progress) o.progress(done, total, fmt::format("{} x {}", c->name, v->name));
      const mma::instruction* model = mma::instruction_for(v->declared.dot);
      if (model != nullptr) {
        if (const auto why = mma::why_unusable(*model, c->q_format, c->k_format, c->head_dim, v->declared.promote_every)) {
          report.skipped.push_back(fmt::format("{} on {}: {}", v->name, c->name, *why));
          ++done;
          continue;
        }
      }
      if (v->refuses) {
        if (const auto why = v->refuses(p)) {
          report.skipped.push_back(fmt::format("{} on {}: {}", v->name, c->name, *why));
          ++done;
          continue;
        }
      }
      if ((v->declared.q_format && *v->declared.q_format != c->q_format) ||
          (v->declared.k_format && *v->declared.k_format != c->k_format)) {
        report.skipped.push_back(fmt::format("{} on {}: the variant consumes {} x {} only", v->name, c->name,
                                             fp8::traits(v->declared.q_format.value_or(c->q_format)).name,
                                             fp8::traits(v->declared.k_format.value_or(c->k_format)).name));
        ++done;
        continue;
      }
      const activity::scope running(fmt::format("variant '{}'", v->name));
      kernels::variant judged = *v;
      judged.declared = effective_contract(*v, *c);
      auto it = references.find(judged.declared.relu);
      if (it == references.end()) {
        exact::options eo;
        eo.relu = judged.declared.relu;
        eo.threads = o.threads;
        const auto reference_start = clock::now();
        it = references.emplace(judged.declared.relu, o.reference ? o.reference(p, eo) : exact::compute(p, eo)).first;
        timing.reference_seconds += since(reference_start);
      }
      const exact::result* centre = nullptr;
      if (bounds::is_modelled(judged.declared.dot)) {
        const auto key = std::tuple{judged.declared.relu, judged.declared.dot, judged.declared.promote_every};
        auto found = centres.find(key);
        if (found == centres.end()) {
          const auto centre_start = clock::now();
          found = centres.emplace(key, *runner::centre_for(judged.declared, p, it->second, o.threads)).first;
          timing.reference_seconds += since(centre_start);
          timing.centre_seconds += since(centre_start);
        }
        centre = &found->second;
      }
      runner::outcome out = runner::run(judged, p, it->second, centre, c->topk, o.threads, &outputs);
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
