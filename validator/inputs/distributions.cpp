#include "distributions.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mqa::inputs {
namespace {

// The mean of standard_normal's sum of twelve 32-bit uniforms: 12 * (2^32 - 1) / 2.
constexpr std::int64_t kSumMean = 6 * ((std::int64_t{1} << 32) - 1);

}  // namespace

double standard_normal(const counter_rng& rng, std::uint64_t index) {
  // Six 64-bit draws give the twelve 32-bit uniforms.
  std::int64_t sum = 0;
  for (std::uint64_t t = 0; t < 6; ++t) {
    const std::uint64_t b = rng.bits(6 * index + t);
    sum += static_cast<std::int64_t>(b & 0xFFFFFFFFu) + static_cast<std::int64_t>(b >> 32);
  }
  return static_cast<double>(sum - kSumMean) * 0x1p-32;  // |sum - mean| < 2^36: exact
}

double uniform_signed(const counter_rng& rng, std::uint64_t index) {
  const auto u = static_cast<std::int64_t>(rng.bits(index) >> 11);  // [0, 2^53)
  return static_cast<double>(u - (std::int64_t{1} << 52)) * 0x1p-52;
}

namespace {

using filler = void (*)(const counter_rng&, std::span<float>, std::int64_t, std::uint64_t);

#if defined(__x86_64__)
// Every lane on, for the zero-masked forms of the intrinsics: the plain ones start from an
// undefined vector, which GCC 12 reports as maybe-uninitialized.
constexpr __mmask8 kAllLanes = 0xFF;

// mix64 in eight lanes: the same integer steps.
[[gnu::target("avx512f,avx512dq")]] inline __m512i mix64_lanes(__m512i z) {
  z = _mm512_add_epi64(z, _mm512_set1_epi64(static_cast<long long>(0x9E3779B97F4A7C15u)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_maskz_srli_epi64(kAllLanes, z, 30)),
                         _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9u)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_maskz_srli_epi64(kAllLanes, z, 27)),
                         _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBu)));
  return _mm512_xor_si512(z, _mm512_maskz_srli_epi64(kAllLanes, z, 31));
}

// standard_normal at eight indices at a time, where the CPU has AVX-512 F and DQ (64-bit products
// and int64 -> double): the same integer sums, the same exact conversion and scaling (|sum - mean|
// < 2^36), and the one rounding to float under the same rounding mode, so the same bits. Returns
// how many values it filled (a multiple of 8); the rest are left to the caller.
[[gnu::target("avx512f,avx512dq")]] std::size_t normal_avx512(const counter_rng& rng, std::span<float> values,
                                                              std::uint64_t first) {
  const __m512i key = _mm512_set1_epi64(static_cast<long long>(rng.key()));
  const __m512i low_half = _mm512_set1_epi64(0xFFFFFFFFll);
  const __m512i mean = _mm512_set1_epi64(kSumMean);
  const __m512d unit = _mm512_set1_pd(0x1p-32);
  const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  std::size_t i = 0;
  for (; i + 8 <= values.size(); i += 8) {
    // Draw 6 * index + t of each lane's index.
    const __m512i index = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first + i)), lane);
    const __m512i base = _mm512_mullo_epi64(index, _mm512_set1_epi64(6));
    __m512i sum = _mm512_setzero_si512();
    for (long long t = 0; t < 6; ++t) {
      const __m512i b = mix64_lanes(_mm512_xor_si512(key, mix64_lanes(_mm512_add_epi64(base, _mm512_set1_epi64(t)))));
      sum = _mm512_add_epi64(sum, _mm512_add_epi64(_mm512_and_si512(b, low_half), _mm512_maskz_srli_epi64(kAllLanes, b, 32)));
    }
    const __m512d x = _mm512_mul_pd(_mm512_maskz_cvtepi64_pd(kAllLanes, _mm512_sub_epi64(sum, mean)), unit);
    _mm256_storeu_ps(values.data() + i, _mm512_maskz_cvtpd_ps(kAllLanes, x));
  }
  return i;
}

bool cpu_has_avx512dq() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return has;
}
#endif

void normal(const counter_rng& rng, std::span<float> values, std::int64_t, std::uint64_t first) {
  std::size_t done = 0;
#if defined(__x86_64__)
  if (cpu_has_avx512dq()) done = normal_avx512(rng, values, first);
#endif
  for (std::size_t i = done; i < values.size(); ++i) values[i] = static_cast<float>(standard_normal(rng, first + i));
}

void uniform(const counter_rng& rng, std::span<float> values, std::int64_t, std::uint64_t first) {
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(uniform_signed(rng, first + i));
}

void outliers(const counter_rng& rng, std::span<float> values, std::int64_t, std::uint64_t first) {
  const counter_rng which = rng.fork(1);
  for (std::size_t at = 0; at < values.size(); ++at) {
    const std::uint64_t i = first + at;
    double v = standard_normal(rng, i);
    if (which.below(2 * i, 64) == 0) {
      const auto exponent = 4 + static_cast<int>(which.below(2 * i + 1, 7));
      v *= static_cast<double>(std::uint64_t{1} << exponent);  // exact
    }
    values[at] = static_cast<float>(v);
  }
}

void near_ties(const counter_rng& rng, std::span<float> values, std::int64_t row_length, std::uint64_t first) {
  const auto d = static_cast<std::size_t>(row_length);
  std::vector<float> base(d);
  for (std::size_t j = 0; j < d; ++j) base[j] = static_cast<float>(standard_normal(rng, j));
  std::size_t largest = 0;
  for (std::size_t j = 1; j < d; ++j)
    if (std::abs(base[j]) > std::abs(base[largest])) largest = j;  // |x| is exact: no libm rounding
  const counter_rng moves = rng.fork(1);
  const std::size_t rows = values.size() / d;
  for (std::size_t local = 0; local < rows; ++local) {
    const std::uint64_t r = first / d + local;
    std::copy(base.begin(), base.end(), values.begin() + static_cast<std::ptrdiff_t>(local * d));
    if (d < 2 || moves.below(3 * r, 4) == 0) continue;  // an exact copy: logits tie exactly
    std::size_t j = moves.below(3 * r + 1, d - 1);
    if (j >= largest) ++j;  // the largest element sets the scale: keep it
    const double step = (moves.bits(3 * r + 2) & 1) ? 0.125 : -0.125;
    values[local * d + j] = static_cast<float>(static_cast<double>(base[j]) * (1.0 + step));
  }
}

// Indexed by cases::distribution.
constexpr std::array<filler, 4> kFillers{normal, uniform, outliers, near_ties};

}  // namespace

void fill(cases::distribution d, bool keys, const counter_rng& rng, std::span<float> values, std::int64_t row_length,
          std::uint64_t first) {
  if (d == cases::distribution::near_ties && !keys) d = cases::distribution::normal;
  kFillers[static_cast<std::size_t>(d)](rng, values, row_length, first);
}

}  // namespace mqa::inputs
