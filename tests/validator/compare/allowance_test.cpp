// The allowances' lanes against their definition (validator/compare/allowance.hpp): on every
// instruction set this CPU has, each element's allowed error has allowance_at's bits and its
// overflow excuse the same answer, over values that reach every branch of the definition (non-finite
// centres and magnitudes, zero and huge key scales, intermediates past float32's overflow, each
// scale placement). Tolerance: none, bit for bit (a NaN allowance: any NaN).
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "validator/compare/allowance.hpp"

using namespace mqa;
using compare::allowance_at;

namespace {

float any_float(std::mt19937_64& rng) {
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, std::numeric_limits<float>::max(),
                                  -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                                  std::numeric_limits<float>::min(), 1.0f, -3.5f};
  switch (rng() % 4) {
    case 0: return special[rng() % std::size(special)];
    case 1: return std::bit_cast<float>(static_cast<std::uint32_t>(rng()));  // any bits, NaNs included
    default: return std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), static_cast<int>(rng() % 40) - 20);
  }
}

double any_magnitude(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0: return INFINITY;  // decided by a non-finite input
    case 1: return 0;
    case 2: return std::ldexp(1.0 + static_cast<double>(rng() % 1000) / 1000, 120 + static_cast<int>(rng() % 12));
    default: return std::ldexp(static_cast<double>(rng() % 100000) / 1000, static_cast<int>(rng() % 60) - 30);
  }
}

double any_scale(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 5: return rng() % 2 ? INFINITY : NAN;  // a non-finite k_scale
    case 0: return 0;
    case 1: return std::ldexp(1.0, -static_cast<int>(rng() % 140));  // tiny: partial sums before it are large
    case 2: return std::ldexp(1.0, 100 + static_cast<int>(rng() % 28));
    default: return std::ldexp(static_cast<double>(rng() % 1000 + 1) / 1000, static_cast<int>(rng() % 20) - 10);
  }
}

bounds::error_bound any_bound(std::mt19937_64& rng, bounds::scale_placement placement, bool heads_exact) {
  auto coefficient = [&] { return rng() % 3 == 0 ? 0.0 : std::ldexp(static_cast<double>(rng() % 1000 + 1), -30 - static_cast<int>(rng() % 100)); };
  using bound = bounds::error_bound;
  bound b;
  for (double bound::*term : {&bound::relative, &bound::per_scale, &bound::per_weight, &bound::per_dot,
                              &bound::per_scaled_small_dot, &bound::per_weighted_q, &bound::per_value, &bound::absolute,
                              &bound::dot_relative})
    b.*term = coefficient();
  b.scale = placement;
  b.heads_exact = heads_exact;
  b.result_overflow = rng() % 2 ? bounds::kFloat32Overflow : bounds::kBfloat16Overflow;
  return b;
}

compare::row_figures any_row(std::mt19937_64& rng) {
  auto figure = [&]() -> double {
    if (rng() % 50 == 0) return rng() % 2 ? INFINITY : NAN;  // a row with a non-finite weight or q code
    return std::ldexp(static_cast<double>(rng() % 1000), static_cast<int>(rng() % 160) - 20);
  };
  using figures = compare::row_figures;
  figures r;
  for (double figures::*sum : {&figures::weights_abs, &figures::weight_max, &figures::q_abs, &figures::q_head_max,
                               &figures::weighted_q_abs, &figures::small_weight_q_abs})
    r.*sum = figure();
  return r;
}

}  // namespace

TEST_CASE("the allowances' lanes give allowance_at's bits", "[compare][allowance]") {
  const auto isa = GENERATE(mma::lane_isa::avx512, mma::lane_isa::avx2, mma::lane_isa::portable);
  if (!mma::lane_isa_available(isa)) {
    WARN("this CPU lacks the instruction set: not run");
    return;
  }
  const auto placement = GENERATE(bounds::scale_placement::after_head_sum, bounds::scale_placement::into_weights,
                                  bounds::scale_placement::before_relu, bounds::scale_placement::into_keys_bf16);
  const bool heads_exact = GENERATE(false, true);
  std::mt19937_64 rng(0xA110 + static_cast<unsigned>(placement) * 2 + heads_exact);
  constexpr std::int64_t n = 203;  // lane groups and a scalar tail
  std::int64_t overflows = 0, reached_by_intermediates = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const bounds::error_bound bound = any_bound(rng, placement, heads_exact);
    const compare::row_figures row = any_row(rng);
    compare::key_figures keys;
    std::vector<float> centre(n);
    std::vector<double> magnitude(n);
    for (std::int64_t j = 0; j < n; ++j) {
      keys.scale_abs.push_back(any_scale(rng));
      keys.k_max.push_back(std::ldexp(static_cast<double>(rng() % 449), static_cast<int>(rng() % 30) - 10));
      centre[static_cast<std::size_t>(j)] = any_float(rng);
      magnitude[static_cast<std::size_t>(j)] = any_magnitude(rng);
    }
    const std::int64_t begin = static_cast<std::int64_t>(rng() % 5), end = n - static_cast<std::int64_t>(rng() % 3);
    std::vector<double> allowed(static_cast<std::size_t>(end - begin));
    std::vector<std::uint8_t> may_overflow(allowed.size());
    compare::allowances(bound, row, keys, begin, end, centre.data(), magnitude.data(), allowed.data(),
                        may_overflow.data(), isa);
    for (std::int64_t j = begin; j < end; ++j) {
      const auto at = static_cast<std::size_t>(j);
      const compare::allowance a = allowance_at(bound, row, keys, at, centre[at], magnitude[at]);
      INFO("key " << j << ", centre " << centre[at] << ", magnitude " << magnitude[at] << ", |s| " << keys.scale_abs[at]);
      const double lane = allowed[at - static_cast<std::size_t>(begin)];
      // Bit for bit, but for a NaN's sign and payload (the compiler may commute an addition of two
      // NaNs): a NaN allowance is promised to be a NaN.
      if (std::isnan(a.allowed)) CHECK(std::isnan(lane));
      else CHECK(std::bit_cast<std::uint64_t>(lane) == std::bit_cast<std::uint64_t>(a.allowed));
      CHECK((may_overflow[at - static_cast<std::size_t>(begin)] != 0) == a.may_overflow);
      overflows += a.may_overflow;
      reached_by_intermediates += a.may_overflow && std::isfinite(centre[at]) &&
                                  std::fabs(static_cast<double>(centre[at])) + a.allowed < bound.result_overflow;
    }
  }
  // The values reach both ways an overflow is excused (intermediates only where heads are rounded).
  CHECK(overflows > 0);
  if (!heads_exact) CHECK(reached_by_intermediates > 0);
}

TEST_CASE("a bit-exact contract allows nothing and excuses nothing", "[compare][allowance]") {
  bounds::error_bound bound;
  bound.bit_exact = true;
  bound.absolute = 1;  // ignored
  compare::key_figures keys{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
  const std::vector<float> centre{1.0f, INFINITY, 3e38f};
  const std::vector<double> magnitude{1, 1, 1e300};
  std::vector<double> allowed(3, -1);
  std::vector<std::uint8_t> may_overflow(3, 7);
  compare::allowances(bound, {}, keys, 0, 3, centre.data(), magnitude.data(), allowed.data(), may_overflow.data());
  CHECK(allowed == std::vector<double>{0, 0, 0});
  CHECK(may_overflow == std::vector<std::uint8_t>{0, 0, 0});
}
