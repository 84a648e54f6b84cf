#include "contract.hpp"

#include <fmt/core.h>

#include "reference/bounds/accumulators.hpp"

namespace mqa::kernels {

contract declared_arithmetic(dot_accumulator dot, exact::relu_rule relu) {
  contract c;
  c.dot = dot;
  c.heads = bounds::traits(dot).heads;
  c.relu = relu;
  return c;
}

std::string_view to_string(masking m) { return names::name_of(kMaskingNames, m); }
std::string_view to_string(columns_layout c) { return names::name_of(kColumnsLayoutNames, c); }

std::string describe(const contract& c) {
  const std::string promotion = c.promote_every > 0 ? fmt::format(" promoted every {}", c.promote_every) : "";
  // The default output (float32) is not spelled out, so that existing contract lines stay as they were.
  const std::string logits =
      c.logits == logits_precision::fp32 ? "" : fmt::format(", logits {}", bounds::to_string(c.logits));
  const std::string columns =
      c.columns == columns_layout::absolute ? "" : fmt::format(", columns {}", to_string(c.columns));
  return fmt::format("dot {}{}, heads {}, k_scale {}, weights {}{}, relu {}, {}{}{}", bounds::to_string(c.dot), promotion,
                     bounds::to_string(c.heads), bounds::to_string(c.scale), bounds::to_string(c.weights), logits,
                     c.relu == exact::relu_rule::keeps_nan ? "keeps NaN" : "fmax", to_string(c.mask), columns,
                     c.deterministic ? ", deterministic" : "");
}

}  // namespace mqa::kernels
