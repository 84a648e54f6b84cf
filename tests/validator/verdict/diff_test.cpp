// `mqacheck diff` (validator/verdict/diff.hpp): each rule of "what regresses" from a real run's report and a
// copy with one planted change.
#include <catch2/catch.hpp>

#include <algorithm>

#include "reports/diff_text.hpp"
#include "reports/fields.hpp"
#include "support/small_run.hpp"
#include "validator/verdict/diff.hpp"

using namespace mqa;
using nlohmann::json;

namespace {


json& mutant(json& report, std::string_view v) {
  for (auto& m : report.at("mutants"))
    if (m.at("variant") == v) return m;
  throw std::logic_error("no such mutant");
}

verdict::report_diff diff(const json& before, const json& after, verdict::diff_options o = {}) {
  return verdict::diff_reports({"base.json", &before}, {"new.json", &after}, o);
}

std::vector<std::string> kinds(const verdict::report_diff& d) {
  std::vector<std::string> out;
  for (const auto& r : d.regressions) out.push_back(r.kind);
  return out;
}

// A finding as the comparator writes it.
json finding(const char* kind, std::int64_t count) {
  return {{"class", kind}, {"count", count}, {"first", {0, 3}}, {"expected_bits", "0x3F800000"},
          {"actual_bits", "0x40000000"}, {"expected", "1"}, {"actual", "2"}, {"bound", 0.01}, {"detail", "planted"}};
}

void fail(json& r, std::vector<json> findings) {
  r["verdict"] = "fail";
  r["outcome"] = "FAIL";
  r["findings"] = findings;
}

}  // namespace

TEST_CASE("a report against itself: nothing changed, nothing regressed", "[verdict][diff]") {
  const json& r = test::small_report();
  const auto d = diff(r, r);
  CHECK_FALSE(d.regressed());
  CHECK(d.improvements.empty());
  CHECK(std::none_of(d.pairs.begin(), d.pairs.end(), [](const auto& p) { return p.changed(); }));
  CHECK(d.pairs.size() == r.at("results").size());
  CHECK(reports::diff_json(d).at("regressed") == false);
  CHECK(reports::diff_table(d).find("nothing regressed") != std::string::npos);
}

TEST_CASE("a correct variant that fails, or shows a new class, regresses", "[verdict][diff]") {
  const json& before = test::small_report();
  json after = before;
  SECTION("pass -> FAIL") {
    fail(test::result_in(after, "sliding", "fp32-naive"), {finding("error-bound", 3)});
    const auto d = diff(before, after);
    REQUIRE(kinds(d) == std::vector<std::string>{"model-fails"});
    CHECK(d.regressions[0].text == "sliding x fp32-naive: pass in the baseline, FAIL now (error-bound x3)");
    CHECK(reports::diff_markdown(d).find("**model-fails**") != std::string::npos);
    SECTION("and back: an improvement") {
      const auto back = diff(after, before);
      CHECK_FALSE(back.regressed());
      CHECK(back.improvements == std::vector<std::string>{"sliding x fp32-naive: FAIL in the baseline, pass now"});
    }
  }
  SECTION("FAIL -> FAIL with a new class; a count that changes alone does not regress") {
    json failing = before;
    fail(test::result_in(failing, "causal", "fp32-naive"), {finding("error-bound", 3)});
    fail(test::result_in(after, "causal", "fp32-naive"), {finding("mask-leak", 1), finding("error-bound", 3)});
    CHECK(kinds(diff(failing, after)) == std::vector<std::string>{"new-finding-class"});
    fail(test::result_in(after, "causal", "fp32-naive"), {finding("error-bound", 30)});
    const auto d = diff(failing, after);
    CHECK_FALSE(d.regressed());
    CHECK(std::any_of(d.pairs.begin(), d.pairs.end(), [](const auto& p) { return p.changed(); }));
  }
  SECTION("a mutant's new classes are not a regression") {
    test::result_in(after, "causal", "mutant-inclusive-end").at("findings").push_back(finding("nan", 1));
    CHECK_FALSE(diff(before, after).regressed());
  }
}

