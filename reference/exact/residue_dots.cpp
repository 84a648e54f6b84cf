#include "residue_dots.hpp"

#include <immintrin.h>

#include <algorithm>

namespace mqa::exact::detail {
namespace {

// The int32 sums of `rows` query rows (residues q, row stride `depth`) with keys of groups
// [g0, g0 + tile / 16) for one modulus: sums[r * sum_stride + j].
template <int kRows, int kGroups>
[[gnu::target("avx512f,avx512bw,avx512vl,avx512vnni")]] inline void vnni_tile(const std::int8_t* q, std::int64_t depth,
                                                                          const std::uint8_t* keys,
                                                                          std::int64_t group_bytes,
                                                                          std::int32_t* sums,
                                                                          std::int64_t sum_stride) {
  __m512i acc[kRows][kGroups];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < kGroups; ++c) acc[r][c] = _mm512_setzero_si512();
  const std::int64_t steps = depth / 4;
  for (std::int64_t t = 0; t < steps; ++t) {
    __m512i key[kGroups];
#pragma GCC unroll 2
    for (int c = 0; c < kGroups; ++c) key[c] = _mm512_loadu_si512(keys + c * group_bytes + t * 64);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      // vpdpbusd with the query's 4 bytes as an embedded broadcast operand: one instruction where
      // the intrinsics make a separate vpbroadcastd (2 to 3 % of the kernel's time).
      const std::int8_t* four = q + r * depth + t * 4;
#pragma GCC unroll 2
      for (int c = 0; c < kGroups; ++c)
        __asm__("vpdpbusd %2%{1to16%}, %1, %0"
                : "+v"(acc[r][c])
                : "v"(key[c]), "m"(*reinterpret_cast<const std::int32_t*>(four)));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < kGroups; ++c) _mm512_storeu_si512(sums + r * sum_stride + c * 16, acc[r][c]);
}

template <int kRows>
[[gnu::target("avx512f,avx512bw,avx512vl,avx512vnni")]] void vnni_strip(const std::int8_t* q, std::int64_t depth,
                                                                     const packed_keys& keys, int modulus,
                                                                     std::int64_t g0, std::int64_t groups,
                                                                     std::int32_t* sums, std::int64_t sum_stride) {
  const std::int64_t group_bytes = keys.steps * 64;
  std::int64_t g = 0;
  for (; g + 2 <= groups; g += 2)
    vnni_tile<kRows, 2>(q, depth, keys.group(modulus, g0 + g), group_bytes, sums + g * 16, sum_stride);
  if (g < groups) vnni_tile<kRows, 1>(q, depth, keys.group(modulus, g0 + g), group_bytes, sums + g * 16, sum_stride);
}

void vnni_sums(const std::int8_t* q, std::int64_t rows, std::int64_t depth, const packed_keys& keys, int modulus,
               std::int64_t g0, std::int64_t groups, std::int32_t* sums, std::int64_t sum_stride) {
  static_assert(kResidueStrip == 8);
  switch (rows) {
    case 1: return vnni_strip<1>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
    case 2: return vnni_strip<2>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
    case 3: return vnni_strip<3>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
    case 4: return vnni_strip<4>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
    case 5: return vnni_strip<5>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
    case 6: return vnni_strip<6>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
    case 7: return vnni_strip<7>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
    default: return vnni_strip<8>(q, depth, keys, modulus, g0, groups, sums, sum_stride);
  }
}

// The same sums by plain integer loops (any CPU).
void portable_sums(const std::int8_t* q, std::int64_t rows, std::int64_t depth, const packed_keys& keys, int modulus,
                   std::int64_t g0, std::int64_t groups, std::int32_t* sums, std::int64_t sum_stride) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int8_t* row = q + r * depth;
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::uint8_t* block = keys.group(modulus, g0 + g);
      std::int32_t acc[16] = {};
      for (std::int64_t t = 0; t < depth / 4; ++t)
        for (int lane = 0; lane < 16; ++lane)
          for (int u = 0; u < 4; ++u)
            acc[lane] += static_cast<std::int32_t>(block[t * 64 + lane * 4 + u]) * row[t * 4 + u];
      std::copy(acc, acc + 16, sums + r * sum_stride + g * 16);
    }
  }
}

}  // namespace

