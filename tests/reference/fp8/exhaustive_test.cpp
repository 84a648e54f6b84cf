// Every one of the 2^32 float32 inputs, for every format, under the ml_dtypes profile, against
// the separate oracle in oracle/nearest_code.hpp, converted alone and as part of a span. Hidden tier, in its own binary:
// `mqa_exhaustive "[exhaustive]"` (CI runs it in the Release build; about 40 s per format on one
// core).
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <cstdint>
#include <future>
#include <vector>

#include "oracle/nearest_code.hpp"
#include "reference/fp8.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

namespace {

struct sweep_result {
  std::uint64_t checked = 0, mismatches = 0;
  std::string first;
};

sweep_result sweep(mqa::fp8::format f) {
  const auto& t = mqa::fp8::traits(f);
  const auto golden = mqa::io::read_npy<std::uint32_t>(
      mqa::test::golden_fp8_dir() / fmt::format("ml_dtypes.{}.decode_f32bits.npy", t.name));
  mqa::oracle::nearest_code oracle(std::string(t.name), std::vector<std::uint32_t>(golden.begin(), golden.end()));
  const mqa::fp8::conversion c{f, mqa::fp8::profile_id::ml_dtypes, std::nullopt};

  sweep_result r;
  // Each input twice: converted alone and as an element of a span (the span conversion's own path).
  auto check = [&](std::uint32_t bits, unsigned expected, unsigned in_span) {
    ++r.checked;
    const unsigned got = mqa::fp8::encode(c, std::bit_cast<float>(bits));
    if ((got != expected || in_span != expected) && r.mismatches++ == 0)
      r.first = fmt::format("{}: input 0x{:08X} ({}) expected 0x{:02X} got 0x{:02X} alone, 0x{:02X} in a span", t.name,
                            bits, std::bit_cast<float>(bits), expected, got, in_span);
  };
  // Magnitudes in blocks, each converted as a span with either sign; the oracle asked once a magnitude.
  constexpr std::uint32_t kBlock = 1u << 16;
  std::vector<float> values(kBlock);
  std::vector<std::uint8_t> positive_codes(kBlock), negative_codes(kBlock);
  for (std::uint64_t start = 0; start < 0x80000000u; start += kBlock) {
    for (const bool negative : {false, true}) {
      for (std::uint32_t i = 0; i < kBlock; ++i)
        values[i] = std::bit_cast<float>(static_cast<std::uint32_t>(start + i) | (negative ? 0x80000000u : 0u));
      mqa::fp8::encode(c, values, negative ? negative_codes : positive_codes);
    }
    for (std::uint32_t i = 0; i < kBlock; ++i) {
      const auto bits = static_cast<std::uint32_t>(start + i);
      unsigned positive = 0, negative = 0;
      if (bits == 0) {
        positive = oracle.zero(false), negative = oracle.zero(true);
      } else if (bits < 0x7F800000u) {  // finite
        positive = oracle.positive(std::bit_cast<float>(bits)), negative = oracle.negative_of(positive);
      } else if (bits == 0x7F800000u) {
        positive = oracle.infinity(false), negative = oracle.infinity(true);
      } else {
        positive = oracle.nan(false), negative = oracle.nan(true);
      }
      check(bits, positive, positive_codes[i]);
      check(bits | 0x80000000u, negative, negative_codes[i]);
    }
  }
  return r;
}

}  // namespace

TEST_CASE("every float32 encodes as the nearest-value oracle says, in every format", "[.][exhaustive][fp8]") {
  std::vector<std::future<sweep_result>> runs;
  // The 8-bit formats: their ml_dtypes decode tables are golden files. e2m1fn's 16 codes are
  // checked near every midpoint in e2m1_test.cpp and against tests/data/golden/fp4.
  std::vector<std::string_view> names;
  for (const auto& t : mqa::fp8::kFormats) {
    if (t.bits != 8) continue;
    names.push_back(t.name);
    runs.push_back(std::async(std::launch::async, sweep, t.id));
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const sweep_result r = runs[i].get();
    CAPTURE(names[i], r.first);
    CHECK(r.checked == (std::uint64_t{1} << 32));
    CHECK(r.mismatches == 0);
  }
}
