#include "residues.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace mqa::exact::detail {
namespace {

using u128 = unsigned __int128;

std::int64_t modulo(std::int64_t a, std::int64_t p) {
  const std::int64_t r = a % p;
  return r < 0 ? r + p : r;
}

// a^-1 mod p (gcd(a, p) = 1), by the extended Euclidean algorithm.
std::int64_t inverse(std::int64_t a, std::int64_t p) {
  std::int64_t r0 = p, r1 = modulo(a, p), t0 = 0, t1 = 1;
  while (r1 != 0) {
    const std::int64_t quotient = r0 / r1;
    const std::int64_t r2 = r0 - quotient * r1, t2 = t0 - quotient * t1;
    r0 = r1, r1 = r2, t0 = t1, t1 = t2;
  }
  return modulo(t0, p);
}

struct group_span {
  int begin, end;
};
group_span group_of(int g, int moduli) { return {3 * g, std::min(3 * g + 3, moduli)}; }

// v = y reduced modulo P to about (-P/2, P/2]: exact for any integer n near y / P (residues.hpp).
inline double balanced(double y, double product, double reciprocal) {
  return std::fma(-std::nearbyint(y * reciprocal), product, y);
}

// Garner's digits of one dot, then x = hi + lo in integer units (residues.hpp). `load` gives S_i as
// a double.
template <class Load>
inline void reconstruct_with(const residue_plan& plan, Load&& load, double& hi, double& lo) {
  std::array<double, kMaxGroups> v{};
  for (int g = 0; g < plan.groups; ++g) {
    const group_span span = group_of(g, plan.moduli);
    double y = 0;
    for (int i = span.begin; i < span.end; ++i) y = std::fma(load(i), plan.weight[static_cast<std::size_t>(i)], y);
    for (int h = 0; h < g; ++h) y = std::fma(-plan.carry[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)], v[static_cast<std::size_t>(h)], y);
    v[static_cast<std::size_t>(g)] = balanced(y, plan.group_product[static_cast<std::size_t>(g)],
                                              plan.group_reciprocal[static_cast<std::size_t>(g)]);
  }
  const double low = plan.groups > 1 ? std::fma(plan.group_product[0], v[1], v[0]) : v[0];
  if (!plan.pairs) {
    hi = low;
    lo = 0;
    return;
  }
  const double high = plan.groups > 3 ? std::fma(plan.group_product[2], v[3], v[2]) : v[2];
  const double scale = plan.group_product[0] * plan.group_product[1];  // < 2^48: exact
  const double p = scale * high;
  const double e = std::fma(scale, high, -p);  // p + e = scale * high exactly
  const double s = low + p;                    // TwoSum(low, p) = s + t
  const double b = s - low;
  const double t = (low - (s - b)) + (p - b);
  const double rest = t + e;  // integers below 2^44: exact
  const double h = s + rest;  // TwoSum(s, rest) = h + l = x, h = RN(x)
  const double b2 = h - s;
  const double l = (s - (h - b2)) + (rest - b2);
  hi = h;
  lo = l;
}

}  // namespace

