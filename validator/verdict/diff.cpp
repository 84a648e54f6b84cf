#include "diff.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "kernels/contract_text.hpp"
#include "validator/input_error.hpp"
#include "validator/verdict/contract_change.hpp"
#include "validator/verdict/slowdown.hpp"
#include "validator/io/json_text.hpp"

namespace mqa::verdict {
namespace {

using json = nlohmann::json;
using pair_key = std::pair<std::string, std::string>;  // case, variant ("" for an external kernel)

const json kNone;

// The metrics a diff follows, where they sit in a result.
struct metric_path {
  const char* name;
  const char* group;  // inside metrics, or nullptr
  const char* field;
};
constexpr metric_path kComparedMetrics[] = {
    {"max_error_over_bound", nullptr, "max_error_over_bound"},
    {"magnitude_ulp_p99", "magnitude_ulp", "p99"},  // condition-free: compare first (docs/contracts.md)
    {"ulp_p50", "ulp", "p50"},
    {"ulp_p99", "ulp", "p99"},
    {"ulp_p999", "ulp", "p999"},
    {"ulp_max", "ulp", "max"},
    {"share_exact", "ulp", "share_exact"},
    {"topk_recall", nullptr, "topk_recall"},
};

const json& metric_of(const json* result, const metric_path& p) {
  if (!result) return kNone;
  const json& m = result->at("metrics");
  if (!m.is_object()) return kNone;
  if (!p.group) return m.at(p.field);
  // A group a report may lack (magnitude_ulp: reports of an older mqacheck) compares as absent.
  const auto group = m.find(p.group);
  return group == m.end() || !group->is_object() ? kNone : group->at(p.field);
}

bool kernel_report(const json& r) { return r.contains("kernel") && r.at("kernel").is_object(); }

std::set<std::string> classes_of(const json* result) {
  std::set<std::string> out;
  if (result)
    for (const auto& f : result->at("findings")) out.insert(f.at("class").get<std::string>());
  return out;
}

std::string joined(const std::vector<std::string>& items, std::string_view separator = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : std::string(separator)) + s;
  return out;
}

std::string outcome_of(const json* result) { return result ? result->at("outcome").get<std::string>() : ""; }

bool is_model(const json& result) { return result.at("kind") == "model"; }

// One report, indexed.
struct side {
  const json& report;
  bool by_case;  // an external kernel's report matched against another: results keyed by case alone
  std::map<pair_key, const json*> results, skipped;
  std::map<std::string, const json*> cases, mutants;
  std::vector<pair_key> order;

