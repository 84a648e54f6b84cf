#include "arithmetic.hpp"

#include <array>

namespace mqa::bounds {
namespace {

constexpr std::array<std::string_view, 6> kDot{"exact", "fp32", "fp22-truncated", "bf16", "sm90-wgmma", "gfx942-mfma"};
constexpr std::array<std::string_view, 2> kHeads{"exact", "fp32"};
constexpr std::array<std::string_view, 4> kScale{"after-head-sum", "before-relu", "into-weights", "into-keys-bf16"};
constexpr std::array<std::string_view, 3> kWeights{"fp32", "bf16", "fp16"};
constexpr std::array<std::string_view, 2> kLogits{"fp32", "bf16"};

template <class E, std::size_t N>
std::optional<E> parse(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

template <std::size_t N>
std::string joined(const std::array<std::string_view, N>& names) {
  std::string out;
  for (const auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace

bool is_modelled(dot_accumulator a) { return a == dot_accumulator::sm90_wgmma || a == dot_accumulator::gfx942_mfma; }

std::string_view to_string(dot_accumulator a) { return kDot[static_cast<std::size_t>(a)]; }
std::string_view to_string(head_accumulator a) { return kHeads[static_cast<std::size_t>(a)]; }
std::string_view to_string(scale_placement s) { return kScale[static_cast<std::size_t>(s)]; }
std::string_view to_string(weight_precision w) { return kWeights[static_cast<std::size_t>(w)]; }
std::string_view to_string(logits_precision l) { return kLogits[static_cast<std::size_t>(l)]; }
std::optional<dot_accumulator> parse_dot_accumulator(std::string_view name) { return parse<dot_accumulator>(kDot, name); }
std::optional<scale_placement> parse_scale_placement(std::string_view name) { return parse<scale_placement>(kScale, name); }
std::optional<weight_precision> parse_weight_precision(std::string_view name) {
  return parse<weight_precision>(kWeights, name);
}
std::string accepted_dot_accumulators() { return joined(kDot); }
std::string accepted_scale_placements() { return joined(kScale); }
std::string accepted_weight_precisions() { return joined(kWeights); }
std::optional<logits_precision> parse_logits_precision(std::string_view name) {
  return parse<logits_precision>(kLogits, name);
}
std::string accepted_logits_precisions() { return joined(kLogits); }

}  // namespace mqa::bounds
