// Blocks of exact dot products by the int8 residue engine (residues.hpp): queries' and keys'
// residues packed for int8 dot products, the products per modulus into int32 sums, then the
// reconstruction into float64 (pairs).
//
// Two kernels compute the int32 sums, with the same (exact) result: AVX-512 VNNI (vpdpbusd on
// 8 rows x 32 keys of int32 accumulators) where the CPU has it, and a portable loop everywhere.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "residues.hpp"

namespace mqa::exact::detail {

// Depth padded to a multiple of 4 (a VNNI step multiplies 4 bytes); the padding holds residue 0.
inline std::int64_t residue_depth(std::int64_t head_dim) { return (head_dim + 3) / 4 * 4; }

// The keys' residues: for modulus i, key group g (16 keys), depth step t (4 values), 64 bytes
// [16 keys][4 depths] at bytes[((i * groups + g) * steps + t) * 64]. Keys past n hold 0.
struct packed_keys {
  std::int64_t groups = 0, steps = 0;
  std::vector<std::uint8_t> bytes;
  const std::uint8_t* group(int modulus, std::int64_t g) const {
    return bytes.data() + static_cast<std::size_t>(((modulus * groups + g) * steps) * 64);
  }
};

packed_keys pack_keys(const residue_plan& plan, std::span<const std::uint8_t> k_codes, std::int64_t n,
                      std::int64_t head_dim);

// Rows of codes [rows, head_dim] into residues [modulus][rows][residue_depth(head_dim)].
void pack_queries(const residue_plan& plan, const std::uint8_t* codes, std::int64_t rows, std::int64_t head_dim,
                  std::vector<std::int8_t>& out);

enum class residue_kernel : std::uint8_t { portable, avx512_vnni };
residue_kernel best_residue_kernel();  // avx512_vnni where the CPU has AVX-512 F, BW, VL and VNNI

// The int32 sums of one strip: S_i of strip row r and key j at row(r)[i * modulus_stride + j].
struct residue_scratch {
  std::vector<std::int32_t> sums;
  std::int64_t row_stride = 0, modulus_stride = 0;
  const std::int32_t* row(std::int64_t r) const { return sums.data() + r * row_stride; }
};

// The query rows one call of the kernels holds in registers: 8 rows x 32 keys of int32 sums (16
// zmm registers), the sums of a strip of a 512-key block 6 x 8 x 512 x 4 bytes = 96 KiB.
inline constexpr std::int64_t kResidueStrip = 8;

// The sums of rows [r0, r0 + strip) of `rows` query rows (strip <= kResidueStrip) with keys [key0,
// key0 + width), into scratch.
void residue_sums(const residue_plan& plan, residue_kernel kernel, const std::vector<std::int8_t>& queries,
                  std::int64_t rows, std::int64_t r0, std::int64_t strip, const packed_keys& keys, std::int64_t key0,
                  std::int64_t width, residue_scratch& scratch);

// Rows [r0, r0 + strip) of `rows` query rows (strip <= kResidueStrip) against keys [key0, key0 +
// width): hi[(r - r0) * width + j] (+ lo) as residue_abt gives them.
void residue_strip(const residue_plan& plan, residue_kernel kernel, const std::vector<std::int8_t>& queries,
                   std::int64_t rows, std::int64_t r0, std::int64_t strip, const packed_keys& keys, std::int64_t key0,
                   std::int64_t width, double* hi, double* lo, residue_scratch& scratch);

// hi[r * width + j] (+ lo[...] when plan.pairs) = the exact dot of query row r (of `rows`, residues
// from pack_queries) with key key0 + j, times plan.unit. key0 is a multiple of 16.
void residue_abt(const residue_plan& plan, residue_kernel kernel, const std::vector<std::int8_t>& queries,
                 std::int64_t rows, const packed_keys& keys, std::int64_t key0, std::int64_t width, double* hi,
                 double* lo, residue_scratch& scratch);

}  // namespace mqa::exact::detail
