#include "reference/mma/instruction.hpp"

#include <fmt/core.h>

namespace mqa::mma {
namespace {

constexpr std::uint8_t bit(fp8::format f) { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(f)); }

// Hopper wgmma.mma_async m64nNk32 .f32.e4m3/.e5m2: one fused step over all 32 products and the
// accumulator, 13 fraction bits kept by truncation, the result truncated to 13 fraction bits
// (DeepSeek-V3 report 3.5.2: "around 14 bits"; MMA-Sim's f32_e8m13 output). NaN is 0x7FFFFFFF.
constexpr instruction kSm90{
    .name = "sm90-wgmma",
    .ptx = "wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2}",
    .k = 32,
    .step = {.products = 32, .even_odd_lanes = false, .term_bits = 13, .term_rule = rounding::toward_zero,
             .result_bits = 13, .result_rule = rounding::toward_zero},
    .nan_bits = 0x7FFFFFFFu,
    .formats = bit(fp8::format::e4m3fn) | bit(fp8::format::e5m2),
    .hardware_validated = true,
    .validation = "NVIDIA H200: reference/mma/README.md",
};

// CDNA3 v_mfma_f32_16x16x32_fp8_fp8 (and _bf8 variants): two steps of 16 products per
// instruction; in a step even and odd products are aligned in lanes of their own keeping 24
// fraction bits (truncated), the lane sums are combined keeping 24 bits of the larger (floored),
// that sum keeps 31 bits and the accumulator 24 bits of the larger exponent of the two (floored; the
// accumulator is dropped 25 binades below), and the result is rounded to nearest float32. From
// MMA-Sim's CDNA3 model; NOT validated on hardware here, but it agrees bit for bit with MMA-Sim's
// own implementation (reference/mma/README.md: where and how much).
constexpr instruction kGfx942{
    .name = "gfx942-mfma",
    .ptx = "v_mfma_f32_16x16x32_fp8_fp8 (CDNA3, fnuz operands)",
    .k = 32,
    .step = {.products = 16, .even_odd_lanes = true, .term_bits = 24, .term_rule = rounding::toward_zero,
             .lane_bits = 24, .lane_rule = rounding::down, .accumulator_apart = true, .sum_bits = 31,
             .accumulator_bits = 24, .accumulator_reach = 25, .apart_rule = rounding::down, .result_bits = 23,
             .result_rule = rounding::nearest_even},
    .nan_bits = 0x7FC00000u,
    .formats = bit(fp8::format::e4m3fnuz) | bit(fp8::format::e5m2fnuz),
    .hardware_validated = false,
    .validation = "not validated on hardware (no AMD GPU available); agrees bit for bit with microsoft/MMA-Sim's CDNA3 "
                  "simulator: reference/mma/README.md",
};

std::string accepted_formats(const instruction& ins) {
  std::string out;
  for (const auto& t : fp8::kFormats)
    if (ins.formats & bit(t.id)) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

}  // namespace

const instruction& sm90_wgmma() { return kSm90; }
const instruction& gfx942_mfma() { return kGfx942; }

std::optional<std::string> why_unusable(const instruction& ins, fp8::format q, fp8::format k, std::int64_t head_dim,
                                        std::int64_t promote_every) {
  for (const auto& [operand, f] : {std::pair{"q", q}, std::pair{"k", k}})
    if (!(ins.formats & bit(f)))
      return fmt::format("{} takes {} operands; {} is {} (accepted: {})", ins.name, accepted_formats(ins), operand,
                         fp8::traits(f).name, accepted_formats(ins));
  if (head_dim % ins.k != 0)
    return fmt::format("{} multiplies {} elements per instruction: head_dim {} is not a multiple of {}", ins.name,
                       ins.k, head_dim, ins.k);
  if (promote_every < 0 || (promote_every > 0 && (promote_every % ins.k != 0 || head_dim % promote_every != 0)))
    return fmt::format("--promote-every {} must be a multiple of {} that divides head_dim {} (or 0: no promotion)",
                       promote_every, ins.k, head_dim);
  return std::nullopt;
}

}  // namespace mqa::mma
