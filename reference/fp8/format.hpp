// fp8 formats (and e2m1fn, the 4-bit MX format) as data: one traits record per format,
// read by the one generic conversion algorithm in convert.hpp. A new format is a new row in
// `kFormats`. A code is one byte whatever the format's width: e2m1fn's 16 codes are 0x0 .. 0xF
// (sign 0x8), one per byte; packing two per byte is the bundle's business (validator/bundle).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mqa::fp8 {

enum class format : std::uint8_t { e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e4m3b11fnuz, e8m0fnu, e2m1fn };

// Where a format keeps its NaNs; this decides the largest finite code too.
enum class nan_encoding : std::uint8_t {
  ones,           // S.1111.111 only (OCP "fn": no Inf, the all-ones exponent is otherwise finite)
  ieee,           // all-ones exponent with a nonzero mantissa; zero mantissa there is Inf (e5m2)
  negative_zero,  // the single code 0x80 (AMD/Graphcore "fnuz": no Inf and no -0)
  all_ones_byte,  // 0xFF of an unsigned format (e8m0)
  none,           // no NaN and no Inf: every code is finite (OCP MX e2m1, "fn" = finite)
};

struct format_traits {
  format id;
  std::string_view name;
  int bits;  // code width: 8, or 4 for e2m1fn (codes 0 .. 2^bits - 1, sign in the top bit)
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
//   e2m1fn       bias 1  max 1.5 * 2^2    = 6        min subnormal 0.5, 4-bit codes, -0 = 0x8
//                (OCP MX v1.0 5.3.3; ml_dtypes mxfloat.h float4_e2m1fn; torch's float4_e2m1fn_x2 packs two)
inline constexpr std::array<format_traits, 7> kFormats{{
    {format::e4m3fn, "e4m3fn", 8, 4, 3, 7, true, true, nan_encoding::ones},
    {format::e4m3fnuz, "e4m3fnuz", 8, 4, 3, 8, true, true, nan_encoding::negative_zero},
    {format::e5m2, "e5m2", 8, 5, 2, 15, true, true, nan_encoding::ieee},
    {format::e5m2fnuz, "e5m2fnuz", 8, 5, 2, 16, true, true, nan_encoding::negative_zero},
    {format::e4m3b11fnuz, "e4m3b11fnuz", 8, 4, 3, 11, true, true, nan_encoding::negative_zero},
    {format::e8m0fnu, "e8m0fnu", 8, 8, 0, 127, false, false, nan_encoding::all_ones_byte},
    {format::e2m1fn, "e2m1fn", 4, 2, 1, 1, true, true, nan_encoding::none},
}};

constexpr const format_traits& traits(format f) { return kFormats[static_cast<std::size_t>(f)]; }

std::optional<format> parse_format(std::string_view name);

// Every format's name, comma separated, for "what is accepted" messages.
std::string_view format_names();

// The class of one code, as `mqacheck fp8 table` prints it.
enum class code_class : std::uint8_t { zero, subnormal, normal, max, nan, inf };
std::string_view to_string(code_class c);

// Derived encodings (all follow from the traits; nothing here is a per-format constant).
// How many codes the format has: 256, or 16 for e2m1fn. A byte at or above it is not a code.
constexpr unsigned code_count(const format_traits& t) { return 1u << t.bits; }
constexpr bool is_code(const format_traits& t, unsigned byte) { return byte < code_count(t); }
constexpr std::uint8_t sign_bit(const format_traits& t) {
  return t.is_signed ? static_cast<std::uint8_t>(1u << (t.bits - 1)) : 0x00;
}
constexpr std::uint8_t magnitude_mask(const format_traits& t) {
  return static_cast<std::uint8_t>((1u << (t.is_signed ? t.bits - 1 : t.bits)) - 1);
}
constexpr std::uint8_t exponent_field_max(const format_traits& t) {
  return static_cast<std::uint8_t>((1u << t.exponent_bits) - 1);
}
// Largest finite magnitude code: below the NaN (and Inf) codes.
constexpr std::uint8_t max_finite_magnitude(const format_traits& t) {
  switch (t.nan) {
    case nan_encoding::ones: return static_cast<std::uint8_t>(magnitude_mask(t) - 1);
    case nan_encoding::ieee:
      return static_cast<std::uint8_t>(((exponent_field_max(t) - 1) << t.mantissa_bits) |
                                       ((1u << t.mantissa_bits) - 1));
    case nan_encoding::negative_zero: return magnitude_mask(t);
    case nan_encoding::all_ones_byte: return static_cast<std::uint8_t>(magnitude_mask(t) - 1);
    case nan_encoding::none: return magnitude_mask(t);
  }
  return 0;
}
constexpr bool has_inf(const format_traits& t) { return t.nan == nan_encoding::ieee; }
constexpr bool has_negative_zero(const format_traits& t) {
  return t.is_signed && t.nan != nan_encoding::negative_zero;
}
// The Inf code of this sign; only for formats with has_inf.
constexpr std::uint8_t inf_code(const format_traits& t, bool negative) {
  return static_cast<std::uint8_t>((negative ? sign_bit(t) : 0x00) | (exponent_field_max(t) << t.mantissa_bits));
}

// Codes only (is_code); a byte that is not a code of the format is none of these.
bool is_nan(const format_traits& t, std::uint8_t code);
bool is_inf(const format_traits& t, std::uint8_t code);
code_class classify(const format_traits& t, std::uint8_t code);

}  // namespace mqa::fp8
