// Per-token quantization as the producers of indexer inputs do it (DeepGEMM per_token_cast_to_fp8,
// vLLM's indexer and scaled_fp8_quant): for each token (a key, or one head of one query),
//
//   scale  = max(amax, 1e-4) / bound                 float32 (fp8::per_token_scale)
//   scale  = 2^ceil(log2(scale))   for ue8m0 scales  exact (fp8::ue8m0_scale)
//   scaled = x / scale                               float32, one correctly rounded division
//   code   = encode(format, profile, bound?)         fp8::encode
//
// Division rather than DeepGEMM's x * (1 / scale): one rounding instead of two; with a ue8m0
// (power-of-two) scale both are exact and agree. Specials are planted between the last two steps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "validator/case/case.hpp"

namespace mqa::inputs {

// One scale per token of `token_length` values.
std::vector<float> token_scales(std::span<const float> values, std::int64_t token_length, double bound,
                                cases::scale_kind kind);

// values[t * token_length + d] / scales[t], in place.
void divide_by_scales(std::span<float> values, std::int64_t token_length, std::span<const float> scales);

}  // namespace mqa::inputs
