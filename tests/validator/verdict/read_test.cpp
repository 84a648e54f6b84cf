// Reading report.json back (validator/verdict/read_report.hpp): a run's report reads; every kind of damage is one
// message naming the file and the field.
#include <catch2/catch.hpp>

#include "reports/report.hpp"
#include "support/scratch_dir.hpp"
#include "support/small_run.hpp"
#include "validator/input_error.hpp"
#include "validator/verdict/read_report.hpp"
#include "validator/verdict/report_document.hpp"

using namespace mqa;
using nlohmann::json;

TEST_CASE("a run's report.json is a report of this schema version", "[verdict][read]") {
  const json& r = test::small_report();
  CHECK(r.at("schema") == "mqacheck.report");
  CHECK(r.at("schema_version") == verdict::kSchemaVersion);
  CHECK_NOTHROW(verdict::check_report(r, "report.json"));
  CHECK(r.at("cases").size() == 3);
  CHECK(r.at("variants").size() == test::kSmallVariants.size());
  CHECK(r.at("skipped").size() == 1);  // sm90-wgmma takes no e4m3fnuz
  for (const auto& c : r.at("cases")) CHECK(c.at("inputs_fingerprint").get<std::string>().size() == 16);
  for (const auto& x : r.at("results")) CHECK(x.at("metrics").at("heat_map").is_object());
}

TEST_CASE("a damaged report is refused with the field and what is accepted", "[verdict][read]") {
  const auto [pointer, value, says] = GENERATE(table<const char*, const char*, const char*>({
      {"/schema", R"("mqacheck.check")", "schema 'mqacheck.check', not a run report"},
      {"/schema_version", "1", "report schema version 1; this mqacheck reads version 2 only"},
      {"/schema_version", R"("2")", "schema_version: missing or not an integer"},
      {"/results/0/kind", "null", "results[0].kind: expected a string, found null"},
      {"/results/1/metrics/ulp/max", R"("x")", "results[1].metrics.ulp.max: expected an integer or null, found string"},
      {"/results/0/metrics/max_error_over_bound", R"("big")", "max_error_over_bound: expected a number, \"inf\" or null"},
      {"/cases/0/m", "1.5", "cases[0].m: expected an integer, found number"},
      {"/results/0/metrics/heat_map/rows", "99", "heat_map: a 99 x"},
      {"/results/0/metrics/heat_map/error_over_bound/0", R"("00")", "error_over_bound[0]: expected 24 characters"},
      {"/results/0/metrics/heat_map/mask_mismatches", R"(["Z"])", "mask_mismatches: 1 strings, expected one per row"},
      {"/shard", R"({"index": 4, "count": 3})", "shard: 4/3: expected I/N with 1 <= I <= N"},
      {"/mutants/0/caught_by", R"("causal")", "mutants[0].caught_by: expected an array, found string"},
      {"/mqacheck", "{}", "mqacheck.version: missing"},
      {"/results/0/metrics/worst", "[1]", "results[0].metrics.worst: 1 elements, expected 2"},
      {"/results/0/metrics/ulp/histogram_log2", "[1, 2]", "histogram_log2: 2 elements, expected 32"},
      {"/results/3/kind", R"("model ")", "results[3].kind: 'model ', expected one of model, mutant"},
      {"/variants/1/kind", R"("other")", "variants[1].kind: 'other', expected one of model, mutant"},
  }));
  CAPTURE(pointer, value);
  json r = test::small_report();
  r[json::json_pointer(pointer)] = json::parse(value);
  CHECK_THROWS_WITH(verdict::check_report(r, "base.json"), Catch::StartsWith("base.json: ") && Catch::Contains(says));
}

TEST_CASE("a report without a field, with a pair twice, or not an object is refused", "[verdict][read]") {
  json r = test::small_report();
  SECTION("missing") {
    r.at("results")[2].erase("outcome");
    CHECK_THROWS_WITH(verdict::check_report(r, "r.json"), "r.json: results[2].outcome: missing");
  }
  SECTION("a pair twice") {
    r.at("results").push_back(r.at("results")[0]);
    CHECK_THROWS_WITH(verdict::check_report(r, "r.json"),
                      Catch::Contains("case 'causal' x variant 'fp32-naive' a second time"));
  }
  SECTION("an array") {
    CHECK_THROWS_WITH(verdict::check_report(json::array(), "r.json"), Catch::Contains("expected a JSON object"));
  }
  SECTION("a finding that is not one") {
    auto& findings = r.at("results")[2].at("findings");  // causal x mutant-inclusive-end
    REQUIRE_FALSE(findings.empty());
    findings[0]["expected_bits"] = "0xZZ";
    CHECK_THROWS_WITH(verdict::check_report(r, "r.json"),
                      Catch::Contains("results[2].findings[0].expected_bits: expected float32 bits"));
    findings[0]["expected_bits"] = "0x7F800000";
    findings[0]["class"] = "mask-slip";
    CHECK_THROWS_WITH(verdict::check_report(r, "r.json"),
                      "r.json: results[2].findings[0].class: 'mask-slip' is no finding class (README.md lists them)");
  }
  SECTION("no schema") {
    r.erase("schema");
    CHECK_THROWS_WITH(verdict::check_report(r, "r.json"), Catch::Contains("not an mqacheck report"));
  }
}

TEST_CASE("read_report names the file it could not read or parse", "[verdict][read]") {
  const test::scratch_dir dir("reports-read");
  CHECK_THROWS_WITH(verdict::read_report(dir.root / "none.json"),
                    (dir.root / "none.json").string() + ": cannot read: No such file or directory");
  test::write_text(dir.root / "bad.json", "{\n  \"schema\": \n");
  CHECK_THROWS_WITH(verdict::read_report(dir.root / "bad.json"),
                    Catch::StartsWith((dir.root / "bad.json").string() + ": not JSON: parse error at line 3"));
  // A run's --out folder stands for its report.json.
  std::filesystem::create_directory(dir.root / "run");
  test::write_text(dir.root / "run" / "report.json", test::small_report().dump(2));
  CHECK(verdict::read_report(dir.root / "run") == test::small_report());
  CHECK_THROWS_WITH(verdict::read_report(dir.root), Catch::StartsWith((dir.root / "report.json").string() + ": cannot read"));
}

TEST_CASE("an external kernel's warm-up seconds are optional: number or null, else refused", "[verdict][read]") {
  json r = test::small_report();
  CHECK_NOTHROW(verdict::check_report(r, "old.json"));  // reports written before the field
  r.at("results")[0]["warmup_seconds"] = 0.25;
  r.at("results")[1]["warmup_seconds"] = nullptr;  // the adapter gave no "seconds" for launch 1
  CHECK_NOTHROW(verdict::check_report(r, "new.json"));
  r.at("results")[0]["warmup_seconds"] = "slow";
  CHECK_THROWS_WITH(verdict::check_report(r, "new.json"), Catch::Contains("results[0].warmup_seconds"));
}
