#include "quantize.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "convert.hpp"

namespace mqa::fp8 {

float per_token_scale(float amax, float bound, float amax_floor) { return std::max(amax, amax_floor) / bound; }

float ue8m0_scale(float scale) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(scale);
  if (!(scale > 0) || !std::isfinite(scale)) return scale;  // not a usable scale; callers reject it
  if (scale < std::numeric_limits<float>::min()) {  // subnormal: round up to a power of two by exponent
    std::uint32_t p = 1;
    while (p < bits) p <<= 1;
    return std::bit_cast<float>(p);
  }
  const std::uint32_t exponent = bits & 0x7F800000u;
  const bool power_of_two = (bits & 0x007FFFFFu) == 0;
  return std::bit_cast<float>(power_of_two ? exponent : exponent + 0x00800000u);
}

void e4m3fn_to_e4m3fnuz_by_value(std::span<std::uint8_t> codes, std::span<float> scales) {
  const conversion to_fnuz{format::e4m3fnuz, profile_id::ml_dtypes, std::nullopt};
  for (std::uint8_t& code : codes) code = encode(to_fnuz, decode(format::e4m3fn, code) / 2);
  for (float& s : scales) s *= 2;
}

}  // namespace mqa::fp8
