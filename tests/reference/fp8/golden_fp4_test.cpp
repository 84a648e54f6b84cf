// Third-party ground truth for e2m1fn (tests/data/golden/fp4/README.md): what ml_dtypes and
// DeepGEMM's fp4 cast (torch.bucketize, CPU and CUDA) wrote on the H200 for float32 and float64
// inputs next to every rounding midpoint. Every file must match bit for bit.
//
// The files come from tests/data/golden/fp4/generate.py, run on the H200 on 2026-12-01 (ml_dtypes
// 0.6.0, torch 2.11); a missing file fails the test.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <vector>

#include "reference/fp8.hpp"
#include "support/encoding_mismatches.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

using namespace mqa::fp8;

namespace {

struct golden_fp4_file {
  const char* stem;  // <stem>.from_f32.npy and <stem>.from_f64.npy
  profile_id profile;
};

const std::vector<golden_fp4_file> kFiles{
    {"ml_dtypes.e2m1fn", profile_id::ml_dtypes},
    {"deepgemm.e2m1fn", profile_id::deepgemm},
    {"deepgemm_cuda.e2m1fn", profile_id::deepgemm},
};

std::filesystem::path golden_fp4(const std::string& name) { return mqa::test::golden_fp4_dir() / name; }

void require_golden_files() {
  if (!std::filesystem::exists(golden_fp4("in_f32_bits.npy")))
    FAIL("tests/data/golden/fp4/in_f32_bits.npy is missing: run tests/data/golden/fp4/generate.py on the GPU machine");
}

}  // namespace

TEST_CASE("e2m1fn encodings match the H200 golden files bit for bit", "[.][golden-fp4]") {
  require_golden_files();
  const auto in32 = mqa::io::read_npy<std::uint32_t>(golden_fp4("in_f32_bits.npy"));
  const auto in64 = mqa::io::read_npy<std::uint64_t>(golden_fp4("in_f64_bits.npy"));
  for (const golden_fp4_file& file : kFiles) {
    CAPTURE(file.stem);
    const auto f32 = golden_fp4(fmt::format("{}.from_f32.npy", file.stem));
    if (!std::filesystem::exists(f32)) {
      WARN(fmt::format("{} absent (the generator writes the CUDA files only where torch sees a GPU)", f32.string()));
      continue;
    }
    const conversion c{format::e2m1fn, file.profile, std::nullopt};
    const std::size_t differ32 = mqa::test::encoding_mismatches<float>(c, in32, mqa::io::read_npy<std::uint8_t>(f32));
    CHECK(differ32 == 0);
    const std::size_t differ64 = mqa::test::encoding_mismatches<double>(
        c, in64, mqa::io::read_npy<std::uint8_t>(golden_fp4(fmt::format("{}.from_f64.npy", file.stem))));
    CHECK(differ64 == 0);
  }
}

TEST_CASE("e2m1fn decodes as ml_dtypes does, all 16 codes", "[.][golden-fp4]") {
  require_golden_files();
  const auto expected = mqa::io::read_npy<std::uint32_t>(golden_fp4("ml_dtypes.e2m1fn.decode_f32bits.npy"));
  REQUIRE(expected.size() == 16);
  for (unsigned code = 0; code < 16; ++code) {
    const auto got = std::bit_cast<std::uint32_t>(decode_f32(format::e2m1fn, profile_id::ml_dtypes, static_cast<std::uint8_t>(code)));
    INFO(fmt::format("code 0x{:X}: expected 0x{:08X}, got 0x{:08X}", code, expected(code), got));
    CHECK(got == expected(code));
  }
}

TEST_CASE("bfloat16: torch's cast and ml_dtypes' saved arrays read back bit for bit", "[.][golden-fp4]") {
  require_golden_files();
  // torch's float32 -> bfloat16 cast is the rounding bf16 logits get (and the bf16-logits model's).
  const auto in32 = mqa::io::read_npy<std::uint32_t>(golden_fp4("in_f32_bits.npy"));
  const auto torch_bits = mqa::io::read_npy<std::uint16_t>(golden_fp4("torch.bfloat16.from_f32.npy"));
  REQUIRE(torch_bits.size() == in32.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < in32.size(); ++i) {
    const float x = std::bit_cast<float>(in32(i));
    if (std::isnan(x)) continue;  // NaN payloads: torch keeps the top bits, a logit NaN is canonical
    if (bfloat16_bits(x) != torch_bits(i) && ++differ <= 5)
      UNSCOPED_INFO(fmt::format("input 0x{:08X}: torch 0x{:04X}, ours 0x{:04X}", in32(i), torch_bits(i), bfloat16_bits(x)));
  }
  CHECK(differ == 0);
  // What np.save writes for ml_dtypes.bfloat16 is what check --logits-dtype bf16 reads.
  const auto saved = mqa::io::read_bfloat16_npy(golden_fp4("ml_dtypes.bfloat16.npy"));
  const auto bits = mqa::io::read_npy<std::uint16_t>(golden_fp4("ml_dtypes.bfloat16_bits.npy"));
  REQUIRE(saved.shape() == bits.shape());
  for (std::size_t i = 0; i < bits.size(); ++i)
    CHECK(std::bit_cast<std::uint32_t>(saved.data()[i]) == static_cast<std::uint32_t>(bits.data()[i]) << 16);
}
