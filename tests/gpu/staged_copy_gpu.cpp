// Large host <-> device copies through pinned staging (reference/gpu/staged_copy.hpp): every byte
// arrives, at sizes below the plain-copy threshold, at it, and past it by amounts that leave a
// partial chunk and lanes without work.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "reference/gpu/staged_copy.hpp"
#include "validator/compare/device/judge_args.hpp"

namespace mqa::gpu_test {
namespace {

std::vector<std::uint8_t> pattern(std::size_t bytes, std::uint64_t seed) {
  std::vector<std::uint8_t> v(bytes);
  std::uint64_t x = seed;
  for (std::size_t i = 0; i < bytes; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    v[i] = static_cast<std::uint8_t>(x >> 56);
  }
  return v;
}

}  // namespace

// Pieces of 32 MiB go by the runtime's plain copy: the check of each direction on its own.
constexpr std::size_t kPiece = std::size_t{32} << 20;

TEST_CASE("staged copies move every byte both ways", "[gpu]") {
  const std::size_t mib = std::size_t{1} << 20;
  const std::size_t bytes = GENERATE_COPY(std::size_t{1}, 64 * mib - 1, 64 * mib, 64 * mib + 12345, 200 * mib + 7);
  CAPTURE(bytes);
  const std::vector<std::uint8_t> sent = pattern(bytes, bytes);
  auto* device = static_cast<std::uint8_t*>(compare::device::device_allocate(bytes, "staged copy test buffer"));
  const std::unique_ptr<void, void (*)(void*)> owned(device, compare::device::device_free);

  gpu::copy_to_device_staged(device, sent.data(), bytes, "staged copy to the device");
  std::vector<std::uint8_t> back(bytes, 0xA5);
  for (std::size_t at = 0; at < bytes; at += kPiece)
    gpu::copy_to_host_staged(back.data() + at, device + at, std::min(kPiece, bytes - at), "plain copy to the host");
  CHECK(std::memcmp(back.data(), sent.data(), bytes) == 0);

  const std::vector<std::uint8_t> other = pattern(bytes, bytes + 1);
  for (std::size_t at = 0; at < bytes; at += kPiece)
    gpu::copy_to_device_staged(device + at, other.data() + at, std::min(kPiece, bytes - at), "plain copy to the device");
  std::vector<std::uint8_t> staged(bytes, 0x5A);
  gpu::copy_to_host_staged(staged.data(), device, bytes, "staged copy to the host");
  CHECK(std::memcmp(staged.data(), other.data(), bytes) == 0);
}

}  // namespace mqa::gpu_test