TEST_CASE("a mutant caught by no case any more regresses", "[verdict][diff]") {
  const json& before = test::small_report();
  REQUIRE_FALSE(mutant(const_cast<json&>(before), "mutant-inclusive-end").at("caught_by").empty());
  json after = before;
  mutant(after, "mutant-inclusive-end")["caught_by"] = json::array();
  const auto d = diff(before, after);
  REQUIRE(kinds(d) == std::vector<std::string>{"mutant-blind"});
  CHECK(d.regressions[0].text.find("now by no case: a check went blind") != std::string::npos);
  SECTION("caught by fewer cases is a change, not a regression") {
    json fewer = before;
    auto& by = mutant(fewer, "mutant-inclusive-end").at("caught_by");
    if (by.size() > 1) {
      by.erase(by.begin());
      CHECK_FALSE(diff(before, fewer).regressed());
      CHECK(reports::diff_table(diff(before, fewer)).find("mutant 'mutant-inclusive-end': caught by") != std::string::npos);
    }
  }
}

TEST_CASE("changed inputs are reported and their results never compared", "[verdict][diff]") {
  const json& before = test::small_report();
  json after = before;
  const auto field = GENERATE(as<std::string>{}, "inputs_fingerprint", "n", "clean_logits", "topk");
  CAPTURE(field);
  json& c = after.at("cases")[1];
  REQUIRE(c.at("case") == "sliding");
  c[field] = field == "inputs_fingerprint" ? json("0123456789abcdef") : field == "clean_logits" ? json(false) : json(7);
  // A failure on the changed case would be compared against other inputs: it is not.
  fail(test::result_in(after, "sliding", "fp32-naive"), {finding("error-bound", 3)});
  const auto d = diff(before, after);
  REQUIRE(kinds(d) == std::vector<std::string>{"case-changed"});
  CHECK(d.regressions[0].text.find("case 'sliding' changed (" + (field == "inputs_fingerprint" ? std::string("inputs fingerprint") : field)) == 0);
  for (const auto& p : d.pairs) CHECK((p.status == "case-changed") == (p.case_name == "sliding"));
}

TEST_CASE("pairs that vanish regress, pairs that appear regress only when they fail", "[verdict][diff]") {
  const json& before = test::small_report();
  json after = before;
  auto& results = after.at("results");
  const auto gone = std::find_if(results.begin(), results.end(), [](const json& r) {
    return r.at("case") == "causal" && r.at("variant") == "mutant-tail-tile";
  });
  SECTION("gone") {
    results.erase(gone);
    const auto d = diff(before, after);
    REQUIRE(kinds(d) == std::vector<std::string>{"pair-missing"});
    CHECK(d.regressions[0].text.find("not in the new report") != std::string::npos);
  }
  SECTION("skipped now") {
    after.at("skipped").push_back({{"case", "causal"}, {"variant", "mutant-tail-tile"}, {"reason", "no longer runs"}});
    results.erase(gone);
    const auto d = diff(before, after);
    REQUIRE(kinds(d) == std::vector<std::string>{"pair-missing"});
    CHECK(d.regressions[0].text.find("skipped now: no longer runs") != std::string::npos);
  }
  SECTION("new in the new report") {
    const auto d = diff(after, before);  // the other way round
    CHECK_FALSE(d.regressed());
    json failing = before;
    fail(test::result_in(failing, "causal", "fp32-naive"), {finding("nan", 1)});
    json without = failing;
    auto& w = without.at("results");
    w.erase(std::find_if(w.begin(), w.end(),
                         [](const json& r) { return r.at("case") == "causal" && r.at("variant") == "fp32-naive"; }));
    CHECK(kinds(diff(without, failing)) == std::vector<std::string>{"new-pair-fails"});
  }
  SECTION("a case gone entirely") {
    json fewer = before;
    auto& cases = fewer.at("cases");
    cases.erase(cases.begin());
    auto& r = fewer.at("results");
    r.erase(std::remove_if(r.begin(), r.end(), [](const json& x) { return x.at("case") == "causal"; }), r.end());
    for (auto& m : fewer.at("mutants")) {
      auto& by = m.at("caught_by");
      by.erase(std::remove(by.begin(), by.end(), json("causal")), by.end());
    }
    const auto found = kinds(diff(before, fewer));
    CHECK(std::count(found.begin(), found.end(), "case-missing") == 1);
    CHECK(std::count(found.begin(), found.end(), "pair-missing") == 0);
  }
}

