#include "balance.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

namespace mqa::verdict {

double estimated_cost(const cases::case_spec& c) {
  return static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.heads) *
         static_cast<double>(c.head_dim);
}

std::vector<double> measured_costs(const std::vector<cases::case_spec>& cases, const nlohmann::json& report) {
  std::map<std::string, double> seconds;
  for (const auto& t : report.at("timings")) seconds[t.at("case").get<std::string>()] = t.at("total_seconds").get<double>();
  double measured = 0, estimated = 0;
  for (const auto& c : cases)
    if (const auto it = seconds.find(c.name); it != seconds.end()) {
      measured += it->second;
      estimated += estimated_cost(c);
    }
  const double per_unit = measured > 0 && estimated > 0 ? measured / estimated : 1.0;
  std::vector<double> out;
  for (const auto& c : cases) {
    const auto it = seconds.find(c.name);
    out.push_back(it != seconds.end() ? it->second : estimated_cost(c) * per_unit);
  }
  return out;
}

std::vector<shard> balance_cases(const std::vector<double>& case_costs, std::size_t variants, int workers) {
  const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(std::max(workers, 1)), case_costs.size());
  std::vector<std::size_t> order(case_costs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return case_costs[a] > case_costs[b]; });
  std::vector<double> load(count, 0.0);
  std::vector<std::vector<std::size_t>> cases_of(count);
  for (const std::size_t c : order) {
    const std::size_t w = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[w] += case_costs[c];
    cases_of[w].push_back(c);
  }
  std::vector<shard> out;
  for (std::size_t w = 0; w < count; ++w) {
    std::sort(cases_of[w].begin(), cases_of[w].end());
    shard s;
    s.index = static_cast<int>(w) + 1;
    s.count = static_cast<int>(count);
    s.pairs.emplace();
    for (const std::size_t c : cases_of[w])
      for (std::size_t v = 0; v < variants; ++v) s.pairs->push_back(c * variants + v);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<double> shard_costs(const std::vector<shard>& shards, const std::vector<double>& case_costs,
                                std::size_t variants) {
  std::vector<double> out;
  for (const auto& s : shards) {
    double sum = 0;
    for (std::size_t c = 0; c < case_costs.size(); ++c)
      if (variants > 0 && s.owns(c * variants)) sum += case_costs[c];
    out.push_back(sum);
  }
  return out;
}

}  // namespace mqa::verdict
