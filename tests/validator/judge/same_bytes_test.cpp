#include "validator/judge/same_bytes.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace mqa::judge {
namespace {

// The oracle: byte by byte, one thread.
bool equal_byte_by_byte(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  for (std::size_t x = 0; x < a.size(); ++x)
    if (a[x] != b[x]) return false;
  return true;
}

TEST_CASE("same_bytes says what a byte-by-byte comparison says, whatever the pieces", "[judge]") {
  const std::size_t bytes = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096},
                                     std::size_t{100003});
  const std::size_t chunk = GENERATE(std::size_t{1}, std::size_t{64}, std::size_t{4096}, std::size_t{1} << 25);
  CAPTURE(bytes, chunk);
  std::vector<std::uint8_t> a(bytes), b(bytes);
  for (std::size_t x = 0; x < bytes; ++x) a[x] = b[x] = static_cast<std::uint8_t>(x * 2654435761u >> 13);
  CHECK(same_bytes(a.data(), b.data(), bytes, chunk));
  CHECK(equal_byte_by_byte(a, b));
  if (bytes == 0) return;
  // One byte flipped: the first, the last, either side of a piece's boundary, the middle.
  for (const std::size_t at : {std::size_t{0}, bytes - 1, std::min(chunk, bytes - 1), std::min(chunk - 1, bytes - 1),
                               bytes / 2}) {
    CAPTURE(at);
    b[at] ^= 0x10;
    CHECK(same_bytes(a.data(), b.data(), bytes, chunk) == equal_byte_by_byte(a, b));
    CHECK_FALSE(same_bytes(a.data(), b.data(), bytes, chunk));
    b[at] ^= 0x10;
  }
}

}  // namespace
}  // namespace mqa::judge