TEST_CASE("metric drift and kernel time are reported; time regresses only past a limit", "[verdict][diff]") {
  const json& before = test::small_report();
  json after = before;
  json& r = test::result_in(after, "causal", "fp32-naive");
  r["metrics"]["max_error_over_bound"] = r["metrics"]["max_error_over_bound"].get<double>() * 2 + 0.01;
  r["metrics"]["ulp"]["p99"] = r["metrics"]["ulp"]["p99"].get<std::int64_t>() + 5;
  const auto drift = diff(before, after);
  CHECK_FALSE(drift.regressed());
  const auto changed = std::find_if(drift.pairs.begin(), drift.pairs.end(), [](const auto& p) { return p.changed(); });
  REQUIRE(changed != drift.pairs.end());
  CHECK(changed->case_name == "causal");
  CHECK(reports::diff_table(drift).find(" -> ") != std::string::npos);

  // The error in ULPs of A, baseline -> now, in its own column before the raw ULPs.
  json scaled = before;
  json& a = test::result_in(scaled, "causal", "fp32-naive")["metrics"]["magnitude_ulp"];
  const double p99 = a.at("p99").get<double>();
  a["p99"] = p99 * 4 + 0.5;
  const auto grown = diff(before, scaled);
  CHECK_FALSE(grown.regressed());  // reported; only --max-drift regresses on it
  const std::string table = reports::diff_table(grown);
  const std::size_t header = table.find("max err/bound  p99 ULPs of A  raw p99 ULP  raw max ULP");
  CHECK(header != std::string::npos);
  CHECK(table.find(fmt::format("{} -> {}", reports::shown(json(p99), 3), reports::shown(json(p99 * 4 + 0.5), 3)), header) !=
        std::string::npos);
  CHECK(reports::diff_markdown(grown).find("| p99 ULPs of A | raw p99 ULP |") != std::string::npos);
  // A report of an older mqacheck, without the figures, compares as absent rather than failing.
  json older = before;
  for (auto& x : older["results"])
    if (x["metrics"].is_object()) x["metrics"].erase("magnitude_ulp");
  CHECK_NOTHROW(diff(older, before));

  json slow = before;
  json& s = test::result_in(slow, "sliding", "fp32-naive");
  const double t = std::max(s.at("kernel_seconds").get<double>(), 1e-6);
  s["kernel_seconds"] = t * 3;
  json base = before;
  test::result_in(base, "sliding", "fp32-naive")["kernel_seconds"] = t;
  CHECK_FALSE(diff(base, slow).regressed());
  CHECK_FALSE(diff(base, slow, {4.0}).regressed());
  const auto limited = diff(base, slow, {2.0});
  REQUIRE(kinds(limited) == std::vector<std::string>{"slower"});
  CHECK(limited.regressions[0].text.find("3.00x (best of 1; noise 0% and 0%; limit 2x)") != std::string::npos);

  // Best of several launches with their noise: the limit is max(F, 1 + noise before + noise now).
  test::result_in(base, "sliding", "fp32-naive")["kernel_launches"] = 5;
  test::result_in(base, "sliding", "fp32-naive")["kernel_noise"] = 0.9;
  s["kernel_launches"] = 5;
  s["kernel_noise"] = 1.2;  // 1 + 0.9 + 1.2 = 3.1 > 3: within the noise the two runs measured
  CHECK_FALSE(diff(base, slow, {2.0}).regressed());
  s["kernel_noise"] = 0.5;  // 1 + 0.9 + 0.5 = 2.4 < 3: slower beyond the noise
  const auto noisy = diff(base, slow, {2.0});
  REQUIRE(kinds(noisy) == std::vector<std::string>{"slower"});
  CHECK(noisy.regressions[0].text.find("3.00x (best of 5; noise 90% and 50%; limit 2.4x, --max-slowdown 2 raised to the "
                                       "noise)") != std::string::npos);
}

TEST_CASE("reports that cannot be compared are bad input", "[verdict][diff]") {
  const json& before = test::small_report();
  json other = before;
  other["suite"] = "quick";
  CHECK_THROWS_WITH(diff(before, other),
                    "base.json is a report of suite 'small', new.json of suite 'quick': a diff compares two runs of one "
                    "suite");
  json shard = before;
  shard["shard"] = {{"index", 2}, {"count", 3}};
  CHECK_THROWS_WITH(diff(before, shard), Catch::StartsWith("new.json: the report of shard 2/3 only: put the shards "
                                                           "together first"));
  json other_shard = before;
  other_shard["shard"] = {{"index", 1}, {"count", 3}};
  CHECK_THROWS_WITH(diff(other_shard, shard), Catch::Contains("put the shards together first"));
}

TEST_CASE("two runs of one shard compare as two whole runs", "[verdict][diff]") {
  json shard = test::small_report();
  shard["shard"] = {{"index", 2}, {"count", 3}};
  const auto d = diff(shard, shard);
  CHECK(d.regressions.empty());
}

