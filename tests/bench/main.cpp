#include <fmt/core.h>

#include <stdexcept>

#include "bench.hpp"

int main(int argc, char** argv) try {
  auto& benches = mqa::bench::registry();
  if (argc == 1) {
    for (auto& [name, run] : benches) run();
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    const auto it = benches.find(argv[i]);
    if (it == benches.end()) {
      fmt::print(stderr, "mqa_bench: unknown benchmark '{}'; known:", argv[i]);
      for (auto& [name, run] : benches) fmt::print(stderr, " {}", name);
      fmt::print(stderr, "\n");
      return 2;
    }
    it->second();
  }
  return 0;
} catch (const std::invalid_argument& e) {  // a setting the benchmark cannot take (MQA_BENCH_*)
  fmt::print(stderr, "mqa_bench: {}\n", e.what());
  return 2;
}
