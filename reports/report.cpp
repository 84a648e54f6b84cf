#include "report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>

#include "build_info.hpp"
#include "fields.hpp"
#include "kernels/external/text.hpp"
#include "validator/io/atomic_file.hpp"
#include "validator/io/json_text.hpp"
#include "validator/judge/suspicion.hpp"
#include "validator/verdict/heat_levels.hpp"
#include "validator/verdict/report_document.hpp"

namespace mqa::reports {
namespace {

std::string hex_bits(std::uint32_t bits) { return fmt::format("0x{:08X}", bits); }

std::string value_of(std::uint32_t bits) { return fmt::format("{}", std::bit_cast<float>(bits)); }

// JSON has no NaN or Infinity: such numbers are written as strings ("inf").
nlohmann::json number(double x) {
  if (std::isfinite(x)) return x;
  return fmt::format("{}", x);
}

nlohmann::json optional_number(const std::optional<double>& x) { return x ? number(*x) : nlohmann::json(nullptr); }

nlohmann::json result_json(const verdict::case_result& c) {
  nlohmann::json x = c.judged ? judgement_json(c.judgement)
                              : nlohmann::json{{"verdict", nullptr}, {"findings", nlohmann::json::array()},
                                               {"metrics", nullptr}, {"notes", nlohmann::json::array()}};
  x["case"] = c.case_name;
  x["variant"] = c.variant;
  x["kind"] = c.is_mutant ? "mutant" : "model";
  x["outcome"] = c.outcome();
  x["kernel_seconds"] = c.kernel_seconds;
  if (c.kernel_launches > 0) {  // an external kernel's timed launches: their best is kernel_seconds
    x["kernel_launches"] = c.kernel_launches;
    x["kernel_seconds_median"] = optional_number(c.kernel_seconds_median);
    x["kernel_noise"] = optional_number(c.kernel_noise());
  }
  if (c.warmup_seconds) x["warmup_seconds"] = number(*c.warmup_seconds);  // launch 1 of an external kernel
  if (!c.error.empty()) x["error"] = c.error;
  return x;
}

nlohmann::json adapter_json(const verdict::case_result& c) {
  nlohmann::json seconds = nlohmann::json::array(), response = nlohmann::json::array(), exchange = nlohmann::json::array();
  for (const auto& l : c.launches) {
    seconds.push_back(optional_number(l.kernel_seconds));
    response.push_back(number(l.response_seconds));
    exchange.push_back(number(l.exchange_seconds));
  }
  nlohmann::json timing = nlohmann::json::array();
  for (const auto& l : c.timing_launches) timing.push_back(optional_number(l.kernel_seconds));
  return {{"launch_seconds", seconds},
          {"timing_launch_seconds", timing},
          {"response_seconds", response},
          {"exchange_seconds", exchange},
          {"overhead_seconds", optional_number(c.overhead_seconds())}};
}

// The headline scales (validator/compare/ulp_scales.hpp); null where nothing was compared.
nlohmann::json magnitude_ulp_json(const compare::fractional_ulp_histogram& h) {
  const auto octaves = h.octaves();
  return {{"max", optional_number(h.max())},
          {"p50", optional_number(h.percentile(0.5))},
          {"p99", optional_number(h.percentile(0.99))},
          {"p999", optional_number(h.percentile(0.999))},
          {"histogram_unit", std::ldexp(1.0, -compare::fractional_ulp_histogram::kFractionBits)},
          {"histogram_log2", std::vector<std::int64_t>(octaves.begin(), octaves.end())}};
}

nlohmann::json conditioned_ulp_json(const compare::metrics& m) {
  const compare::ulp_histogram& h = m.scaled.conditioned;
  const bool any = h.total > 0;
  auto at = [&](double p) { return any ? nlohmann::json(h.percentile(p)) : nlohmann::json(nullptr); };
  const auto octaves = h.octaves();
  return {{"condition_log2", compare::kConditionLog2},
          {"compared", h.total},
          {"share", optional_number(m.share_well_conditioned())},
          {"max", any ? nlohmann::json(h.max) : nlohmann::json(nullptr)},
          {"p50", at(0.5)},
          {"p99", at(0.99)},
          {"p999", at(0.999)},
          {"histogram_log2", std::vector<std::int64_t>(octaves.begin(), octaves.end())}};
}

}  // namespace

std::string shown(std::optional<double> value, int digits) {
  return value ? fmt::format("{:.{}g}", *value, digits) : std::string("-");
}

std::string shown_ulps(const compare::ulp_histogram& h, double percentile) {
  if (h.total == 0) return "-";
  return fmt::format("{}", percentile >= 1 ? h.max : h.percentile(percentile));
}

std::string summary(const compare::judgement& j) {
  std::string s;
  for (const auto& f : j.findings) s += fmt::format("{}{} x{}", s.empty() ? "" : ", ", compare::to_string(f.kind), f.count);
  return s.empty() ? "-" : s;
}

std::string summary(const verdict::case_result& r) {
  if (r.error.empty()) return summary(r.judgement);
  return "error: " + r.error.substr(0, r.error.find('\n'));
}

std::string describe(const compare::finding& f) {
  std::string s = fmt::format("{} x{}", compare::to_string(f.kind), f.count);
  if (f.first_row >= 0)
    s += fmt::format(" first at (i={}, j={}): expected {} ({}), got {} ({})", f.first_row, f.first_col,
                     hex_bits(f.expected_bits), value_of(f.expected_bits), hex_bits(f.actual_bits),
                     value_of(f.actual_bits));
  if (f.bound > 0) s += fmt::format(", allowed |error| {:.3g}", f.bound);
  if (!f.detail.empty()) s += " - " + f.detail;
  if (f.diagnosis) s += " - diagnosis: " + f.diagnosis->sentence;
  return s;
}

std::string first_finding(const nlohmann::json& result) {
  if (const auto e = result.find("error"); e != result.end() && e->is_string() && !e->get_ref<const std::string&>().empty()) {
    const auto& text = e->get_ref<const std::string&>();
    return "error: " + text.substr(0, text.find('\n'));
  }
  const auto& findings = result.at("findings");
  return findings.empty() ? std::string() : describe(finding_of(findings.at(0)));
}

// null where no judged row had a window: nothing to decide, never "every row decided".
nlohmann::json decidedness_json(const topk::decidedness_summary& d) {
  if (d.rows == 0) return nullptr;
  return {{"rows", d.rows},
          {"rows_fully_decided", d.rows_fully_decided},
          {"must_keep", d.must_keep},
          {"must_drop", d.must_drop},
          {"ambiguous", d.ambiguous},
          {"median_ambiguous", d.median_ambiguous},
          {"rows_ranked", d.rows_ranked},
          {"rows_ranked_fully_decided", d.rows_ranked_fully_decided},
          {"median_ambiguous_ranked", d.median_ambiguous_ranked},
          {"worst", {{"row", d.worst_row}, {"ambiguous", d.worst_ambiguous}, {"k", d.worst_k}}}};
}

nlohmann::json heat_map_json(const compare::heat_map& h) {
  if (h.empty()) return nullptr;
  auto rows_of = [&](auto symbol_at) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::int64_t r = 0; r < h.rows; ++r) {
      std::string row(static_cast<std::size_t>(h.cols), verdict::kNothingCompared);
      for (std::int64_t c = 0; c < h.cols; ++c) row[static_cast<std::size_t>(c)] = symbol_at(r, c);
      rows.push_back(row);
    }
    return rows;
  };
  auto shares = [&](const std::vector<std::int64_t>& counts) -> nlohmann::json {
    if (std::all_of(counts.begin(), counts.end(), [](std::int64_t n) { return n == 0; })) return nullptr;
    return rows_of([&](std::int64_t r, std::int64_t c) {
      const std::int64_t elements = (h.row_begin(r + 1) - h.row_begin(r)) * (h.column_begin(c + 1) - h.column_begin(c));
      return verdict::share_symbol(counts[h.cell(r, c)], elements);
    });
  };
  return {{"m", h.m},
          {"n", h.n},
          {"rows", h.rows},
          {"cols", h.cols},
          {"error_over_bound",
           rows_of([&](std::int64_t r, std::int64_t c) { return verdict::error_symbol(h.error_over_bound[h.cell(r, c)]); })},
          {"mask_mismatches", shares(h.mask_mismatches)},
          {"unwritten", shares(h.unwritten)},
          {"nonfinite", shares(h.nonfinite)}};
}

