// Third-party ground truth (../shared/golden/fp8/README.md): ml_dtypes 0.6.0, torch 2.11 CPU
// casts and CUDA 13.0 __nv_cvt_float_to_fp8 on an H200. Every file must match bit for bit.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>

#include "reference/fp8.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

using namespace mqa::fp8;

namespace {

struct golden_file {
  const char* stem;  // file name without .from_f32.npy / .decode_f32bits.npy
  format fmt;
  profile_id profile;
  bool has_decode_table;  // the CUDA files hold encodings only
};

// ../shared/golden/fp8/README.md: one row per file set.
const std::vector<golden_file> kGoldenFiles{
    {"ml_dtypes.e4m3fn", format::e4m3fn, profile_id::ml_dtypes, true},
    {"ml_dtypes.e4m3fnuz", format::e4m3fnuz, profile_id::ml_dtypes, true},
    {"ml_dtypes.e5m2", format::e5m2, profile_id::ml_dtypes, true},
    {"ml_dtypes.e5m2fnuz", format::e5m2fnuz, profile_id::ml_dtypes, true},
    {"ml_dtypes.e4m3b11fnuz", format::e4m3b11fnuz, profile_id::ml_dtypes, true},
    {"ml_dtypes.e8m0fnu", format::e8m0fnu, profile_id::ml_dtypes, true},
    {"torch.e4m3fn", format::e4m3fn, profile_id::torch, true},
    {"torch.e4m3fnuz", format::e4m3fnuz, profile_id::torch, true},
    {"torch.e5m2", format::e5m2, profile_id::torch, true},
    {"torch.e5m2fnuz", format::e5m2fnuz, profile_id::torch, true},
    {"torch.e8m0fnu", format::e8m0fnu, profile_id::torch, true},
    {"cuda.e4m3.satfinite", format::e4m3fn, profile_id::cuda_satfinite, false},
    {"cuda.e4m3.nosat", format::e4m3fn, profile_id::cuda_nosat, false},
    {"cuda.e5m2.satfinite", format::e5m2, profile_id::cuda_satfinite, false},
    {"cuda.e5m2.nosat", format::e5m2, profile_id::cuda_nosat, false},
};

const xt::xarray<std::uint32_t>& inputs() {
  static const auto bits = mqa::io::read_npy<std::uint32_t>(mqa::test::golden_fp8_dir() / "in_f32_bits.npy");
  return bits;
}

}  // namespace

TEST_CASE("encoding float32 matches every golden file bit for bit", "[fp8][golden]") {
  const golden_file file = GENERATE(from_range(kGoldenFiles));
  CAPTURE(file.stem);
  const auto expected = mqa::io::read_npy<std::uint8_t>(mqa::test::golden_fp8_dir() / fmt::format("{}.from_f32.npy", file.stem));
  const auto& in = inputs();
  REQUIRE(expected.size() == in.size());
  REQUIRE(in.size() == 589824);

  const conversion c{file.fmt, file.profile, std::nullopt};
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float x = std::bit_cast<float>(in(i));
    const std::uint8_t got = encode(c, x);
    if (got != expected(i) && ++mismatches <= 5)
      UNSCOPED_INFO(fmt::format("input 0x{:08X} ({}): expected 0x{:02X}, got 0x{:02X}", in(i), x, expected(i), got));
  }
  CHECK(mismatches == 0);
}

TEST_CASE("decoding matches the golden float32 bits of all 256 codes, NaN payloads included", "[fp8][golden]") {
  const golden_file file = GENERATE(filter([](const golden_file& g) { return g.has_decode_table; }, from_range(kGoldenFiles)));
  CAPTURE(file.stem);
  const auto expected =
      mqa::io::read_npy<std::uint32_t>(mqa::test::golden_fp8_dir() / fmt::format("{}.decode_f32bits.npy", file.stem));
  REQUIRE(expected.size() == 256);
  for (unsigned code = 0; code < 256; ++code) {
    const std::uint32_t got = std::bit_cast<std::uint32_t>(decode_f32(file.fmt, file.profile, static_cast<std::uint8_t>(code)));
    INFO(fmt::format("code 0x{:02X}: expected 0x{:08X}, got 0x{:08X}", code, expected(code), got));
    CHECK(got == expected(code));
  }
}
