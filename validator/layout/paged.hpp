// A paged case's block table, context lengths and windows: pure functions of the case,
// like every layout. The cache's contents are inputs (validator/inputs).
#pragma once

#include <cstdint>
#include <vector>

#include "layout.hpp"
#include "validator/case/case.hpp"

namespace mqa::layout {

struct paged_layout {
  std::int64_t batch = 0, max_blocks = 0, num_blocks = 0;
  std::vector<std::int32_t> context_lens;  // [batch], or [batch * next_n] in the 2-D form
  std::vector<std::int32_t> block_table;   // [batch, max_blocks]
  windows rows;                            // ks = 0, ke = each row's window end (reference/paged)
};

// The case must have passed cases::validate and have its paged defaults resolved (load.cpp does
// both). The table by the case's fill:
//   shuffled       a permutation of the num_blocks blocks drawn by the seed, handed out request by
//                  request in logical order (DeepGEMM's test); the rest of the pool stays unused
//   shared-prefix  the same, except that every request's first shared_blocks logical blocks are
//                  the pool's first shared_blocks blocks (prefix caching: requests share them)
//   sequential     blocks 0, 1, 2, ... in order: request 0's logical blocks are its physical ones
// and entries past a request's last used block: 0 (zero, as DeepGEMM's torch.zeros table), -1
// (minus-one), or a block of the cache drawn by the seed (stale).
paged_layout make_paged_layout(const cases::case_spec& c);

}  // namespace mqa::layout
