#include "merge.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

#include "validator/input_error.hpp"
#include "validator/verdict/read_report.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::verdict {
namespace {

using json = nlohmann::json;

std::string shard_name(const json& report) {
  return fmt::format("{}/{}", report.at("shard").at("index").get<int>(), report.at("shard").at("count").get<int>());
}

// The cases as a run defines them, fingerprints left out: shards generate only their cases' inputs.
json case_definitions(const json& cases) {
  json out = cases;
  for (auto& c : out) c.erase("inputs_fingerprint");
  return out;
}

}  // namespace

json merge_shards(const std::vector<named_report>& shards) {
  if (shards.empty()) throw input_error("merge: no shard reports given");
  for (const auto& s : shards)
    if (!s.report->at("shard").is_object())
      throw input_error(fmt::format("{}: not a shard's report (it has no \"shard\"): merge takes the reports of `mqacheck "
                                    "run --shard I/N`, one per shard",
                                    s.name));
  const named_report& first = shards.front();
  const json& a = *first.report;
  const int count = a.at("shard").at("count").get<int>();
  std::map<int, const named_report*> by_index;
  for (const auto& s : shards) {
    const json& r = *s.report;
    auto differs = [&](const char* field, const std::string& what) {
      if (r.at(field) != a.at(field))
        throw input_error(fmt::format("{} and {} are shards of different runs: {} differ ({} and {})", first.name, s.name,
                                      what, a.at(field).dump(), r.at(field).dump()));
    };
    differs("suite", "the suites");
    differs("mqacheck", "the mqacheck builds");
    if (r.at("shard").at("count") != count)
      throw input_error(fmt::format("{} is shard {} and {} is shard {}: shards of one run have the same N", first.name,
                                    shard_name(a), s.name, shard_name(r)));
    if (r.at("variants") != a.at("variants"))
      throw input_error(fmt::format("{} and {} are shards of different runs: their variants differ (each shard must run "
                                    "the same --variant list)",
                                    first.name, s.name));
    auto mutant_list = [](const json& report) {
      json out = report.at("mutants");
      for (auto& m : out) m.erase("caught_by");
      return out;
    };
    if (mutant_list(r) != mutant_list(a))
      throw input_error(fmt::format("{} and {} are shards of different runs: their mutants differ", first.name, s.name));
    if (case_definitions(r.at("cases")) != case_definitions(a.at("cases")))
      throw input_error(fmt::format("{} and {} are shards of different runs: their suites' cases differ", first.name, s.name));
    const int index = r.at("shard").at("index").get<int>();
    if (const auto [it, fresh] = by_index.emplace(index, &s); !fresh)
      throw input_error(fmt::format("{} and {} are both shard {}: their pairs overlap (give each shard once)",
                                    it->second->name, s.name, shard_name(r)));
  }
  for (int i = 1; i <= count; ++i)
    if (!by_index.count(i)) {
      std::string given;
      for (const auto& [index, s] : by_index) given += fmt::format("{}{}/{}", given.empty() ? "" : ", ", index, count);
      throw input_error(fmt::format("shard {}/{} is missing: its pairs would be in no report (given: {}); give the "
                                    "reports of all {} shards",
                                    i, count, given, count));
    }

  // Pair numbers, as run_suite numbers them (shard.hpp).
  std::map<std::string, std::size_t> case_index, variant_index;
  for (const auto& c : a.at("cases")) case_index.emplace(c.at("case").get<std::string>(), case_index.size());
  for (const auto& v : a.at("variants")) variant_index.emplace(v.at("variant").get<std::string>(), variant_index.size());
  const std::size_t variants = variant_index.size(), pairs = case_index.size() * variants;
  std::vector<const json*> result_at(pairs, nullptr), skipped_at(pairs, nullptr);
  for (const auto& [index, s] : by_index) {
    const json& r = *s->report;
    const verdict::shard owner{index, count};
    auto place = [&](const json& entry, std::vector<const json*>& slots, const char* list, std::size_t k) {
      const std::string c = entry.at("case").get<std::string>(), v = entry.at("variant").get<std::string>();
      const auto ci = case_index.find(c), vi = variant_index.find(v);
      if (ci == case_index.end() || vi == variant_index.end())
        throw input_error(fmt::format("{}: {}[{}]: case '{}' x variant '{}' is not a pair of the run (its cases and "
                                      "variants do not hold it)",
                                      s->name, list, k, c, v));
      const std::size_t pair = ci->second * variants + vi->second;
      if (!owner.owns(pair))
        throw input_error(fmt::format("{}: {}[{}]: case '{}' x variant '{}' belongs to shard {}/{}, not to this shard {}",
                                      s->name, list, k, c, v, pair % static_cast<std::size_t>(count) + 1, count,
                                      shard_name(r)));
      if (result_at[pair] || skipped_at[pair])
        throw input_error(fmt::format("{}: case '{}' x variant '{}' appears twice", s->name, c, v));
      slots[pair] = &entry;
    };
    for (std::size_t k = 0; k < r.at("results").size(); ++k) place(r.at("results")[k], result_at, "results", k);
    for (std::size_t k = 0; k < r.at("skipped").size(); ++k) place(r.at("skipped")[k], skipped_at, "skipped", k);
  }
  for (std::size_t pair = 0; pair < pairs; ++pair)
    if (!result_at[pair] && !skipped_at[pair]) {
      const int index = static_cast<int>(pair % static_cast<std::size_t>(count)) + 1;
      throw input_error(fmt::format("{}: shard {}/{} neither judged nor skipped case '{}' x variant '{}': the shard's "
                                    "report is incomplete",
                                    by_index.at(index)->name, index, count, a.at("cases")[pair / variants].at("case").get<std::string>(),
                                    a.at("variants")[pair % variants].at("variant").get<std::string>()));
    }

  const json& one = *by_index.at(1)->report;
  json merged = one;
  merged["shard"] = nullptr;
  merged["results"] = json::array();
  merged["skipped"] = json::array();
  for (std::size_t pair = 0; pair < pairs; ++pair) {
    if (result_at[pair]) merged["results"].push_back(*result_at[pair]);
    if (skipped_at[pair]) merged["skipped"].push_back(*skipped_at[pair]);
  }
  double seconds = 0;
  std::map<std::string, json> timings;
  for (const auto& [index, s] : by_index) {
    const json& r = *s->report;
    seconds += r.at("seconds").get<double>();
    for (std::size_t c = 0; c < r.at("cases").size(); ++c) {
      const json& fingerprint = r.at("cases")[c].at("inputs_fingerprint");
      json& known = merged["cases"][c]["inputs_fingerprint"];
      if (fingerprint.is_null()) continue;
      if (!known.is_null() && known != fingerprint)
        throw input_error(fmt::format("{}: case '{}' has inputs fingerprint {} in one shard and {} in another: shards of "
                                      "different inputs",
                                      s->name, r.at("cases")[c].at("case").get<std::string>(), known.dump(),
                                      fingerprint.dump()));
      known = fingerprint;
    }
    for (const auto& t : r.at("timings")) {
      json& sum = timings[t.at("case").get<std::string>()];
      if (sum.is_null()) {
        sum = t;
        continue;
      }
      for (const char* field : {"inputs_seconds", "reference_seconds", "total_seconds"})
        sum[field] = sum[field].get<double>() + t.at(field).get<double>();
    }
  }
  merged["seconds"] = seconds;
  merged["timings"] = json::array();
  for (const auto& c : merged["cases"])
    if (const auto t = timings.find(c.at("case").get<std::string>()); t != timings.end()) merged["timings"].push_back(t->second);

  // Mutant coverage over every shard, cases in suite order.
  for (std::size_t k = 0; k < merged["mutants"].size(); ++k) {
    std::set<std::string> caught;
    for (const auto& [index, s] : by_index)
      for (const auto& c : s->report->at("mutants")[k].at("caught_by")) caught.insert(c.get<std::string>());
    json by = json::array();
    for (const auto& c : merged["cases"])
      if (caught.count(c.at("case").get<std::string>())) by.push_back(c.at("case"));
    merged["mutants"][k]["caught_by"] = by;
  }
  json broken = json::array();
  for (const auto& r : merged["results"])
    if (const auto e = r.find("error"); e != r.end() && !e->get_ref<const std::string&>().empty())
      broken.push_back(verdict::unjudged_sentence(r.at("variant").get<std::string>(), r.at("case").get<std::string>(),
                                                  e->get<std::string>()));
    else if (r.at("kind") == "model" && r.at("verdict") == "fail")
      broken.push_back(verdict::failing_model_sentence(r.at("variant").get<std::string>(), r.at("case").get<std::string>()));
  // As verdict::suite_report: a mutant that ran on no case (refused by every one) is not blind.
  for (const auto& m : merged["mutants"]) {
    if (m.at("caught_by").empty() && mutant_ran(merged, m))
      broken.push_back(verdict::blind_mutant_sentence(m.at("variant").get<std::string>(), m.at("bug_class").get<std::string>()));
  }
  merged["broken_expectations"] = broken;
  merged["expectations_hold"] = broken.empty();
  check_report(merged, "the merged report");
  return merged;
}

}  // namespace mqa::verdict
