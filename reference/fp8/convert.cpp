#include "convert.hpp"

#include "grid.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace mqa::fp8 {
namespace {

constexpr int kFloatMantissaBits = 23;
using detail::kDoubleMantissaBits;
using detail::on_grid;
using detail::round_to_grid;

// Smallest exponent of a code that is not subnormal. Formats without zero (e8m0) have no
// subnormals either: their code 0 is the normal number 2^-bias.
constexpr int min_normal_exponent(const format_traits& t) { return t.has_zero ? 1 - t.bias : -t.bias; }

// The magnitude code of |x| (finite, nonzero). For e8m0 (M = 0) "even n" means rounding ties up,
// which is what ml_dtypes and torch do.
std::int64_t round_magnitude(const format_traits& t, double magnitude, tie_rule ties) {
  on_grid r = round_to_grid(magnitude, t.mantissa_bits, min_normal_exponent(t), ties);
  if (!t.has_zero && r.significand == 0) r.significand = 1;  // nothing below the smallest code: it is the nearest value
  return (static_cast<std::int64_t>(r.exponent + t.bias - 1) << t.mantissa_bits) +
         static_cast<std::int64_t>(r.significand);
}

// The float32 nearest to a double, ties to even, as a C cast does in the default rounding mode
// (what ml_dtypes' and torch's float64 casts run), but by integer arithmetic: the result does not
// depend on the thread's rounding mode. Overflow (|x| >= 2^128 - 2^103) gives Inf; NaN keeps its sign.
float round_to_float32(double x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return static_cast<float>(x);  // exact
  constexpr int kBias = 127;
  const on_grid r = round_to_grid(std::fabs(x), kFloatMantissaBits, 1 - kBias);
  const std::int64_t magnitude =
      r.exponent > kBias ? 0x7F800000
                         : std::min<std::int64_t>((static_cast<std::int64_t>(r.exponent + kBias - 1) << kFloatMantissaBits) +
                                                      static_cast<std::int64_t>(r.significand),
                                                  0x7F800000);
  return std::bit_cast<float>(static_cast<std::uint32_t>(magnitude) | (std::signbit(x) ? 0x80000000u : 0u));
}

// The two top fraction bits of a NaN input (CUDA's double path builds e5m2's NaN from them).
unsigned top_fraction_bits(float x) { return (std::bit_cast<std::uint32_t>(x) >> (kFloatMantissaBits - 2)) & 3u; }
unsigned top_fraction_bits(double x) {
  return static_cast<unsigned>((std::bit_cast<std::uint64_t>(x) >> (kDoubleMantissaBits - 2)) & 3u);
}

// The largest finite code of this sign.
std::uint8_t max_code(const format_traits& t, bool negative) {
  return static_cast<std::uint8_t>((negative ? sign_bit(t) : 0) | max_finite_magnitude(t));
}

// The NaN code of a format. `rule` decides the sign and e5m2's mantissa; the other formats have
// one NaN code per sign (fn), or one in all (fnuz, e8m0), or none (e2m1fn: the rule's substitute).
// Overflow and Inf reach here too, with the default rule of their profile.
std::uint8_t nan_code(const format_traits& t, const nan_rule& rule, bool negative, unsigned payload = 0) {
  const std::uint8_t sign = negative ? sign_bit(t) : 0;
  switch (t.nan) {
    case nan_encoding::ones: return sign | magnitude_mask(t);
    case nan_encoding::ieee: {
      const unsigned mantissa = rule.e5m2_mantissa | (rule.e5m2_takes_payload ? payload : 0u);
      return static_cast<std::uint8_t>(inf_code(t, negative) | mantissa);
    }
    case nan_encoding::negative_zero: return 0x80;
    case nan_encoding::all_ones_byte: return 0xFF;
    case nan_encoding::none:
      switch (rule.finite_only) {
        case nan_without_code::opposite_signed_zero: return negative ? 0x00 : sign_bit(t);
        case nan_without_code::positive_max: return max_code(t, false);
      }
  }
  return 0xFF;
}

// Overflow and Inf where the rule is "non-finite": Inf, else NaN; a format with neither saturates
// (ml_dtypes' numeric_limits<float4_e2m1fn>::infinity() is its max, 0b0'11'1).
std::uint8_t nonfinite_code(const format_traits& t, const profile& p, bool negative) {
  if (t.nan == nan_encoding::none) return max_code(t, negative);
  return has_inf(t) ? inf_code(t, negative) : nan_code(t, p.nan, negative);
}

template <class Float>
std::uint8_t encode_nan(const format_traits& t, const nan_rule& rule, Float x) {
  return nan_code(t, rule, rule.keeps_sign && std::signbit(x), top_fraction_bits(x));
}

// The producer's clamp, like torch.clamp: every non-NaN value, Inf included, into [-bound, bound].
double clamped(const conversion& c, const profile& p, double x) {
  if (c.bound) return std::clamp(x, -*c.bound, *c.bound);
  if (p.clamps_to_format_max) return std::clamp(x, -max_finite(c.fmt), max_finite(c.fmt));
  return x;
}

// A non-NaN value, already clamped, that came in as a float32 (`from_float32`: exact in x) or as
// a float64 converted directly.
std::uint8_t encode_number(const conversion& c, double x, bool from_float32) {
  const format_traits& t = traits(c.fmt);
  const profile& p = rules(c.profile);
  const bool negative = std::signbit(x);

  if (!t.is_signed) {
    if (negative && !p.unsigned_takes_magnitude) return nan_code(t, p.nan, false);
    if (x == 0) return p.unsigned_zero_is_nan ? nan_code(t, p.nan, false) : 0x00;
  }
  if (std::isinf(x)) {
    switch (p.inf) {
      case inf_rule::to_nonfinite: return nonfinite_code(t, p, negative);
      case inf_rule::to_max: return max_code(t, negative);
    }
  }
  const std::uint8_t sign = negative ? sign_bit(t) : 0x00;
  // fnuz has no -0 (0x80 is its NaN): a negative value that rounds to zero is +0; so does every
  // value in a profile that writes no -0 (DeepGEMM's fp4 cast).
  const std::uint8_t zero = has_negative_zero(t) && !p.drops_zero_sign ? sign : 0x00;
  if (x == 0) return zero;

  const double magnitude = std::fabs(x);
  if (from_float32 && c.fmt == format::e8m0fnu && p.e8m0_float32_subnormal_up && magnitude < 0x1p-126)
    return magnitude > 0x1p-127 ? 0x01 : 0x00;
  if (p.overflow == overflow_rule::to_nonfinite_before_rounding && magnitude > max_finite(c.fmt))
    return nonfinite_code(t, p, negative);
  const std::int64_t code = round_magnitude(t, magnitude, p.ties);
  if (code > max_finite_magnitude(t)) {
    return p.overflow == overflow_rule::to_max ? max_code(t, negative) : nonfinite_code(t, p, negative);
  }
  if (code == 0) return zero;
  return static_cast<std::uint8_t>(sign | code);
}

std::uint8_t encode_float32(const conversion& c, float x) {
  const profile& p = rules(c.profile);
  if (std::isnan(x)) return encode_nan(traits(c.fmt), p.nan, x);
  return encode_number(c, clamped(c, p, x), true);
}

std::uint8_t encode_float64(const conversion& c, double x) {
  const profile& p = rules(c.profile);
  switch (p.float64) {
    case float64_path::through_float32: {
      // The clamp runs on the float64 tensor (torch.clamp), the cast then goes through float32.
      if (std::isnan(x)) return encode_nan(traits(c.fmt), p.nan, round_to_float32(x));
      return encode_number(c, round_to_float32(clamped(c, p, x)), true);
    }
    case float64_path::direct:
      if (std::isnan(x)) return encode_nan(traits(c.fmt), p.float64_nan, x);
      return encode_number(c, clamped(c, p, x), false);
  }
  return encode_number(c, clamped(c, p, x), false);
}

// A float32's code is a function of its top 16 bits and of whether its low 16 bits are zero, under
// a conversion whose format keeps at most 6 mantissa bits and whose clamp bound, where it has one, is
// a float32 with its low 16 bits zero. Every value such a conversion compares its input with (a
// midpoint between two codes, with at most 7 significant bits; the format's largest value; the
// bound; e8m0's float32-subnormal thresholds 2^-126 and 2^-127) is then a float32 whose low half
// is zero, so two inputs with the same top half and nonzero low halves lie strictly between the
// same two of them, and round, clamp and saturate alike; a NaN's code takes its sign and its top two
// fraction bits only. The span conversion therefore looks codes up in a memo of the one conversion
// above, two per top half (low half zero, low half nonzero), built on its first use; tests hold it
// bit for bit to the conversion of single values, and the exhaustive tier on every float32.
class float32_memo {
 public:
  static bool applies(const conversion& c) {
    if (traits(c.fmt).mantissa_bits > 6) return false;
    if (!c.bound) return true;
    const auto narrowed = static_cast<float>(*c.bound);
    return static_cast<double>(narrowed) == *c.bound && (std::bit_cast<std::uint32_t>(narrowed) & 0xFFFFu) == 0;
  }

