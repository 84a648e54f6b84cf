// fp8 formats as data: one traits record per format, read by the one generic
// conversion algorithm in convert.hpp. A new format is a new row in `kFormats`.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mqa::fp8 {

enum class format : std::uint8_t { e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e4m3b11fnuz, e8m0fnu };

// Where a format keeps its NaNs; this decides the largest finite code too.
enum class nan_encoding : std::uint8_t {
  ones,           // S.1111.111 only (OCP "fn": no Inf, the all-ones exponent is otherwise finite)
  ieee,           // all-ones exponent with a nonzero mantissa; zero mantissa there is Inf (e5m2)
  negative_zero,  // the single code 0x80 (AMD/Graphcore "fnuz": no Inf and no -0)
  all_ones_byte,  // 0xFF of an unsigned format (e8m0)
};

struct format_traits {
  format id;
  std::string_view name;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool is_signed;
  bool has_zero;  // e8m0 has neither zero nor subnormals: code 0 is 2^-127
  nan_encoding nan;
};

// Worked limits, as a reader would check them against the OCP spec and ml_dtypes:
//   e4m3fn       bias 7  max 1.75 * 2^8   = 448      min subnormal 2^-9
//   e4m3fnuz     bias 8  max 1.875 * 2^7  = 240      min subnormal 2^-10
//   e5m2         bias 15 max 1.75 * 2^15  = 57344    min subnormal 2^-16, Inf = 0x7C
//   e5m2fnuz     bias 16 max 1.75 * 2^15  = 57344    min subnormal 2^-17
//   e4m3b11fnuz  bias 11 max 1.875 * 2^4  = 30       min subnormal 2^-13
//   e8m0fnu      bias 127, values 2^-127 .. 2^127, 0xFF = NaN
inline constexpr std::array<format_traits, 6> kFormats{{
    {format::e4m3fn, "e4m3fn", 4, 3, 7, true, true, nan_encoding::ones},
    {format::e4m3fnuz, "e4m3fnuz", 4, 3, 8, true, true, nan_encoding::negative_zero},
    {format::e5m2, "e5m2", 5, 2, 15, true, true, nan_encoding::ieee},
    {format::e5m2fnuz, "e5m2fnuz", 5, 2, 16, true, true, nan_encoding::negative_zero},
    {format::e4m3b11fnuz, "e4m3b11fnuz", 4, 3, 11, true, true, nan_encoding::negative_zero},
    {format::e8m0fnu, "e8m0fnu", 8, 0, 127, false, false, nan_encoding::all_ones_byte},
}};

constexpr const format_traits& traits(format f) { return kFormats[static_cast<std::size_t>(f)]; }

std::optional<format> parse_format(std::string_view name);

// Every format's name, comma separated, for "what is accepted" messages.
std::string_view format_names();

// The class of one code, as `mqacheck fp8 table` prints it.
enum class code_class : std::uint8_t { zero, subnormal, normal, max, nan, inf };
std::string_view to_string(code_class c);

// Derived encodings (all follow from the traits; nothing here is a per-format constant).
constexpr std::uint8_t sign_bit(const format_traits& t) { return t.is_signed ? 0x80 : 0x00; }
constexpr std::uint8_t magnitude_mask(const format_traits& t) { return t.is_signed ? 0x7F : 0xFF; }
constexpr std::uint8_t exponent_field_max(const format_traits& t) {
  return static_cast<std::uint8_t>((1u << t.exponent_bits) - 1);
}
// Largest finite magnitude code: below the NaN (and Inf) codes.
constexpr std::uint8_t max_finite_magnitude(const format_traits& t) {
  switch (t.nan) {
    case nan_encoding::ones: return 0x7E;
    case nan_encoding::ieee:
      return static_cast<std::uint8_t>(((exponent_field_max(t) - 1) << t.mantissa_bits) |
                                       ((1u << t.mantissa_bits) - 1));
    case nan_encoding::negative_zero: return 0x7F;
    case nan_encoding::all_ones_byte: return 0xFE;
  }
  return 0;
}
constexpr bool has_inf(const format_traits& t) { return t.nan == nan_encoding::ieee; }
constexpr bool has_negative_zero(const format_traits& t) {
  return t.is_signed && t.nan != nan_encoding::negative_zero;
}
// The Inf code of this sign; only for formats with has_inf.
constexpr std::uint8_t inf_code(const format_traits& t, bool negative) {
  return static_cast<std::uint8_t>((negative ? 0x80 : 0x00) | (exponent_field_max(t) << t.mantissa_bits));
}

bool is_nan(const format_traits& t, std::uint8_t code);
bool is_inf(const format_traits& t, std::uint8_t code);
code_class classify(const format_traits& t, std::uint8_t code);

}  // namespace mqa::fp8
