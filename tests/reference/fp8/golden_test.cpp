// Third-party ground truth (tests/data/golden/fp8/README.md): ml_dtypes 0.6.0, torch 2.11 casts
// (CPU, and CUDA for float64 inputs) and CUDA 13.0's __nv_cvt_float_to_fp8 / __nv_cvt_double_to_fp8
// run on an H200. Every file must match bit for bit.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <filesystem>
#include <string>
#include <vector>

#include "reference/fp8.hpp"
#include "support/encoding_mismatches.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

using namespace mqa::fp8;

namespace {

struct golden_file {
  std::string stem;  // file name without .from_f32.npy / .from_f64.npy / .decode_f32bits.npy
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
// every format, for every file set above, and torch's casts of CUDA tensors (torch_cuda.<fmt>) as
// files of their own: one profile with its CPU casts, they agree.
std::vector<golden_file> float64_golden_files() {
  std::vector<golden_file> files;
  for (const golden_file& f : kGoldenFiles) {
    files.push_back({f.stem, f.fmt, f.profile, false});  // the decode tables are float32's
    if (f.profile == profile_id::torch)
      files.push_back({"torch_cuda" + f.stem.substr(f.stem.find('.')), f.fmt, f.profile, false});
  }
  return files;
}
const std::vector<golden_file> kFloat64GoldenFiles = float64_golden_files();

std::filesystem::path golden(const std::string& name) { return mqa::test::golden_fp8_dir() / name; }

const xt::xarray<std::uint32_t>& float32_inputs() {
  static const auto bits = mqa::io::read_npy<std::uint32_t>(golden("in_f32_bits.npy"));
  return bits;
}

const xt::xarray<std::uint64_t>& float64_inputs() {
  static const auto bits = mqa::io::read_npy<std::uint64_t>(golden("in_f64_bits.npy"));
  return bits;
}

// The `inputs` inputs of `in` (as many as the README lists) encoded under the file's profile are
// <stem>.<suffix>.npy, bit for bit.
template <class Float, class Bits>
void check_encodings(const golden_file& file, const char* suffix, const xt::xarray<Bits>& in, std::size_t inputs) {
  CAPTURE(file.stem);
  const auto expected = mqa::io::read_npy<std::uint8_t>(golden(fmt::format("{}.{}.npy", file.stem, suffix)));
  REQUIRE(in.size() == inputs);
  const std::size_t differ = mqa::test::encoding_mismatches<Float>({file.fmt, file.profile, std::nullopt}, in, expected);
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("encoding float32 matches every golden file bit for bit", "[fp8][golden]") {
  check_encodings<float>(GENERATE(from_range(kGoldenFiles)), "from_f32", float32_inputs(), 589824);
}

TEST_CASE("encoding float64 matches every golden file bit for bit, double rounding included", "[fp8][golden]") {
  check_encodings<double>(GENERATE(from_range(kFloat64GoldenFiles)), "from_f64", float64_inputs(), 25250);
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
