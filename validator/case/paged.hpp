// What a paged case (layout kind `paged`) fixes before any input exists: its context
// lengths, listed or drawn by the seed, and the sizes that default from them. Validation reads
// them (a context the table cannot cover is the case's error), the layout builds the block table
// and the windows from them, and read_case writes the defaults into the case.
#pragma once

#include <cstdint>
#include <vector>

#include "case.hpp"

namespace mqa::cases {

// Requests: m / next_n.
std::int64_t paged_batch(const case_spec& c);

// The context lengths as context_lens.npy holds them: [batch], or [batch * next_n] in the 2-D
// form. Listed lengths are taken as they are; otherwise request b's is drawn uniformly from
// [context_min, context_max]. In the 2-D form that is the request's last row's length (the one
// DeepGEMM's scheduler reads), and each earlier row's is drawn uniformly from [0, it], as
// DeepGEMM's test draws them.
std::vector<std::int64_t> paged_context_lens(const case_spec& c);

// Per request, the keys its rows read: its length (1-D), the longest of its rows' (2-D).
std::vector<std::int64_t> paged_request_keys(const case_spec& c, const std::vector<std::int64_t>& context_lens);

// Physical blocks the case's fill hands out (an explicit table: its largest used entry + 1).
std::int64_t paged_blocks_used(const case_spec& c, const std::vector<std::int64_t>& request_keys);

// Defaults: the table covers n keys; the pool holds the used blocks and one spare per request
// (never referenced: stale data a kernel must not read); pages hold exactly their payload.
std::int64_t default_max_blocks(const case_spec& c);
std::int64_t default_num_blocks(const case_spec& c);
std::int64_t default_page_bytes(const case_spec& c);

inline std::int64_t blocks_for(std::int64_t keys, std::int64_t block_kv) { return (keys + block_kv - 1) / block_kv; }

}  // namespace mqa::cases
