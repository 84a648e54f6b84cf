// bfloat16, the dtype of bf16 logits (DeepGEMM's logits_dtype): the top 16 bits of a
// float32. Rounding is to nearest even, by integer arithmetic (grid.hpp), as torch's
// float32 -> bfloat16 cast does (c10/util/BFloat16.h round_to_nearest_even; pinned by
// tests/data/golden/fp4/torch.bfloat16.from_f32.npy once generated). NaN stays NaN.
#pragma once

#include <bit>
#include <cstdint>

namespace mqa::fp8 {

// The bfloat16 nearest to x (ties to even), as bits; overflow gives +-Inf; NaN the quiet NaN 0x7FC0
// with x's sign. From a double this is one rounding (not through float32).
std::uint16_t bfloat16_bits(double x);
std::uint16_t bfloat16_bits(float x);

// The float32 that holds a bfloat16 exactly (its bits shifted up).
float bfloat16_value(std::uint16_t bits);

// x rounded to bfloat16, widened back to float32.
inline float round_to_bfloat16(float x) { return bfloat16_value(bfloat16_bits(x)); }

// Whether a float32 is exactly a bfloat16 (its low 16 bits are zero).
inline bool is_bfloat16(float x) { return (std::bit_cast<std::uint32_t>(x) & 0xFFFFu) == 0; }

}  // namespace mqa::fp8
