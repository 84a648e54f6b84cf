// The keys of a paged case, packed into its cache (inputs.hpp's paged_cache): generated in pieces
// of whole blocks on every core, each piece exactly what generating all slots at once would give
// (distributions, specials and encodings are pure functions of the position).
#pragma once

#include "inputs.hpp"

namespace mqa::inputs {

// Fills cache.kv_cache ([num_blocks, page_bytes]); the geometry fields must be set.
void fill_paged_cache(const cases::case_spec& c, paged_cache& cache);

}  // namespace mqa::inputs
