#include "contract_options.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <utility>

#include "validator/input_error.hpp"

namespace mqa::cli {
namespace {

using bounds::dot_accumulator;

// The accumulators a kernel may declare, in the order `--help` lists them.
constexpr std::array kAccumulators{dot_accumulator::exact, dot_accumulator::fp32, dot_accumulator::fp22_truncated,
                                   dot_accumulator::bf16};

constexpr std::array<std::pair<std::string_view, exact::relu_rule>, 2> kRelu{{
    {"keeps-nan", exact::relu_rule::keeps_nan},  // torch.relu, IEEE max with NaN propagation
    {"fmax", exact::relu_rule::fmax},            // CUDA fmaxf, Triton tl.maximum: NaN becomes 0
}};

constexpr std::array kMasking{kernels::masking::clean, kernels::masking::dont_care};

template <class Table, class Name>
std::string accepted(const Table& table, Name name) {
  std::string list;
  for (const auto& entry : table) list += (list.empty() ? "" : ", ") + std::string(name(entry));
  return list;
}

std::string_view accumulator_name(dot_accumulator a) { return bounds::to_string(a); }

}  // namespace

std::vector<CLI::Option*> contract_options::add_to(CLI::App& cmd) {
  return {
      cmd.add_option("--accumulate", accumulate_,
                     fmt::format("declared dot accumulator: {}", accepted(kAccumulators, accumulator_name)))
          ->capture_default_str(),
      cmd.add_option("--relu", relu_, "keeps-nan (torch.relu) or fmax (fmaxf, tl.maximum)")->capture_default_str(),
      cmd.add_option("--mask", mask_, "clean (-inf outside windows) or dont-care; default: the case's clean_logits"),
  };
}

kernels::contract contract_options::contract() const {
  std::optional<dot_accumulator> dot;
  for (const auto a : kAccumulators)
    if (bounds::to_string(a) == accumulate_) dot = a;
  if (!dot)
    throw input_error(fmt::format("--accumulate '{}' is not known (accepted: {})", accumulate_,
                                  accepted(kAccumulators, accumulator_name)));
  kernels::contract c = kernels::declared_arithmetic(*dot);
  const auto relu = std::find_if(kRelu.begin(), kRelu.end(), [&](const auto& r) { return r.first == relu_; });
  if (relu == kRelu.end())
    throw input_error(fmt::format("--relu '{}' is not known (accepted: {})", relu_,
                                  accepted(kRelu, [](const auto& r) { return r.first; })));
  c.relu = relu->second;
  c.mask = mask().value_or(kernels::masking::clean);
  return c;
}

std::optional<kernels::masking> contract_options::mask() const {
  if (mask_.empty()) return std::nullopt;
  const auto m = kernels::parse_masking(mask_);
  if (!m)
    throw input_error(fmt::format("--mask '{}' is not known (accepted: {})", mask_,
                                  accepted(kMasking, [](kernels::masking k) { return kernels::to_string(k); })));
  return m;
}

}  // namespace mqa::cli
