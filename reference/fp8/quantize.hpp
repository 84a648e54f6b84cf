// Quantization helpers as the producers of indexer inputs compute them (DeepSeek's act_quant,
// DeepGEMM's per-token casts, vLLM's scaled_fp8_quant), so cases quantize like real pipelines.
#pragma once

#include <cstdint>
#include <span>

#include "format.hpp"

namespace mqa::fp8 {

// Per-token scale: amax / bound in float32, amax floored first (DeepGEMM clamps amax to 1e-4 so
// an all-zero token does not divide by zero).
float per_token_scale(float amax, float bound, float amax_floor = 1e-4f);

// The power-of-two scale DeepSeek/DeepGEMM use with ue8m0 scale factors: 2^ceil(log2(s)), the
// smallest power of two >= s, so that x / scale never exceeds the bound. Computed exactly from
// the float's bits. (torch.ceil(torch.log2(s)) in float32 can round log2 of a value just above a
// power of two down to the integer and so return a scale below s; this is the exact value.)
float ue8m0_scale(float scale);

// vLLM normalize_e4m3fn_to_e4m3fnuz, done by value: each e4m3fn code becomes the e4m3fnuz code
// of half its value (exact: fnuz has one more binade below) and the scale doubles, so
// code * scale is unchanged. NaN stays NaN (0x80) and -0 becomes 0x00.
void e4m3fn_to_e4m3fnuz_by_value(std::span<std::uint8_t> codes, std::span<float> scales);

// The bug it replaces (BUGCLASSES 1-3) needs no function: keeping the bytes and reading them as
// e4m3fnuz halves every value, turns 0x80 (-0) into NaN and 0x7F/0xFF (NaN) into +-240.

}  // namespace mqa::fp8
