// Special values a case asks for, planted where the producers would create them: value specials
// in the scaled values just before encoding (so the case's profile decides their codes, as it
// would in the producer), k_scale specials in the scales.
//
// Each requested special gets `special_count` positions per tensor, drawn from the seed (with
// replacement; a later special overwrites an earlier one at the same place).
#pragma once

#include <span>

#include "validator/case/case.hpp"

namespace mqa::inputs {

enum class tensor : std::uint8_t { q, k };

// The scaled value a special stands for in `format`; `draw` picks the sign and the subnormal.
//   subnormal           +-c * 2^-(mantissa + bias - 1) for c in 1 .. 2^mantissa - 1: a subnormal code
//   largest             +-the largest finite value (a clamp bound, when set, still applies)
//   negative-underflow  -(smallest subnormal) / 4: rounds to -0, which is 0x80 in the OCP formats,
//                       the NaN code of fnuz (BUGCLASSES 2)
//   nan                 a quiet NaN of either sign
float special_scaled_value(cases::special_value v, fp8::format format, std::uint64_t draw);

// Plants the case's value specials into `scaled`, the tensor `which` before encoding. A tensor
// handled in pieces passes its whole `size` and the index of scaled[0] in it (`first`): each piece
// gets exactly the specials that land in it.
void plant_value_specials(const cases::case_spec& c, tensor which, std::span<float> scaled);
void plant_value_specials(const cases::case_spec& c, tensor which, std::span<float> scaled, std::size_t size,
                          std::size_t first);

// Plants zero-k-scale (k_scale = 0) and negative-k-scale (k_scale = -k_scale); in pieces as above.
void plant_scale_specials(const cases::case_spec& c, std::span<float> k_scale);
void plant_scale_specials(const cases::case_spec& c, std::span<float> k_scale, std::size_t size, std::size_t first);

}  // namespace mqa::inputs
