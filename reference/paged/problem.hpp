// The paged decode operation (DeepGEMM's fp8_paged_mqa_logits, AITER's deepgemm_fp8_paged_mqa_logits):
// the indexer at decode time, reading each request's keys from a paged fp8 cache through its block
// table. This header is the operation's contract; exact.hpp computes its reference.
//
//   q             fp8 [batch * next_n, heads, head_dim]   row b * next_n + t is request b's query t
//   weights       float32 [batch * next_n, heads]         q's scale folded in, as for prefill
//   kv_cache      uint8 [num_blocks, page_bytes]          one page per physical block: block_kv x
//                 head_dim fp8 codes first (key-major), then block_kv float32 scales (little-endian),
//                 then padding up to the page stride (DeepGEMM's [num_blocks, block_kv, 1, D + 4]
//                 view has stride(0) = page_bytes). An fp4 cache (k_format e2m1fn): block_kv
//                 x head_dim / 2 bytes of codes (two per byte, the even element in the low nibble),
//                 then block_kv x head_dim / 32 ue8m0 block scales (four per int32 at head_dim 128),
//                 no float32 scale (k_scale is 1)
//   q_block_scale uint8 [batch * next_n, heads, head_dim / 32]   an e2m1fn q's ue8m0 block scales
//   block_table   int32 [batch, max_blocks]               logical block i of request b is physical
//                 block block_table[b, i]; entries past a request's context are never read
//   context_lens  int32 [batch], or [batch, next_n] (the 2-D form)
//
// Key j of request b is slot j % block_kv of physical block block_table[b, j / block_kv]. Row
// b * next_n + t sees keys [0, window_end): context_lens[b, t] in the 2-D form; in the 1-D form
// L_b - next_n + t + 1 (DeepGEMM's k <= L - next_n + t: the next_n queries are the context's last
// tokens), at least 0. Within its window the row's logits are the prefill operation's
// (reference/exact/logits.hpp) on the request's keys; the output is float32 [batch * next_n,
// max_context] with a padded row stride, and what lies past a window is the contract's masking
// (clean: -inf; DeepGEMM leaves it undefined, which a kernel declares as dont-care).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/exact/logits.hpp"
#include "reference/fp8/format.hpp"

namespace mqa::paged {

// The bytes one key takes in a page: its codes, then (after every key's codes) its scale: an fp8
// key's head_dim codes and float32 scale, an e2m1fn key's head_dim / 2 code bytes and head_dim / 32
// ue8m0 block scales. One place for the layout: the problem, the case schema and the generator.
struct key_bytes {
  std::int64_t codes = 0, scale = 0;
};
key_bytes key_bytes_of(fp8::format k_format, std::int64_t head_dim);
// The same as a formula for messages: "head_dim + 4" or "head_dim / 2 + head_dim / 32".
const char* key_bytes_formula(fp8::format k_format);

struct problem {
  std::int64_t batch = 0, next_n = 1, heads = 0, head_dim = 0;
  std::int64_t block_kv = 64;    // keys per page
  std::int64_t num_blocks = 0;   // physical pages in the cache
  std::int64_t page_bytes = 0;   // the page stride: a multiple of 4, at least payload_bytes()
  std::int64_t max_blocks = 0;   // block table columns
  std::int64_t max_context = 0;  // output columns (DeepGEMM's max_context_len)
  bool context_lens_2d = false;
  fp8::format q_format = fp8::format::e4m3fn;
  fp8::format k_format = fp8::format::e4m3fn;
  std::span<const std::uint8_t> q;             // [batch * next_n, heads, head_dim] codes
  std::span<const float> weights;              // [batch * next_n, heads]
  std::span<const std::uint8_t> kv_cache;      // [num_blocks, page_bytes]
  std::span<const std::int32_t> block_table;   // [batch, max_blocks]
  std::span<const std::int32_t> context_lens;  // [batch] or [batch, next_n]
  std::span<const std::uint8_t> q_block_scale = {};  // e2m1fn q only: [batch * next_n, heads, head_dim / 32]

  std::int64_t rows() const { return batch * next_n; }
  key_bytes key() const { return key_bytes_of(k_format, head_dim); }
  // The bytes of a page that hold keys: block_kv keys' codes and scales.
  std::int64_t payload_bytes() const { return block_kv * (key().codes + key().scale); }
  // Offsets in the cache of slot s of physical block `block`: its codes, then its scale.
  std::int64_t value_offset(std::int64_t block, std::int64_t slot) const {
    return block * page_bytes + slot * key().codes;
  }
  std::int64_t scale_offset(std::int64_t block, std::int64_t slot) const {
    return block * page_bytes + block_kv * key().codes + key().scale * slot;
  }
};

// The context length that decides row `row`: context_lens[b, t] (2-D) or context_lens[b] (1-D).
std::int64_t context_of(const problem& p, std::int64_t row);

// The end of row `row`'s window, as the header comment says: in [0, max_context] for a problem
// check_problem accepts.
std::int64_t window_end(const problem& p, std::int64_t row);

// The keys request b's rows read: the longest of their windows.
std::int64_t request_keys(const problem& p, std::int64_t request);

// Throws std::invalid_argument for any inconsistency, naming the request and logical block where
// one is at fault: array sizes; a page stride that is not a multiple of 4 or is smaller than the
// payload; a negative context, one longer than max_context or than the block table covers; a block
// table entry outside the cache at a block some context uses (entries past every context may hold
// anything: -1, 0, a stale block).
void check_problem(const problem& p);

// Keys [0, count) of request b through its block table: codes [count, head_dim] (unpacked for
// e2m1fn) and scales [count] (1 for e2m1fn, whose scales are the block scales [count, head_dim /
// 32]) (count <= what the table covers; check_problem first).
struct gathered_keys {
  std::vector<std::uint8_t> k;
  std::vector<float> k_scale;
  std::vector<std::uint8_t> k_block_scale;
};
gathered_keys gather(const problem& p, std::int64_t request, std::int64_t count);

// Two 4-bit codes per byte, the even element in the low nibble, into one code per byte at `codes`
// (2 x bytes.size() of them).
void unpack_codes(std::span<const std::uint8_t> bytes, std::uint8_t* codes);

// The little-endian float32 at `offset` of the cache (the scales' byte order, as the GPU writes it).
float scale_at(std::span<const std::uint8_t> cache, std::int64_t offset);

// The windows as the prefill operation spells them: ks = 0, ke = window_end, one per row.
struct row_windows {
  std::vector<std::int32_t> ks, ke;
};
row_windows windows_of(const problem& p);

// The rows of p as a dense problem without keys (k and k_scale empty): m = rows, n = max_context,
// q, weights and `w`. What judging a row needs besides its keys (validator/compare); `w` must
// outlive the view.
exact::problem rows_view(const problem& p, const row_windows& w);

}  // namespace mqa::paged
