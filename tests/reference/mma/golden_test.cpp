// The sm90-wgmma model replays dot products measured on an NVIDIA H200 (tests/data/golden/mma,
// README there): our inline-PTX wgmma m64n64k32 and Triton 3.6's tl.dot, e4m3fn and e5m2 and their
// mixes, chains over D = 128 from 0 and single k-steps from assorted float32 accumulators.
// Tolerance: 0 ULP, NaN bits included.
#include <catch2/catch.hpp>

#include <bit>
#include <filesystem>
#include <string>

#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

using namespace mqa;

TEST_CASE("the sm90-wgmma model reproduces every golden dot of the H200", "[mma][golden]") {
  const auto [stem, fa, fb] = GENERATE(table<std::string, fp8::format, fp8::format>({
      {"wgmma.e4m3fn.e4m3fn.d128", fp8::format::e4m3fn, fp8::format::e4m3fn},
      {"wgmma.e5m2.e5m2.d128", fp8::format::e5m2, fp8::format::e5m2},
      {"wgmma.e4m3fn.e5m2.d128", fp8::format::e4m3fn, fp8::format::e5m2},
      {"wgmma.e5m2.e4m3fn.d128", fp8::format::e5m2, fp8::format::e4m3fn},
      {"wgmma.e4m3fn.e4m3fn.d32", fp8::format::e4m3fn, fp8::format::e4m3fn},
      {"wgmma.e5m2.e5m2.d32", fp8::format::e5m2, fp8::format::e5m2},
      {"wgmma.e4m3fn.e5m2.d32", fp8::format::e4m3fn, fp8::format::e5m2},
      {"wgmma.e5m2.e4m3fn.d32", fp8::format::e5m2, fp8::format::e4m3fn},
      {"triton.e4m3fn.e4m3fn.d128", fp8::format::e4m3fn, fp8::format::e4m3fn},
      {"triton.e5m2.e5m2.d128", fp8::format::e5m2, fp8::format::e5m2},
  }));
  CAPTURE(stem);
  const std::filesystem::path dir = test::source_dir() / "tests/data/golden/mma";
  const auto a = io::read_npy<std::uint8_t>(dir / (stem + ".a.npy"));
  const auto b = io::read_npy<std::uint8_t>(dir / (stem + ".b.npy"));
  const auto c = io::read_npy<float>(dir / (stem + ".c.npy"));
  const auto d = io::read_npy<float>(dir / (stem + ".d.npy"));
  const std::size_t dots = a.shape()[0], depth = a.shape()[1];
  REQUIRE(dots >= 500);
  const auto& ins = mma::sm90_wgmma();
  const auto& qa = fp8::decode_table(fa);
  const auto& kb = fp8::decode_table(fb);
  std::size_t exact = 0;
  std::vector<double> x(32), y(32);
  for (std::size_t t = 0; t < dots; ++t) {
    float acc = c(t);
    for (std::size_t s = 0; s < depth / 32; ++s) {
      for (std::size_t k = 0; k < 32; ++k) x[k] = qa[a(t, 32 * s + k)], y[k] = kb[b(t, 32 * s + k)];
      acc = mma::fused_dot_add(ins.step, acc, x, fa, y, fb, ins.nan_bits);
    }
    const bool same = std::bit_cast<std::uint32_t>(acc) == std::bit_cast<std::uint32_t>(d(t));
    if (!same) {
      CAPTURE(t, c(t), d(t), acc);
      CHECK(same);
    }
    exact += same;
  }
  CHECK(exact == dots);
}