nlohmann::json judgement_json(const compare::judgement& j) {
  nlohmann::json out;
  out["verdict"] = j.pass() ? "pass" : "fail";
  out["findings"] = nlohmann::json::array();
  for (const auto& f : j.findings) {
    nlohmann::json x;
    x["class"] = compare::to_string(f.kind);
    x["count"] = f.count;
    x["first"] = f.first_row >= 0 ? nlohmann::json::array({f.first_row, f.first_col}) : nlohmann::json(nullptr);
    x["expected_bits"] = hex_bits(f.expected_bits);
    x["actual_bits"] = hex_bits(f.actual_bits);
    x["expected"] = value_of(f.expected_bits);
    x["actual"] = value_of(f.actual_bits);
    x["bound"] = number(f.bound);
    x["detail"] = f.detail;
    x["diagnosis"] = f.diagnosis ? nlohmann::json{{"cause", f.diagnosis->cause},
                                                  {"bit_for_bit", f.diagnosis->bit_for_bit},
                                                  {"sentence", f.diagnosis->sentence}}
                                 : nlohmann::json(nullptr);
    out["findings"].push_back(x);
  }
  const compare::metrics& m = j.stats;
  nlohmann::json ulp;
  // null throughout when no finite pair was compared: "none compared", never a perfect score.
  const bool any = m.ulps.total > 0;
  ulp["max"] = any ? nlohmann::json(m.ulps.max) : nlohmann::json(nullptr);
  ulp["p50"] = any ? nlohmann::json(m.ulps.percentile(0.5)) : nlohmann::json(nullptr);
  ulp["p99"] = any ? nlohmann::json(m.ulps.percentile(0.99)) : nlohmann::json(nullptr);
  ulp["p999"] = any ? nlohmann::json(m.ulps.percentile(0.999)) : nlohmann::json(nullptr);
  ulp["share_exact"] = optional_number(m.share_exact());
  ulp["share_within_1"] = optional_number(m.share_within_one_ulp());
  const auto octaves = m.ulps.octaves();
  ulp["histogram_log2"] = std::vector<std::int64_t>(octaves.begin(), octaves.end());
  out["metrics"] = {
      {"magnitude_ulp", magnitude_ulp_json(m.scaled.magnitude)},
      {"conditioned_ulp", conditioned_ulp_json(m)},
      {"rows_judged", m.rows_judged},
      {"rows_with_empty_window", m.rows_with_empty_window},
      {"in_window", m.in_window},
      {"compared", m.compared},
      {"ulp", ulp},
      {"max_error_over_bound", optional_number(m.max_error_over_bound())},
      {"worst", m.worst_row >= 0 ? nlohmann::json::array({m.worst_row, m.worst_col}) : nlohmann::json(nullptr)},
      {"mask_leaks", m.mask_leaks},
      {"mask_holes", m.mask_holes},
      {"topk_recall", optional_number(m.topk_recall())},
      {"topk_rows", m.topk_rows},
      {"topk_decidedness", decidedness_json(m.decidedness)},
      {"heat_map", heat_map_json(m.heat)},
  };
  out["notes"] = j.notes;
  if (j.suspected)
    out["suspicion"] = {{"matched", j.suspected->matched},
                        {"differing", j.suspected->differing},
                        {"note", judge::suspicion_note(*j.suspected)}};
  return out;
}

