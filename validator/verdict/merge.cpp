#include "merge.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "validator/input_error.hpp"
#include "validator/io/json_text.hpp"
#include "validator/verdict/read_report.hpp"
#include "validator/verdict/shard.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::verdict {
namespace {

using json = nlohmann::json;
using shards_by_index = std::map<int, const named_report*>;

std::string shard_name(const json& report) {
  return fmt::format("{}/{}", report.at("shard").at("index").get<int>(), report.at("shard").at("count").get<int>());
}

// The shard a report ran: pair mod N, or the pairs it lists (a device worker's, shard.hpp).
shard shard_of(const json& report) {
  shard out;
  out.index = report.at("shard").at("index").get<int>();
  out.count = report.at("shard").at("count").get<int>();
  if (const auto pairs = report.at("shard").find("pairs"); pairs != report.at("shard").end()) {
    out.pairs = pairs->get<std::vector<std::size_t>>();
    std::sort(out.pairs->begin(), out.pairs->end());
  }
  return out;
}

// The cases as a run defines them, fingerprints left out: shards generate only their cases' inputs.
json case_definitions(const json& cases) {
  json out = cases;
  for (auto& c : out) c.erase("inputs_fingerprint");
  return out;
}

// The mutants as a run defines them, without the cases that caught them in this shard.
json mutant_definitions(const json& report) {
  json out = report.at("mutants");
  for (auto& m : out) m.erase("caught_by");
  return out;
}

void refuse_non_shards(const std::vector<named_report>& shards) {
  if (shards.empty()) throw input_error("merge: no shard reports given");
  for (const auto& s : shards)
    if (!s.report->at("shard").is_object())
      throw input_error(fmt::format("{}: not a shard's report (it has no \"shard\"): merge takes the reports of `mqacheck "
                                    "run --shard I/N`, one per shard",
                                    s.name));
}

// What a `run --kernel` shard must share with the others: a shard of another command, operation or
// contract judged another kernel, or the same one under other rules, and its pairs are no pairs of
// this run. (The label is the variant's name: compared with the variants.)
struct kernel_field {
  const char* key;
  std::string_view what;
};
constexpr std::array<kernel_field, 3> kKernelFields{{
    {"command", "kernel command (--kernel)"},
    {"operation", "operation (--operation)"},
    {"contract", "declared contract"},
}};

// A member of a report's "kernel" object; null where the report has no kernel or does not record it.
json kernel_field_of(const json& report, const char* key) {
  const auto kernel = report.find("kernel");
  if (kernel == report.end() || !kernel->is_object()) return nullptr;
  const auto field = kernel->find(key);
  return field == kernel->end() ? json(nullptr) : *field;
}

void refuse_other_kernel(const named_report& first, const named_report& s) {
  const json &a = *first.report, &r = *s.report;
  if (a.contains("kernel") != r.contains("kernel")) {
    const named_report& with = a.contains("kernel") ? first : s;
    const named_report& without = a.contains("kernel") ? s : first;
    throw input_error(fmt::format("{} and {} are shards of different runs: {} judged a kernel (run --kernel), {} the "
                                  "built-in variants",
                                  first.name, s.name, with.name, without.name));
  }
  for (const auto& f : kKernelFields) {
    const json x = kernel_field_of(a, f.key), y = kernel_field_of(r, f.key);
    if (x != y)
      throw input_error(fmt::format("{} and {} are shards of different runs: the kernel's {} differs ({} and {}); "
                                    "the shards of one `run --kernel` use the same --kernel, --operation and contract",
                                    first.name, s.name, f.what, io::json_text(x), io::json_text(y)));
  }
}

// Shard `s` of the same run as `first`: the same suite, build, N, variants, mutants and cases, and
// for a kernel the same kernel under the same rules.
void refuse_other_run(const named_report& first, const named_report& s) {
  const json &a = *first.report, &r = *s.report;
  const int count = a.at("shard").at("count").get<int>();
  auto differs = [&](const char* field, const std::string& what) {
    if (r.at(field) != a.at(field))
      throw input_error(fmt::format("{} and {} are shards of different runs: {} differ ({} and {})", first.name, s.name,
                                    what, io::json_text(a.at(field)), io::json_text(r.at(field))));
  };
  differs("suite", "the suites");
  differs("mqacheck", "the mqacheck builds");
  if (r.at("shard").at("count") != count)
    throw input_error(fmt::format("{} is shard {} and {} is shard {}: shards of one run have the same N", first.name,
                                  shard_name(a), s.name, shard_name(r)));
  // Before the variants: a kernel's variant record carries its contract, and the field that
  // differs is the better message.
  refuse_other_kernel(first, s);
  if (r.at("variants") != a.at("variants"))
    throw input_error(fmt::format("{} and {} are shards of different runs: their variants differ (each shard must run "
                                  "the same --variant list)",
                                  first.name, s.name));
  if (mutant_definitions(r) != mutant_definitions(a))
    throw input_error(fmt::format("{} and {} are shards of different runs: their mutants differ", first.name, s.name));
  if (case_definitions(r.at("cases")) != case_definitions(a.at("cases")))
    throw input_error(fmt::format("{} and {} are shards of different runs: their suites' cases differ", first.name, s.name));
}

// Every shard of one run, each once, by index 1..N.
shards_by_index index_shards(const std::vector<named_report>& shards) {
  const named_report& first = shards.front();
  const int count = first.report->at("shard").at("count").get<int>();
  shards_by_index by_index;
  for (const auto& s : shards) {
    refuse_other_run(first, s);
    const json& r = *s.report;
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
  return by_index;
}

// Each pair's result or skipped entry, by pair number as run_suite numbers pairs (shard.hpp).
class pair_table {
 public:
  explicit pair_table(const json& run) : run_(run) {
    for (const auto& c : run.at("cases")) case_index_.emplace(c.at("case").get<std::string>(), case_index_.size());
    for (const auto& v : run.at("variants")) variant_index_.emplace(v.at("variant").get<std::string>(), variant_index_.size());
    variants_ = variant_index_.size();
    result_at_.assign(case_index_.size() * variants_, nullptr);
    skipped_at_ = result_at_;
  }

  // Every result and skipped pair of every shard in its slot: each a pair of the run, owned by
  // the shard that holds it, and held once.
  void place(const shards_by_index& shards, int count) {
    // Each shard read once: a device worker's lists every pair it owns, and reading it again per
    // entry would be quadratic in the suite.
    std::map<int, shard> owners;
    for (const auto& [index, s] : shards) owners.emplace(index, shard_of(*s->report));
    for (const auto& [index, s] : shards) {
      const json& r = *s->report;
      for (std::size_t k = 0; k < r.at("results").size(); ++k)
        place(*s, owners.at(index), r.at("results")[k], result_at_, "results", k);
      for (std::size_t k = 0; k < r.at("skipped").size(); ++k)
        place(*s, owners.at(index), r.at("skipped")[k], skipped_at_, "skipped", k);
    }
    for (std::size_t pair = 0; pair < result_at_.size(); ++pair)
      if (!result_at_[pair] && !skipped_at_[pair]) {
        const std::string c = run_.at("cases")[pair / variants_].at("case").get<std::string>(),
                          v = run_.at("variants")[pair % variants_].at("variant").get<std::string>();
        for (const auto& [index, s] : shards)
          if (owners.at(index).owns(pair))
            throw input_error(fmt::format("{}: shard {}/{} neither judged nor skipped case '{}' x variant '{}': the "
                                          "shard's report is incomplete",
                                          s->name, index, count, c, v));
        throw input_error(fmt::format("case '{}' x variant '{}' is owned by none of the {} shards' pair lists: they do "
                                      "not cover the run",
                                      c, v, count));
      }
  }

  // The results and skipped pairs in pair order, as the unsharded run lists them.
  void fill(json& merged) const {
    merged["results"] = json::array();
    merged["skipped"] = json::array();
    for (std::size_t pair = 0; pair < result_at_.size(); ++pair) {
      if (result_at_[pair]) merged["results"].push_back(*result_at_[pair]);
      if (skipped_at_[pair]) merged["skipped"].push_back(*skipped_at_[pair]);
    }
  }

 private:
  void place(const named_report& s, const shard& owner, const json& entry, std::vector<const json*>& slots,
             const char* list, std::size_t k) {
    const std::string c = entry.at("case").get<std::string>(), v = entry.at("variant").get<std::string>();
    const auto ci = case_index_.find(c), vi = variant_index_.find(v);
    if (ci == case_index_.end() || vi == variant_index_.end())
      throw input_error(fmt::format("{}: {}[{}]: case '{}' x variant '{}' is not a pair of the run (its cases and "
                                    "variants do not hold it)",
                                    s.name, list, k, c, v));
    const std::size_t pair = ci->second * variants_ + vi->second;
    if (!owner.owns(pair) && owner.pairs)
      throw input_error(fmt::format("{}: {}[{}]: case '{}' x variant '{}' is not one of the pairs shard {} lists", s.name,
                                    list, k, c, v, shard_name(*s.report)));
    if (!owner.owns(pair))
      throw input_error(fmt::format("{}: {}[{}]: case '{}' x variant '{}' belongs to shard {}/{}, not to this shard {}",
                                    s.name, list, k, c, v, pair % static_cast<std::size_t>(owner.count) + 1, owner.count,
                                    shard_name(*s.report)));
    if (result_at_[pair] || skipped_at_[pair])
      throw input_error(fmt::format("{}: case '{}' x variant '{}' appears twice", s.name, c, v));
    slots[pair] = &entry;
  }

  const json& run_;
  std::map<std::string, std::size_t> case_index_, variant_index_;
  std::size_t variants_ = 0;
  std::vector<const json*> result_at_, skipped_at_;
};

// Each case's inputs fingerprint from the shards that ran it (null where none did); shards that
// disagree are of different inputs.
void merge_fingerprints(const shards_by_index& shards, json& merged) {
  for (const auto& [index, s] : shards) {
    const json& r = *s->report;
    for (std::size_t c = 0; c < r.at("cases").size(); ++c) {
      const json& fingerprint = r.at("cases")[c].at("inputs_fingerprint");
      json& known = merged["cases"][c]["inputs_fingerprint"];
      if (fingerprint.is_null()) continue;
      if (!known.is_null() && known != fingerprint)
        throw input_error(fmt::format("{}: case '{}' has inputs fingerprint {} in one shard and {} in another: shards of "
                                      "different inputs",
                                      s->name, r.at("cases")[c].at("case").get<std::string>(), io::json_text(known),
                                      io::json_text(fingerprint)));
      known = fingerprint;
    }
  }
}

// "seconds" and each case's "timings": the shards' sums (machine time, not wall time), cases in
// suite order.
void sum_timings(const shards_by_index& shards, json& merged) {
  double seconds = 0;
  std::map<std::string, json> timings;
  for (const auto& [index, s] : shards) {
    const json& r = *s->report;
    seconds += r.at("seconds").get<double>();
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
}

// Mutant coverage over every shard: a mutant caught in any shard is caught, cases in suite order.
void merge_mutant_coverage(const shards_by_index& shards, json& merged) {
  for (std::size_t k = 0; k < merged["mutants"].size(); ++k) {
    std::set<std::string> caught;
    for (const auto& [index, s] : shards)
      for (const auto& c : s->report->at("mutants")[k].at("caught_by")) caught.insert(c.get<std::string>());
    json by = json::array();
    for (const auto& c : merged["cases"])
      if (caught.count(c.at("case").get<std::string>())) by.push_back(c.at("case"));
    merged["mutants"][k]["caught_by"] = by;
  }
}

// The expectations over every pair, in verdict::suite_report's sentences.
void judge_expectations(json& merged) {
  json broken = json::array();
  if (every_pair_skipped(merged)) broken.push_back(every_pair_skipped_sentence(merged["skipped"].size()));
  for (const auto& r : merged["results"])
    if (const auto e = r.find("error"); e != r.end() && !e->get_ref<const std::string&>().empty())
      broken.push_back(unjudged_sentence(r.at("variant").get<std::string>(), r.at("case").get<std::string>(),
                                         e->get<std::string>()));
    else if (r.at("kind") == "model" && r.at("verdict") == "fail")
      broken.push_back(failing_model_sentence(r.at("variant").get<std::string>(), r.at("case").get<std::string>()));
  // As suite_report: a mutant that ran on no case (refused by every one) is not blind.
  for (const auto& m : merged["mutants"]) {
    if (m.at("caught_by").empty() && mutant_ran(merged, m))
      broken.push_back(blind_mutant_sentence(m.at("variant").get<std::string>(), m.at("bug_class").get<std::string>()));
  }
  merged["broken_expectations"] = broken;
  merged["expectations_hold"] = broken.empty();
}

}  // namespace

bool every_pair_skipped(const json& report) {
  return report.at("results").empty() && !report.at("skipped").empty();
}

json merge_shards(const std::vector<named_report>& shards) {
  refuse_non_shards(shards);
  const shards_by_index by_index = index_shards(shards);
  const json& a = *shards.front().report;
  pair_table pairs(a);
  pairs.place(by_index, a.at("shard").at("count").get<int>());

  json merged = *by_index.at(1)->report;
  merged["shard"] = nullptr;
  pairs.fill(merged);
  merge_fingerprints(by_index, merged);
  sum_timings(by_index, merged);
  merge_mutant_coverage(by_index, merged);
  judge_expectations(merged);
  check_report(merged, "the merged report");
  return merged;
}

}  // namespace mqa::verdict
