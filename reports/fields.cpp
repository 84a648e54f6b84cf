#include "fields.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace mqa::reports {

std::string shown(const nlohmann::json& v, int digits) {
  if (v.is_number_integer()) return fmt::format("{}", v.get<std::int64_t>());
  if (v.is_number_unsigned()) return fmt::format("{}", v.get<std::uint64_t>());
  const auto x = measure(v);
  return x ? fmt::format("{:.{}g}", *x, digits) : std::string("-");
}

compare::finding finding_of(const nlohmann::json& f) {
  compare::finding out;
  out.kind = names::parse(compare::kFindingClassNames, f.at("class").get<std::string>())
                 .value_or(compare::finding_class::error_bound);
  out.count = f.at("count").get<std::int64_t>();
  if (const auto& first = f.at("first"); first.is_array() && first.size() == 2) {
    out.first_row = first[0].get<std::int64_t>();
    out.first_col = first[1].get<std::int64_t>();
  }
  out.expected_bits = static_cast<std::uint32_t>(std::stoul(f.at("expected_bits").get<std::string>(), nullptr, 16));
  out.actual_bits = static_cast<std::uint32_t>(std::stoul(f.at("actual_bits").get<std::string>(), nullptr, 16));
  out.bound = measure(f.at("bound")).value_or(0);
  out.detail = f.at("detail").get<std::string>();
  // Absent in reports of a run without diagnosis; null where nothing reproduced the finding.
  if (const auto d = f.find("diagnosis"); d != f.end() && d->is_object())
    out.diagnosis = compare::likely_cause{.cause = d->at("cause").get<std::string>(),
                                          .bit_for_bit = d->at("bit_for_bit").get<bool>(),
                                          .sentence = d->at("sentence").get<std::string>()};
  return out;
}

namespace {

// A report's mutant entry that no case caught although the mutant ran: a check went blind.
bool blind(const nlohmann::json& report, std::string_view variant) {
  if (report.at("shard").is_object()) return false;  // another shard may catch it
  for (const auto& m : report.at("mutants"))
    if (m.at("variant").get<std::string_view>() == variant) return m.at("caught_by").empty() && mutant_ran(report, m);
  return false;
}

void add_name(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

std::vector<std::string> names_of(const nlohmann::json& report, const char* listed, const char* key) {
  std::vector<std::string> names;
  for (const auto& entry : report.at(listed)) add_name(names, entry.at(key).get<std::string>());
  for (const auto& r : report.at("results")) add_name(names, r.at(key).get<std::string>());
  return names;
}

// The member `name` of `object` as a measure; unset where either is absent or null.
std::optional<double> member(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return std::nullopt;
  const auto found = object.find(name);
  return found == object.end() ? std::nullopt : measure(*found);
}

void keep_larger(std::optional<double>& worst, std::optional<double> x) {
  if (x && (!worst || *x > *worst)) worst = x;
}

void keep_smaller(std::optional<double>& worst, std::optional<double> x) {
  if (x && (!worst || *x < *worst)) worst = x;
}

// One case's measures folded into a variant's worst: the larger of each, the smaller share.
void fold_in(headline& worst, const headline& one) {
  if (one.cases == 0) return;  // nothing measured
  worst.cases += 1;
  if (one.error_over_bound && (!worst.error_over_bound || *one.error_over_bound > *worst.error_over_bound))
    worst.worst_case = one.worst_case;
  keep_larger(worst.error_over_bound, one.error_over_bound);
  keep_larger(worst.magnitude_p50, one.magnitude_p50);
  keep_larger(worst.magnitude_p99, one.magnitude_p99);
  keep_larger(worst.magnitude_p999, one.magnitude_p999);
  keep_larger(worst.magnitude_max, one.magnitude_max);
  keep_smaller(worst.conditioned_share, one.conditioned_share);
  keep_larger(worst.conditioned_p99, one.conditioned_p99);
  keep_larger(worst.conditioned_max, one.conditioned_max);
}

}  // namespace

bool is_mutant(const nlohmann::json& result) { return result.at("kind").get<std::string_view>() == "mutant"; }

std::string_view standing(const nlohmann::json& report, const nlohmann::json& result) {
  const auto outcome = result.at("outcome").get<std::string_view>();
  if (outcome == "error" || outcome == "FAIL") return "broken";
  if (!is_mutant(result)) return "pass";
  if (outcome == "caught") return "caught";
  if (blind(report, result.at("variant").get<std::string_view>())) return "broken";
  return outcome == "silent" ? "silent" : "other";
}

std::vector<std::string> variant_order(const nlohmann::json& report) { return names_of(report, "variants", "variant"); }

std::vector<std::string> case_order(const nlohmann::json& report) { return names_of(report, "cases", "case"); }

headline headline_of(const nlohmann::json& result) {
  headline h;
  h.variant = result.at("variant").get<std::string>();
  const auto& m = result.at("metrics");
  if (!m.is_object()) return h;
  h.cases = 1;
  h.worst_case = result.at("case").get<std::string>();
  h.error_over_bound = member(m, "max_error_over_bound");
  if (const auto a = m.find("magnitude_ulp"); a != m.end()) {
    h.magnitude_p50 = member(*a, "p50");
    h.magnitude_p99 = member(*a, "p99");
    h.magnitude_p999 = member(*a, "p999");
    h.magnitude_max = member(*a, "max");
  }
  if (const auto w = m.find("conditioned_ulp"); w != m.end()) {
    h.conditioned_share = member(*w, "share");
    h.conditioned_p99 = member(*w, "p99");
    h.conditioned_max = member(*w, "max");
  }
  return h;
}

std::vector<headline> headlines(const nlohmann::json& report) {
  std::vector<headline> out;
  for (const auto& variant : variant_order(report)) {
    headline worst;
    worst.variant = variant;
    bool correct = false;
    for (const auto& r : report.at("results")) {
      if (r.at("variant").get<std::string_view>() != variant || is_mutant(r)) continue;
      correct = true;
      fold_in(worst, headline_of(r));
    }
    if (correct) out.push_back(std::move(worst));
  }
  return out;
}

std::string shown_measure(std::optional<double> x, int digits) {
  if (!x) return "-";
  if (std::isinf(*x)) return *x > 0 ? "inf" : "-inf";
  if (std::isnan(*x)) return "nan";
  return fmt::format("{:.{}g}", *x, digits);
}

std::string decidedness_text(const nlohmann::json& metrics) {
  if (!metrics.is_object()) return "-";
  const auto d = metrics.find("topk_decidedness");
  if (d == metrics.end() || !d->is_object()) return "-";
  const nlohmann::json& worst = d->at("worst");
  return fmt::format("{}/{} rows decided ({}/{} longer than k, median {} ambiguous there), worst row {}: {} "
                     "ambiguous of k = {}",
                     d->at("rows_fully_decided").get<std::int64_t>(), d->at("rows").get<std::int64_t>(),
                     d->at("rows_ranked_fully_decided").get<std::int64_t>(), d->at("rows_ranked").get<std::int64_t>(),
                     shown(d->at("median_ambiguous_ranked")), worst.at("row").get<std::int64_t>(),
                     worst.at("ambiguous").get<std::int64_t>(), worst.at("k").get<std::int64_t>());
}

std::string counted(std::size_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

}  // namespace mqa::reports
