#include "problems.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <thread>

#include "reference/fp8/convert.hpp"

namespace mqa::gpu_test {
namespace {

// SplitMix64 of a counter: element e of stream s is random(s, e), whatever thread draws it.
std::uint64_t random(std::uint64_t stream, std::uint64_t index) {
  std::uint64_t z = stream * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double uniform01(std::uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1p-53; }

// Inverse normal CDF (Acklam's rational approximation; accuracy far beyond what 3 mantissa
// bits can tell apart).
double normal_quantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549671348194550e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  const double low = 0.02425;
  if (p < low) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - low) return -normal_quantile(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// 4096 codes at the quantiles of a normal scaled so that 4.5 sigma reaches the format's max:
// what per-token absmax quantization of normal activations produces.
std::array<std::uint8_t, 4096> quantile_codes(fp8::format f) {
  std::array<std::uint8_t, 4096> table{};
  const double scale = fp8::max_finite(f) / 4.5;
  const fp8::conversion to_code{f, fp8::profile_id::saturate, fp8::max_finite(f)};
  for (std::size_t b = 0; b < table.size(); ++b)
    table[b] = fp8::encode(to_code, scale * normal_quantile((static_cast<double>(b) + 0.5) / table.size()));
  return table;
}

// body(begin, end) over [0, count) split across the machine's threads.
template <class Body>
void parallel_for(std::size_t count, const Body& body) {
  const std::size_t threads = std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
  const std::size_t chunk = (count + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads && t * chunk < count; ++t)
    pool.emplace_back([&, t] { body(t * chunk, std::min(count, (t + 1) * chunk)); });
  for (auto& th : pool) th.join();
}

// Every finite code of the format in turn, 16 or 17 entries each.
std::array<std::uint8_t, 4096> finite_codes(fp8::format f) {
  std::vector<std::uint8_t> finite;
  for (int c = 0; c < 256; ++c)
    if (std::isfinite(fp8::decode(f, static_cast<std::uint8_t>(c)))) finite.push_back(static_cast<std::uint8_t>(c));
  std::array<std::uint8_t, 4096> table{};
  for (std::size_t b = 0; b < table.size(); ++b) table[b] = finite[b % finite.size()];
  return table;
}

void fill_codes(std::vector<std::uint8_t>& codes, fp8::format f, bool every_code, std::uint64_t stream) {
  const auto table = every_code ? finite_codes(f) : quantile_codes(f);
  parallel_for(codes.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t e = begin; e < end; ++e) codes[e] = table[random(stream, e) & 4095];
  });
}

void set_windows(owned_problem& p, layout windows, std::uint64_t stream) {
  const auto n = static_cast<std::int32_t>(p.n);
  for (std::int64_t i = 0; i < p.m; ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (windows == layout::causal) {
      p.ks[at] = 0;
      p.ke[at] = static_cast<std::int32_t>(std::max<std::int64_t>(0, p.n - p.m + i + 1));
      continue;
    }
    const std::uint64_t r = random(stream, static_cast<std::uint64_t>(i));
    const auto a = static_cast<std::int32_t>(r % static_cast<std::uint64_t>(n + 1));
    const auto b = static_cast<std::int32_t>((r >> 32) % static_cast<std::uint64_t>(n + 1));
    switch (i % 6) {
      case 0: p.ks[at] = std::min(a, b); p.ke[at] = std::max(a, b); break;  // ordinary, unaligned
      case 1: p.ks[at] = a; p.ke[at] = a; break;                            // empty
      case 2: p.ks[at] = std::max(a, b); p.ke[at] = std::min(a, b) - 1; break;  // ks > ke
      case 3: p.ks[at] = -7; p.ke[at] = a; break;                           // ks < 0
      case 4: p.ks[at] = a; p.ke[at] = n + 9; break;                        // ke > n
      default: p.ks[at] = a / 2 + 1; p.ke[at] = n - a / 3; break;          // ks > 0, ke < n
    }
  }
}

}  // namespace

owned_problem make_problem(const problem_spec& s) {
  owned_problem p;
  p.name = s.name;
  p.m = s.m;
  p.n = s.n;
  p.heads = s.heads;
  p.head_dim = s.head_dim;
  p.stride = s.stride == 0 ? s.n : s.stride;
  p.q_format = s.q_format;
  p.k_format = s.k_format;
  p.q.resize(static_cast<std::size_t>(s.m * s.heads * s.head_dim));
  p.k.resize(static_cast<std::size_t>(s.n * s.head_dim));
  p.k_scale.resize(static_cast<std::size_t>(s.n));
  p.weights.resize(static_cast<std::size_t>(s.m * s.heads));
  p.ks.resize(static_cast<std::size_t>(s.m));
  p.ke.resize(static_cast<std::size_t>(s.m));
  fill_codes(p.q, s.q_format, s.every_code, s.seed * 8 + 1);
  fill_codes(p.k, s.k_format, s.every_code, s.seed * 8 + 2);
  const double weight_scale = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(1, s.heads)));
  for (std::size_t e = 0; e < p.weights.size(); ++e)
    p.weights[e] = static_cast<float>(weight_scale * normal_quantile(uniform01(random(s.seed * 8 + 3, e))));
  for (std::size_t e = 0; e < p.k_scale.size(); ++e)
    p.k_scale[e] = static_cast<float>(std::exp2(2 * uniform01(random(s.seed * 8 + 4, e)) - 9));
  set_windows(p, s.windows, s.seed * 8 + 5);
  if (s.specials && s.m > 3 && s.n > 5) {
    const fp8::format_traits& qt = fp8::traits(s.q_format);
    const fp8::format_traits& kt = fp8::traits(s.k_format);
    const std::uint8_t q_nan = qt.nan == fp8::nan_encoding::negative_zero ? 0x80 : 0x7F;
    const std::uint8_t k_nan = kt.nan == fp8::nan_encoding::negative_zero ? 0x80 : 0xFF;
    p.q[static_cast<std::size_t>((2 * s.heads + 1) * s.head_dim + 3)] = q_nan;  // row 2, head 1
    p.k[static_cast<std::size_t>(4 * s.head_dim + 5)] = k_nan;                  // key 4
    p.k_scale[3] = INFINITY;                                                     // key 3
  }
  return p;
}

}  // namespace mqa::gpu_test
