// `mqacheck merge` (validator/verdict/merge.hpp): N shards of a run are the run, timing aside, in every file;
// shards that do not make one run are refused.
#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <regex>

#include "reports/formats.hpp"
#include "reports/report.hpp"
#include "support/small_run.hpp"
#include "validator/verdict/balance.hpp"
#include "validator/verdict/merge.hpp"
#include "validator/verdict/verdict.hpp"

using namespace mqa;
using nlohmann::json;

namespace {

std::vector<json> shards_of(int count) {
  std::vector<json> out;
  for (int i = 1; i <= count; ++i)
    out.push_back(json::parse(reports::suite_json(test::small_run(verdict::shard{i, count})).dump()));
  return out;
}

json merge(const std::vector<json>& shards) {
  std::vector<verdict::named_report> named;
  for (std::size_t i = 0; i < shards.size(); ++i) named.push_back({"shard" + std::to_string(i + 1) + ".json", &shards[i]});
  return verdict::merge_shards(named);
}

// The report without what measures time.
json untimed(json r) {
  r.erase("seconds");
  r.erase("timings");
  for (auto& x : r.at("results")) x.erase("kernel_seconds");
  return r;
}

std::string untimed_xml(const std::string& xml) { return std::regex_replace(xml, std::regex(" time=\"[^\"]*\""), ""); }

}  // namespace

TEST_CASE("the merged shards are the unsharded run, timing aside, in every file", "[verdict][merge]") {
  const int count = GENERATE(1, 2, 3, 5, 40);  // 40: more shards than pairs, some empty
  CAPTURE(count);
  const std::vector<json> shards = shards_of(count);
  const json merged = merge(shards);
  const json& whole = test::small_report();
  CHECK(untimed(merged) == untimed(whole));
  CHECK(merged.at("shard").is_null());
  CHECK(merged.at("timings").size() == whole.at("timings").size());
  const auto a = reports::report_files(merged), b = reports::report_files(whole);
  REQUIRE(a.size() == b.size());
  for (std::size_t f = 0; f < a.size(); ++f) {
    CAPTURE(a[f].name);
    if (a[f].name == "report.xml") CHECK(untimed_xml(a[f].text) == untimed_xml(b[f].text));
    else if (a[f].name == "report.json") CHECK(untimed(json::parse(a[f].text)) == untimed(json::parse(b[f].text)));
    else CHECK(a[f].text == b[f].text);
  }
  SECTION("in any order") {
    std::vector<json> reversed(shards.rbegin(), shards.rend());
    CHECK(untimed(merge(reversed)) == untimed(whole));
  }
}

TEST_CASE("a mutant caught in one shard only is caught", "[verdict][merge]") {
  // Two shards of 3 cases x 4 variants: each mutant's pairs all fall into one shard.
  const std::vector<json> shards = shards_of(2);
  const json merged = merge(shards);
  for (const auto& m : merged.at("mutants")) CHECK_FALSE(m.at("caught_by").empty());
  CHECK(merged.at("expectations_hold") == true);
  // ...while some shard alone does not see every mutant caught, and says nothing about it.
  bool some_blind = false;
  for (const auto& s : shards)
    for (const auto& m : s.at("mutants")) some_blind |= m.at("caught_by").empty();
  CHECK(some_blind);
  for (const auto& s : shards) CHECK(s.at("broken_expectations").empty());
}

TEST_CASE("shards that do not make one run are refused", "[verdict][merge]") {
  std::vector<json> shards = shards_of(3);
  SECTION("one missing") {
    shards.erase(shards.begin() + 1);
    CHECK_THROWS_WITH(merge(shards), "shard 2/3 is missing: its pairs would be in no report (given: 1/3, 3/3); give the "
                                     "reports of all 3 shards");
  }
  SECTION("one twice") {
    shards[2] = shards[0];
    CHECK_THROWS_WITH(merge(shards), "shard1.json and shard3.json are both shard 1/3: their pairs overlap (give each "
                                     "shard once)");
  }
  SECTION("shards of different N") {
    shards[1] = shards_of(2)[1];
    CHECK_THROWS_WITH(merge(shards), Catch::Contains("shards of one run have the same N"));
  }
  SECTION("another suite") {
    shards[1]["suite"] = "quick";
    CHECK_THROWS_WITH(merge(shards), Catch::Contains("are shards of different runs: the suites differ"));
  }
  SECTION("other variants") {
    shards[2]["variants"][0]["variant"] = "exact";
    CHECK_THROWS_WITH(merge(shards), Catch::Contains("their variants differ"));
  }
  SECTION("other cases") {
    shards[2]["cases"][0]["n"] = 99;
    CHECK_THROWS_WITH(merge(shards), Catch::Contains("their suites' cases differ"));
  }
  SECTION("other inputs") {
    std::size_t owner = 0;
    for (std::size_t s = 0; s < 3; ++s)
      if (shards[s]["cases"][0]["inputs_fingerprint"].is_string() && owner == 0 && s > 0) owner = s;
    REQUIRE(shards[0]["cases"][0]["inputs_fingerprint"].is_string());
    REQUIRE(owner > 0);
    shards[owner]["cases"][0]["inputs_fingerprint"] = "0123456789abcdef";
    CHECK_THROWS_WITH(merge(shards), Catch::Contains("has inputs fingerprint") && Catch::Contains("shards of different inputs"));
  }
  SECTION("a pair in the wrong shard") {
    shards[1]["results"].push_back(shards[0]["results"][0]);
    CHECK_THROWS_WITH(merge(shards), Catch::Contains("belongs to shard 1/3, not to this shard 2/3"));
  }
  SECTION("a pair lost") {
    shards[2]["results"].erase(shards[2]["results"].begin());
    CHECK_THROWS_WITH(merge(shards), Catch::StartsWith("shard3.json: shard 3/3 neither judged nor skipped case"));
  }
  SECTION("an unsharded report") {
    shards[0] = test::small_report();
    CHECK_THROWS_WITH(merge(shards), Catch::StartsWith("shard1.json: not a shard's report"));
  }
  SECTION("another build") {
    shards[1]["mqacheck"]["commit"] = "0000000";
    CHECK_THROWS_WITH(merge(shards), Catch::Contains("the mqacheck builds differ"));
  }
}