std::optional<residue_plan> make_residue_plan(const code_table& q, const code_table& k, std::int64_t head_dim) {
  if (head_dim > kMaxResidueDepth) return std::nullopt;
  // B = max|q| max|k| D: both maxima are below 2^62 and D <= 2^16, and for the formats that reach
  // this engine below 2^34 (e5m2fnuz), so B < 2^84; the check keeps any table honest.
  u128 bound = static_cast<u128>(q.max_units) * static_cast<u128>(k.max_units);
  if (__builtin_mul_overflow(bound, static_cast<u128>(std::max<std::int64_t>(head_dim, 1)), &bound) ||
      bound >= (u128{1} << 100))
    return std::nullopt;
  const u128 needed = 2 * bound + bound / 8;
  residue_plan plan;
  u128 product = 1;
  while (product < needed || plan.moduli == 0) {
    if (plan.moduli == kMaxModuli) return std::nullopt;
    product *= static_cast<u128>(kModuli[static_cast<std::size_t>(plan.moduli)]);
    ++plan.moduli;
  }
  plan.groups = (plan.moduli + 2) / 3;
  plan.pairs = plan.groups > 2;
  plan.unit = q.unit * k.unit;

  std::array<std::int64_t, kMaxGroups> group_product{};
  for (int g = 0; g < plan.groups; ++g) {
    const group_span span = group_of(g, plan.moduli);
    std::int64_t pg = 1;
    for (int i = span.begin; i < span.end; ++i) pg *= kModuli[static_cast<std::size_t>(i)];
    group_product[static_cast<std::size_t>(g)] = pg;
    plan.group_product[static_cast<std::size_t>(g)] = static_cast<double>(pg);
    plan.group_reciprocal[static_cast<std::size_t>(g)] = 1.0 / static_cast<double>(pg);
  }
  for (int g = 0; g < plan.groups; ++g) {
    const group_span span = group_of(g, plan.moduli);
    const std::int64_t pg = group_product[static_cast<std::size_t>(g)];
    std::int64_t below = 1;  // prod_{l<g} P_l mod P_g
    for (int l = 0; l < g; ++l) below = below * group_product[static_cast<std::size_t>(l)] % pg;
    const std::int64_t below_inverse = inverse(below, pg);
    std::int64_t partial = 1;  // prod_{l<h} P_l mod P_g
    for (int h = 0; h < g; ++h) {
      plan.carry[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)] =
          static_cast<double>(static_cast<std::int64_t>(static_cast<u128>(partial) * below_inverse % pg));
      partial = partial * group_product[static_cast<std::size_t>(h)] % pg;
    }
    for (int i = span.begin; i < span.end; ++i) {
      const std::int64_t p = kModuli[static_cast<std::size_t>(i)];
      const std::int64_t cofactor = pg / p;
      plan.weight[static_cast<std::size_t>(i)] = static_cast<double>(cofactor);
      const std::int64_t factor = inverse(cofactor % p * (below % p) % p, p);  // f_i
      for (unsigned code = 0; code < 256; ++code) {
        const std::int64_t qu = modulo(modulo(q.units[code], p) * factor, p);
        const std::int64_t balanced_q = qu >= (p + 1) / 2 ? qu - p : qu;  // p = 256: [-128, 127]
        plan.q_residue[static_cast<std::size_t>(i)][code] = static_cast<std::int8_t>(balanced_q);
        plan.k_residue[static_cast<std::size_t>(i)][code] = static_cast<std::uint8_t>(modulo(k.units[code], p));
      }
    }
  }
  return plan;
}

void reconstruct_one(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t modulus_stride, double& hi,
                     double& lo) {
  reconstruct_with(plan, [&](int i) { return static_cast<double>(s[i * modulus_stride]); }, hi, lo);
  hi *= plan.unit;  // scaling integers by a power of two >= 2^-40: exact
  lo *= plan.unit;
}

}  // namespace mqa::exact::detail

