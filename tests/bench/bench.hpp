// Benchmarks: each file registers named benchmarks; `mqa_bench [NAME...]` runs them (all by
// default). Timings are the best of several runs, reported next to baselines timed in the same
// process, never asserted on.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace mqa::bench {

template <class F>
double seconds_per_run(F&& run, int repetitions = 5) {
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return best;
}

inline std::map<std::string, std::function<void()>>& registry() {
  static std::map<std::string, std::function<void()>> benches;
  return benches;
}

struct registration {
  registration(const std::string& name, std::function<void()> run) { registry().emplace(name, std::move(run)); }
};

}  // namespace mqa::bench
