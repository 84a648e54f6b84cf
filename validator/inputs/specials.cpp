#include "specials.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

#include "validator/rng/rng.hpp"

namespace mqa::inputs {
namespace {

bool applies_to(cases::special_target target, tensor which) {
  return target == cases::special_target::both ||
         (target == cases::special_target::q) == (which == tensor::q);
}

// The positions of one special in one tensor: special_count draws from their own fork.
template <class Plant>
void for_each_position(const cases::case_spec& c, cases::special_value v, tensor which, std::size_t size,
                       Plant plant) {
  const counter_rng rng =
      counter_rng(c.seed, stream::specials).fork(2 * static_cast<std::uint64_t>(v) + static_cast<std::uint64_t>(which));
  for (std::int64_t r = 0; r < c.special_count; ++r) {
    const auto draw = static_cast<std::uint64_t>(2 * r);
    plant(static_cast<std::size_t>(rng.below(draw, size)), rng.bits(draw + 1));
  }
}

}  // namespace

float special_scaled_value(cases::special_value v, fp8::format format, std::uint64_t draw) {
  const float sign = (draw & 1) ? -1.0f : 1.0f;
  // Code 0x01 is the smallest subnormal of every data format (decode is exact).
  const auto smallest = static_cast<float>(fp8::decode(format, 0x01));
  switch (v) {
    case cases::special_value::subnormal: {
      const std::uint64_t codes = (std::uint64_t{1} << fp8::traits(format).mantissa_bits) - 1;
      return sign * smallest * static_cast<float>(1 + ((draw >> 1) % codes));
    }
    case cases::special_value::largest: return sign * static_cast<float>(fp8::max_finite(format));
    case cases::special_value::negative_underflow: return -smallest / 4;
    case cases::special_value::nan:
      return std::bit_cast<float>(std::uint32_t{0x7FC00000u} | ((draw & 1) ? 0x80000000u : 0u));
    default: return 0;  // k_scale specials have no value in q or k
  }
}

void plant_value_specials(const cases::case_spec& c, tensor which, std::span<float> scaled) {
  plant_value_specials(c, which, scaled, scaled.size(), 0);
}

void plant_value_specials(const cases::case_spec& c, tensor which, std::span<float> scaled, std::size_t size,
                          std::size_t first) {
  if (!applies_to(c.special_in, which) || size == 0) return;
  const fp8::format format = which == tensor::q ? c.q_format : c.k_format;
  for (const cases::special_value v : c.specials) {
    if (cases::is_k_scale_special(v)) continue;
    for_each_position(c, v, which, size, [&](std::size_t at, std::uint64_t draw) {
      if (at >= first && at - first < scaled.size()) scaled[at - first] = special_scaled_value(v, format, draw);
    });
  }
}

void plant_scale_specials(const cases::case_spec& c, std::span<float> k_scale) {
  plant_scale_specials(c, k_scale, k_scale.size(), 0);
}

void plant_scale_specials(const cases::case_spec& c, std::span<float> k_scale, std::size_t size, std::size_t first) {
  for (const cases::special_value v : c.specials) {
    if (!cases::is_k_scale_special(v)) continue;
    for_each_position(c, v, tensor::k, size, [&](std::size_t at, std::uint64_t) {
      if (at < first || at - first >= k_scale.size()) return;
      float& s = k_scale[at - first];
      s = v == cases::special_value::zero_k_scale ? 0.0f : -std::abs(s);
    });
  }
}

}  // namespace mqa::inputs
