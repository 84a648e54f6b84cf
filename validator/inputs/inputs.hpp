// The inputs of one case, generated deterministically: the same case gives the same bytes on any
// compiler, libc and CPU (rng.hpp, distributions.hpp: integers and correctly rounded float
// operations only).
//
// Pipeline (quantize.hpp): real q [m, heads, head_dim], k [n, head_dim] and w [m, heads] from the
// case's distribution; per-token scales (q per row and head, k per key); specials planted;
// fp8 codes through the case's profile and bound. q's scale is folded into the weights as vLLM's
// indexer does (weights = w * q_scale, one float32 product), since the operation has no q scale.
// An e2m1fn operand (issue 14) is quantized as DeepGEMM's per_token_cast_to_fp4 does instead: a
// ue8m0 scale per 32 elements, kept as block scales beside the codes; q's weights are then the
// bare w, and k's k_scale is 1.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/exact/logits.hpp"
#include "validator/case/case.hpp"

namespace mqa::inputs {

struct tensors {
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  std::vector<std::uint8_t> q;        // [m, heads, head_dim] codes in q_format
  std::vector<std::uint8_t> k;        // [n, head_dim] codes in k_format
  std::vector<float> k_scale;         // [n]
  std::vector<float> weights;         // [m, heads]
  std::vector<std::int32_t> ks, ke;   // [m]
  // e2m1fn operands only (else empty): ue8m0 bytes, one per 32 elements along head_dim.
  std::vector<std::uint8_t> q_block_scale;  // [m, heads, head_dim / 32]
  std::vector<std::uint8_t> k_block_scale;  // [n, head_dim / 32]
  fp8::format q_format = fp8::format::e4m3fn, k_format = fp8::format::e4m3fn;  // what the codes are
};

// The case must have passed cases::validate.
tensors generate(const cases::case_spec& c);

// The operation's view of generated tensors (borrowed: `t` must outlive it).
exact::problem problem_of(const cases::case_spec& c, const tensors& t);

// FNV-1a (64-bit) over the arrays' little-endian bytes in the order q, k, k_scale, weights, ks, ke,
// then the block scales where there are any: a short, portable name for a generated bundle's contents.
std::uint64_t fingerprint(const tensors& t);

}  // namespace mqa::inputs
