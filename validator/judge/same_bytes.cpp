#include "same_bytes.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace mqa::judge {

bool same_bytes(const void* a, const void* b, std::size_t bytes, std::size_t chunk) {
  chunk = std::max<std::size_t>(chunk, 1);
  const std::size_t pieces = (bytes + chunk - 1) / chunk;
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  if (pieces <= 1) return bytes == 0 || std::memcmp(x, y, bytes) == 0;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> differ{false};
  auto work = [&] {
    for (std::size_t p = next++; p < pieces && !differ.load(std::memory_order_relaxed); p = next++) {
      const std::size_t at = p * chunk, size = std::min(chunk, bytes - at);
      if (std::memcmp(x + at, y + at, size) != 0) differ.store(true, std::memory_order_relaxed);
    }
  };
  const std::size_t threads = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), pieces);
  std::vector<std::jthread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  pool.clear();  // joins
  return !differ.load();
}

}  // namespace mqa::judge
