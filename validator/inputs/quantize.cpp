#include "quantize.hpp"

#include <algorithm>
#include <cmath>

#include "reference/fp8/quantize.hpp"

namespace mqa::inputs {

std::vector<float> token_scales(std::span<const float> values, std::int64_t token_length, double bound,
                                cases::scale_kind kind) {
  const auto length = static_cast<std::size_t>(token_length);
  std::vector<float> scales(values.size() / length);
  for (std::size_t t = 0; t < scales.size(); ++t) {
    float amax = 0;
    for (std::size_t d = 0; d < length; ++d) amax = std::max(amax, std::abs(values[t * length + d]));
    // The bound is a float in every producer (448.0, 240.0, torch.finfo(dtype).max).
    float scale = fp8::per_token_scale(amax, static_cast<float>(bound));
    if (kind == cases::scale_kind::ue8m0) scale = fp8::ue8m0_scale(scale);
    scales[t] = scale;
  }
  return scales;
}

void divide_by_scales(std::span<float> values, std::int64_t token_length, std::span<const float> scales) {
  // Token by token: an index divided per element would keep the divisions out of vector lanes.
  const auto length = static_cast<std::size_t>(token_length);
  for (std::size_t t = 0; t < values.size() / length; ++t) {
    const float scale = scales[t];
    for (float& v : values.subspan(t * length, length)) v /= scale;
  }
}

}  // namespace mqa::inputs
