// Benchmarks: each file registers named benchmarks; `mqa_bench [NAME...]` runs them (all by
// default). Timings are the best of several runs, reported next to baselines timed in the same
// process, never asserted on.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

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

// MQA_BENCH_RUN_SHAPE=MxN where set, else (m, n): the shape a benchmark of one causal case runs at.
inline std::pair<std::int64_t, std::int64_t> shape_from_environment(std::int64_t m, std::int64_t n) {
  const char* shape = std::getenv("MQA_BENCH_RUN_SHAPE");
  if (shape == nullptr || *shape == '\0') return {m, n};
  char* end = nullptr;
  m = std::strtoll(shape, &end, 10);
  if (end == nullptr || *end != 'x' || m <= 0 || (n = std::strtoll(end + 1, &end, 10)) <= 0 || *end != '\0')
    throw std::invalid_argument(std::string("MQA_BENCH_RUN_SHAPE=") + shape + ": expected MxN, say 8192x65536");
  return {m, n};
}

inline std::map<std::string, std::function<void()>>& registry() {
  static std::map<std::string, std::function<void()>> benches;
  return benches;
}

struct registration {
  registration(const std::string& name, std::function<void()> run) { registry().emplace(name, std::move(run)); }
};

}  // namespace mqa::bench
