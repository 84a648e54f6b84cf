// Third-party ground truth (tests/data/golden/fp8/README.md): ml_dtypes 0.6.0, torch 2.11 casts
// (CPU, and CUDA for float64 inputs) and CUDA 13.0's __nv_cvt_float_to_fp8 / __nv_cvt_double_to_fp8
// run on an H200. Every file must match bit for bit.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <filesystem>

#include "reference/fp8.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

using namespace mqa::fp8;

namespace {

struct golden_file {
  const char* stem;  // file name without .from_f32.npy / .from_f64.npy / .decode_f32bits.npy
  format fmt;
  profile_id profile;
  bool has_decode_table;  // the CUDA files hold encodings only
};

// tests/data/golden/fp8/README.md, float32 inputs: one row per file set.
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

// The same README, float64 inputs (generate_f64.py): values next to every rounding midpoint of
// every format. torch's CPU and CUDA casts are separate files of one profile: they agree.
const std::vector<golden_file> kFloat64GoldenFiles{
    {"ml_dtypes.e4m3fn", format::e4m3fn, profile_id::ml_dtypes, false},
    {"ml_dtypes.e4m3fnuz", format::e4m3fnuz, profile_id::ml_dtypes, false},
    {"ml_dtypes.e5m2", format::e5m2, profile_id::ml_dtypes, false},
    {"ml_dtypes.e5m2fnuz", format::e5m2fnuz, profile_id::ml_dtypes, false},
    {"ml_dtypes.e4m3b11fnuz", format::e4m3b11fnuz, profile_id::ml_dtypes, false},
    {"ml_dtypes.e8m0fnu", format::e8m0fnu, profile_id::ml_dtypes, false},
    {"torch.e4m3fn", format::e4m3fn, profile_id::torch, false},
    {"torch.e4m3fnuz", format::e4m3fnuz, profile_id::torch, false},
    {"torch.e5m2", format::e5m2, profile_id::torch, false},
    {"torch.e5m2fnuz", format::e5m2fnuz, profile_id::torch, false},
    {"torch.e8m0fnu", format::e8m0fnu, profile_id::torch, false},
    {"torch_cuda.e4m3fn", format::e4m3fn, profile_id::torch, false},
    {"torch_cuda.e4m3fnuz", format::e4m3fnuz, profile_id::torch, false},
    {"torch_cuda.e5m2", format::e5m2, profile_id::torch, false},
    {"torch_cuda.e5m2fnuz", format::e5m2fnuz, profile_id::torch, false},
    {"torch_cuda.e8m0fnu", format::e8m0fnu, profile_id::torch, false},
    {"cuda.e4m3.satfinite", format::e4m3fn, profile_id::cuda_satfinite, false},
    {"cuda.e4m3.nosat", format::e4m3fn, profile_id::cuda_nosat, false},
    {"cuda.e5m2.satfinite", format::e5m2, profile_id::cuda_satfinite, false},
    {"cuda.e5m2.nosat", format::e5m2, profile_id::cuda_nosat, false},
};

std::filesystem::path golden(const std::string& name) { return mqa::test::golden_fp8_dir() / name; }

const xt::xarray<std::uint32_t>& float32_inputs() {
  static const auto bits = mqa::io::read_npy<std::uint32_t>(golden("in_f32_bits.npy"));
  return bits;
}

const xt::xarray<std::uint64_t>& float64_inputs() {
  static const auto bits = mqa::io::read_npy<std::uint64_t>(golden("in_f64_bits.npy"));
  return bits;
}

// Encodes every input of one file and counts the codes that differ, reporting the first few.
template <class Float, class Bits>
std::size_t mismatches(const golden_file& file, const xt::xarray<Bits>& in, const xt::xarray<std::uint8_t>& expected) {
  const conversion c{file.fmt, file.profile, std::nullopt};
  std::size_t count = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Float x = std::bit_cast<Float>(in(i));
    const std::uint8_t got = encode(c, x);
    if (got != expected(i) && ++count <= 5)
      UNSCOPED_INFO(fmt::format("input 0x{:0{}X} ({}): expected 0x{:02X}, got 0x{:02X}", in(i), 2 * sizeof(Bits), x,
                                expected(i), got));
  }
  return count;
}

}  // namespace

TEST_CASE("encoding float32 matches every golden file bit for bit", "[fp8][golden]") {
  const golden_file file = GENERATE(from_range(kGoldenFiles));
  CAPTURE(file.stem);
  const auto expected = mqa::io::read_npy<std::uint8_t>(golden(fmt::format("{}.from_f32.npy", file.stem)));
  const auto& in = float32_inputs();
  REQUIRE(expected.size() == in.size());
  REQUIRE(in.size() == 589824);
  CHECK(mismatches<float>(file, in, expected) == 0);
}

TEST_CASE("encoding float64 matches every golden file bit for bit, double rounding included", "[fp8][golden]") {
  const golden_file file = GENERATE(from_range(kFloat64GoldenFiles));
  CAPTURE(file.stem);
  const auto expected = mqa::io::read_npy<std::uint8_t>(golden(fmt::format("{}.from_f64.npy", file.stem)));
  const auto& in = float64_inputs();
  REQUIRE(expected.size() == in.size());
  REQUIRE(in.size() == 25250);
  CHECK(mismatches<double>(file, in, expected) == 0);
}

TEST_CASE("decoding matches the golden float32 bits of all 256 codes, NaN payloads included", "[fp8][golden]") {
  const golden_file file = GENERATE(filter([](const golden_file& g) { return g.has_decode_table; }, from_range(kGoldenFiles)));
  CAPTURE(file.stem);
  const auto expected = mqa::io::read_npy<std::uint32_t>(golden(fmt::format("{}.decode_f32bits.npy", file.stem)));
  REQUIRE(expected.size() == 256);
  for (unsigned code = 0; code < 256; ++code) {
    const std::uint32_t got = std::bit_cast<std::uint32_t>(decode_f32(file.fmt, file.profile, static_cast<std::uint8_t>(code)));
    INFO(fmt::format("code 0x{:02X}: expected 0x{:08X}, got 0x{:08X}", code, expected(code), got));
    CHECK(got == expected(code));
  }
}
