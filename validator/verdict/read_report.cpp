#include "read_report.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "validator/compare/finding.hpp"
#include "validator/input_error.hpp"
#include "validator/verdict/heat_levels.hpp"
#include "validator/verdict/report_document.hpp"

namespace mqa::verdict {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The shape of a report, as data: each object lists its members, each array its items.
enum class kind { text, integer, number, measure, boolean, object, array, bits };

struct shape;
struct member {
  std::string_view name;
  const shape* of;
  bool required = true;  // optional members (an external kernel's "error") are checked when present
};
struct shape {
  kind type;
  bool nullable = false;
  std::vector<member> members = {};  // objects
  const shape* items = nullptr;      // arrays
  std::size_t size = 0;              // arrays of a fixed size; 0: any
};

const shape kText{kind::text}, kOptionalText{kind::text, true}, kInteger{kind::integer},
    kOptionalInteger{kind::integer, true}, kNumber{kind::number}, kOptionalNumber{kind::number, true},
    kOptionalMeasure{kind::measure, true}, kMeasure{kind::measure}, kFlag{kind::boolean};
const shape kTexts{kind::array, false, {}, &kText}, kIntegers{kind::array, false, {}, &kInteger};
const shape kOptionalPair{kind::array, true, {}, &kInteger, 2};
const shape kHistogram{kind::array, false, {}, &kInteger, 32};
const shape kBits{kind::bits};
const shape kOptionalTexts{kind::array, true, {}, &kText};
const shape kAnyObject{kind::object};

const shape kFinding{kind::object, false,
                     {{"class", &kText}, {"count", &kInteger}, {"first", &kOptionalPair}, {"expected_bits", &kBits},
                      {"actual_bits", &kBits}, {"bound", &kMeasure}, {"detail", &kText}}};
const shape kFindings{kind::array, false, {}, &kFinding};
const shape kUlp{kind::object, false,
                 {{"max", &kOptionalInteger}, {"p50", &kOptionalInteger}, {"p99", &kOptionalInteger},
                  {"p999", &kOptionalInteger}, {"share_exact", &kOptionalNumber}, {"share_within_1", &kOptionalNumber},
                  {"histogram_log2", &kHistogram}}};
// The condition-free scales (compare/ulp_scales.hpp): absent from the reports of an mqacheck that
// did not measure them.
const shape kMagnitudeUlp{kind::object, false,
                          {{"max", &kOptionalNumber}, {"p50", &kOptionalNumber}, {"p99", &kOptionalNumber},
                           {"p999", &kOptionalNumber}, {"histogram_unit", &kNumber}, {"histogram_log2", &kHistogram}}};
const shape kConditionedUlp{kind::object, false,
                            {{"condition_log2", &kInteger}, {"compared", &kInteger}, {"share", &kOptionalNumber},
                             {"max", &kOptionalInteger}, {"p50", &kOptionalInteger}, {"p99", &kOptionalInteger},
                             {"p999", &kOptionalInteger}, {"histogram_log2", &kHistogram}}};
const shape kHeatMap{kind::object, true,
                     {{"m", &kInteger}, {"n", &kInteger}, {"rows", &kInteger}, {"cols", &kInteger},
                      {"error_over_bound", &kTexts}, {"mask_mismatches", &kOptionalTexts},
                      {"unwritten", &kOptionalTexts}, {"nonfinite", &kOptionalTexts}}};
const shape kDecidedWorst{kind::object, false, {{"row", &kInteger}, {"ambiguous", &kInteger}, {"k", &kInteger}}};
// Absent from the reports of an mqacheck that did not measure it; null where no row had a window.
const shape kDecidedness{kind::object, true,
                         {{"rows", &kInteger}, {"rows_fully_decided", &kInteger}, {"must_keep", &kInteger},
                          {"must_drop", &kInteger}, {"ambiguous", &kInteger}, {"median_ambiguous", &kNumber},
                          {"rows_ranked", &kInteger}, {"rows_ranked_fully_decided", &kInteger},
                          {"median_ambiguous_ranked", &kNumber}, {"worst", &kDecidedWorst}}};
const shape kMetrics{kind::object, true,
                     {{"rows_judged", &kInteger}, {"rows_with_empty_window", &kInteger}, {"in_window", &kInteger},
                      {"compared", &kInteger}, {"ulp", &kUlp}, {"magnitude_ulp", &kMagnitudeUlp, false},
                      {"conditioned_ulp", &kConditionedUlp, false}, {"max_error_over_bound", &kOptionalMeasure},
                      {"worst", &kOptionalPair}, {"mask_leaks", &kInteger}, {"mask_holes", &kInteger},
                      {"topk_recall", &kOptionalNumber}, {"topk_rows", &kInteger},
                      {"topk_decidedness", &kDecidedness, false}, {"heat_map", &kHeatMap}}};
const shape kSuspicion{kind::object, false, {{"matched", &kInteger}, {"differing", &kInteger}, {"note", &kText}}};
const shape kResult{kind::object, false,
                    {{"case", &kText}, {"variant", &kText}, {"kind", &kText}, {"outcome", &kText},
                     {"kernel_seconds", &kNumber}, {"verdict", &kOptionalText}, {"findings", &kFindings},
                     {"metrics", &kMetrics}, {"notes", &kTexts}, {"error", &kText, false},
                     {"warmup_seconds", &kOptionalNumber, false},
                     {"kernel_launches", &kInteger, false}, {"kernel_seconds_median", &kOptionalNumber, false},
                     {"kernel_noise", &kOptionalNumber, false},
                     {"suspicion", &kSuspicion, false}}};
const shape kVariant{kind::object, false, {{"variant", &kText}, {"kind", &kText}, {"contract", &kText}}};
const shape kCase{kind::object, false,
                  {{"case", &kText}, {"inputs_fingerprint", &kOptionalText}, {"m", &kInteger}, {"n", &kInteger},
                   {"heads", &kInteger}, {"head_dim", &kInteger}, {"clean_logits", &kFlag}, {"topk", &kOptionalInteger}}};
const shape kSkipped{kind::object, false, {{"case", &kText}, {"variant", &kText}, {"reason", &kText}}};
const shape kTiming{kind::object, false,
                    {{"case", &kText}, {"inputs_seconds", &kNumber}, {"reference_seconds", &kNumber},
                     {"total_seconds", &kNumber}}};
const shape kMutant{kind::object, false,
                    {{"variant", &kText}, {"bug_class", &kText}, {"must_produce", &kTexts}, {"caught_by", &kTexts}}};
const shape kBuild{kind::object, false, {{"version", &kText}, {"commit", &kText}}};
// "source": where `--shard auto` read the shard; "pairs": a device worker's own pairs (shard.hpp).
const shape kShardSource{kind::object, false, {{"scheduler", &kText}, {"variables", &kAnyObject}}};
const shape kShard{kind::object, true,
                   {{"index", &kInteger}, {"count", &kInteger}, {"pairs", &kIntegers, false},
                    {"source", &kShardSource, false}}};
// "operation" is absent from the reports of an mqacheck that did not record it.
const shape kKernel{kind::object, false,
                    {{"command", &kText}, {"label", &kOptionalText}, {"contract", &kText}, {"operation", &kText, false}}};

const shape kVariants{kind::array, false, {}, &kVariant}, kCases{kind::array, false, {}, &kCase},
    kResults{kind::array, false, {}, &kResult}, kSkippedPairs{kind::array, false, {}, &kSkipped},
    kTimings{kind::array, false, {}, &kTiming}, kMutants{kind::array, false, {}, &kMutant};

const shape kReport{kind::object, false,
                    {{"schema", &kText}, {"schema_version", &kInteger}, {"mqacheck", &kBuild}, {"suite", &kText},
                     {"file", &kText}, {"shard", &kShard}, {"seconds", &kNumber}, {"expectations_hold", &kFlag},
                     {"broken_expectations", &kTexts}, {"variants", &kVariants}, {"cases", &kCases},
                     {"results", &kResults}, {"skipped", &kSkippedPairs}, {"timings", &kTimings},
                     {"mutants", &kMutants}, {"kernel", &kKernel, false}}};

std::string_view expected(const shape& s) {
  switch (s.type) {
    case kind::text: return s.nullable ? "a string or null" : "a string";
    case kind::integer: return s.nullable ? "an integer or null" : "an integer";
    case kind::number: return s.nullable ? "a number or null" : "a number";
    case kind::measure: return s.nullable ? "a number, \"inf\" or null" : "a number or \"inf\"";
    case kind::boolean: return "true or false";
    case kind::object: return s.nullable ? "an object or null" : "an object";
    case kind::array: return s.nullable ? "an array or null" : "an array";
    case kind::bits: return "float32 bits as \"0x\" and 8 hexadecimal digits";
  }
  return "";
}

bool fits(const json& v, const shape& s) {
  if (v.is_null()) return s.nullable;
  switch (s.type) {
    case kind::text: return v.is_string();
    case kind::integer: return v.is_number_integer();
    case kind::number: return v.is_number();
    case kind::measure: return v.is_number() || (v.is_string() && (v == "inf" || v == "-inf" || v == "nan"));
    case kind::boolean: return v.is_boolean();
    case kind::object: return v.is_object();
    case kind::array: return v.is_array();
    case kind::bits: {
      if (!v.is_string()) return false;
      const auto& t = v.get_ref<const std::string&>();
      return t.size() == 10 && t.starts_with("0x") && t.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos;
    }
  }
  return false;
}

[[noreturn]] void refuse(std::string_view where, const std::string& field, const std::string& what) {
  throw input_error(fmt::format("{}: {}{}{}", where, field, field.empty() ? "" : ": ", what));
}

void check(const json& v, const shape& s, std::string_view where, const std::string& field) {
  if (!fits(v, s))
    refuse(where, field, fmt::format("expected {}, found {}", expected(s), v.is_null() ? "null" : v.type_name()));
  if (v.is_null()) return;
  if (s.type == kind::object)
    for (const member& m : s.members) {
      const auto found = v.find(m.name);
      const std::string name = field.empty() ? std::string(m.name) : fmt::format("{}.{}", field, m.name);
      if (found == v.end()) {
        if (m.required) refuse(where, name, "missing");
        continue;
      }
      check(*found, *m.of, where, name);
    }
  if (s.type == kind::array && s.size && v.size() != s.size)
    refuse(where, field, fmt::format("{} elements, expected {}", v.size(), s.size));
  if (s.type == kind::array && s.items)
    for (std::size_t i = 0; i < v.size(); ++i) check(v[i], *s.items, where, fmt::format("{}[{}]", field, i));
}

// What the shape cannot say: a heat map's strings and cells fit its geometry.
void check_heat_map(const json& h, std::string_view where, const std::string& field) {
  const auto m = h.at("m").get<std::int64_t>(), n = h.at("n").get<std::int64_t>();
  const auto rows = h.at("rows").get<std::int64_t>(), cols = h.at("cols").get<std::int64_t>();
  if (m < 1 || n < 1 || rows < 1 || cols < 1 || rows > m || cols > n)
    refuse(where, field, fmt::format("a {} x {} map of a {} x {} output: expected 1 <= rows <= m and 1 <= cols <= n", rows,
                                     cols, m, n));
  auto check_grid = [&](const char* name, std::string_view symbols) {
    const auto& grid = h.at(name);
    if (grid.is_null()) return;
    if (static_cast<std::int64_t>(grid.size()) != rows)
      refuse(where, fmt::format("{}.{}", field, name), fmt::format("{} strings, expected one per row of cells ({})", grid.size(), rows));
    for (std::size_t r = 0; r < grid.size(); ++r) {
      const auto& row = grid[r].get_ref<const std::string&>();
      if (static_cast<std::int64_t>(row.size()) != cols || row.find_first_not_of(symbols) != std::string::npos)
        refuse(where, fmt::format("{}.{}[{}]", field, name, r),
               fmt::format("expected {} characters (one per column of cells) from \"{}\"", cols, symbols));
    }
  };
  std::string levels(1, kNothingCompared);
  for (const auto& l : kErrorLevels) levels += l.symbol;
  check_grid("error_over_bound", levels);
  for (const char* counts : {"mask_mismatches", "unwritten", "nonfinite"}) check_grid(counts, kShareSymbols);
}

}  // namespace