namespace mqa::exact::detail {
namespace {

// Dot j by reconstruct_with, element by element: stored as hi[j] (and lo[j] where lo is given), or
// with kInto added into a head-sum state as w relu(x) (a pair hi + lo as two terms, head_sum_add's
// relu on the pair). The vectorized kernels' tails and the fallbacks share it.
template <bool kInto>
inline void reconstruct_element(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t stride, std::int64_t j,
                                double* hi, double* lo, double w, double* sum, double* magnitude) {
  double h = 0, l = 0;
  reconstruct_with(plan, [&](int i) { return static_cast<double>(s[i * stride + j]); }, h, l);
  if constexpr (kInto) {
    const bool positive = h > 0;
    const double r = positive ? h : 0.0, rl = positive ? l : 0.0;
    sum[j] = std::fma(w, r, sum[j]);
    magnitude[j] = std::fma(std::fabs(w), r, magnitude[j]);
    if (plan.pairs) {
      sum[j] = std::fma(w, rl, sum[j]);
      magnitude[j] = std::fma(std::fabs(w), std::fabs(rl), magnitude[j]);
    }
  } else {
    hi[j] = h * plan.unit;  // scaling integers by a power of two >= 2^-40: exact
    if (lo != nullptr) lo[j] = l * plan.unit;
  }
}

// The same arithmetic on 8 dots at a time, for plans of at most two groups (every e4m3 pair): the
// operations and their order are reconstruct_with's, so the values are the same. kInto: add
// w relu(x) into a head-sum state (in units) instead of storing x * unit.
template <int kModuliCount, bool kInto>
[[gnu::target("avx512f,avx512dq,avx512vl")]] void reconstruct_avx512(const residue_plan& plan, const std::int32_t* s,
                                                                    std::ptrdiff_t stride, std::int64_t count,
                                                                    double* hi, double w, double* sum,
                                                                    double* magnitude) {
  static_assert(kModuliCount >= 1 && kModuliCount <= 6);
  constexpr int kGroups = (kModuliCount + 2) / 3;
  __m512d weight[kModuliCount];
  for (int i = 0; i < kModuliCount; ++i) weight[i] = _mm512_set1_pd(plan.weight[static_cast<std::size_t>(i)]);
  const __m512d p0 = _mm512_set1_pd(plan.group_product[0]), r0 = _mm512_set1_pd(plan.group_reciprocal[0]);
  const __m512d p1 = _mm512_set1_pd(plan.group_product[1]), r1 = _mm512_set1_pd(plan.group_reciprocal[1]);
  const __m512d c10 = _mm512_set1_pd(plan.carry[1][0]);
  const __m512d unit = _mm512_set1_pd(plan.unit);
  const __m512d head_weight = _mm512_set1_pd(w), abs_weight = _mm512_set1_pd(std::fabs(w));
  const __m512d zero = _mm512_setzero_pd();
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  // The zero-masked forms with every lane on: the plain ones start from an undefined vector, which
  // GCC 12 reports as maybe-uninitialized.
  constexpr __mmask8 kAll = 0xFF;
  std::int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    __m512d x[kModuliCount];
    for (int i = 0; i < kModuliCount; ++i)
      x[i] = _mm512_maskz_cvtepi32_pd(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i * stride + j)));
    __m512d y = _mm512_setzero_pd();
    for (int i = 0; i < std::min(kModuliCount, 3); ++i) y = _mm512_fmadd_pd(x[i], weight[i], y);
    const __m512d v0 = _mm512_fnmadd_pd(_mm512_maskz_roundscale_pd(kAll, _mm512_mul_pd(y, r0), kNearest), p0, y);
    __m512d value = v0;
    if constexpr (kGroups == 2) {
      __m512d z = _mm512_setzero_pd();
      for (int i = 3; i < kModuliCount; ++i) z = _mm512_fmadd_pd(x[i], weight[i], z);
      z = _mm512_fnmadd_pd(c10, v0, z);
      const __m512d v1 = _mm512_fnmadd_pd(_mm512_maskz_roundscale_pd(kAll, _mm512_mul_pd(z, r1), kNearest), p1, z);
      value = _mm512_fmadd_pd(p0, v1, v0);
    }
    if constexpr (kInto) {
      // relu as head_sum_add has it: the dot where it is > 0, else 0.
      const __m512d r = _mm512_maskz_max_pd(kAll, value, zero);  // x > 0 ? x : +0 (max returns its second operand on ties)
      _mm512_storeu_pd(sum + j, _mm512_fmadd_pd(head_weight, r, _mm512_loadu_pd(sum + j)));
      _mm512_storeu_pd(magnitude + j, _mm512_fmadd_pd(abs_weight, r, _mm512_loadu_pd(magnitude + j)));
    } else {
      _mm512_storeu_pd(hi + j, _mm512_mul_pd(value, unit));
    }
  }
  for (; j < count; ++j) reconstruct_element<kInto>(plan, s, stride, j, hi, nullptr, w, sum, magnitude);
}