packed_keys pack_keys(const residue_plan& plan, std::span<const std::uint8_t> k_codes, std::int64_t n,
                      std::int64_t head_dim) {
  packed_keys keys;
  keys.groups = (n + 15) / 16;
  keys.steps = residue_depth(head_dim) / 4;
  keys.bytes.assign(static_cast<std::size_t>(plan.moduli * keys.groups * keys.steps * 64), 0);
  for (int i = 0; i < plan.moduli; ++i) {
    const auto& table = plan.k_residue[static_cast<std::size_t>(i)];
    for (std::int64_t j = 0; j < n; ++j) {
      std::uint8_t* block = keys.bytes.data() + static_cast<std::size_t>(((i * keys.groups + j / 16) * keys.steps) * 64);
      const std::uint8_t* codes = k_codes.data() + j * head_dim;
      for (std::int64_t d = 0; d < head_dim; ++d) block[(d / 4) * 64 + (j % 16) * 4 + d % 4] = table[codes[d]];
    }
  }
  return keys;
}

void pack_queries(const residue_plan& plan, const std::uint8_t* codes, std::int64_t rows, std::int64_t head_dim,
                  std::vector<std::int8_t>& out) {
  const std::int64_t depth = residue_depth(head_dim);
  out.assign(static_cast<std::size_t>(plan.moduli * rows * depth), 0);
  for (int i = 0; i < plan.moduli; ++i) {
    const auto& table = plan.q_residue[static_cast<std::size_t>(i)];
    std::int8_t* plane = out.data() + static_cast<std::size_t>(i * rows * depth);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t d = 0; d < head_dim; ++d) plane[r * depth + d] = table[codes[r * head_dim + d]];
  }
}

residue_kernel best_residue_kernel() {
  static const residue_kernel best =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
              __builtin_cpu_supports("avx512vnni")
          ? residue_kernel::avx512_vnni
          : residue_kernel::portable;
  return best;
}

void residue_sums(const residue_plan& plan, residue_kernel kernel, const std::vector<std::int8_t>& queries,
                  std::int64_t rows, std::int64_t r0, std::int64_t strip, const packed_keys& keys, std::int64_t key0,
                  std::int64_t width, residue_scratch& scratch) {
  const std::int64_t depth = keys.steps * 4;
  const std::int64_t g0 = key0 / 16, groups = (width + 15) / 16;
  scratch.row_stride = groups * 16;
  scratch.modulus_stride = kResidueStrip * scratch.row_stride;
  scratch.sums.resize(static_cast<std::size_t>(plan.moduli * scratch.modulus_stride));
  if (strip == 0 || width == 0) return;
  for (int i = 0; i < plan.moduli; ++i) {
    const std::int8_t* q = queries.data() + static_cast<std::size_t>((i * rows + r0) * depth);
    std::int32_t* sums = scratch.sums.data() + static_cast<std::size_t>(i * scratch.modulus_stride);
    if (kernel == residue_kernel::avx512_vnni)
      vnni_sums(q, strip, depth, keys, i, g0, groups, sums, scratch.row_stride);
    else
      portable_sums(q, strip, depth, keys, i, g0, groups, sums, scratch.row_stride);
  }
}

void residue_strip(const residue_plan& plan, residue_kernel kernel, const std::vector<std::int8_t>& queries,
                   std::int64_t rows, std::int64_t r0, std::int64_t strip, const packed_keys& keys, std::int64_t key0,
                   std::int64_t width, double* hi, double* lo, residue_scratch& scratch) {
  residue_sums(plan, kernel, queries, rows, r0, strip, keys, key0, width, scratch);
  for (std::int64_t r = 0; r < strip; ++r) {
    const auto out = static_cast<std::size_t>(r * width);
    reconstruct(plan, scratch.row(r), scratch.modulus_stride, width, hi + out, lo != nullptr ? lo + out : nullptr);
  }
}

void residue_abt(const residue_plan& plan, residue_kernel kernel, const std::vector<std::int8_t>& queries,
                 std::int64_t rows, const packed_keys& keys, std::int64_t key0, std::int64_t width, double* hi,
                 double* lo, residue_scratch& scratch) {
  for (std::int64_t r0 = 0; r0 < rows; r0 += kResidueStrip) {
    const auto out = static_cast<std::size_t>(r0 * width);
    residue_strip(plan, kernel, queries, rows, r0, std::min(kResidueStrip, rows - r0), keys, key0, width, hi + out,
                  lo != nullptr ? lo + out : nullptr, scratch);
  }
}

}  // namespace mqa::exact::detail
