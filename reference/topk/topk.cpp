#include "topk.hpp"

#include <cmath>
#include <numeric>

namespace mqa::topk {

std::vector<std::int64_t> largest(std::span<const float> values, std::int64_t k) {
  std::vector<std::int64_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  k = std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(values.size()));
  auto above = [&](std::int64_t a, std::int64_t b) {
    const float x = values[a], y = values[b];
    const bool xn = std::isnan(x), yn = std::isnan(y);
    if (xn != yn) return xn;  // NaN outranks every number, as torch.topk ranks it
    if (!xn && x != y) return x > y;
    return a < b;
  };
  std::nth_element(order.begin(), order.begin() + k, order.end(), above);
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace mqa::topk