// The same on 4 dots at a time with AVX2 and FMA, for CPUs without AVX-512.
template <int kModuliCount, bool kInto>
[[gnu::target("avx2,fma")]] void reconstruct_avx2(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t stride,
                                                 std::int64_t count, double* hi, double w, double* sum,
                                                 double* magnitude) {
  static_assert(kModuliCount >= 1 && kModuliCount <= 6);
  constexpr int kGroups = (kModuliCount + 2) / 3;
  __m256d weight[kModuliCount];
  for (int i = 0; i < kModuliCount; ++i) weight[i] = _mm256_set1_pd(plan.weight[static_cast<std::size_t>(i)]);
  const __m256d p0 = _mm256_set1_pd(plan.group_product[0]), r0 = _mm256_set1_pd(plan.group_reciprocal[0]);
  const __m256d p1 = _mm256_set1_pd(plan.group_product[1]), r1 = _mm256_set1_pd(plan.group_reciprocal[1]);
  const __m256d c10 = _mm256_set1_pd(plan.carry[1][0]);
  const __m256d unit = _mm256_set1_pd(plan.unit);
  const __m256d head_weight = _mm256_set1_pd(w), abs_weight = _mm256_set1_pd(std::fabs(w));
  const __m256d zero = _mm256_setzero_pd();
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  std::int64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    __m256d x[kModuliCount];
    for (int i = 0; i < kModuliCount; ++i)
      x[i] = _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i * stride + j)));
    __m256d y = _mm256_mul_pd(x[0], weight[0]);
    for (int i = 1; i < std::min(kModuliCount, 3); ++i) y = _mm256_fmadd_pd(x[i], weight[i], y);
    const __m256d v0 = _mm256_fnmadd_pd(_mm256_round_pd(_mm256_mul_pd(y, r0), kNearest), p0, y);
    __m256d value = v0;
    if constexpr (kGroups == 2) {
      __m256d z = _mm256_fnmadd_pd(c10, v0, _mm256_mul_pd(x[3], weight[3]));
      for (int i = 4; i < kModuliCount; ++i) z = _mm256_fmadd_pd(x[i], weight[i], z);
      const __m256d v1 = _mm256_fnmadd_pd(_mm256_round_pd(_mm256_mul_pd(z, r1), kNearest), p1, z);
      value = _mm256_fmadd_pd(p0, v1, v0);
    }
    if constexpr (kInto) {
      const __m256d r = _mm256_max_pd(value, zero);  // relu: x > 0 ? x : +0 (max returns its second operand on ties)
      _mm256_storeu_pd(sum + j, _mm256_fmadd_pd(head_weight, r, _mm256_loadu_pd(sum + j)));
      _mm256_storeu_pd(magnitude + j, _mm256_fmadd_pd(abs_weight, r, _mm256_loadu_pd(magnitude + j)));
    } else {
      _mm256_storeu_pd(hi + j, _mm256_mul_pd(value, unit));
    }
  }
  for (; j < count; ++j) reconstruct_element<kInto>(plan, s, stride, j, hi, nullptr, w, sum, magnitude);
}

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

// The vectorized forms cover plans of one or two groups (<= 6 moduli: every e4m3 pair at D <= 2^16),
// with AVX-512 (measured 1.2x faster here in context) or AVX2 and FMA; everything else goes element
// by element. All compute the same exact values.
template <bool kInto>
bool reconstruct_vectorized(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t stride,
                            std::int64_t count, double* hi, double w, double* sum, double* magnitude) {
  if (plan.pairs) return false;
  if (cpu_has_avx512()) {
    switch (plan.moduli) {
      case 1: reconstruct_avx512<1, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 2: reconstruct_avx512<2, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 3: reconstruct_avx512<3, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 4: reconstruct_avx512<4, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 5: reconstruct_avx512<5, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 6: reconstruct_avx512<6, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      default: return false;
    }
  }
  if (cpu_has_avx2_fma()) {
    switch (plan.moduli) {
      case 1: reconstruct_avx2<1, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 2: reconstruct_avx2<2, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 3: reconstruct_avx2<3, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 4: reconstruct_avx2<4, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 5: reconstruct_avx2<5, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      case 6: reconstruct_avx2<6, kInto>(plan, s, stride, count, hi, w, sum, magnitude); return true;
      default: return false;
    }
  }
  return false;
}

}  // namespace

void reconstruct(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t modulus_stride, std::int64_t count,
                 double* hi, double* lo) {
  if (reconstruct_vectorized<false>(plan, s, modulus_stride, count, hi, 0, nullptr, nullptr)) {
    if (lo != nullptr) std::fill_n(lo, count, 0.0);  // the vectorized plans have no pairs: lo = 0
    return;
  }
  for (std::int64_t j = 0; j < count; ++j)
    reconstruct_element<false>(plan, s, modulus_stride, j, hi, lo, 0, nullptr, nullptr);
}

void reconstruct_into(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t modulus_stride,
                      std::int64_t count, float weight, double* sum, double* magnitude) {
  const double w = weight;
  if (reconstruct_vectorized<true>(plan, s, modulus_stride, count, nullptr, w, sum, magnitude)) return;
  for (std::int64_t j = 0; j < count; ++j)
    reconstruct_element<true>(plan, s, modulus_stride, j, nullptr, nullptr, w, sum, magnitude);
}

}  // namespace mqa::exact::detail