  explicit float32_memo(const conversion& c) {
    for (std::uint32_t top = 0; top < 0x10000u; ++top)
      for (const std::uint32_t low : {0u, 1u})
        codes_[2 * top + low] = encode_float32(c, std::bit_cast<float>(top << 16 | low));
  }

  std::uint8_t operator()(float x) const {
    const auto bits = std::bit_cast<std::uint32_t>(x);
    return codes_[2 * (bits >> 16) + ((bits & 0xFFFFu) != 0 ? 1 : 0)];
  }

  // One memo per conversion for the life of the process (at most a few dozen: a format, a profile
  // and a bound each), 128 KiB each.
  static const float32_memo& of(const conversion& c) {
    using key = std::tuple<format, profile_id, bool, double>;
    static std::mutex lock;
    static std::map<key, std::unique_ptr<const float32_memo>> memos;
    const key k{c.fmt, c.profile, c.bound.has_value(), c.bound.value_or(0)};
    const std::lock_guard<std::mutex> held(lock);
    auto& memo = memos[k];
    if (!memo) memo = std::make_unique<const float32_memo>(c);
    return *memo;
  }

 private:
  std::array<std::uint8_t, 2 * 0x10000> codes_{};
};

std::array<double, 256> make_decode_table(format f) {
  const format_traits& t = traits(f);
  std::array<double, 256> values{};
  for (unsigned code = 0; code < 256; ++code) {
    const auto c = static_cast<std::uint8_t>(code);
    if (!is_code(t, code)) {  // a byte past a 4-bit format's 16 codes
      values[code] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    const bool negative = (c & sign_bit(t)) != 0;
    if (is_nan(t, c)) {
      values[code] = negative ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    if (is_inf(t, c)) {
      values[code] = negative ? -HUGE_VAL : HUGE_VAL;
      continue;
    }
    const unsigned magnitude = c & magnitude_mask(t);
    const int exponent_field = static_cast<int>(magnitude >> t.mantissa_bits);
    const unsigned fraction = magnitude & ((1u << t.mantissa_bits) - 1);
    const bool subnormal = t.has_zero && exponent_field == 0;
    const double significand = subnormal ? fraction : (1u << t.mantissa_bits) + fraction;
    const int exponent = (subnormal ? 1 : exponent_field) - t.bias - t.mantissa_bits;
    const double value = std::ldexp(significand, exponent);
    values[code] = negative ? -value : value;
  }
  return values;
}

std::uint32_t nan_bits(const format_traits& t, nan_decoding rule, std::uint8_t code) {
  const std::uint32_t sign = (code & sign_bit(t)) ? 0x80000000u : 0u;
  if (rule == nan_decoding::quiet_keep_sign) return sign | 0x7FC00000u;
  // c10 returns a fixed pattern for the single-NaN formats and widens the others bitwise.
  if (t.nan == nan_encoding::negative_zero || t.nan == nan_encoding::all_ones_byte) return 0x7F800001u;
  const std::uint32_t payload = (code & ((1u << t.mantissa_bits) - 1)) << (23 - t.mantissa_bits);
  return sign | 0x7F800000u | 0x00400000u | payload;
}

}  // namespace

std::optional<std::string> why_invalid(const conversion& c) {
  const profile& p = rules(c.profile);
  if (!covers(p, c.fmt)) {
    std::string accepted;
    for (const auto& t : kFormats)
      if (covers(p, t.id)) accepted += (accepted.empty() ? "" : ", ") + std::string(t.name);
    return fmt::format("profile '{}' does not cover format '{}' (it covers: {})", p.name, traits(c.fmt).name,
                       accepted);
  }
  if (c.bound && !(std::isfinite(*c.bound) && *c.bound > 0))
    return fmt::format("saturation bound {} is not a positive finite number", *c.bound);
  if (c.bound && !traits(c.fmt).is_signed)
    return fmt::format("a saturation bound does not apply to the unsigned format '{}'", traits(c.fmt).name);
  return std::nullopt;
}

const std::array<double, 256>& decode_table(format f) {
  static const std::array<std::array<double, 256>, kFormats.size()> tables = [] {
    std::array<std::array<double, 256>, kFormats.size()> all{};
    for (const auto& t : kFormats) all[static_cast<std::size_t>(t.id)] = make_decode_table(t.id);
    return all;
  }();
  return tables[static_cast<std::size_t>(f)];
}

double decode(format f, std::uint8_t code) { return decode_table(f)[code]; }

float decode_f32(format f, profile_id p, std::uint8_t code) {
  const format_traits& t = traits(f);
  if (is_nan(t, code)) return std::bit_cast<float>(nan_bits(t, rules(p).decode_nan, code));
  return static_cast<float>(decode(f, code));  // exact: every fp8 value is a float
}

double max_finite(format f) { return decode(f, max_finite_magnitude(traits(f))); }

std::uint8_t encode(const conversion& c, double x) { return encode_float64(c, x); }
std::uint8_t encode(const conversion& c, float x) { return encode_float32(c, x); }

void encode(const conversion& c, std::span<const float> in, std::span<std::uint8_t> out) {
  if (!float32_memo::applies(c)) {
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = encode_float32(c, in[i]);
    return;
  }
  const float32_memo& memo = float32_memo::of(c);
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = memo(in[i]);
}
void encode(const conversion& c, std::span<const double> in, std::span<std::uint8_t> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = encode_float64(c, in[i]);
}
void decode(format f, profile_id p, std::span<const std::uint8_t> in, std::span<float> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = decode_f32(f, p, in[i]);
}

double recast_factor(const recast& r) { return std::ldexp(1.0, traits(r.to).bias - traits(r.from).bias); }

std::uint8_t recast_code(const recast& r, std::uint8_t code) {
  switch (r.method) {
    case recast_method::by_value:
      // The producers work in float32 (x.to(float32) * 0.5): decode and the division are exact there.
      return encode(conversion{r.to, r.encoder, std::nullopt}, static_cast<float>(decode(r.from, code) / recast_factor(r)));
    case recast_method::by_bytes: {
      const format_traits& from = traits(r.from);
      if (is_nan(from, code)) return r.nan_bytes_become.value_or(code);
      return code == sign_bit(from) && has_negative_zero(from) ? r.negative_zero_becomes : code;
    }
  }
  return code;
}

}  // namespace mqa::fp8
