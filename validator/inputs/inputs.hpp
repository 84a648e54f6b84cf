// The inputs of one case, generated deterministically: the same case gives the same bytes on any
// compiler, libc and CPU (validator/rng, distributions.hpp: integers and correctly rounded float
// operations only).
//
// Pipeline (quantize.hpp): real q [m, heads, head_dim], k [n, head_dim] and w [m, heads] from the
// case's distribution; per-token scales (q per row and head, k per key); specials planted;
// fp8 codes through the case's profile and bound. q's scale is folded into the weights as vLLM's
// indexer does (weights = w * q_scale, one float32 product), since the operation has no q scale.
// An e2m1fn operand is quantized as DeepGEMM's per_token_cast_to_fp4 does instead: a
// ue8m0 scale per 32 elements, kept as block scales beside the codes; q's weights are then the
// bare w, and k's k_scale is 1.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/case/case.hpp"

namespace mqa::inputs {

// A paged case's keys (reference/paged/problem.hpp): every slot of every physical block
// holds a key drawn and quantized as a prefill case's k is (the slots in block order are the k of
// num_blocks * block_kv keys, specials included), packed into pages: codes, little-endian float32
// scales, then padding bytes drawn by the seed.
struct paged_cache {
  std::int64_t batch = 0, next_n = 1, block_kv = 0, num_blocks = 0, page_bytes = 0, max_blocks = 0;
  bool context_lens_2d = false;
  std::vector<std::uint8_t> kv_cache;       // [num_blocks, page_bytes]
  std::vector<std::int32_t> block_table;    // [batch, max_blocks]
  std::vector<std::int32_t> context_lens;   // [batch] or [batch, next_n]
};

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
  // A paged case: the cache holds the keys (k and k_scale stay empty); m = batch * next_n and
  // n = max_context, the output's columns; ks = 0 and ke the rows' window ends.
  std::optional<paged_cache> paged;
};

// A case with an origin (case.hpp) has no generator: input_error naming it, so that a command
// refuses it before any work.
void check_generated_case(const cases::case_spec& c);

// The case must have passed cases::validate and check_generated_case.
tensors generate(const cases::case_spec& c);

// The operation's view of generated tensors (borrowed: `t` must outlive it). For a paged case:
// the rows without keys (paged::rows_view), which is what a row is judged by besides its keys.
exact::problem problem_of(const cases::case_spec& c, const tensors& t);

// A paged case's operation (t.paged set; borrowed).
paged::problem paged_problem_of(const cases::case_spec& c, const tensors& t);

// FNV-1a (64-bit) over the arrays' little-endian bytes in the order q, k, k_scale, weights, ks, ke,
// then the block scales where there are any, then for a paged case kv_cache, block_table,
// context_lens: a short, portable name for a generated bundle's contents.
std::uint64_t fingerprint(const tensors& t);

}  // namespace mqa::inputs
