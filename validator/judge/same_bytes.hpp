// Whether two buffers hold the same bytes, compared on every core: the proof of a bundle's
// reference.npy compares gigabytes against the reference just computed (judge/bundle.cpp), which
// one thread's memcmp reads at a fraction of the host's memory bandwidth.
#pragma once

#include <cstddef>

namespace mqa::judge {

// memcmp(a, b, bytes) == 0, split into `chunk`-byte pieces compared by up to one thread a core (one
// thread where the buffers hold a single piece). Stops early once a piece differs.
bool same_bytes(const void* a, const void* b, std::size_t bytes, std::size_t chunk = std::size_t{32} << 20);

}  // namespace mqa::judge
