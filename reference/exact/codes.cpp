#include "codes.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "reference/fp8/convert.hpp"

namespace mqa::exact::detail {

code_table make_code_table(fp8::format f, const char* operand) {
  const auto& decoded = fp8::decode_table(f);
  code_table t;
  t.format = f;
  double unit = HUGE_VAL;
  for (const double v : decoded)
    if (std::isfinite(v) && v != 0) unit = std::min(unit, std::fabs(v));
  t.unit = unit;
  for (unsigned code = 0; code < 256; ++code) {
    const double v = decoded[code];
    if (!std::isfinite(v)) {
      t.nonfinite[code] = true;
      continue;
    }
    const double units = v / unit;  // exact: a power-of-two division without underflow
    if (std::fabs(units) >= 0x1p62 || units != std::trunc(units))
      throw std::invalid_argument(std::string("mqa::exact: ") + operand + " format '" +
                                  std::string(fp8::traits(f).name) +
                                  "' spans too wide a range for exact dot products; accepted: e4m3fn, "
                                  "e4m3fnuz, e5m2, e5m2fnuz, e4m3b11fnuz, e2m1fn");
    t.value[code] = v;
    t.units[code] = static_cast<std::int64_t>(units);
    t.max_units = std::max(t.max_units, t.units[code] < 0 ? -t.units[code] : t.units[code]);
  }
  return t;
}

dot_engine float_or_integer_engine(std::int64_t q_max_units, std::int64_t k_max_units, std::int64_t head_dim) {
  // Exact integer arithmetic: both maxima are < 2^62, so their product fits in 124 bits, and the
  // multiplication by head_dim reports its own overflow.
  using u128 = unsigned __int128;
  u128 bound = static_cast<u128>(q_max_units) * static_cast<u128>(k_max_units);
  const bool overflow = __builtin_mul_overflow(bound, static_cast<u128>(head_dim), &bound);
  if (!overflow && bound <= (u128{1} << 53)) return dot_engine::float64_gemm;
  if (!overflow && bound < (u128{1} << 100)) return dot_engine::int128;
  throw std::invalid_argument("mqa::exact: head_dim " + std::to_string(head_dim) +
                              " is too large for exact dot products in these formats (the sum could reach 2^100 units)");
}

}  // namespace mqa::exact::detail
