#include "reference/bounds/accumulators.hpp"

#include <stdexcept>
#include <vector>

#include "reference/names/names.hpp"

namespace mqa::bounds {
namespace {

constexpr double kFloat32Unit = 0x1p-24;   // round to nearest, 24 significant bits
constexpr double kBfloat16Unit = 0x1p-8;   // round to nearest, 8 significant bits
constexpr double kTruncated13 = 0x1p-13;   // 13 kept fraction bits, truncation: a whole unit

// Built on first use: the model pointers are the instructions' addresses in reference/mma.
const std::vector<dot_accumulator_traits>& rows() {
  static const std::vector<dot_accumulator_traits> table{
      {.id = dot_accumulator::exact,
       .name = "exact",
       .heads = head_accumulator::exact,
       .model = nullptr,
       .rounding = {},
       .help = "no rounding before relu (int or float64 sums of exact products); with its exact head sum the "
               "correctly rounded value, 0 ULP"},
      {.id = dot_accumulator::fp32,
       .name = "fp32",
       .heads = head_accumulator::fp32,
       .model = nullptr,
       .rounding = {.unit = kFloat32Unit, .steps = -1},  // D - 1 float32 additions of exact products
       .help = "exact products summed in float32, in any order",
       .cause = "fp32-dot",
       .diagnosis = "float32 dot products"},
      {.id = dot_accumulator::fp22_truncated,
       .name = "fp22-truncated",
       .heads = head_accumulator::fp32,
       .model = nullptr,
       // Each addition (and each alignment of a product to the accumulator) keeps 13 fraction bits
       // of the larger operand and truncates: relative error below 2^-13, D operations.
       .rounding = {.unit = kTruncated13, .steps = 0},
       .help = "a truncating fp8 MMA of unknown shape: 13 fraction bits kept per addition, any order",
       .cause = "fp22-dot",
       .diagnosis = "an fp8 MMA accumulator never promoted to float32 (13 fraction bits kept, truncated)"},
      {.id = dot_accumulator::bf16,
       .name = "bf16",
       .heads = head_accumulator::fp32,
       .model = nullptr,
       .rounding = {.unit = kFloat32Unit, .steps = -1, .last = kBfloat16Unit},  // fp32, then one bf16 rounding
       .help = "summed in float32, then rounded to bfloat16 before relu",
       .cause = "bf16-dot",
       .diagnosis = "dot products rounded to bfloat16 before relu"},
      {.id = dot_accumulator::sm90_wgmma,
       .name = "sm90-wgmma",
       .heads = head_accumulator::fp32,
       .model = &mma::sm90_wgmma(),
       .rounding = {},
       .help = "Hopper's fp8 wgmma chained over D, modelled bit for bit (validated on an H200)",
       .cause = "sm90-wgmma-dot",
       .diagnosis = "dot products as Hopper's fp8 wgmma accumulates them (13-bit truncating chains)"},
      {.id = dot_accumulator::gfx942_mfma,
       .name = "gfx942-mfma",
       .heads = head_accumulator::fp32,
       .model = &mma::gfx942_mfma(),
       .rounding = {},
       .help = "CDNA3's fp8 MFMA chained over D, modelled bit for bit (agrees with MMA-Sim's; not run on AMD hardware)",
       .cause = "gfx942-mfma-dot",
       .diagnosis = "dot products as CDNA3's fp8 MFMA accumulates them"},
  };
  return table;
}

}  // namespace

std::span<const dot_accumulator_traits> dot_accumulators() { return rows(); }

const dot_accumulator_traits& traits(dot_accumulator a) {
  for (const auto& row : rows())
    if (row.id == a) return row;
  throw std::logic_error("a dot accumulator without a row in reference/bounds/accumulators.cpp");
}

bool is_modelled(dot_accumulator a) { return traits(a).model != nullptr; }

std::string_view to_string(dot_accumulator a) { return names::name_of(rows(), a); }

std::string modelled_accumulator_names() {
  std::string out;
  for (const auto& row : rows())
    if (row.model) out += (out.empty() ? "" : " or ") + std::string(row.name);
  return out;
}

}  // namespace mqa::bounds
