// Reports of real runs for the reports and verdict tests: a small suite (three cases, a correct variant, a
// mask mutant and a write mutant) run once per test binary, as suite_report and report.json.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "reports/report.hpp"
#include "validator/case/load.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::test {

inline const cases::suite& small_suite() {
  static const cases::suite s = cases::parse_suite(R"([suite]
name = "small"
[defaults]
heads = 2
head_dim = 32
m = 8
n = 24
[[case]]
name = "causal"
layout = { kind = "causal" }
[[case]]
name = "sliding"
layout = { kind = "sliding", window = 6 }
[[case]]
name = "fnuz"
q_format = "e4m3fnuz"
k_format = "e4m3fnuz"
profile = "hip-satfinite"
layout = { kind = "causal" }
)",
                                                   "small.toml");
  return s;
}

inline const std::vector<std::string> kSmallVariants{"fp32-naive", "sm90-wgmma", "mutant-inclusive-end",
                                                     "mutant-tail-tile"};

inline verdict::suite_report small_run(std::optional<verdict::shard> shard = {}) {
  verdict::run_options o;
  o.variants = kSmallVariants;
  o.shard = shard;
  o.threads = 1;
  return verdict::run_suite(small_suite(), o);
}

// The report.json of the whole small run (computed once).
inline const nlohmann::json& small_report() {
  static const nlohmann::json r = nlohmann::json::parse(reports::suite_json(small_run()).dump());
  return r;
}

// The result of `case_name` x `variant` in a report.json, to plant a change into a copy.
inline nlohmann::json& result_in(nlohmann::json& report, std::string_view case_name, std::string_view variant) {
  for (auto& r : report.at("results"))
    if (r.at("case") == case_name && r.at("variant") == variant) return r;
  throw std::logic_error("no such result");
}

}  // namespace mqa::test
