// The exact reference: for every in-window element, the float32 nearest (ties to even) to the
// exact real value of
//
//   logits[i, j] = k_scale[j] * sum_h weights[i, h] * relu( sum_d q[i,h,d] * k[j,d] )
//
// on the decoded fp8 inputs, and -inf outside the window (docs/design.md). Alongside it,
// the magnitude an error bound needs: A[i, j] = |k_scale[j]| * sum_h |w[i,h]| * sum_d |q k|.
//
// Conventions this header fixes (the spec leaves them open):
// - Zero: an element whose exact value is 0 is +0.0f (an exact real zero has no sign; note that
//   IEEE arithmetic on (-0) * x could give -0 there: compare zeros by value). A nonzero exact
//   value that rounds to zero keeps its sign (-0.0f for a tiny negative value), as IEEE rounding
//   does. Overflow follows round-to-nearest-even: values >= 2^128 - 2^103 (the midpoint between
//   FLT_MAX and 2^128, a tie that goes to the even 2^128) become +-inf.
// - Non-finite inputs follow IEEE arithmetic carried out exactly: a dot with a NaN code is NaN;
//   inf * 0 = NaN, inf * x = +-inf, +inf + -inf = NaN, in the dot, the head terms
//   w * relu(dot) and the final k_scale * sum. relu(NaN) is NaN (relu_rule::keeps_nan) or 0
//   (relu_rule::fmax), relu(+inf) = +inf, relu(-inf) = 0. A NaN weight or k_scale makes the
//   element NaN; an infinite one makes it +-inf or NaN (inf * 0). Every NaN result is the
//   canonical quiet NaN 0x7FC00000.
// - Magnitude: an upper bound of A, above it by at most a relative 2 (heads + head_dim + 3) 2^-52
//   (computed in float64 as |k_scale| * sum_d (sum_h |w| |q|) |k|, then rounded up by that
//   factor; see magnitude.hpp). Non-finite codes count as 0 in A; an element whose value is
//   NaN or +-inf because of a non-finite input has A = +inf (no finite bound applies).
// - Formats: q and k may be any format whose finite values are integer multiples of one unit
//   spanning < 2^62 units (every fp8 format but e8m0fnu, which throws std::invalid_argument), and
//   e2m1fn, which comes with block scales: a ue8m0 byte per 32 elements along head_dim
//   (per (row, head) for q, per key for k), the element's value its code's times 2^(byte - 127).
//   A block-scaled dot is still exact: every value is an integer number of its token's smallest
//   unit (the code's unit times its smallest block scale), so dots stay integer sums (codes.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "reference/fp8/format.hpp"
#include "reference/names/names.hpp"

namespace mqa::mma {
struct instruction;
}

