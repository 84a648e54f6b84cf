#include "contract_options.hpp"

#include <fmt/core.h>

#include "reference/bounds/accumulators.hpp"
#include "reference/names/names.hpp"
#include "validator/input_error.hpp"

namespace mqa::api {
namespace {

// "declared dot accumulator: exact, fp32, ..." and then each row's own line.
std::string accumulate_help() {
  std::string help = fmt::format("declared dot accumulator: {}", names::accepted(bounds::dot_accumulators()));
  for (const auto& row : bounds::dot_accumulators()) help += fmt::format("\n  {}: {}", row.name, row.help);
  return help;
}

// What `text`, given to `flag`, names in `rows`; input_error "--flag 'text' is not known (accepted:
// ...)" when nothing.
template <class Rows>
auto named(std::string_view flag, const Rows& rows, const std::string& text) {
  if (const auto value = names::parse(rows, text)) return *value;
  throw input_error(fmt::format("{} '{}' is not known (accepted: {})", flag, text, names::accepted(rows)));
}

}  // namespace

std::vector<CLI::Option*> contract_options::add_to(CLI::App& cmd) {
  return {
      cmd.add_option("--accumulate", accumulate_, accumulate_help())->capture_default_str(),
      cmd.add_option("--promote-every", promote_every_,
                     "with a matrix-instruction accumulator: a fresh MMA chain every this many elements, added "
                     "into float32 (DeepGEMM's promotion); 0: none")
          ->capture_default_str(),
      cmd.add_option("--scale", scale_,
                     fmt::format("where k_scale multiplies in: {}", names::accepted(bounds::kScalePlacementNames)))
          ->capture_default_str(),
      cmd.add_option("--weights", weights_,
                     fmt::format("precision the weights are rounded to before the head sum: {}",
                                 names::accepted(bounds::kWeightPrecisionNames)))
          ->capture_default_str(),
      cmd.add_option("--logits-dtype", logits_,
                     fmt::format("dtype the kernel stores its logits in (DeepGEMM's logits_dtype): {}; bf16 is read "
                                 "from uint16 bits or ml_dtypes' bfloat16 .npy",
                                 names::accepted(bounds::kLogitsPrecisionNames)))
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
  kernels::contract c = kernels::declared_arithmetic(named("--accumulate", bounds::dot_accumulators(), accumulate_));
  c.relu = named("--relu", exact::kReluRuleNames, relu_);
  c.scale = named("--scale", bounds::kScalePlacementNames, scale_);
  c.weights = named("--weights", bounds::kWeightPrecisionNames, weights_);
  c.logits = named("--logits-dtype", bounds::kLogitsPrecisionNames, logits_);
  if (promote_every_ != 0 && !bounds::is_modelled(c.dot))
    throw input_error(fmt::format("--promote-every {} needs a matrix-instruction accumulator (accepted with "
                                  "--accumulate {})",
                                  promote_every_, bounds::modelled_accumulator_names()));
  if (promote_every_ < 0)
    throw input_error(fmt::format("--promote-every {} is negative (accepted: 0, or a multiple of the instruction's K)",
                                  promote_every_));
  c.promote_every = promote_every_;
  c.mask = mask().value_or(kernels::masking::clean);
  c.columns = named("--columns", kernels::kColumnsLayoutNames, columns_);
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
  return named("--mask", kernels::kMaskingNames, mask_);
}

}  // namespace mqa::api
