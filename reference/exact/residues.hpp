// Exact dot products from 8-bit residues: the int8 engine.
//
// Every finite fp8 value is an integer number of its format's unit (codes.hpp), so a dot product
// x = sum_d q_d k_d is an integer number of unit_q * unit_k with |x| <= B = max|q| max|k| D. For a
// modulus p <= 256, the residues q mod p and k mod p fit one byte each (q balanced in [-128, 127],
// k in [0, p)), and S = sum_d (q_d mod p)(k_d mod p) is a plain int8 dot product accumulated in
// int32 without overflow (|S| <= D * 128 * 255 < 2^31 for D <= 2^16), with S = x (mod p). Given S
// for pairwise coprime moduli whose product M exceeds 2B with room to spare, the Chinese remainder
// theorem gives x exactly. The int8 dots run on AVX-512 VNNI (vpdpbusd: 64 multiply-adds per
// instruction, 8 times float64 FMA's rate on this hardware); e4m3 at D = 128 needs 6 moduli.
//
// Reconstruction (all in float64, every operation exact except the one rounding noted):
//   The moduli are taken three at a time: group g has moduli p_i, i in G_g, and product
//   P_g <= 2^24. q's residues carry a factor f_i = ((P_g / p_i) * prod_{l<g} P_l)^-1 mod p_i, so
//   that T_g = sum_{i in G_g} S_i (P_g / p_i) = x (prod_{l<g} P_l)^-1 (mod P_g) (CRT in the group).
//   Mixed-radix (Garner) digits: v_g = T_g - sum_{h<g} C_{g,h} v_h reduced to (-P_g/2, P_g/2] (about),
//   with C_{g,h} = prod_{l<h} P_l * (prod_{l<g} P_l)^-1 mod P_g; then x' = sum_g v_g prod_{l<g} P_l
//   is congruent to x modulo M = prod_g P_g.
//   Exactness: |S_i| < 2^31, P_g / p_i <= 2^16, |C v| <= 2^24 * 2^23 (1 + 2^-8): every product is an
//   integer below 2^47, every sum below 2^50: exact in float64. The reduction v = y - P n with
//   n = nearbyint(y * fl(1 / P)) is exact for any integer n near y / P (n P <= 2^51); the rounding of
//   y * fl(1/P) (relative 2^-52, |y / P| <= 2^43) only moves n when y / P lies within 2^-9 of a
//   half-integer, so |v_g| <= P_g (1/2 + 2^-9).
//   Uniqueness: then |x'| <= (1/2 + 2^-9) sum_g prod_{l<=g} P_l <= 0.509 M (every group product is
//   at least 2^7.6, so the partial products add at most 2^-7.5 M). The plan requires M >= 2B + B/8,
//   so |x - x'| <= B + 0.509 M < M, and x' = x.
//   Evaluation: with at most two groups (M < 2^48) x = v_0 + P_0 v_1 is one exact fma. With three
//   or four, x = A + P_0 P_1 W (A = v_0 + P_0 v_1, W = v_2 + P_2 v_3, both exact below 2^48) is
//   formed as the float64 pair hi = RN(x), lo = x - hi by TwoProduct and TwoSum: every error term is
//   an integer below 2^44, so their sum is exact, and the last TwoSum returns the pair.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "codes.hpp"
#include "head_sum.hpp"

namespace mqa::exact::detail {

inline constexpr int kMaxModuli = 12;
inline constexpr int kMaxGroups = 4;
inline constexpr std::int64_t kMaxResidueDepth = std::int64_t{1} << 16;

// The moduli, pairwise coprime, each <= 256, largest first: 256 = 2^8, 255 = 3 5 17,
// 253 = 11 23, 247 = 13 19, 217 = 7 31, the rest primes. Products: 6 of them 2^47.8, 12 2^94.9.
inline constexpr std::array<std::int32_t, kMaxModuli> kModuli{256, 255, 253, 251, 247, 241,
                                                              239, 233, 229, 227, 223, 217};

struct residue_plan {
  int moduli = 0;  // the first `moduli` of kModuli
  int groups = 0;  // ceil(moduli / 3)
  std::array<double, kMaxGroups> group_product{};    // P_g
  std::array<double, kMaxGroups> group_reciprocal{};  // fl(1 / P_g)
  std::array<double, kMaxModuli> weight{};            // P_g / p_i for modulus i of group g
  std::array<std::array<double, kMaxGroups>, kMaxGroups> carry{};  // C_{g,h}, h < g
  double unit = 0;       // unit_q * unit_k: the value of one unit of a dot
  bool pairs = false;    // three groups or more: dots are hi + lo pairs
  // Residue tables per modulus: q's balanced residue times f_i, k's residue in [0, p). Non-finite
  // codes count as 0, as in the other engines (special.hpp settles their elements).
  std::array<std::array<std::int8_t, 256>, kMaxModuli> q_residue{};
  std::array<std::array<std::uint8_t, 256>, kMaxModuli> k_residue{};
};

// The fewest moduli whose product M satisfies M >= 2B + B/8 for B = max|q| max|k| head_dim in
// units; nullopt when head_dim exceeds 2^16 (int32 accumulation) or 12 moduli do not suffice.
std::optional<residue_plan> make_residue_plan(const code_table& q, const code_table& k, std::int64_t head_dim);

// x (one dot, exactly) from its residue sums s[i] = S_i, i < plan.moduli, as the float64 pair
// hi + lo = x * unit (lo = 0 unless plan.pairs).
void reconstruct_one(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t modulus_stride, double& hi,
                     double& lo);

// The same for `count` dots: s[i * modulus_stride + j] is S_i of dot j; hi[j], lo[j] (lo may be
// null when !plan.pairs). Vectorized with AVX-512 where the CPU has it, the same bits either way.
void reconstruct(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t modulus_stride, std::int64_t count,
                 double* hi, double* lo);

// The int8 engine's strips straight into a row's head sums (head_sum.hpp): for `count` dots of one
// head with weight w, x_j in integer units (the state's scale is plan.unit), adds w * relu(x_j) to
// sum[j] and |w| relu(x_j) to magnitude[j] as head_sum_add does (a pair hi + lo as two terms:
// the caller counts plan.pairs ? 2 : 1 terms per head).
void reconstruct_into(const residue_plan& plan, const std::int32_t* s, std::ptrdiff_t modulus_stride,
                      std::int64_t count, float weight, double* sum, double* magnitude);

}  // namespace mqa::exact::detail
