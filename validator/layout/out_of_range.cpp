#include "out_of_range.hpp"

#include <algorithm>
#include <limits>

#include "validator/rng/rng.hpp"

namespace mqa::layout {

void plant_out_of_range(const cases::case_spec& c, windows& w) {
  const inputs::counter_rng rng(c.seed, inputs::stream::out_of_range);
  constexpr std::int64_t kIntMax = std::numeric_limits<std::int32_t>::max();
  const std::int64_t count = std::max<std::int64_t>(1, c.m / 4);
  for (std::int64_t r = 0; r < count; ++r) {
    // One row from each of `count` equal slices of the rows: distinct rows, spread over the batch.
    const std::int64_t first = r * c.m / count, end = (r + 1) * c.m / count;
    const auto draw = static_cast<std::uint64_t>(2 * r);
    const auto i = static_cast<std::size_t>(first + static_cast<std::int64_t>(rng.below(draw, static_cast<std::uint64_t>(end - first))));
    const auto by = static_cast<std::int64_t>(rng.below(draw + 1, 4)) + 1;  // 1 to 4 past the edge
    std::int32_t& ks = w.ks[i];
    std::int32_t& ke = w.ke[i];
    switch (r % 4) {
      case 0: ke = static_cast<std::int32_t>(std::min(c.n + by, kIntMax)); break;
      case 1: ks = static_cast<std::int32_t>(-by); break;
      case 2:
        std::swap(ks, ke);
        if (ks == ke) ks = static_cast<std::int32_t>(std::min<std::int64_t>(std::int64_t{ke} + by, kIntMax));
        break;
      default: ks = ke = -1; break;
    }
  }
}

}  // namespace mqa::layout
