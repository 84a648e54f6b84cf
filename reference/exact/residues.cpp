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

// Garner's digits of one dot, then x (residues.hpp). `load` gives S_i as a double.
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
    hi = low * plan.unit;
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
  hi = h * plan.unit;  // scaling by a power of two >= 2^-40 of integers: exact
  lo = l * plan.unit;
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
}

}  // namespace mqa::exact::detail

namespace mqa::exact::detail {
namespace {

// The same arithmetic on 8 dots at a time, for plans of at most two groups (every e4m3 pair): the
// operations and their order are reconstruct_with's, so the bits are the same.
template <int kModuliCount>
[[gnu::target("avx512f,avx512dq,avx512vl")]] void reconstruct_avx512(const residue_plan& plan, const std::int32_t* s,
                                                                    std::ptrdiff_t stride, std::int64_t count,
                                                                    double* hi) {
  static_assert(kModuliCount >= 1 && kModuliCount <= 6);
  constexpr int kGroups = (kModuliCount + 2) / 3;
  __m512d weight[kModuliCount];
  for (int i = 0; i < kModuliCount; ++i) weight[i] = _mm512_set1_pd(plan.weight[static_cast<std::size_t>(i)]);
  const __m512d p0 = _mm512_set1_pd(plan.group_product[0]), r0 = _mm512_set1_pd(plan.group_reciprocal[0]);
  const __m512d p1 = _mm512_set1_pd(plan.group_product[1]), r1 = _mm512_set1_pd(plan.group_reciprocal[1]);
  const __m512d c10 = _mm512_set1_pd(plan.carry[1][0]);
  const __m512d unit = _mm512_set1_pd(plan.unit);
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
    _mm512_storeu_pd(hi + j, _mm512_mul_pd(value, unit));
  }
  for (; j < count; ++j) {
    double lo = 0;
    reconstruct_one(plan, s + j, stride, hi[j], lo);
  }
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

}  // namespace

void reconstruct(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t modulus_stride, std::int64_t count,
                 double* hi, double* lo) {
  if (!plan.pairs && cpu_has_avx512()) {
    switch (plan.moduli) {
      case 1: return reconstruct_avx512<1>(plan, s, modulus_stride, count, hi);
      case 2: return reconstruct_avx512<2>(plan, s, modulus_stride, count, hi);
      case 3: return reconstruct_avx512<3>(plan, s, modulus_stride, count, hi);
      case 4: return reconstruct_avx512<4>(plan, s, modulus_stride, count, hi);
      case 5: return reconstruct_avx512<5>(plan, s, modulus_stride, count, hi);
      case 6: return reconstruct_avx512<6>(plan, s, modulus_stride, count, hi);
      default: break;
    }
  }
  for (std::int64_t j = 0; j < count; ++j) {
    double l = 0;
    reconstruct_one(plan, s + j, modulus_stride, hi[j], l);
    if (lo != nullptr) lo[j] = l;
  }
}

}  // namespace mqa::exact::detail
