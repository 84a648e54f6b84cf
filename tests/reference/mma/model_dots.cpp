// mqa_mma_model_dots: our matrix-instruction models on operand codes from .npy files, so that a
// script can set them beside another implementation of the same instruction (mmasim_crosscheck.py
// runs microsoft/MMA-Sim's CDNA3 model against gfx942-mfma this way).
//
//   mqa_mma_model_dots INSTRUCTION FA FB A.npy B.npy [C.npy] D.npy
//
// A and B: uint8 codes [dots][k] in formats FA and FB, k a multiple of the instruction's step.
// Without C, D[t] = mma::dot(A[t], B[t]): the chain of steps from 0 that `--accumulate` runs. With
// C (float32 [dots], any bits: NaN, infinities and subnormals included), D[t] is the chain of
// steps from C[t], as one instruction (or several fed back through C) computes it. D is float32.
#include <bit>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "reference/fp8/convert.hpp"
#include "reference/fp8/format.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/io/npy.hpp"

using namespace mqa;

namespace {

const mma::instruction* instruction_named(std::string_view name) {
  for (const auto* ins : {&mma::sm90_wgmma(), &mma::gfx942_mfma()})
    if (ins->name == name) return ins;
  return nullptr;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: mqa_mma_model_dots INSTRUCTION FA FB A.npy B.npy [C.npy] D.npy\n"
               "  INSTRUCTION: sm90-wgmma or gfx942-mfma; FA, FB: fp8 format names; A, B: uint8 [dots][k];\n"
               "  C: float32 [dots], the accumulator each chain starts from (0 without it)\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) return usage("wrong number of arguments");
  const mma::instruction* ins = instruction_named(argv[1]);
  if (!ins) return usage("unknown instruction");
  const auto fa = fp8::parse_format(argv[2]);
  const auto fb = fp8::parse_format(argv[3]);
  if (!fa || !fb) return usage("unknown fp8 format");
  try {
    const auto a = io::read_npy<std::uint8_t>(argv[4]);
    const auto b = io::read_npy<std::uint8_t>(argv[5]);
    const bool from_c = argc == 8;
    const std::string out = argv[argc - 1];
    if (a.dimension() != 2 || a.shape() != b.shape()) return usage("A and B must be [dots][k] of the same shape");
    const std::size_t dots = a.shape()[0], k = a.shape()[1];
    const auto step = static_cast<std::size_t>(ins->step.products);
    if (k % step != 0) return usage("k must be a multiple of the instruction's step");
    // The model's own check of formats and depth, as `--accumulate` applies it (chains from C may
    // be one step, shorter than an instruction, to exercise the step alone).
    if (const auto why = mma::why_unusable(*ins, *fa, *fb, static_cast<std::int64_t>(from_c ? ins->k : k), 0)) {
      std::fprintf(stderr, "%s\n", why->c_str());
      return 2;
    }
    std::vector<float> c(dots, 0.0f);
    if (from_c) {
      const auto read = io::read_npy<float>(argv[6]);
      if (read.size() != dots) return usage("C must hold one float32 per dot");
      for (std::size_t t = 0; t < dots; ++t) c[t] = read(t);
    }
    const auto& qa = fp8::decode_table(*fa);
    const auto& kb = fp8::decode_table(*fb);
    std::vector<double> x(k), y(k);
    xt::xarray<float> d = xt::zeros<float>({dots});
    for (std::size_t t = 0; t < dots; ++t) {
      for (std::size_t i = 0; i < k; ++i) x[i] = qa[a(t, i)], y[i] = kb[b(t, i)];
      if (!from_c) {
        d(t) = mma::dot(*ins, x, *fa, y, *fb);
        continue;
      }
      float acc = c[t];
      for (std::size_t s = 0; s < k; s += step)
        acc = mma::fused_dot_add(ins->step, acc, std::span<const double>(x).subspan(s, step), *fa,
                                 std::span<const double>(y).subspan(s, step), *fb, ins->nan_bits);
      d(t) = acc;
    }
    io::write_npy(std::filesystem::path(out), d);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mqa_mma_model_dots: %s\n", e.what());
    return 1;
  }
  return 0;
}
