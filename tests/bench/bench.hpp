// Timing for benchmarks: the best of several runs (the least disturbed), in seconds.
#pragma once

#include <algorithm>
#include <chrono>

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

}  // namespace mqa::bench
