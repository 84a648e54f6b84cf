#include "contract.hpp"

#include <array>
#include <fmt/core.h>

namespace mqa::kernels {
namespace {

constexpr std::array<std::string_view, 4> kDot{"exact", "fp32", "fp22-truncated", "bf16"};
constexpr std::array<std::string_view, 2> kHeads{"exact", "fp32"};
constexpr std::array<std::string_view, 2> kScale{"after-head-sum", "before-relu"};
constexpr std::array<std::string_view, 2> kMask{"clean", "dont-care"};

template <class Enum, std::size_t N>
std::optional<Enum> parse(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace

std::string_view to_string(dot_accumulator a) { return kDot[static_cast<std::size_t>(a)]; }
std::string_view to_string(head_accumulator a) { return kHeads[static_cast<std::size_t>(a)]; }
std::string_view to_string(scale_placement s) { return kScale[static_cast<std::size_t>(s)]; }
std::string_view to_string(masking m) { return kMask[static_cast<std::size_t>(m)]; }
std::optional<dot_accumulator> parse_dot_accumulator(std::string_view name) {
  return parse<dot_accumulator>(kDot, name);
}
std::optional<masking> parse_masking(std::string_view name) { return parse<masking>(kMask, name); }

std::string describe(const contract& c) {
  return fmt::format("dot {}, heads {}, k_scale {}, relu {}, {}{}", to_string(c.dot), to_string(c.heads),
                     to_string(c.scale), c.relu == exact::relu_rule::keeps_nan ? "keeps NaN" : "fmax",
                     to_string(c.mask), c.deterministic ? ", deterministic" : "");
}

}  // namespace mqa::kernels