  side(const json& r, bool kernels) : report(r), by_case(kernels) {
    for (const auto& x : r.at("results")) {
      const pair_key k{x.at("case").get<std::string>(), by_case ? "" : x.at("variant").get<std::string>()};
      results[k] = &x;
      order.push_back(k);
    }
    for (const auto& x : r.at("skipped"))
      skipped[{x.at("case").get<std::string>(), by_case ? "" : x.at("variant").get<std::string>()}] = &x;
    for (const auto& c : r.at("cases")) cases[c.at("case").get<std::string>()] = &c;
    for (const auto& m : r.at("mutants")) mutants[by_case ? "" : m.at("variant").get<std::string>()] = &m;
  }
  const json* result(const pair_key& k) const {
    const auto it = results.find(k);
    return it == results.end() ? nullptr : it->second;
  }
  bool judged(const std::string& case_name) const {
    return std::any_of(order.begin(), order.end(), [&](const pair_key& k) { return k.first == case_name; });
  }
};

// What makes two runs of a case comparable.
std::vector<std::string> case_changes(const json* before, const json* after) {
  if (!before || !after) return {"not recorded in the report's cases"};
  std::vector<std::string> changes;
  for (const char* field : {"inputs_fingerprint", "m", "n", "heads", "head_dim", "clean_logits", "topk"}) {
    const json &a = before->at(field), &b = after->at(field);
    // A null fingerprint is a case whose inputs were never made (every pair of it skipped). On one
    // side only it vouches for nothing: the other side's inputs cannot be matched with it. On both
    // sides nothing was judged in either report, so nothing can have changed.
    const bool unknown = field == std::string_view("inputs_fingerprint") && (a.is_null() != b.is_null());
    if (a != b || unknown)
      changes.push_back(fmt::format("{} {} -> {}", field == std::string_view("inputs_fingerprint") ? "inputs fingerprint" : field,
                                    io::json_text(a), io::json_text(b)));
  }
  return changes;
}

json info_of(const named_report& r) {
  const json& x = *r.report;
  json info{{"path", r.name},
            {"mqacheck", x.at("mqacheck")},
            {"file", x.at("file")},
            {"expectations_hold", x.at("expectations_hold")},
            {"results", x.at("results").size()}};
  if (kernel_report(x)) info["kernel"] = x.at("kernel");
  return info;
}

std::string pair_name(const pair_diff& p) {
  return p.baseline_variant.empty() || p.baseline_variant == p.variant
             ? fmt::format("{} x {}", p.case_name, p.variant)
             : fmt::format("{} x {} (baseline: {})", p.case_name, p.variant, p.baseline_variant);
}

// Which pairs a shard ran: where `--shard auto` read it from ("source") is no part of that.
json shard_pairs(const json& shard) {
  if (!shard.is_object()) return shard;
  json out = shard;
  out.erase("source");
  return out;
}

// A shard's report against anything but a run of the same shard (merge the shards first), or
// reports of two suites. Two runs of one shard judge the same pairs and are compared as any two runs.
void refuse_incomparable(const named_report& baseline, const named_report& now) {
  if (shard_pairs(baseline.report->at("shard")) != shard_pairs(now.report->at("shard")))
    for (const auto* r : {&baseline, &now})
      if (r->report->at("shard").is_object())
        throw input_error(fmt::format("{}: the report of shard {}/{} only: put the shards together first (mqacheck merge "
                                      "SHARD.json ... --out DIR) and compare the merged report",
                                      r->name, r->report->at("shard").at("index").get<int>(),
                                      r->report->at("shard").at("count").get<int>()));
  const json &a = *baseline.report, &b = *now.report;
  if (a.at("suite") != b.at("suite"))
    throw input_error(fmt::format("{} is a report of suite '{}', {} of suite '{}': a diff compares two runs of one suite",
                                  baseline.name, a.at("suite").get<std::string>(), now.name,
                                  b.at("suite").get<std::string>()));
}

// The cases in the baseline's order, then the new report's, then those only a result names.
std::vector<std::string> case_order(const side& before, const side& after) {
  std::vector<std::string> order;
  for (const auto& c : before.report.at("cases")) order.push_back(c.at("case").get<std::string>());
  for (const auto& c : after.report.at("cases"))
    if (!before.cases.count(c.at("case").get<std::string>())) order.push_back(c.at("case").get<std::string>());
  for (const auto* s : {&before, &after})
    for (const auto& k : s->order)
      if (std::find(order.begin(), order.end(), k.first) == order.end()) order.push_back(k.first);
  return order;
}

// Each case's status (same, changed, added, vanished) into d.cases; a vanished case that was
// judged, or a changed one, regresses. Returns the statuses by case name.
std::map<std::string, std::string> diff_cases(const side& before, const side& after, report_diff& d) {
  std::map<std::string, std::string> status;
  for (const auto& name : case_order(before, after)) {
    const auto x = before.cases.find(name), y = after.cases.find(name);
    case_diff c{name, "same", {}};
    const bool in_before = x != before.cases.end(), in_after = y != after.cases.end();
    if (in_before && !in_after && !after.judged(name)) {
      c.status = "vanished";
      if (before.judged(name))
        d.regressions.push_back({"case-missing", name, "", fmt::format("case '{}': in the baseline, not in the new report", name)});
    } else if (!in_before && in_after && !before.judged(name)) {
      c.status = "added";
    } else {
      c.changes = case_changes(in_before ? x->second : nullptr, in_after ? y->second : nullptr);
      if (!c.changes.empty()) {
        c.status = "changed";
        d.regressions.push_back(
            {"case-changed", name, "",
             fmt::format("case '{}' changed ({}): its results are not compared; make a new baseline if the change is meant",
                         name, joined(c.changes, "; "))});
      }
    }
    status[name] = c.status;
    d.cases.push_back(std::move(c));
  }
  return status;
}

// A pair's outcomes, findings and metrics on both sides (x: the baseline's result, y: the new
// one; either may be missing); its status is left to diff_pairs.
pair_diff pair_values(const pair_key& k, const json* x, const json* y) {
  const json& any = y ? *y : *x;
  pair_diff p;
  p.case_name = k.first;
  p.variant = any.at("variant").get<std::string>();
  p.baseline_variant = x ? x->at("variant").get<std::string>() : "";
  p.baseline_outcome = outcome_of(x);
  p.new_outcome = outcome_of(y);
  p.baseline_findings = x ? findings_summary(*x) : "";
  p.new_findings = y ? findings_summary(*y) : "";
  for (const auto& m : kComparedMetrics) p.metrics.push_back({m.name, metric_of(x, m), metric_of(y, m)});
  p.metrics.push_back({"kernel_seconds", x ? x->at("kernel_seconds") : kNone, y ? y->at("kernel_seconds") : kNone});
  const std::set<std::string> was = classes_of(x), is = classes_of(y);
  std::set_difference(is.begin(), is.end(), was.begin(), was.end(), std::back_inserter(p.classes_added));
  std::set_difference(was.begin(), was.end(), is.begin(), is.end(), std::back_inserter(p.classes_removed));
  return p;
}

// A pair judged in both reports: a correct variant that fails now or shows a new class
// regresses, one that passes again or lost a class improved; a kernel past the slowdown limit
// regresses.
void judge_compared_pair(const pair_diff& p, const json& x, const json& y, const diff_options& o, report_diff& d) {
  const std::string name = pair_name(p);
  if (is_model(y)) {
    if (p.baseline_outcome == "pass" && p.new_outcome != "pass")
      d.regressions.push_back({"model-fails", p.case_name, p.variant,
                               fmt::format("{}: pass in the baseline, {} now ({})", name, p.new_outcome, p.new_findings)});
    else if (!p.classes_added.empty())
      d.regressions.push_back({"new-finding-class", p.case_name, p.variant,
                               fmt::format("{}: new finding class{} {} ({})", name, p.classes_added.size() == 1 ? "" : "es",
                                           joined(p.classes_added), p.new_findings)});
    if (p.baseline_outcome != "pass" && p.new_outcome == "pass")
      d.improvements.push_back(fmt::format("{}: {} in the baseline, pass now", name, p.baseline_outcome));
    else if (!p.classes_removed.empty())
      d.improvements.push_back(fmt::format("{}: finding class{} gone: {}", name, p.classes_removed.size() == 1 ? "" : "es",
                                           joined(p.classes_removed)));
  }
  // Best times against max(limit, 1 + both reports' noise): validator/verdict/slowdown.hpp.
  const auto t0 = kernel_time_of(x), t1 = kernel_time_of(y);
  if (o.max_slowdown && t0 && t1 && t0->best > 0 && t1->best / t0->best > slowdown_limit(*o.max_slowdown, *t0, *t1))
    d.regressions.push_back({"slower", p.case_name, p.variant,
                             fmt::format("{}: kernel time {:.3g} ms -> {:.3g} ms, {}", name, t0->best * 1e3,
                                         t1->best * 1e3, describe_slowdown(*t0, *t1, *o.max_slowdown))});
}

// Drift of a pair's error in ULPs of its magnitude (metrics.magnitude_ulp: condition-free, so it
// moves with the kernel's arithmetic, not with how the case's head sums cancel) beyond the limit
// regresses. A report without the figures (an older mqacheck) vouches for nothing here. A baseline
// below the histogram's unit counts as one unit: from 0, any growth would be an infinite factor.
void judge_ulp_drift(const pair_diff& p, const json& x, const json& y, const diff_options& o, report_diff& d) {
  if (!o.max_drift) return;
  auto scale_of = [](const json& result) -> const json* {
    const json& m = result.at("metrics");
    if (!m.is_object()) return nullptr;
    const auto found = m.find("magnitude_ulp");
    return found == m.end() || !found->is_object() ? nullptr : &*found;
  };
  const json *a = scale_of(x), *b = scale_of(y);
  if (!a || !b) return;
  for (const char* field : {"p99", "max"}) {
    const auto before = measure(a->at(field)), now = measure(b->at(field)), unit = measure(a->at("histogram_unit"));
    if (!before || !now) continue;
    const double factor = *now / std::max(*before, unit.value_or(0.0));
    if (!(factor > *o.max_drift)) continue;
    d.regressions.push_back({"ulp-drift", p.case_name, p.variant,
                             fmt::format("{}: error in ULPs of the magnitude, {} {:.4g} -> {:.4g}, {:.2f}x (limit {}x)",
                                         pair_name(p), field, *before, *now, factor, *o.max_drift)});
    return;  // one regression per pair
  }
}

// Pairs in the baseline's order, then the new ones: each pair's status (compared, added,
// vanished, case-changed) and what regressed or improved.
void diff_pairs(const side& before, const side& after, const std::map<std::string, std::string>& case_status,
                const diff_options& o, report_diff& d) {
  std::vector<pair_key> keys = before.order;
  for (const auto& k : after.order)
    if (!before.results.count(k)) keys.push_back(k);
  for (const auto& k : keys) {
    const json *x = before.result(k), *y = after.result(k);
    pair_diff p = pair_values(k, x, y);
    const std::string& status = case_status.at(k.first);
    const std::string name = pair_name(p);
    if (status == "changed") {
      p.status = "case-changed";
    } else if (x && !y) {
      p.status = "vanished";
      if (status != "vanished") {
        const auto skipped = after.skipped.find(k);
        d.regressions.push_back(
            {"pair-missing", p.case_name, p.variant,
             fmt::format("{}: judged in the baseline ({}), {}", name, p.baseline_outcome,
                         skipped != after.skipped.end() ? "skipped now: " + skipped->second->at("reason").get<std::string>()
                                                        : std::string("not in the new report"))});
      }
    } else if (!x && y) {
      p.status = "added";
      if (is_model(*y) && p.new_outcome != "pass")
        d.regressions.push_back({"new-pair-fails", p.case_name, p.variant,
                                 fmt::format("{}: not in the baseline, {} now ({})", name, p.new_outcome, p.new_findings)});
    } else {
      p.status = "compared";
      judge_compared_pair(p, *x, *y, o, d);
      judge_ulp_drift(p, *x, *y, o, d);
    }
    d.pairs.push_back(std::move(p));
  }
}

// Mutants by name (the one kernel's, for two external kernels): one caught by no case regresses
// unless the baseline's was caught by none either; one caught again improved.
void diff_mutants(const side& before, const side& after, report_diff& d) {
  std::vector<std::string> keys;
  for (const auto& [key, m] : before.mutants) keys.push_back(key);
  for (const auto& [key, m] : after.mutants)
    if (!before.mutants.count(key)) keys.push_back(key);
  for (const auto& key : keys) {
    const auto x = before.mutants.find(key), y = after.mutants.find(key);
    mutant_diff m;
    m.in_baseline = x != before.mutants.end();
    m.in_new = y != after.mutants.end();
    m.variant = (m.in_new ? y->second : x->second)->at("variant").get<std::string>();
    if (m.in_baseline) m.baseline_caught_by = x->second->at("caught_by").get<std::vector<std::string>>();
    if (m.in_new) m.new_caught_by = y->second->at("caught_by").get<std::vector<std::string>>();
    if (m.in_new && m.new_caught_by.empty()) {
      if (!m.in_baseline)
        d.regressions.push_back(
            {"mutant-blind", "", m.variant, fmt::format("mutant '{}' (not in the baseline): caught by no case", m.variant)});
      else if (!m.baseline_caught_by.empty())
        d.regressions.push_back({"mutant-blind", "", m.variant,
                                 fmt::format("mutant '{}': caught in the baseline by {}, now by no case: a check went blind",
                                             m.variant, joined(m.baseline_caught_by))});
    }
    if (m.in_baseline && m.in_new && m.baseline_caught_by.empty() && !m.new_caught_by.empty())
      d.improvements.push_back(
          fmt::format("mutant '{}': caught by no case in the baseline, now by {}", m.variant, joined(m.new_caught_by)));
    d.mutants.push_back(std::move(m));
  }
}

// A contract line of a report, read back (kernels/contract_text.hpp).
kernels::contract_line contract_of(const named_report& r, const json& line, std::string_view where) {
  const auto c = kernels::parse_contract(line.get<std::string>());
  if (!c)
    throw input_error(fmt::format("{}: {}: contract '{}' is not a line this mqacheck writes", r.name, where,
                                  line.get<std::string>()));
  return *c;
}

// Every shape judged in either report: a bound depends on head_dim and heads.
std::vector<judged_shape> shapes_of(const json& a, const json& b) {
  std::vector<judged_shape> shapes;
  for (const json* r : {&a, &b})
    for (const auto& c : r->at("cases")) {
      const judged_shape s{c.at("head_dim").get<std::int64_t>(), c.at("heads").get<std::int64_t>()};
      if (std::none_of(shapes.begin(), shapes.end(),
                       [&](const judged_shape& x) { return x.head_dim == s.head_dim && x.heads == s.heads; }))
        shapes.push_back(s);
    }
  return shapes;
}

// Each variant in both reports (the one kernel, for two external kernels' reports) whose contract
// is weaker now: a regression, or accepted.
void diff_contracts(const named_report& baseline, const named_report& now, bool by_case, const diff_options& o,
                    report_diff& d) {
  const json &a = *baseline.report, &b = *now.report;
  struct declared {
    std::string variant;
    const json *before, *after;
  };
  std::vector<declared> both;
  if (by_case) {
    const json& label = b.at("kernel").at("label");
    both.push_back({label.is_string() ? label.get<std::string>() : "kernel", &a.at("kernel").at("contract"),
                    &b.at("kernel").at("contract")});
  } else {
    for (const auto& y : b.at("variants"))
      for (const auto& x : a.at("variants"))
        if (x.at("variant") == y.at("variant")) both.push_back({y.at("variant").get<std::string>(), &x.at("contract"), &y.at("contract")});
  }
  const std::vector<judged_shape> shapes = shapes_of(a, b);
  for (const auto& v : both) {
    const auto why = contract_weakened(contract_of(baseline, *v.before, v.variant), contract_of(now, *v.after, v.variant), shapes);
    if (!why) continue;
    regression r{"contract-weakened", "", v.variant,
                 fmt::format("{}: contract weakened {}", v.variant, *why)};
    (o.accept_weaker_contract ? d.accepted : d.regressions).push_back(std::move(r));
  }
}

}  // namespace

bool pair_diff::changed() const {
  if (status != "compared") return true;
  if (baseline_outcome != new_outcome || baseline_findings != new_findings) return true;
  return std::any_of(metrics.begin(), metrics.end(),
                     [](const metric_values& m) { return m.name != "kernel_seconds" && m.differs(); });
}

report_diff diff_reports(const named_report& baseline, const named_report& now, const diff_options& o) {
  refuse_incomparable(baseline, now);
  const json &a = *baseline.report, &b = *now.report;
  const bool by_case = kernel_report(a) && kernel_report(b);
  const side before(a, by_case), after(b, by_case);
  report_diff d;
  d.suite = a.at("suite").get<std::string>();
  d.baseline_info = info_of(baseline);
  d.new_info = info_of(now);
  d.max_slowdown = o.max_slowdown;
  const std::map<std::string, std::string> case_status = diff_cases(before, after, d);
  diff_pairs(before, after, case_status, o, d);
  diff_mutants(before, after, d);
  diff_contracts(baseline, now, by_case, o, d);
  return d;
}

}  // namespace mqa::verdict
