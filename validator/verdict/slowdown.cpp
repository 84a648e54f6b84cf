#include "slowdown.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "validator/verdict/report_document.hpp"

namespace mqa::verdict {

std::optional<kernel_time> kernel_time_of(const nlohmann::json& result) {
  const auto best = measure(result.at("kernel_seconds"));
  if (!best) return std::nullopt;
  kernel_time t{.best = *best};
  if (const auto noise = result.find("kernel_noise"); noise != result.end())
    if (const auto n = measure(*noise); n && std::isfinite(*n) && *n > 0) t.noise = *n;
  if (const auto launches = result.find("kernel_launches"); launches != result.end() && launches->is_number_integer())
    t.launches = std::max(1, launches->get<int>());
  return t;
}

double slowdown_limit(double max_slowdown, const kernel_time& baseline, const kernel_time& now) {
  return std::max(max_slowdown, 1 + baseline.noise + now.noise);
}

std::string describe_slowdown(const kernel_time& baseline, const kernel_time& now, double max_slowdown) {
  const double limit = slowdown_limit(max_slowdown, baseline, now);
  const std::string launches = baseline.launches == now.launches
                                   ? fmt::format("best of {}", now.launches)
                                   : fmt::format("best of {} and {}", baseline.launches, now.launches);
  return fmt::format("{:.2f}x ({}; noise {:.0f}% and {:.0f}%; limit {:.3g}x{})", now.best / baseline.best, launches,
                     baseline.noise * 100, now.noise * 100, limit,
                     limit > max_slowdown ? fmt::format(", --max-slowdown {} raised to the noise", max_slowdown) : "");
}

}  // namespace mqa::verdict
