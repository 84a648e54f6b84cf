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
constexpr std::array kAccumulators{dot_accumulator::exact,      dot_accumulator::fp32,
                                   dot_accumulator::fp22_truncated, dot_accumulator::bf16,
                                   dot_accumulator::sm90_wgmma, dot_accumulator::gfx942_mfma};

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
      cmd.add_option("--promote-every", promote_every_,
                     "with a matrix-instruction accumulator: a fresh MMA chain every this many elements, added "
                     "into float32 (DeepGEMM's promotion); 0: none")
          ->capture_default_str(),
      cmd.add_option("--scale", scale_,
                     fmt::format("where k_scale multiplies in: {}", bounds::accepted_scale_placements()))
          ->capture_default_str(),
      cmd.add_option("--weights", weights_,
                     fmt::format("precision the weights are rounded to before the head sum: {}",
                                 bounds::accepted_weight_precisions()))
          ->capture_default_str(),
      cmd.add_option("--logits-dtype", logits_,
                     fmt::format("dtype the kernel stores its logits in (DeepGEMM's logits_dtype): {}; bf16 is read "
                                 "from uint16 bits or ml_dtypes' bfloat16 .npy",
                                 bounds::accepted_logits_precisions()))
          ->capture_default_str(),
      cmd.add_option("--relu", relu_, "keeps-nan (torch.relu) or fmax (fmaxf, tl.maximum)")->capture_default_str(),
      cmd.add_option("--mask", mask_, "clean (-inf outside windows) or dont-care; default: the case's clean_logits"),
      cmd.add_option("--columns", columns_,
                     "absolute (key j at column j of [M, S >= N]) or relative (key ks[i] + c at column c of "
                     "[M, S >= longest window]: DeepGEMM's max_seqlen_k; judged dont-care outside windows)")
          ->capture_default_str(),
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
  const auto scale = bounds::parse_scale_placement(scale_);
  if (!scale)
    throw input_error(fmt::format("--scale '{}' is not known (accepted: {})", scale_, bounds::accepted_scale_placements()));
  c.scale = *scale;
  const auto weights = bounds::parse_weight_precision(weights_);
  if (!weights)
    throw input_error(
        fmt::format("--weights '{}' is not known (accepted: {})", weights_, bounds::accepted_weight_precisions()));
  c.weights = *weights;
  const auto logits = bounds::parse_logits_precision(logits_);
  if (!logits)
    throw input_error(fmt::format("--logits-dtype '{}' is not known (accepted: {})", logits_,
                                  bounds::accepted_logits_precisions()));
  c.logits = *logits;
  if (promote_every_ != 0 && !bounds::is_modelled(c.dot))
    throw input_error(fmt::format("--promote-every {} needs a matrix-instruction accumulator (accepted with "
                                  "--accumulate sm90-wgmma or gfx942-mfma)",
                                  promote_every_));
  if (promote_every_ < 0)
    throw input_error(fmt::format("--promote-every {} is negative (accepted: 0, or a multiple of the instruction's K)",
                                  promote_every_));
  c.promote_every = promote_every_;
  c.mask = mask().value_or(kernels::masking::clean);
  const auto columns = kernels::parse_columns_layout(columns_);
  if (!columns) throw input_error(fmt::format("--columns '{}' is not known (accepted: absolute, relative)", columns_));
  c.columns = *columns;
  if (c.columns == kernels::columns_layout::relative) {
    // DeepGEMM asserts clean_logits == False with max_seqlen_k: nothing outside a window is written.
    if (mask() == kernels::masking::clean)
      throw input_error("--columns relative writes nothing outside the windows: --mask clean cannot hold (accepted "
                        "with it: --mask dont-care, or no --mask)");
    c.mask = kernels::masking::dont_care;
  }
  return c;
}

std::string contract_options::flags() const {
  const contract_options defaults;
  std::string out;
  auto add = [&](std::string_view flag, const std::string& value, const std::string& default_value) {
    if (value != default_value) out += fmt::format("{}{} {}", out.empty() ? "" : " ", flag, value);
  };
  add("--accumulate", accumulate_, defaults.accumulate_);
  add("--promote-every", std::to_string(promote_every_), std::to_string(defaults.promote_every_));
  add("--scale", scale_, defaults.scale_);
  add("--weights", weights_, defaults.weights_);
  add("--relu", relu_, defaults.relu_);
  add("--mask", mask_, defaults.mask_);
  return out;
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
