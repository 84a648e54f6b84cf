#include "magnitude.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace mqa::exact::detail {
namespace {

// Rows [0, rows) (<= 8) against two groups of 8 keys: 16 accumulators, each query value broadcast
// once per depth for both groups.
template <int kRows>
[[gnu::target("avx512f")]] void fold_tile(const double* q_fold, std::int64_t dim, const float* group0,
                                          const float* group1, double* out0, double* out1, std::int64_t stride) {
  __m512d acc0[kRows], acc1[kRows];
  for (int r = 0; r < kRows; ++r) acc0[r] = _mm512_setzero_pd(), acc1[r] = _mm512_setzero_pd();
  for (std::int64_t d = 0; d < dim; ++d) {
    // The zero-masked conversion with every lane on: GCC 12 warns on the plain form's undefined start.
    const __m512d k0 = _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(group0 + d * 8));
    const __m512d k1 = _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(group1 + d * 8));
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512d q = _mm512_set1_pd(q_fold[r * dim + d]);
      acc0[r] = _mm512_fmadd_pd(q, k0, acc0[r]);
      acc1[r] = _mm512_fmadd_pd(q, k1, acc1[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_pd(out0 + r * stride, acc0[r]);
    _mm512_storeu_pd(out1 + r * stride, acc1[r]);
  }
}

template <int kRows>
[[gnu::target("avx512f")]] void fold_rows(const double* q_fold, const key_magnitudes& keys, std::int64_t key0,
                                          std::int64_t width, double* fold) {
  const std::int64_t dim = keys.head_dim, groups = (width + 7) / 8;
  const float* first = keys.values.data() + (key0 / 8) * dim * 8;
  double spill[2][kRows * 8];
  for (std::int64_t g = 0; g < groups; g += 2) {
    const bool whole = (g + 2) * 8 <= width;
    const float* g1 = first + std::min(g + 1, groups - 1) * dim * 8;
    if (whole) {
      fold_tile<kRows>(q_fold, dim, first + g * dim * 8, g1, fold + g * 8, fold + (g + 1) * 8, width);
    } else {  // the block's last, partial keys: through a small buffer
      fold_tile<kRows>(q_fold, dim, first + g * dim * 8, g1, spill[0], spill[1], 8);
      for (int r = 0; r < kRows; ++r)
        for (std::int64_t j = g * 8; j < width; ++j) fold[r * width + j] = spill[(j - g * 8) / 8][r * 8 + (j % 8)];
    }
  }
}

bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

}  // namespace

key_magnitudes pack_key_magnitudes(const std::vector<double>& abs_k, std::int64_t n, std::int64_t head_dim) {
  key_magnitudes keys;
  keys.head_dim = head_dim;
  keys.values.assign(static_cast<std::size_t>((n + 7) / 8 * 8 * head_dim), 0.0f);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t d = 0; d < head_dim; ++d)
      keys.values[static_cast<std::size_t>(((j / 8) * head_dim + d) * 8 + j % 8)] =
          static_cast<float>(abs_k[static_cast<std::size_t>(j * head_dim + d)]);  // exact
  return keys;
}

void fold_abt(const double* q_fold, std::int64_t rows, const key_magnitudes& keys, std::int64_t key0,
              std::int64_t width, double* fold) {
  if (width == 0) return;
  if (cpu_has_avx512f()) {
    for (std::int64_t r0 = 0; r0 < rows; r0 += 8) {
      const double* q = q_fold + r0 * keys.head_dim;
      double* out = fold + r0 * width;
      switch (std::min<std::int64_t>(8, rows - r0)) {
        case 1: fold_rows<1>(q, keys, key0, width, out); break;
        case 2: fold_rows<2>(q, keys, key0, width, out); break;
        case 3: fold_rows<3>(q, keys, key0, width, out); break;
        case 4: fold_rows<4>(q, keys, key0, width, out); break;
        case 5: fold_rows<5>(q, keys, key0, width, out); break;
        case 6: fold_rows<6>(q, keys, key0, width, out); break;
        case 7: fold_rows<7>(q, keys, key0, width, out); break;
        default: fold_rows<8>(q, keys, key0, width, out); break;
      }
    }
    return;
  }
  const std::int64_t dim = keys.head_dim;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < width; ++j) {
      const float* k = keys.values.data() + ((key0 + j) / 8) * dim * 8 + (key0 + j) % 8;
      double sum = 0;
      for (std::int64_t d = 0; d < dim; ++d) sum = std::fma(q_fold[r * dim + d], k[d * 8], sum);
      fold[r * width + j] = sum;
    }
}

}  // namespace mqa::exact::detail
