// `run --shard I/N` (validator/verdict/shard.hpp): the argument, the partition of the pairs, and
// shards of a run that together are the unsharded run.
#include <catch2/catch.hpp>

#include <optional>
#include <set>

#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/verdict/shard.hpp"
#include "validator/verdict/verdict.hpp"

using namespace mqa;

TEST_CASE("run --shard takes I/N with 1 <= I <= N", "[verdict][shard]") {
  const auto [text, index, count] = GENERATE(table<const char*, int, int>({{"1/1", 1, 1}, {"2/3", 2, 3}, {"3/3", 3, 3},
                                                                          {"17/10000", 17, 10000}}));
  CAPTURE(text);
  const verdict::shard s = verdict::parse_shard("--shard", text);
  CHECK(s.index == index);
  CHECK(s.count == count);
  CHECK(s.to_string() == text);
}

TEST_CASE("whole_number reads a count and nothing around it", "[verdict][shard]") {
  const auto [text, value] = GENERATE(table<const char*, std::optional<int>>(
      {{"0", 0}, {"7", 7}, {"123456789", 123456789}, {"-3", -3}, {"", std::nullopt}, {"1234567890", std::nullopt},
       {"2x", std::nullopt}, {" 2", std::nullopt}, {"2 ", std::nullopt}, {"+2", std::nullopt}, {"0x10", std::nullopt}}));
  CAPTURE(text);
  CHECK(verdict::whole_number(text) == value);
}

TEST_CASE("a bad --shard is one message saying what is accepted", "[verdict][shard]") {
  const auto [text, says] = GENERATE(table<const char*, const char*>({
      {"", "expected I/N"},
      {"3", "expected I/N"},
      {"1/", "expected I/N"},
      {"/3", "expected I/N"},
      {"a/3", "expected I/N"},
      {"1/3/4", "expected I/N"},
      {"-1/3", "I must be between 1 and N = 3"},
      {" 1/3", "expected I/N"},
      {"0/3", "I must be between 1 and N = 3 (shards are numbered from 1)"},
      {"4/3", "I must be between 1 and N = 3"},
      {"1/0", "N must be between 1 and 10000"},
      {"1/10001", "N must be between 1 and 10000"},
      {"1/99999999999", "expected I/N"},
  }));
  CAPTURE(text);
  CHECK_THROWS_WITH(verdict::parse_shard("--shard", text),
                    Catch::StartsWith(std::string("--shard '") + text + "': ") && Catch::Contains(says));
}

TEST_CASE("the N shards own every pair exactly once, round robin", "[verdict][shard]") {
  const int count = GENERATE(1, 2, 3, 7);
  for (std::size_t pair = 0; pair < 100; ++pair) {
    int owners = 0;
    for (int i = 1; i <= count; ++i) owners += verdict::shard{i, count}.owns(pair);
    CHECK(owners == 1);
    CHECK(verdict::shard{static_cast<int>(pair % static_cast<std::size_t>(count)) + 1, count}.owns(pair));
  }
}

TEST_CASE("shards of a run hold its pairs once each, and generate only the inputs they need", "[verdict][shard]") {
  const cases::suite s = cases::parse_suite(R"([suite]
name = "shards"
[defaults]
heads = 2
head_dim = 32
m = 6
n = 20
[[case]]
name = "a"
layout = { kind = "causal" }
[[case]]
name = "b"
layout = { kind = "sliding", window = 5 }
[[case]]
name = "fnuz"
q_format = "e4m3fnuz"
k_format = "e4m3fnuz"
profile = "hip-satfinite"
layout = { kind = "causal" }
)",
                                            "shards.toml");
  verdict::run_options o;
  o.variants = {"exact", "fp32-naive", "sm90-wgmma", "mutant-inclusive-end"};  // sm90-wgmma skips fnuz
  o.threads = 1;
  const verdict::suite_report whole = verdict::run_suite(s, o);
  REQUIRE(whole.results.size() + whole.skipped.size() == 12);
  REQUIRE(whole.skipped.size() == 1);
  CHECK_FALSE(whole.shard);
  const int count = GENERATE(2, 5, 13);
  CAPTURE(count);
  std::set<std::pair<std::string, std::string>> seen;
  for (int i = 1; i <= count; ++i) {
    o.shard = verdict::shard{i, count};
    const verdict::suite_report part = verdict::run_suite(s, o);
    CHECK(part.shard == o.shard);
    CHECK(part.cases.size() == 3);
    CHECK(part.variants.size() == 4);
    CHECK(part.mutants.size() == 1);
    // A shard does not judge mutant coverage: another shard may catch the mutant.
    for (const auto& b : part.broken_expectations()) CHECK(b.find("mutant") == std::string::npos);
    for (const auto& r : part.results) {
      CHECK(seen.insert({r.case_name, r.variant}).second);
      const auto& same = *std::find_if(whole.results.begin(), whole.results.end(), [&](const auto& w) {
        return w.case_name == r.case_name && w.variant == r.variant;
      });
      CHECK(same.judgement.findings.size() == r.judgement.findings.size());
      CHECK(same.judgement.stats.ulps.counts == r.judgement.stats.ulps.counts);
    }
    for (const auto& k : part.skipped) CHECK(seen.insert({k.case_name, k.variant}).second);
    for (std::size_t c = 0; c < 3; ++c) {
      bool owns_one = false;
      for (std::size_t v = 0; v < 4; ++v) owns_one |= o.shard->owns(c * 4 + v);
      CHECK(part.cases[c].inputs_fingerprint.has_value() == owns_one);
      if (owns_one) CHECK(part.cases[c].inputs_fingerprint == whole.cases[c].inputs_fingerprint);
    }
  }
  CHECK(seen.size() == 12);
}
