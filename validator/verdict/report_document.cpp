#include "report_document.hpp"

#include <fmt/core.h>

#include <limits>

namespace mqa::verdict {

std::optional<double> measure(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return std::nullopt;
}

std::string findings_summary(const nlohmann::json& result) {
  if (const auto e = result.find("error"); e != result.end() && e->is_string() && !e->get_ref<const std::string&>().empty()) {
    const auto& text = e->get_ref<const std::string&>();
    return "error: " + text.substr(0, text.find('\n'));
  }
  std::string s;
  for (const auto& f : result.at("findings"))
    s += fmt::format("{}{} x{}", s.empty() ? "" : ", ", f.at("class").get<std::string>(), f.at("count").get<std::int64_t>());
  return s.empty() ? "-" : s;
}

bool mutant_ran(const nlohmann::json& report, const nlohmann::json& mutant) {
  for (const auto& r : report.at("results"))
    if (r.at("variant") == mutant.at("variant")) return true;
  return false;
}

}  // namespace mqa::verdict
