#include "format.hpp"

#include <string>

#include "reference/names/names.hpp"

namespace mqa::fp8 {
namespace {

constexpr names::table<code_class, 6> kCodeClassNames{{
    {code_class::zero, "zero"},
    {code_class::subnormal, "subnormal"},
    {code_class::normal, "normal"},
    {code_class::max, "max"},
    {code_class::nan, "nan"},
    {code_class::inf, "inf"},
}};

}  // namespace

// The formats' names are their rows' (kFormats): a new row is parsed and listed with no other edit.
std::optional<format> parse_format(std::string_view name) { return names::parse(kFormats, name); }

std::string_view format_names() {
  static const std::string list = names::accepted(kFormats);
  return list;
}

std::string_view to_string(code_class c) { return names::name_of(kCodeClassNames, c); }

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
