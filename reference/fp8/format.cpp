#include "format.hpp"

#include <algorithm>

namespace mqa::fp8 {

std::optional<format> parse_format(std::string_view name) {
  const auto it = std::find_if(kFormats.begin(), kFormats.end(), [&](const format_traits& t) { return t.name == name; });
  if (it == kFormats.end()) return std::nullopt;
  return it->id;
}

std::string_view format_names() { return "e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e4m3b11fnuz, e8m0fnu, e2m1fn"; }

std::string_view to_string(code_class c) {
  static constexpr std::array<std::string_view, 6> kNames{"zero", "subnormal", "normal", "max", "nan", "inf"};
  return kNames[static_cast<std::size_t>(c)];
}

bool is_nan(const format_traits& t, std::uint8_t code) {
  const unsigned magnitude = code & magnitude_mask(t);
  switch (t.nan) {
    case nan_encoding::ones: return magnitude == magnitude_mask(t);
    case nan_encoding::ieee:
      return (magnitude >> t.mantissa_bits) == exponent_field_max(t) &&
             (magnitude & ((1u << t.mantissa_bits) - 1)) != 0;
    case nan_encoding::negative_zero: return code == sign_bit(t);
    case nan_encoding::all_ones_byte: return code == 0xFF;
    case nan_encoding::none: return false;
  }
  return false;
}

bool is_inf(const format_traits& t, std::uint8_t code) {
  return has_inf(t) && (code & magnitude_mask(t)) == inf_code(t, false);
}

code_class classify(const format_traits& t, std::uint8_t code) {
  if (is_nan(t, code)) return code_class::nan;
  if (is_inf(t, code)) return code_class::inf;
  const unsigned magnitude = code & magnitude_mask(t);
  if (magnitude == max_finite_magnitude(t)) return code_class::max;
  if (t.has_zero && magnitude == 0) return code_class::zero;
  if (t.has_zero && (magnitude >> t.mantissa_bits) == 0) return code_class::subnormal;
  return code_class::normal;
}

}  // namespace mqa::fp8