fs::path report_path(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? path / kReportFile : path;
}

void check_report(const json& report, std::string_view where) {
  if (!report.is_object()) refuse(where, "", fmt::format("expected a JSON object (a report.json of mqacheck run), found {}",
                                                          report.type_name()));
  const auto schema = report.find("schema");
  if (schema == report.end() || !schema->is_string())
    refuse(where, "", "not an mqacheck report: no \"schema\" (expected the report.json of `mqacheck run`)");
  if (schema->get_ref<const std::string&>() != kReportSchema)
    refuse(where, "", fmt::format("schema '{}', not a run report (\"mqacheck.report\": the report.json of `mqacheck run`)",
                                  schema->get<std::string>()));
  const auto version = report.find("schema_version");
  if (version == report.end() || !version->is_number_integer())
    refuse(where, "schema_version", "missing or not an integer");
  if (*version != kSchemaVersion)
    refuse(where, "", fmt::format("report schema version {}; this mqacheck reads version {} only: make the report again "
                                  "with this mqacheck (`mqacheck run`), reports/README.md says what changed",
                                  version->get<std::int64_t>(), kSchemaVersion));
  check(report, kReport, where, "");
  auto one_of = [&](const json& v, const std::string& field, std::initializer_list<std::string_view> accepted) {
    for (const auto a : accepted)
      if (v == a) return;
    std::string list;
    for (const auto a : accepted) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
    refuse(where, field, fmt::format("'{}', expected one of {}", v.get<std::string>(), list));
  };
  for (std::size_t i = 0; i < report.at("variants").size(); ++i)
    one_of(report.at("variants")[i].at("kind"), fmt::format("variants[{}].kind", i), {"model", "mutant"});
  std::set<std::pair<std::string, std::string>> pairs;
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    one_of(r.at("kind"), fmt::format("results[{}].kind", i), {"model", "mutant"});
    const auto& findings = r.at("findings");
    for (std::size_t f = 0; f < findings.size(); ++f)
      if (!names::parse(compare::kFindingClassNames, findings[f].at("class").get<std::string>()))
        refuse(where, fmt::format("results[{}].findings[{}].class", i, f),
               fmt::format("'{}' is no finding class (README.md lists them)", findings[f].at("class").get<std::string>()));
    if (!pairs.insert({r.at("case").get<std::string>(), r.at("variant").get<std::string>()}).second)
      refuse(where, fmt::format("results[{}]", i),
             fmt::format("case '{}' x variant '{}' a second time", r.at("case").get<std::string>(),
                         r.at("variant").get<std::string>()));
    const auto& m = r.at("metrics");
    if (m.is_object() && m.at("heat_map").is_object())
      check_heat_map(m.at("heat_map"), where, fmt::format("results[{}].metrics.heat_map", i));
  }
  if (const auto& shard = report.at("shard"); shard.is_object()) {
    const auto index = shard.at("index").get<std::int64_t>(), count = shard.at("count").get<std::int64_t>();
    if (count < 1 || index < 1 || index > count)
      refuse(where, "shard", fmt::format("{}/{}: expected I/N with 1 <= I <= N", index, count));
  }
}

json read_report(const fs::path& given) {
  const fs::path path = report_path(given);
  const std::string where = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(fmt::format("{}: cannot read: {}", where, std::strerror(errno)));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw input_error(fmt::format("{}: cannot read: {}", where, std::strerror(errno)));
  json report;
  try {
    report = json::parse(bytes.str());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (const auto bracket = what.find("] "); what.starts_with("[json.exception") && bracket != std::string::npos)
      what = what.substr(bracket + 2);
    throw input_error(fmt::format("{}: not JSON: {} (expected the report.json of `mqacheck run`)", where, what));
  }
  check_report(report, where);
  return report;
}

}  // namespace mqa::verdict
