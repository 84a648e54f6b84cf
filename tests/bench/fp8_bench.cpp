// Bulk fp8 conversion rate on one core, as a ratio to baselines run in the same process:
// memcpy of the same bytes (the memory roofline of an elementwise pass) and a float -> bf16
// round-to-nearest-even pass (the cheapest real rounding kernel).
#include <fmt/core.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <vector>

#include "bench.hpp"
#include "reference/fp8.hpp"

namespace {

using namespace mqa::fp8;
using mqa::bench::seconds_per_run;

void fp8_conversion() {
  constexpr std::size_t kCount = std::size_t{1} << 24;
  std::vector<float> in(kCount);
  std::uint32_t state = 12345;
  for (float& x : in) {  // values spread over e4m3's range and beyond, both signs
    state = state * 1664525u + 1013904223u;
    x = std::bit_cast<float>((state & 0x8000'0000u) | (0x3800'0000u + (state >> 9) % 0x0A00'0000u));
  }
  std::vector<std::uint8_t> out(kCount);
  std::vector<float> copy(kCount);
  std::vector<std::uint16_t> bf16(kCount);

  const double memcpy_s = seconds_per_run([&] { std::memcpy(copy.data(), in.data(), kCount * sizeof(float)); });
  const double bf16_s = seconds_per_run([&] {
    for (std::size_t i = 0; i < kCount; ++i) {
      const std::uint32_t b = std::bit_cast<std::uint32_t>(in[i]);
      bf16[i] = static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
    }
  });
  fmt::print("fp8 bulk conversion, {} float32 values, one core\n", kCount);
  fmt::print("  baseline memcpy           {:8.1f} M values/s\n", kCount / memcpy_s / 1e6);
  fmt::print("  baseline float->bf16 RNE  {:8.1f} M values/s\n", kCount / bf16_s / 1e6);
  for (const auto& t : kFormats) {
    const conversion c{t.id, profile_id::ml_dtypes, std::nullopt};
    const double encode_s = seconds_per_run([&] { encode(c, in, out); });
    std::vector<float> back(kCount);
    const double decode_s = seconds_per_run([&] { decode(t.id, profile_id::ml_dtypes, out, back); });
    fmt::print("  {:<12} encode {:7.1f} M/s ({:5.3f} x bf16, {:5.3f} x memcpy)  decode {:7.1f} M/s\n", t.name,
               kCount / encode_s / 1e6, bf16_s / encode_s, memcpy_s / encode_s, kCount / decode_s / 1e6);
  }
}

const mqa::bench::registration kFp8{"fp8", fp8_conversion};

}  // namespace