TEST_CASE("a case an external kernel's adapter failed on stays a broken expectation when merged", "[verdict][merge]") {
  std::vector<json> shards = shards_of(2);
  json& failed = shards[0]["results"][0];
  failed["error"] = "launch 1: the adapter exited (status 1)\nmore";
  failed["outcome"] = "error";
  const json merged = merge(shards);
  const auto& broken = merged.at("broken_expectations");
  CHECK(std::find(broken.begin(), broken.end(),
                  json(fmt::format("'{}' could not be judged on case '{}': launch 1: the adapter exited (status 1)",
                                   failed.at("variant").get<std::string>(), failed.at("case").get<std::string>()))) !=
        broken.end());
  CHECK(merged.at("expectations_hold") == false);
}

TEST_CASE("shards whose every pair was skipped merge into a run that judged nothing", "[verdict][merge]") {
  std::vector<json> shards = shards_of(2);
  std::size_t pairs = 0;
  for (json& shard : shards) {
    for (const json& r : shard.at("results"))
      shard["skipped"].push_back({{"case", r.at("case")}, {"variant", r.at("variant")}, {"reason", "refused"}});
    shard["results"] = json::array();
    pairs += shard.at("skipped").size();
  }
  const json merged = merge(shards);
  CHECK(merged.at("broken_expectations").front() == verdict::every_pair_skipped_sentence(pairs));
  CHECK(merged.at("expectations_hold") == false);
}

TEST_CASE("shards that list their pairs (run --devices) merge into the unsharded run", "[verdict][merge]") {
  const cases::suite s = test::small_suite();
  std::vector<double> costs;
  for (const auto& c : s.cases) costs.push_back(verdict::estimated_cost(c));
  const int workers = GENERATE(1, 2, 3);
  CAPTURE(workers);
  const auto parts = verdict::balance_cases(costs, test::kSmallVariants.size(), workers);
  std::vector<json> shards;
  for (const auto& p : parts) shards.push_back(json::parse(reports::suite_json(test::small_run(p)).dump()));
  for (const auto& r : shards) CHECK(r.at("shard").contains("pairs"));
  CHECK(untimed(merge(shards)) == untimed(test::small_report()));

  if (parts.size() >= 2) {
    // A pair list that leaves a case out: the merge names the pair no shard owns.
    std::vector<json> short_of_one = shards;
    json& pairs = short_of_one[0].at("shard").at("pairs");
    const std::size_t dropped = pairs.back().get<std::size_t>();
    pairs.erase(pairs.size() - 1);
    auto& results = short_of_one[0].at("results");
    auto& skipped = short_of_one[0].at("skipped");
    const auto owns_dropped = [&](const json& r) {
      std::size_t c = 0, v = 0;
      for (; c < s.cases.size() && s.cases[c].name != r.at("case"); ++c) {
      }
      for (; v < test::kSmallVariants.size() && test::kSmallVariants[v] != r.at("variant"); ++v) {
      }
      return c * test::kSmallVariants.size() + v == dropped;
    };
    results.erase(std::remove_if(results.begin(), results.end(), owns_dropped), results.end());
    skipped.erase(std::remove_if(skipped.begin(), skipped.end(), owns_dropped), skipped.end());
    CHECK_THROWS_WITH(merge(short_of_one), Catch::Contains("is owned by none of the") && Catch::Contains("pair lists"));
  }
}
