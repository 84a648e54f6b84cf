#include "kernel_options.hpp"

#include <fmt/core.h>

#include "kernels/contract.hpp"
#include "validator/compare/finding.hpp"
#include "validator/input_error.hpp"

namespace mqa::api {

verdict::kernel_options kernel_options_of(const kernel_choices& k) {
  verdict::kernel_options o;
  o.command = k.command;
  o.timeout_seconds = k.timeout_seconds;
  o.timing_launches = k.timing_launches;
  o.contract = k.declared.contract();
  o.mask = k.declared.mask();
  for (const auto& name : k.must_produce)
    if (!names::parse(compare::kFindingClassNames, name))
      throw input_error(fmt::format("--must-produce '{}' is not a finding class (accepted: {})", name,
                                    names::accepted(compare::kFindingClassNames)));
  o.must_produce = k.must_produce;
  if (k.topk_indices) {
    const auto columns = names::parse(kernels::kColumnsLayoutNames, k.topk_columns);
    if (!columns)
      throw input_error(fmt::format("--topk-columns '{}' is not known (accepted: {})", k.topk_columns,
                                    names::accepted(kernels::kColumnsLayoutNames)));
    o.topk = kernels::topk_convention{.columns = *columns, .sorted = k.topk_sorted};
  }
  if (k.operation != "prefill" && k.operation != "paged" && k.operation != "both")
    throw input_error(fmt::format("--operation '{}' is not known (accepted: prefill, paged, both)", k.operation));
  if (k.timing_launches < 0 || k.timing_launches > 100)
    throw input_error(fmt::format("--timing-launches {}: expected 0 to 100", k.timing_launches));
  o.prefill = k.operation != "paged";
  o.paged = k.operation != "prefill";
  // bf16 logits and relative columns are the prefill kernel's options (fp8_fp4_mqa_logits): the
  // paged reference and cases hold neither.
  if (o.paged && (o.contract.logits != bounds::logits_precision::fp32 ||
                  o.contract.columns != kernels::columns_layout::absolute))
    throw input_error(fmt::format("--operation {} with --logits-dtype bf16 or --columns relative: paged decode is "
                                  "judged with float32 absolute columns (accepted: --operation prefill)",
                                  k.operation));
  return o;
}

}  // namespace mqa::api