nlohmann::json suite_json(const verdict::suite_report& r) {
  nlohmann::json out;
  out["schema"] = std::string(verdict::kReportSchema);
  out["schema_version"] = verdict::kSchemaVersion;
  const build_info build = this_build();
  out["mqacheck"] = {{"version", build.version}, {"commit", build.commit}};
  out["suite"] = r.suite_name;
  // The suite's path and the kernel's command are the user's bytes (a path need not be UTF-8; the
  // command is run as given): shown \xNN in every report alike, as an adapter's text is.
  out["file"] = external::valid_utf8(r.file);
  out["shard"] = nullptr;
  if (r.shard) {
    out["shard"] = {{"index", r.shard->index}, {"count", r.shard->count}};
    if (r.shard->pairs) out["shard"]["pairs"] = *r.shard->pairs;
    if (r.shard->source)
      out["shard"]["source"] = {{"scheduler", r.shard->source->scheduler}, {"variables", r.shard->source->variables}};
  }
  out["seconds"] = r.seconds;
  out["expectations_hold"] = r.expectations_hold();
  out["broken_expectations"] = r.broken_expectations();
  if (r.kernel)
    out["kernel"] = {{"command", external::valid_utf8(r.kernel->command)},
                     {"label", r.kernel->label.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.kernel->label)},
                     {"contract", r.kernel->contract},
                     {"operation", r.kernel->operation},
                     {"timeout_seconds", r.kernel->timeout_seconds},
                     {"adapter_starts", r.kernel->adapter_starts},
                     {"in_process", r.kernel->in_process},
                     {"notes", r.kernel->notes}};
  out["variants"] = nlohmann::json::array();
  for (const auto& v : r.variants)
    out["variants"].push_back({{"variant", v.name}, {"kind", v.is_mutant ? "mutant" : "model"}, {"contract", v.contract}});
  out["cases"] = nlohmann::json::array();
  for (const auto& c : r.cases)
    out["cases"].push_back(
        {{"case", c.name},
         {"inputs_fingerprint", c.inputs_fingerprint ? nlohmann::json(fingerprint_text(*c.inputs_fingerprint)) : nullptr},
         {"m", c.m},
         {"n", c.n},
         {"heads", c.heads},
         {"head_dim", c.head_dim},
         {"clean_logits", c.clean_logits},
         {"topk", c.topk ? nlohmann::json(*c.topk) : nullptr}});
  out["results"] = nlohmann::json::array();
  for (const auto& c : r.results) {
    nlohmann::json x = result_json(c);
    if (r.kernel) x["adapter"] = adapter_json(c);
    out["results"].push_back(x);
  }
  out["skipped"] = nlohmann::json::array();
  for (const auto& s : r.skipped) out["skipped"].push_back({{"case", s.case_name}, {"variant", s.variant}, {"reason", s.reason}});
  out["timings"] = nlohmann::json::array();
  for (const auto& t : r.timings)
    out["timings"].push_back({{"case", t.case_name},
                              {"inputs_seconds", t.inputs_seconds},
                              {"reference_seconds", t.reference_seconds},
                              {"total_seconds", t.total_seconds}});
  out["mutants"] = nlohmann::json::array();
  for (const auto& m : r.mutants)
    out["mutants"].push_back(
        {{"variant", m.variant}, {"bug_class", m.bug_class}, {"must_produce", m.must_produce}, {"caught_by", m.caught_by}});
  return out;
}

std::string fingerprint_text(std::uint64_t fingerprint) { return fmt::format("{:016x}", fingerprint); }

std::string report_json_text(const nlohmann::json& report) { return io::json_text(report, 2) + "\n"; }

void write_file(const io::output_file& file, const std::string& text) {
  io::write_atomically(file, [&](std::ostream& out) { out << text; });
}

}  // namespace mqa::reports
