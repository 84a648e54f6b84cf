#include "same_bytes.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "validator/pieces.hpp"

namespace mqa::judge {

bool same_bytes(const void* a, const void* b, std::size_t bytes, std::size_t chunk) {
  chunk = std::max<std::size_t>(chunk, 1);
  const std::size_t pieces = (bytes + chunk - 1) / chunk;
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  if (pieces <= 1) return bytes == 0 || std::memcmp(x, y, bytes) == 0;
  std::atomic<bool> differ{false};
  for_each_piece(static_cast<std::int64_t>(pieces), [&](std::int64_t piece) {
    if (differ.load(std::memory_order_relaxed)) return;  // the answer is known: the rest is skipped
    const std::size_t at = static_cast<std::size_t>(piece) * chunk, size = std::min(chunk, bytes - at);
    if (std::memcmp(x + at, y + at, size) != 0) differ.store(true, std::memory_order_relaxed);
  });
  return !differ.load();
}

}  // namespace mqa::judge
