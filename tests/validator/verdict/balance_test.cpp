// `run --devices` (validator/verdict/balance.hpp): whole cases over the workers, largest first to
// the least loaded; every pair owned exactly once; deterministic.
#include <catch2/catch.hpp>

#include <algorithm>

#include "validator/verdict/balance.hpp"

using namespace mqa;

TEST_CASE("balance_cases gives whole cases, largest first, to the least loaded worker", "[verdict][balance]") {
  // Costs 8, 1, 7, 2, 6 over 2 workers: 8 -> w1, 7 -> w2, 6 -> w2 (7 < 8), 2 -> w1, 1 -> w1.
  const std::vector<double> costs{8, 1, 7, 2, 6};
  const auto parts = verdict::balance_cases(costs, 3, 2);
  REQUIRE(parts.size() == 2);
  CHECK(*parts[0].pairs == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 9, 10, 11});  // cases 0, 1, 3
  CHECK(*parts[1].pairs == std::vector<std::size_t>{6, 7, 8, 12, 13, 14});          // cases 2, 4
  CHECK(parts[0].index == 1);
  CHECK(parts[1].index == 2);
  CHECK(parts[0].count == 2);
  CHECK(verdict::shard_costs(parts, costs, 3) == std::vector<double>{11, 13});
}

TEST_CASE("balance_cases owns every pair once and never makes an empty worker", "[verdict][balance]") {
  const int workers = GENERATE(1, 2, 3, 5, 8);
  const std::vector<double> costs{4096, 64, 64, 1 << 20, 512, 512, 512, 9};
  const std::size_t variants = 4;
  const auto parts = verdict::balance_cases(costs, variants, workers);
  CHECK(parts.size() == std::min<std::size_t>(workers, costs.size()));
  for (std::size_t pair = 0; pair < costs.size() * variants; ++pair) {
    CAPTURE(workers, pair);
    CHECK(std::count_if(parts.begin(), parts.end(), [&](const verdict::shard& s) { return s.owns(pair); }) == 1);
  }
  for (const auto& s : parts) CHECK(!s.pairs->empty());
  CHECK(verdict::balance_cases(costs, variants, workers) == parts);
  // The largest case alone outweighs the rest: its worker gets nothing else once there are two.
  if (workers >= 2) CHECK(verdict::shard_costs(parts, costs, variants)[0] == 1 << 20);
}

TEST_CASE("estimated_cost is m * n * heads * head_dim", "[verdict][balance]") {
  cases::case_spec c;
  c.m = 3;
  c.n = 5;
  c.heads = 7;
  c.head_dim = 64;
  CHECK(verdict::estimated_cost(c) == 3.0 * 5 * 7 * 64);
}

TEST_CASE("measured_costs takes a report's timings, and scales the estimate of a case it did not time",
          "[verdict][balance]") {
  std::vector<cases::case_spec> cs(3);
  const char* names[] = {"a", "b", "c"};
  for (std::size_t i = 0; i < cs.size(); ++i) {
    cs[i].name = names[i];
    cs[i].m = cs[i].n = cs[i].heads = 1;
    cs[i].head_dim = static_cast<std::int64_t>(10 * (i + 1));  // estimates 10, 20, 30
  }
  const nlohmann::json report = {{"timings",
                                  {{{"case", "a"}, {"total_seconds", 4.0}}, {{"case", "b"}, {"total_seconds", 2.0}}}}};
  // a and b: 6 s for 30 units, so c's 30 units are 6 s.
  CHECK(verdict::measured_costs(cs, report) == std::vector<double>{4.0, 2.0, 6.0});
  CHECK(verdict::measured_costs(cs, nlohmann::json{{"timings", nlohmann::json::array()}}) ==
        std::vector<double>{10, 20, 30});
}
