// Checks across keys (a window against n, packed lengths against m and n, a profile against a
// format), made after a case is read and before anything runs. Single-key checks (types, ranges)
// happen while reading.
#pragma once

#include "case.hpp"
#include "source.hpp"

namespace mqa::cases {

// Throws input_error pointing at the key (or array element) that has to change.
void validate(const case_spec& c, const key_sources& sources);

// The limits a case must respect, for messages and for the readers.
inline constexpr std::int64_t kMaxExtent = 2147483647;    // m, n: ks/ke are int32
inline constexpr std::int64_t kMaxHeadDim = 1024;         // docs/design.md: dot products exact for D <= 1024
inline constexpr std::int64_t kMaxHeads = 4096;
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 32;  // per tensor, reference included
inline constexpr std::int64_t kMaxCacheBytes = std::int64_t{1} << 34;  // a paged case's kv_cache
inline constexpr std::int64_t kMaxBlockTableEntries = std::int64_t{1} << 26;  // its block table, batch x max_blocks

}  // namespace mqa::cases