TEST_CASE("a case run in neither report is unchanged; run on one side only, it changed", "[verdict][diff]") {
  json before = test::small_report();
  before["cases"][0]["inputs_fingerprint"] = nullptr;
  const std::string name = before["cases"][0]["case"].get<std::string>();
  json& results = before["results"];
  results.erase(std::remove_if(results.begin(), results.end(), [&](const json& r) { return r.at("case") == name; }),
                results.end());
  const auto same = diff(before, before);
  CHECK(same.regressions.empty());
  CHECK(same.cases[0].status == "same");
  json after = before;
  after["cases"][0]["inputs_fingerprint"] = "0123456789abcdef";
  CHECK(kinds(diff(before, after)) == std::vector<std::string>{"case-changed"});
}

TEST_CASE("a pair that could not be judged in both reports for the same reason is unchanged", "[verdict][diff]") {
  json before = test::small_report();
  json& r = before["results"][0];
  r["error"] = "launch 1: the adapter refused\nstderr tail";
  r["outcome"] = "error";
  r["findings"] = json::array();
  r["metrics"] = nullptr;
  const auto d = diff(before, before);
  CHECK(d.regressions.empty());
  CHECK_FALSE(d.pairs[0].changed());
}

TEST_CASE("two reports of one external kernel are matched by case, whatever its label", "[verdict][diff]") {
  auto kernel_report = [](const char* label) {
    json r = test::small_report();
    auto& results = r.at("results");
    results.erase(std::remove_if(results.begin(), results.end(), [](const json& x) { return x.at("variant") != "fp32-naive"; }),
                  results.end());
    for (auto& x : results) x["variant"] = label;
    r["mutants"] = json::array();
    r["skipped"] = json::array();
    // The contract line as describe() writes it: a diff reads it back to compare contracts.
    const char* fp32 = "dot fp32, heads fp32, k_scale after-head-sum, weights fp32, relu keeps NaN, clean, deterministic";
    r["variants"] = json::array({{{"variant", label}, {"kind", "model"}, {"contract", fp32}}});
    r["kernel"] = {{"command", "python3 adapter.py"}, {"label", label}, {"contract", fp32}};
    return r;
  };
  const json old_version = kernel_report("mqa-lib 0.3"), new_version = kernel_report("mqa-lib 0.4");
  auto d = diff(old_version, new_version);
  CHECK_FALSE(d.regressed());
  REQUIRE(d.pairs.size() == 3);
  for (const auto& p : d.pairs) {
    CHECK(p.status == "compared");
    CHECK(p.baseline_variant == "mqa-lib 0.3");
    CHECK(p.variant == "mqa-lib 0.4");
  }
  json broken = new_version;
  fail(broken.at("results")[0], {finding("mask-leak", 4)});
  d = diff(old_version, broken);
  REQUIRE(kinds(d) == std::vector<std::string>{"model-fails"});
  CHECK(d.regressions[0].text.find("causal x mqa-lib 0.4 (baseline: mqa-lib 0.3)") == 0);
}

TEST_CASE("a variant declaring a weaker contract than the baseline regresses unless accepted", "[verdict][diff]") {
  const json& before = test::small_report();
  json after = before;
  json& declared = after["variants"][0];
  const std::string line = declared.at("contract").get<std::string>();
  REQUIRE(line.find("dot fp32,") == 0);
  declared["contract"] = "dot bf16," + line.substr(std::string("dot fp32,").size());
  const auto d = diff(before, after);
  REQUIRE(kinds(d) == std::vector<std::string>{"contract-weakened"});
  CHECK(d.regressions[0].variant == declared.at("variant").get<std::string>());
  CHECK(d.regressions[0].text.find("dot fp32") != std::string::npos);
  CHECK(d.regressions[0].text.find("dot bf16") != std::string::npos);
  const auto accepted = diff(before, after, {.max_slowdown = std::nullopt, .accept_weaker_contract = true});
  CHECK(accepted.regressions.empty());
  REQUIRE(accepted.accepted.size() == 1);
  CHECK(accepted.accepted[0].kind == "contract-weakened");
  CHECK(diff(after, before).regressions.empty());  // a stronger contract is no regression

  declared["contract"] = "dot who-knows";
  CHECK_THROWS_WITH(diff(before, after), Catch::Contains("is not a line this mqacheck writes"));
}
