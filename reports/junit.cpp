#include "junit.hpp"

#include <fmt/core.h>

#include "fields.hpp"
#include "report.hpp"

namespace mqa::reports {
namespace {

bool has_error(const nlohmann::json& result) {
  const auto e = result.find("error");
  return e != result.end() && e->is_string() && !e->get_ref<const std::string&>().empty();
}

bool model_fails(const nlohmann::json& result) {
  return result.at("kind") == "model" && !has_error(result) && result.at("verdict") == "fail";
}

const nlohmann::json& metric(const nlohmann::json& result, const char* name) {
  static const nlohmann::json none;
  const auto& m = result.at("metrics");
  return m.is_object() ? m.at(name) : none;
}

const nlohmann::json& ulp(const nlohmann::json& result, const char* name) {
  static const nlohmann::json none;
  const auto& m = result.at("metrics");
  return m.is_object() ? m.at("ulp").at(name) : none;
}

}  // namespace

std::string junit_xml(const nlohmann::json& report) {
  const bool sharded = report.at("shard").is_object();
  const std::string suite = escape_markup(report.at("suite").get<std::string>());
  std::int64_t failures = 0, errors = 0;
  for (const auto& r : report.at("results")) {
    failures += model_fails(r);
    errors += has_error(r);
  }
  for (const auto& m : report.at("mutants")) failures += !sharded && m.at("caught_by").empty() && mutant_ran(report, m);
  // A run whose expectations are broken with no test case failing (every pair skipped, say) gets
  // one failing test case of its own: a CI view that reads only this file must not show it green.
  const auto& broken = report.at("broken_expectations");
  const bool run_fails = !report.at("expectations_hold").get<bool>() && failures + errors == 0;
  failures += run_fails;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  std::int64_t skipped = static_cast<std::int64_t>(report.at("skipped").size());
  for (const auto& m : report.at("mutants")) skipped += m.at("caught_by").empty() && (sharded || !mutant_ran(report, m));
  x += fmt::format(
      "<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n", suite,
      report.at("results").size() + report.at("skipped").size() + report.at("mutants").size() + run_fails, failures,
      errors, skipped,
      report.at("seconds").get<double>());
  if (sharded)
    x += fmt::format("  <properties>\n    <property name=\"shard\" value=\"{}/{}\"/>\n  </properties>\n",
                     report.at("shard").at("index").get<int>(), report.at("shard").at("count").get<int>());
  for (const auto& r : report.at("results")) {
    x += fmt::format("  <testcase classname=\"{}.{}\" name=\"{}\" time=\"{:.6f}\">\n", suite,
                     escape_markup(r.at("variant").get<std::string>()), escape_markup(r.at("case").get<std::string>()),
                     r.at("kernel_seconds").get<double>());
    x += "    <properties>\n";
    auto property = [&](const char* name, const std::string& value) {
      x += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name, escape_markup(value));
    };
    property("outcome", r.at("outcome").get<std::string>());
    property("max_ulp", shown(ulp(r, "max")));
    property("p99_ulp", shown(ulp(r, "p99")));
    property("max_error_over_bound", shown(metric(r, "max_error_over_bound"), 4));
    property("topk_recall", shown(metric(r, "topk_recall"), 6));
    property("topk_decidedness", decidedness_text(r.value("metrics", nlohmann::json())));
    x += "    </properties>\n";
    if (has_error(r)) {
      const auto& text = r.at("error").get_ref<const std::string&>();
      x += fmt::format("    <error message=\"{}\">{}</error>\n", escape_markup(text.substr(0, text.find('\n'))),
                       escape_markup(text));
    } else if (model_fails(r)) {
      // CI views often show the message alone: the first finding with its detail and diagnosis.
      std::string text;
      for (const auto& f : r.at("findings")) text += describe(finding_of(f)) + "\n";
      x += fmt::format("    <failure message=\"{}\">{}</failure>\n", escape_markup(first_finding(r)), escape_markup(text));
    }
    x += "  </testcase>\n";
  }
  for (const auto& s : report.at("skipped")) {
    x += fmt::format("  <testcase classname=\"{}.{}\" name=\"{}\">\n", suite,
                     escape_markup(s.at("variant").get<std::string>()), escape_markup(s.at("case").get<std::string>()));
    x += fmt::format("    <skipped message=\"{}\"/>\n  </testcase>\n", escape_markup(s.at("reason").get<std::string>()));
  }
  for (const auto& m : report.at("mutants")) {
    x += fmt::format("  <testcase classname=\"{}.mutants\" name=\"{} is caught\">\n", suite,
                     escape_markup(m.at("variant").get<std::string>()));
    if (m.at("caught_by").empty() && !mutant_ran(report, m))
      x += "    <skipped message=\"skipped on every case: its bug needs inputs or an operation this suite does not hold\"/>\n";
    else if (m.at("caught_by").empty())
      x += sharded ? std::string("    <skipped message=\"caught by no case of this shard: coverage is judged when the "
                                 "shards are merged (mqacheck merge)\"/>\n")
                   : fmt::format("    <failure message=\"not caught\">{} planted; expected one of its classes on some "
                                 "case; none appeared: a check went blind</failure>\n",
                                 escape_markup(m.at("bug_class").get<std::string>()));
    x += "  </testcase>\n";
  }
  if (run_fails) {
    std::string text;
    for (const auto& b : broken) text += b.get<std::string>() + "\n";
    const std::string first = broken.empty() ? std::string("expectations broken") : broken.front().get<std::string>();
    x += fmt::format("  <testcase classname=\"{}.run\" name=\"every expectation holds\">\n"
                     "    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
                     suite, escape_markup(first), escape_markup(text));
  }
  x += "</testsuite>\n";
  return x;
}

}  // namespace mqa::reports