namespace mqa::exact {

// The operation's inputs, row-major, borrowed from the caller.
struct problem {
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  fp8::format q_format = fp8::format::e4m3fn;
  fp8::format k_format = fp8::format::e4m3fn;
  std::span<const std::uint8_t> q;     // [m, heads, head_dim] codes
  std::span<const std::uint8_t> k;     // [n, head_dim] codes
  std::span<const float> k_scale;      // [n]
  std::span<const float> weights;      // [m, heads]
  std::span<const std::int32_t> ks;    // [m]
  std::span<const std::int32_t> ke;    // [m]
  // Block scales, present exactly where the operand's format is e2m1fn:
  std::span<const std::uint8_t> q_block_scale = {};  // [m, heads, head_dim / 32] ue8m0 bytes
  std::span<const std::uint8_t> k_block_scale = {};  // [n, head_dim / 32]
};

// Block scales: one per kBlockSize elements along head_dim (DeepGEMM's fp4 inputs, OCP MX). Their
// bytes are held to 2^-20 .. 2^20 (ue8m0 107 .. 147): every product of block-scaled values is then
// a normal float32 (no dot underflows, whatever the accumulator; reference/bounds/README.md), no
// dot overflows, and a dot's terms span < 2^100 units (exact in int128). DeepGEMM's quantizer gives
// 2^ceil(log2(max(amax, 1e-4) / 6)): from 2^-15 on, within this range for |x| below 6 * 2^20.
inline constexpr std::int64_t kBlockSize = 32;
inline constexpr int kBlockScaleBias = 127;
inline constexpr int kBlockScaleMaxExponent = 20;
bool uses_block_scales(fp8::format f);  // e2m1fn
// The exact value of q[index] / k[index] (flat indices), block scale applied; NaN for a NaN code.
double q_value(const problem& p, std::int64_t index);
double k_value(const problem& p, std::int64_t index);

// relu as the contract declares it: IEEE/torch.relu keeps NaN; fmax (CUDA fmaxf, tl.maximum) makes it 0.
enum class relu_rule : std::uint8_t { keeps_nan, fmax };
// As --relu spells them (reference/names/names.hpp reads the table both ways).
inline constexpr names::table<relu_rule, 2> kReluRuleNames{{
    {relu_rule::keeps_nan, "keeps-nan"},  // torch.relu, IEEE max with NaN propagation
    {relu_rule::fmax, "fmax"},            // CUDA fmaxf, Triton tl.maximum: NaN becomes 0
}};
std::string_view to_string(relu_rule r);

// How the dot products are made exact. Every engine gives the same bits; automatic picks the
// fastest this CPU has: int8_residues where it has AVX-512 VNNI (never for block-scaled e2m1fn
// dots: one unit per operand), else float64_gemm where every partial sum stays below 2^53 units
// (all e4m3 pairs at D <= 2^14), else int128.
enum class dot_engine : std::uint8_t {
  automatic,
  float64_gemm,   // OpenBLAS dgemm on the exact values (codes.hpp)
  int128,         // integer units accumulated in int128
  int8_residues,  // int8 dots modulo up to 12 moduli <= 256, Chinese remainder (residues.hpp)
};

// The window row i actually covers: [max(ks, 0), min(ke, n)), empty when that is empty.
struct window {
  std::int64_t begin = 0, end = 0;
  bool empty() const { return end <= begin; }
};
window clamped_window(const problem& p, std::int64_t row);

struct options {
  relu_rule relu = relu_rule::keeps_nan;
  unsigned threads = 0;            // 0: all hardware threads
  std::vector<std::int64_t> rows;  // rows to compute, strictly ascending, each in [0, m); empty: all rows
  // A matrix-instruction model (reference/mma): every finite dot is the model's instead of the exact
  // one, everything after it stays exact and is correctly rounded once. This is the centre a
  // modelled contract is judged around; its magnitude is then |k_scale| sum_h |w| relu(x'_h) over
  // the model's dots x' (an upper bound, as for A). The instruction must take the problem's formats
  // and head_dim (mma::why_unusable), else std::invalid_argument.
  const mma::instruction* dot_model = nullptr;
  std::int64_t promote_every = 0;  // with dot_model: a fresh MMA chain every this many elements
  // Forcing an engine that cannot hold the problem's dots (float64_gemm past 2^53 units,
  // int8_residues past 12 moduli or head_dim 2^16) is std::invalid_argument.
  dot_engine dots = dot_engine::automatic;
  bool magnitude = true;  // false: result.magnitude stays empty (a reference without bounds)
  // The keeps-NaN logits of these rows when the caller already has them ([rows, n], e.g. a bundle's
  // reference.npy proven by its digest): every element whose inputs are all finite takes its value
  // from here (both relu rules agree there) and no dot is computed for it; elements with a
  // non-finite input are computed under `relu`. A wrong size is std::invalid_argument.
  std::span<const float> known_logits{};
  // Also the bfloat16 nearest (ties to even) to each exact value, for bf16 logits: in
  // result::logits_bf16. Rounded once from the exact value, not from the float32 (where the float32
  // is a bfloat16 midpoint, the exact value's side of it decides).
  bool bf16_logits = false;
};

struct result {
  std::vector<std::int64_t> rows;  // the rows computed, in order
  std::vector<float> logits;       // [rows.size(), n]: correctly rounded in window, -inf outside
  std::vector<double> magnitude;   // [rows.size(), n]: an upper bound of A[i, j] (0 outside the window); empty
                                   // when options.magnitude is false
  std::vector<float> logits_bf16;  // with options::bf16_logits: [rows.size(), n], bfloat16 values widened; else empty
  std::int64_t undecided_by_fast_path = 0;  // elements the multiprecision fallback had to settle
  dot_engine dots = dot_engine::automatic;  // the engine that made the dots exact
};

inline constexpr names::table<dot_engine, 4> kDotEngineNames{{
    {dot_engine::automatic, "automatic"},
    {dot_engine::float64_gemm, "float64-gemm"},
    {dot_engine::int128, "int128"},
    {dot_engine::int8_residues, "int8-residues"},
}};
std::string_view to_string(dot_engine e);

// Throws std::invalid_argument for inconsistent sizes, rows out of order or range, formats
// outside the supported set (see above), and heads or head_dim above 2^20 (BLAS's 32-bit sizes).
// Threads: options.threads workers take tiles of 8 rows (and, where the rows are too few to keep
// every worker busy, a range of keys); OpenBLAS runs single-threaded inside them (its process-wide thread count is set to 1 for the call and restored after it).
result compute(const problem& p, const options& o = {});

// Whether the relu rule can change any logit of p: only a NaN dot tells keeps_nan from fmax, and
// only a NaN or Inf q or k code makes a dot NaN (finite codes give a finite dot; non-finite weights
// and k_scale act after relu, alike under both rules). A block-scaled problem counts as one
// (its scales are not examined). False: every relu rule gives the same result, bit for bit.
bool relu_rule_matters(const problem& p);

// Rows worth computing when a case is too big to compute whole, ascending and distinct, at most
// `count` of them (all rows when count >= m). In order of priority: the first and last rows; the
// window-edge rows (the first row with an empty window, the rows with the shortest and the longest
// nonempty window, the first rows whose window is clamped at 0 or at n, the first row whose window
// starts later or ends earlier than its predecessor's); then rows drawn uniformly at random from a
// generator seeded by `seed` (deterministic: same problem, count and seed, same rows).
// Throws std::invalid_argument when ks or ke does not have m entries.
std::vector<std::int64_t> sample_rows(const problem& p, std::size_t count, std::uint64_t seed);

}  // namespace mqa::exact
