#include "columns.hpp"

#include <algorithm>
#include <stdexcept>

namespace mqa::compare {

std::int64_t relative_width(const exact::problem& p) {
  std::int64_t width = 1;
  for (std::int64_t i = 0; i < p.m; ++i) {
    const exact::window w = exact::clamped_window(p, i);
    if (!w.empty()) width = std::max(width, w.end - p.ks[static_cast<std::size_t>(i)]);
  }
  return width;
}

std::vector<float> absolute_from_relative(const kernels::output_view& relative, const exact::problem& p, float fill) {
  if (relative.n < relative_width(p))
    throw std::logic_error("compare::absolute_from_relative: the relative output is narrower than relative_width");
  std::vector<float> absolute(static_cast<std::size_t>(p.m * p.n), fill);
  for (std::int64_t i = 0; i < p.m; ++i) {
    const exact::window w = exact::clamped_window(p, i);
    const std::int64_t ks = p.ks[static_cast<std::size_t>(i)];
    const float* row = relative.row(i);
    for (std::int64_t j = w.begin; j < w.end; ++j) absolute[static_cast<std::size_t>(i * p.n + j)] = row[j - ks];
  }
  return absolute;
}

}  // namespace mqa::compare
